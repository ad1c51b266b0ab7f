"""The writer of a following ledger ETL from its pods' answers, and the takeover Event."""

from __future__ import annotations

from typing import Any

from chainloom_operator._render.ledger_writer import pods_to_ask, takeover_event, writer_of


def _pod(
    name: str, phase: str = "Running", ip: str | None = "10.0.0.1", **meta: str
) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "status": {"phase": phase, "podIP": ip}}


def test_only_running_pods_with_an_address_are_asked() -> None:
    deleting = _pod("d", deletionTimestamp="2026-11-27T17:00:00Z")
    pods = [_pod("a"), _pod("b", phase="Pending"), _pod("c", ip=None), deleting,
            _pod("e", ip="10.0.0.2")]  # fmt: skip
    assert pods_to_ask(pods) == {"a": "10.0.0.1", "e": "10.0.0.2"}


def test_the_writer_is_the_pod_that_says_so() -> None:
    assert writer_of({"a": "standby", "b": "writer", "c": None}) == "b"
    assert writer_of({"a": "standby", "c": None}) == ""
    assert writer_of({"b": "writer", "a": "writer"}) == "a,b"


def test_a_takeover_is_one_writer_replaced_by_another() -> None:
    assert takeover_event("a", "b") == (
        "WriterChanged",
        "pod b took over writing the ledger from pod a",
    )
    assert takeover_event("", "a") is None  # the first writer
    assert takeover_event("a", "") is None  # nobody answers for a moment
    assert takeover_event("a", "a") is None
    assert takeover_event("a", "a,b") is None  # both claim it until the old one learns
    assert takeover_event("a,b", "b") is None
