"""The REST mapping: every intake outcome has its documented status code and JSON body."""

from __future__ import annotations

import re

from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.rest import ERROR_STATUS, HTTP_STATUS, response_body
from chainloom.relayer.validation import Rule
from tests.conftest import REPO_ROOT


def test_every_outcome_has_the_code_the_api_document_gives_it():
    # docs/relayer-api.md, "Status codes and bodies": | code | `status` | ...
    table = (REPO_ROOT / "docs" / "relayer-api.md").read_text()
    documented = {
        word: int(code) for code, word in re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \|", table, re.M)
    }
    mapped = {outcome.value: code for outcome, code in HTTP_STATUS.items()}
    assert set(HTTP_STATUS) == set(Outcome)
    errors = {word: code for code, word in ERROR_STATUS.items()}
    assert documented == mapped | errors


def test_a_body_holds_the_status_word_and_only_the_fields_that_are_known():
    known = IntakeResult(
        Outcome.KNOWN,
        reason="already in in_work",
        rule=Rule.NOT_QUEUED,
        digest="0x" + "ab" * 32,
        message_id="2/" + "00" * 32 + "/7",
        table="in_work",
    )
    assert response_body(known) == {
        "status": "known",
        "digest": "0x" + "ab" * 32,
        "message_id": "2/" + "00" * 32 + "/7",
        "table": "in_work",
        "reason": "already in in_work",
        "rule": "not_queued",
    }
    assert response_body(IntakeResult(Outcome.UNAVAILABLE, reason="redis unavailable: x")) == {
        "status": "unavailable",
        "reason": "redis unavailable: x",
    }
