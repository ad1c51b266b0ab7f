"""Fetching one signed VAA from guardian public-API endpoints, asked in turn.

Why in turn and not all at once: a backfill asks for thousands of messages, and the first
endpoint usually has them; the others are there for when it does not (a guardian that joined
late, one that pruned old VAAs) or cannot answer. For one message :meth:`PublicRpcClient.fetch`

* asks each endpoint in order, each call bounded by ``timeout``; the first VAA returned for
  the requested id ends the search (``found``);
* an endpoint answering NOT_FOUND is not asked again for that message; one that fails with an
  outage-like status (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, ...) is asked again in the next
  round, after a backoff (:class:`chainloom.backoff.Backoff`), up to ``rounds`` rounds; one
  that refuses the request (INVALID_ARGUMENT, ...) or answers another message's bytes is not;
* the result says ``not_found`` only when every endpoint answered NOT_FOUND, and ``error``
  with every endpoint's last error when some never answered: a message nobody could be asked
  about is not known to be missing.

The gRPC calls sit behind :class:`Transport` so the order, rounds and verdicts are tested
without a server (tests/unit/publicrpc); :class:`GrpcTransport` is the real one (one channel
per endpoint, opened on first use). Synchronous on purpose: Spark tasks call it directly, an
asyncio service runs it in a thread.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import grpc

from chainloom.publicrpc.errors import (
    CallFailedError,
    EndpointConfigError,
    PublicRpcUnavailableError,
)
from chainloom.rpc.generated.publicrpc.v1 import publicrpc_pb2, publicrpc_pb2_grpc
from chainloom.settings import PublicRpcSettings
from chainloom.wormhole import parse_vaa
from chainloom.wormhole.errors import WormholeError

RETRYABLE = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED",
                       "INTERNAL", "UNKNOWN", "CANCELLED"})  # fmt: skip
"""gRPC status names after which the same endpoint is asked again (next round)."""

REASON_LIMIT = 400
"""Longest reason text kept in a result (errors of many endpoints are joined)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One guardian public-API endpoint."""

    text: str
    """As configured (what messages name)."""
    target: str
    """``host:port`` for the gRPC channel."""
    tls: bool
    """Whether the channel uses TLS (``https://``) or plaintext."""

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """``host:port`` (plaintext), ``http://host:port`` or ``https://host[:port]`` (TLS,
        port 443 by default)."""
        value = text.strip()
        tls = value.startswith("https://")
        rest = value.removeprefix("https://").removeprefix("http://").rstrip("/")
        if tls and ":" not in rest.rsplit("]", 1)[-1]:
            rest += ":443"
        host, _, port = rest.rpartition(":")
        if not host or "/" in rest or not port.isdigit() or not 0 < int(port) < 65536:
            raise EndpointConfigError(
                f"public API endpoint {text!r} is not host:port or https://host[:port]"
            )
        return cls(text=value, target=rest, tls=tls)


class FetchStatus(StrEnum):
    """What asking the endpoints for one message came to."""

    FOUND = "found"
    """An endpoint returned the VAA of the requested id."""
    NOT_FOUND = "not_found"
    """Every endpoint answered NOT_FOUND."""
    ERROR = "error"
    """No endpoint returned it and at least one never gave an answer (see the reason)."""


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of :meth:`PublicRpcClient.fetch` for one message id."""

    chain: int
    """Emitter chain of the requested id."""
    emitter: str
    """Emitter address of the requested id (64 lower-case hex characters)."""
    sequence: int
    """Sequence of the requested id."""
    status: FetchStatus
    """Found, not found, or error."""
    vaa: bytes | None = None
    """The signed VAA's bytes (found only; not yet verified)."""
    endpoint: str | None = None
    """The endpoint that returned it (found only)."""
    calls: int = 0
    """GetSignedVAA calls made for this message, over every endpoint and round."""
    reason: str = ""
    """Why it was not found: the endpoints' last errors, or who answered NOT_FOUND."""

    @property
    def message_id(self) -> str:
        """``chain/emitter/sequence``."""
        return f"{self.chain}/{self.emitter}/{self.sequence}"


class Transport(Protocol):
    """One GetSignedVAA call to one endpoint; :class:`GrpcTransport` is the real one."""

    def get_signed_vaa(
        self, endpoint: Endpoint, chain: int, emitter: str, sequence: int, timeout: float
    ) -> bytes | None:
        """The VAA's bytes, or None when the endpoint answers NOT_FOUND; raises
        :class:`CallFailedError` for any other failure."""
        ...

    def reachable(self, endpoint: Endpoint, timeout: float) -> str | None:
        """None when a connection to ``endpoint`` opens within ``timeout``, else why not."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class GrpcTransport:
    """GetSignedVAA over gRPC, one channel per endpoint kept open between calls."""

    def __init__(self) -> None:
        self._channels: dict[Endpoint, tuple[grpc.Channel, Any]] = {}

    def _stub(self, endpoint: Endpoint) -> Any:
        entry = self._channels.get(endpoint)
        if entry is None:
            channel = (
                grpc.secure_channel(endpoint.target, grpc.ssl_channel_credentials())
                if endpoint.tls
                else grpc.insecure_channel(endpoint.target)
            )
            entry = self._channels[endpoint] = (
                channel,
                publicrpc_pb2_grpc.PublicRPCServiceStub(channel),
            )
        return entry[1]

    def get_signed_vaa(
        self, endpoint: Endpoint, chain: int, emitter: str, sequence: int, timeout: float
    ) -> bytes | None:
        request = publicrpc_pb2.GetSignedVAARequest(
            message_id=publicrpc_pb2.MessageID(
                emitter_chain=chain,  # type: ignore[arg-type] # proto3 enums are open
                emitter_address=emitter,
                sequence=sequence,
            )
        )
        try:
            response = self._stub(endpoint).GetSignedVAA(request, timeout=timeout)
        except grpc.RpcError as error:
            code = error.code() if isinstance(error, grpc.Call) else None
            name = code.name if code is not None else "UNKNOWN"
            if name == "NOT_FOUND":
                return None
            detail = error.details() if isinstance(error, grpc.Call) else str(error)
            raise CallFailedError(
                endpoint.text, name, " ".join((detail or "").split()), retryable=name in RETRYABLE
            ) from None
        raw: bytes = response.vaa_bytes
        return raw

    def reachable(self, endpoint: Endpoint, timeout: float) -> str | None:
        self._stub(endpoint)
        channel = self._channels[endpoint][0]
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return f"no connection within {timeout:g} s"
        return None

    def close(self) -> None:
        for channel, _ in self._channels.values():
            channel.close()
        self._channels.clear()


class PublicRpcClient:
    """Fetches signed VAAs from the configured endpoints (see the module docstring)."""

    def __init__(
        self,
        settings: PublicRpcSettings,
        *,
        transport: Transport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not settings.endpoints:
            raise EndpointConfigError("no public API endpoint configured (public_rpc.endpoints)")
        self.settings = settings
        self.endpoints = tuple(Endpoint.parse(text) for text in settings.endpoints)
        """The endpoints, in the order they are asked."""
        self.transport: Transport = transport or GrpcTransport()
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not a secret
        self._backoff = settings.backoff.schedule()

    def __enter__(self) -> PublicRpcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    def check_reachable(self, timeout: float | None = None) -> list[str]:
        """The endpoints a connection opens to; :class:`PublicRpcUnavailableError` naming
        each one's problem when there is none."""
        wait = self.settings.timeout if timeout is None else timeout
        problems = {e.text: self.transport.reachable(e, wait) for e in self.endpoints}
        up = [text for text, problem in problems.items() if problem is None]
        if not up:
            raise PublicRpcUnavailableError(
                "no public API endpoint reachable: "
                + "; ".join(f"{text}: {problem}" for text, problem in problems.items())
            )
        return up

    def fetch(self, chain: int, emitter: str, sequence: int) -> FetchResult:
        """Ask the endpoints for message ``chain/emitter/sequence`` (emitter: 64 hex)."""
        pending = list(self.endpoints)
        not_found: list[str] = []
        failures: dict[str, CallFailedError] = {}
        calls = 0
        for round_number in range(self.settings.rounds):
            if round_number:
                self._sleep(self._backoff.delay(round_number - 1, self._rng))
            again = []
            for endpoint in pending:
                calls += 1
                try:
                    raw = self.transport.get_signed_vaa(
                        endpoint, chain, emitter, sequence, self.settings.timeout
                    )
                    if raw is not None:
                        _check_identity(endpoint, raw, chain, emitter, sequence)
                except CallFailedError as failure:
                    failures[endpoint.text] = failure
                    if failure.retryable:
                        again.append(endpoint)
                    continue
                failures.pop(endpoint.text, None)
                if raw is None:
                    not_found.append(endpoint.text)
                    continue
                return FetchResult(chain, emitter, sequence, FetchStatus.FOUND, raw,
                                   endpoint.text, calls)  # fmt: skip
            pending = again
            if not pending:
                break
        if failures:
            parts = [str(failure) for failure in failures.values()]
            if not_found:
                parts.append("not found at " + ", ".join(not_found))
            return FetchResult(chain, emitter, sequence, FetchStatus.ERROR, calls=calls,
                               reason=_limit("; ".join(parts)))  # fmt: skip
        return FetchResult(chain, emitter, sequence, FetchStatus.NOT_FOUND, calls=calls,
                           reason=_limit("not found at " + ", ".join(not_found)))  # fmt: skip


def _check_identity(
    endpoint: Endpoint, raw: bytes, chain: int, emitter: str, sequence: int
) -> None:
    """An answer must be a VAA of the requested id (a broken endpoint is not trusted)."""
    try:
        vaa = parse_vaa(raw)
    except WormholeError as error:
        raise CallFailedError(
            endpoint.text, "BAD_ANSWER", f"not a VAA: {error}", retryable=False
        ) from None
    answered = (vaa.emitter_chain, vaa.emitter_address.hex(), vaa.sequence)
    if answered != (chain, emitter, sequence):
        raise CallFailedError(
            endpoint.text,
            "BAD_ANSWER",
            f"answered message {answered[0]}/{answered[1]}/{answered[2]}",
            retryable=False,
        )


def _limit(text: str) -> str:
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 3] + "..."
