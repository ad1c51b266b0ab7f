"""The public-API client's endpoint order, rounds and verdicts, over a scripted transport."""

from __future__ import annotations

import pytest

from chainloom.publicrpc import (
    CallFailedError,
    Endpoint,
    EndpointConfigError,
    FetchStatus,
    PublicRpcClient,
    PublicRpcUnavailableError,
)
from chainloom.settings import PublicRpcSettings
from chainloom.settings.parts import PublicRpcBackoffSettings
from chainloom.wormhole import parse_vaa
from chainloom_dev.sim.dev_guardians import DevGuardians

GUARDIANS = DevGuardians(count=4)
EMITTER = "00" * 31 + "04"
VAA = GUARDIANS.sign(
    emitter_chain=2, emitter_address=bytes.fromhex(EMITTER), sequence=7, payload=b"x"
).to_bytes()
OTHER = GUARDIANS.sign(
    emitter_chain=2, emitter_address=bytes.fromhex(EMITTER), sequence=8, payload=b"x"
).to_bytes()


class Script:
    """A transport answering per endpoint from a list of answers (bytes, None or an error)."""

    def __init__(self, answers: dict[str, list[object]], down: tuple[str, ...] = ()) -> None:
        self.answers = answers
        self.down = down
        self.calls: list[tuple[str, float]] = []
        self.closed = False

    def get_signed_vaa(
        self, endpoint: Endpoint, chain: int, emitter: str, sequence: int, timeout: float
    ) -> bytes | None:
        self.calls.append((endpoint.text, timeout))
        answers = self.answers[endpoint.text]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, CallFailedError):
            raise answer
        assert answer is None or isinstance(answer, bytes)
        return answer

    def reachable(self, endpoint: Endpoint, timeout: float) -> str | None:
        return "refused" if endpoint.text in self.down else None

    def close(self) -> None:
        self.closed = True


def _outage(endpoint: str) -> CallFailedError:
    return CallFailedError(endpoint, "UNAVAILABLE", "connection refused", retryable=True)


def _client(
    script: Script, *endpoints: str, rounds: int = 3
) -> tuple[PublicRpcClient, list[float]]:
    waits: list[float] = []
    settings = PublicRpcSettings(
        endpoints=endpoints,
        timeout=1.5,
        rounds=rounds,
        backoff=PublicRpcBackoffSettings(initial=0.1, maximum=1, jitter=0),
    )
    return PublicRpcClient(settings, transport=script, sleep=waits.append), waits


def _fetch(client: PublicRpcClient):
    vaa = parse_vaa(VAA)
    return client.fetch(vaa.emitter_chain, vaa.emitter_address.hex(), vaa.sequence)


def test_the_first_endpoint_with_the_vaa_ends_the_search():
    script = Script({"a:1": [VAA], "b:1": [VAA]})
    client, waits = _client(script, "a:1", "b:1")
    result = _fetch(client)
    assert result.status is FetchStatus.FOUND
    assert (result.vaa, result.endpoint, result.calls) == (VAA, "a:1", 1)
    assert script.calls == [("a:1", 1.5)]
    assert waits == []


def test_not_found_and_outages_fall_through_to_the_next_endpoint():
    script = Script({"a:1": [None], "b:1": [_outage("b:1")], "c:1": [VAA]})
    client, waits = _client(script, "a:1", "b:1", "c:1")
    result = _fetch(client)
    assert result.status is FetchStatus.FOUND
    assert result.endpoint == "c:1"
    assert [c[0] for c in script.calls] == ["a:1", "b:1", "c:1"]
    assert waits == []


def test_not_found_everywhere_is_not_found_without_retrying():
    script = Script({"a:1": [None], "b:1": [None]})
    client, waits = _client(script, "a:1", "b:1")
    result = _fetch(client)
    assert result.status is FetchStatus.NOT_FOUND
    assert result.reason == "not found at a:1, b:1"
    assert result.calls == 2
    assert waits == []


def test_failed_endpoints_are_asked_again_after_a_backoff_and_may_answer():
    script = Script({"a:1": [None], "b:1": [_outage("b:1"), _outage("b:1"), VAA]})
    client, waits = _client(script, "a:1", "b:1")
    result = _fetch(client)
    assert result.status is FetchStatus.FOUND
    assert result.endpoint == "b:1"
    assert [c[0] for c in script.calls] == ["a:1", "b:1", "b:1", "b:1"]  # a:1 said NotFound once
    assert waits == [0.1, 0.2]


def test_an_endpoint_failing_every_round_makes_an_error_naming_every_answer():
    script = Script({"a:1": [None], "b:1": [_outage("b:1")]})
    client, waits = _client(script, "a:1", "b:1", rounds=3)
    result = _fetch(client)
    assert result.status is FetchStatus.ERROR
    assert result.reason == "b:1: UNAVAILABLE: connection refused; not found at a:1"
    assert result.calls == 4
    assert len(waits) == 2


def test_refusals_and_wrong_answers_are_not_retried():
    refused = CallFailedError("a:1", "INVALID_ARGUMENT", "bad address", retryable=False)
    script = Script({"a:1": [refused], "b:1": [OTHER]})
    client, waits = _client(script, "a:1", "b:1")
    result = _fetch(client)
    assert result.status is FetchStatus.ERROR
    assert "a:1: INVALID_ARGUMENT: bad address" in result.reason
    assert "b:1: BAD_ANSWER: answered message 2/" in result.reason
    assert result.calls == 2
    assert waits == []


def test_reachability_and_endpoint_texts():
    script = Script({"a:1": [None], "b:1": [None]}, down=("a:1",))
    client, _ = _client(script, "a:1", "b:1")
    assert client.check_reachable() == ["b:1"]
    script.down = ("a:1", "b:1")
    with pytest.raises(PublicRpcUnavailableError, match="a:1: refused; b:1: refused"):
        client.check_reachable()
    client.close()
    assert script.closed
    assert Endpoint.parse("https://guardian.example") == Endpoint(
        "https://guardian.example", "guardian.example:443", True
    )
    assert Endpoint.parse("http://127.0.0.1:7071").target == "127.0.0.1:7071"
    for bad in ("guardian", "host:port", "https://h/x", "h:70000"):
        with pytest.raises(EndpointConfigError):
            Endpoint.parse(bad)
    with pytest.raises(EndpointConfigError):
        PublicRpcClient(PublicRpcSettings())
