"""What the ledger API forwards to rippled, and how endpoints are chosen: pure rules as data."""

from __future__ import annotations

import random
from typing import Any

import pytest

from chainloom.backoff import Backoff
from chainloom.ledger.api import forwarding as fw
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api.errors import ERRORS
from chainloom.ledger.api.forwarding import EndpointPool, Route
from chainloom.ledger.api.rippled import forwarded_for
from chainloom.ledger.config import ForwardingSettings, LedgerSettings
from chainloom.settings import SettingsError, load_settings

ACCOUNT = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"


def _route(method: str, params: dict[str, Any], *, rippled: bool = True) -> Route:
    return fw.route(method, params, rippled_configured=rippled, local_methods=rq.PARSERS)


@pytest.mark.parametrize("method", sorted(fw.PROXIED))
def test_methods_only_a_live_server_answers_are_forwarded_or_refused(method: str) -> None:
    assert _route(method, {}) is Route.FORWARD
    assert _route(method, {}, rippled=False) is Route.NOT_ENABLED


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("account_info", {"account": ACCOUNT, "ledger_index": "current"}, Route.FORWARD),
        ("account_lines", {"account": ACCOUNT, "ledger_index": "closed"}, Route.FORWARD),
        ("ledger", {"ledger_index": "current"}, Route.FORWARD),
        ("ledger_entry", {"index": "00" * 32, "ledger_index": "closed"}, Route.FORWARD),
        ("account_info", {"account": ACCOUNT, "queue": True}, Route.FORWARD),
        ("ledger", {"queue": True}, Route.FORWARD),
        # answered from the store
        ("account_info", {"account": ACCOUNT}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "ledger_index": "validated"}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "ledger_index": 38130}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "ledger_index": "38130"}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "ledger_index": ["current"]}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "queue": False}, Route.LOCAL),
        ("account_info", {"account": ACCOUNT, "queue": "true"}, Route.LOCAL),  # not a bool
        ("account_lines", {"account": ACCOUNT, "queue": True}, Route.LOCAL),
        ("server_info", {}, Route.LOCAL),
        # Clio's own methods and the subscriptions never go to rippled
        ("nft_info", {"nft_id": "00" * 32, "ledger_index": "current"}, Route.LOCAL),
        ("ledger_index", {"ledger_index": "current"}, Route.LOCAL),
        ("mpt_holders", {"ledger_index": "closed"}, Route.LOCAL),
        ("subscribe", {"streams": ["ledger"], "ledger_index": "current"}, Route.LOCAL),
        # a method this server does not know is never forwarded (no admin method leaks)
        ("stop", {"ledger_index": "current"}, Route.LOCAL),
        ("ledger_accept", {"ledger_index": "closed"}, Route.LOCAL),
        ("path_find", {}, Route.LOCAL),
    ],
)
def test_calls_naming_a_live_ledger_are_forwarded(
    method: str, params: dict[str, Any], expected: Route
) -> None:
    assert _route(method, params) is expected
    # Without rippled the store answers them (current/closed: the newest stored ledger).
    assert _route(method, params, rippled=False) is Route.LOCAL


def test_the_forwarded_request_is_the_call_unchanged() -> None:
    params = {"id": 4, "command": "fee", "api_version": 2, "tx_blob": "AB", "fail_hard": True}
    body = fw.forwarded_body("submit", params)
    assert body == {
        "method": "submit",
        "params": [{"api_version": 2, "tx_blob": "AB", "fail_hard": True}],
    }
    assert params["id"] == 4  # the caller's copy is left alone


def test_rippled_answers_are_returned_marked_forwarded() -> None:
    answer = {"result": {"status": "success", "ledger_current_index": 7}}
    result = fw.forwarded_result(answer)
    assert result == {"status": "success", "ledger_current_index": 7, "forwarded": True}
    assert fw.envelope_fields(result) == {"forwarded": True}
    assert fw.envelope_fields({"status": "success"}) == {}
    error = fw.forwarded_result({"result": {"status": "error", "error": "noCurrent"}})
    assert (error["error"], error["forwarded"]) == ("noCurrent", True)


def test_the_websocket_message_and_answer_are_rippled_s() -> None:
    params = {"id": 4, "method": "fee", "api_version": 2}
    assert fw.forwarded_message("fee", params) == {"api_version": 2, "command": "fee"}
    success = {"id": 1, "result": {"ledger_current_index": 7}, "status": "success",
               "type": "response", "api_version": 2}  # fmt: skip
    assert fw.forwarded_websocket_result(success) == {
        "ledger_current_index": 7,
        "status": "success",
        "forwarded": True,
    }
    error = {"id": 1, "error": "invalidParams", "error_code": 31, "request": {"command": "x"},
             "status": "error", "type": "response"}  # fmt: skip
    assert fw.forwarded_websocket_result(error) == {
        "error": "invalidParams",
        "error_code": 31,
        "request": {"command": "x"},
        "status": "error",
        "forwarded": True,
    }
    bad_answers: list[Any] = [{"result": {}}, {"type": "response", "result": 3}, [], "x"]
    for bad in bad_answers:
        with pytest.raises(fw.InvalidAnswerError):
            fw.forwarded_websocket_result(bad)


@pytest.mark.parametrize("document", [[], "text", {"id": 1}, {"result": "x"}, {"result": []}])
def test_an_answer_that_is_not_json_rpc_is_invalid(document: Any) -> None:
    with pytest.raises(fw.InvalidAnswerError):
        fw.forwarded_result(document)


def test_the_worst_failure_names_the_outage_as_clio_ranks_them() -> None:
    assert fw.worst(["connectionError", "timeout", "requestError"]) == "timeout"
    assert fw.worst(["connectionError", "invalidResponse"]) == "invalidResponse"
    assert fw.worst([]) == "connectionError"
    for token in fw.FAILURE_ORDER:
        assert ERRORS[token].code >= 7000  # Clio's numbers, not rippled's
    assert [ERRORS[t].code for t in fw.FAILURE_ORDER] == [7000, 7001, 7002, 7003]
    assert (ERRORS["notEnabled"].code, ERRORS["notEnabled"].http_status) == (12, 501)


def test_the_pool_asks_in_order_and_leaves_a_failed_endpoint_out_for_its_backoff() -> None:
    pool = EndpointPool(3, Backoff(initial=1.0, maximum=4.0))
    assert pool.usable(0.0) == [0, 1, 2]
    assert pool.failed(0, "timeout", now=10.0) is True  # healthy until now: logged
    assert pool.usable(10.5) == [1, 2]
    assert pool.usable(11.0) == [0, 1, 2]  # 1 s later it is asked again
    assert pool.failed(0, "connectionError", now=11.0) is False  # still failing: not logged
    assert pool.usable(12.9) == [1, 2]  # the wait doubled
    assert pool.usable(13.0) == [0, 1, 2]
    for now in (13.0, 20.0, 30.0, 40.0):
        pool.failed(0, "connectionError", now=now)
    assert pool.usable(43.9) == [1, 2]  # capped at the maximum
    assert pool.usable(44.0) == [0, 1, 2]
    assert pool.latest_failure == "connectionError"
    assert pool.answered(0) is True  # failing until now: logged
    assert pool.answered(0) is False
    pool.failed(2, "invalidResponse", now=50.0)
    assert pool.usable(50.0) == [0, 1]
    assert pool.latest_failure == "invalidResponse"


def test_a_jittered_backoff_stays_within_its_bounds() -> None:
    pool = EndpointPool(1, Backoff(initial=2.0, maximum=2.0, jitter=0.5), random.Random(3))
    pool.failed(0, "timeout", now=0.0)
    assert pool.usable(0.99) == []
    assert pool.usable(2.0) == [0]


def test_the_forwarded_header_names_the_client() -> None:
    assert forwarded_for("10.1.2.3") == "for=10.1.2.3"
    assert forwarded_for("::1") == 'for="[::1]"'
    assert forwarded_for("?") == "for=unknown"


def test_rippled_endpoints_come_from_flags_files_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHAINLOOM_FORWARDING__RIPPLED", '["http://10.0.0.1:5005/"]')
    monkeypatch.setenv("CHAINLOOM_FORWARDING__REQUEST_TIMEOUT", "2.5")
    loaded = load_settings(LedgerSettings)
    assert loaded.forwarding.rippled == ("http://10.0.0.1:5005/",)
    assert loaded.forwarding.request_timeout == 2.5
    flags = {"forwarding.rippled": ["https://a.example:51234/", "ws://b:6006", "wss://c/"]}
    assert load_settings(LedgerSettings, flags=flags).forwarding.rippled == (
        "https://a.example:51234/",
        "ws://b:6006",
        "wss://c/",
    )
    assert ForwardingSettings().rippled == ()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://10.0.0.1:6006/", "http:// or https:// or ws:// or wss://"),
        ("10.0.0.1:5005", "http:// or https://"),
        ("http://:5005/", "no host"),
        ("http://10.0.0.1:99999/", "port"),
        ("http://admin:hunter2@10.0.0.1:x/", "port"),
    ],
)
def test_a_bad_rippled_url_is_refused_naming_it(url: str, reason: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(LedgerSettings, flags={"forwarding.rippled": [url]})
    message = str(refused.value)
    assert "command line: forwarding.rippled" in message
    assert reason in message
    assert "hunter2" not in message


def test_a_password_in_a_rippled_url_is_never_shown() -> None:
    settings = ForwardingSettings(rippled=("http://chainloom:hunter2@10.0.0.1:51234/",))
    assert settings.rippled == ("http://chainloom:hunter2@10.0.0.1:51234/",)  # used as given
    assert settings.model_dump()["rippled"] == ["http://chainloom:***@10.0.0.1:51234/"]
    assert "hunter2" not in settings.model_dump_json()
