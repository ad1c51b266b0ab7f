"""The REST mapping: every intake outcome has its documented status code and JSON body."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import httpx

from chainloom.relayer.intake import IntakeResult, Outcome
from chainloom.relayer.rest import ERROR_STATUS, ERRORS, HTTP_STATUS, response_body, rest_app
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


class RecordingIntake:
    """An IntakeService that queues everything and remembers what it was given."""

    def __init__(self) -> None:
        self.submitted: list[bytes] = []

    async def submit(self, data: bytes, *, source: str) -> IntakeResult:
        self.submitted.append(data)
        return IntakeResult(Outcome.QUEUED, digest="0x" + "cd" * 32, table="incoming")

    def ready(self) -> tuple[bool, dict[str, Any]]:
        return True, {"redis": "ok"}

    def stats(self) -> dict[str, Any]:
        return {}

    def metrics_exposition(self) -> bytes:
        return b""


def answer(method: str, target: str, body: bytes = b"") -> tuple[httpx.Response, RecordingIntake]:
    intake = RecordingIntake()
    app = rest_app(intake, max_request_bytes=64)

    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("192.0.2.1", 4000))
        async with httpx.AsyncClient(transport=transport, base_url="http://relayer") as client:
            return await client.request(method, target, content=body)

    return asyncio.run(ask()), intake


def test_unknown_paths_and_wrong_methods_are_json_errors_naming_what_is_allowed(caplog):
    caplog.set_level(logging.INFO)
    missing, _ = answer("GET", "/v2/relay?x=1")
    assert (missing.status_code, missing.headers["content-type"]) == (404, "application/json")
    assert missing.json() == {
        "status": "not_found",
        "reason": "no route GET /v2/relay (GET / lists the routes)",
    }
    wrong, _ = answer("DELETE", "/healthz")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "GET, HEAD"
    assert wrong.json()["reason"] == ("DELETE is not allowed on /healthz (allowed: GET, HEAD)")
    relay, _ = answer("GET", "/v1/relay")
    assert relay.headers["allow"] == "POST"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("chainloom")] == [
        "listener: answered 404 to GET /v2/relay from 192.0.2.1: "
        "no route GET /v2/relay (GET / lists the routes)",
        "listener: answered 405 to DELETE /healthz from 192.0.2.1: "
        "DELETE is not allowed on /healthz (allowed: GET, HEAD)",
        "listener: answered 405 to GET /v1/relay from 192.0.2.1: "
        "GET is not allowed on /v1/relay (allowed: POST)",
    ]


def test_head_is_answered_like_get_and_the_legacy_path_is_percent_decoded():
    head, _ = answer("HEAD", "/healthz")
    assert (head.status_code, head.headers["content-length"]) == (200, "16")
    legacy, intake = answer("GET", "/relayvaa/AQID%2BA%2F8")  # base64 of 01 02 03 f8 0f fc
    assert legacy.status_code == 202
    assert intake.submitted == [bytes.fromhex("010203f80ffc")]
    too_long, intake = answer("GET", "/relayvaa/" + "A" * 100)
    assert too_long.status_code == 413
    assert intake.submitted == []


def test_relay_bodies_and_refusals_have_the_documented_shape():
    queued, intake = answer("POST", "/v1/relay", b'{"vaa": "0x0102"}')
    assert (queued.status_code, queued.json()["status"]) == (202, "queued")
    assert intake.submitted == [b"\x01\x02"]
    not_json, _ = answer("POST", "/v1/relay", b"\xff")
    assert (not_json.status_code, not_json.json()["status"]) == (400, "malformed")
    for status, word in ERROR_STATUS.items():
        body, content_type = ERRORS.render(status, "why")
        assert content_type == "application/json"
        assert json.loads(body) == {"status": word, "reason": "why"}
