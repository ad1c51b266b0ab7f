"""The endpoint pool of a chain: failures and lag set an endpoint aside for a backoff, the
first healthy one in order carries traffic, and each switch is one log line without secrets."""

from __future__ import annotations

import logging

import pytest

from chainloom.backoff import Backoff
from chainloom.relayer.evm_endpoints import EndpointPool, redacted

PRIMARY = "https://user:secret@primary.example:8545/v3/APIKEY"
SECOND = "http://second.example:8545"


def pool() -> EndpointPool:
    return EndpointPool(2, [PRIMARY, SECOND], Backoff(initial=1.0, maximum=8.0), max_lag_blocks=2)


def test_a_failed_endpoint_is_skipped_for_its_backoff_then_probed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoints = pool()
    first = endpoints.choose(0.0)
    assert first.url == PRIMARY
    with caplog.at_level(logging.WARNING, "chainloom.relayer.evm"):
        endpoints.failed(first, "ConnectionError", 0.0)
        assert endpoints.choose(0.5).url == SECOND
        assert endpoints.due_probes(0.5) == []
        assert endpoints.choose(1.5).url == SECOND  # waited out, but not yet probed healthy
        assert endpoints.due_probes(1.5) == [first]
        endpoints.failed(first, "ConnectionError", 1.5)  # the probe failed: a longer wait
        assert first.down_until == pytest.approx(3.5)
        endpoints.succeeded(first)  # a later probe answered
        assert endpoints.choose(4.0).url == PRIMARY
    assert endpoints.switches == 2
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "evm chain 2: switching RPC endpoint https://primary.example:8545 -> "
        "http://second.example:8545 (ConnectionError)",
        "evm chain 2: switching RPC endpoint http://second.example:8545 -> "
        "https://primary.example:8545 (preferred endpoint answers again)",
    ]
    assert not any("secret" in line or "APIKEY" in line for line in lines)


def test_a_lagging_or_silent_endpoint_is_set_aside_by_the_health_check() -> None:
    endpoints = pool()
    endpoints.heights({PRIMARY: 100, SECOND: 103}, 0.0)
    assert endpoints.endpoints[0].reason == "3 blocks behind"
    assert endpoints.choose(0.0).url == SECOND
    endpoints.heights({PRIMARY: 102, SECOND: None}, 1.0)
    assert endpoints.endpoints[0].failures == 0
    assert endpoints.endpoints[1].reason == "no answer to eth_blockNumber"
    assert endpoints.choose(1.0).url == PRIMARY


def test_when_every_endpoint_is_down_the_one_back_soonest_is_tried() -> None:
    endpoints = pool()
    endpoints.failed(endpoints.endpoints[0], "ConnectionError", 0.0)
    endpoints.failed(endpoints.endpoints[0], "ConnectionError", 0.0)  # waits 2 s
    endpoints.failed(endpoints.endpoints[1], "ConnectionError", 0.0)  # waits 1 s
    assert endpoints.choose(0.1).url == SECOND


def test_urls_are_logged_without_user_info_or_path() -> None:
    assert redacted(PRIMARY) == "https://primary.example:8545"
    assert redacted("http://node") == "http://node"
