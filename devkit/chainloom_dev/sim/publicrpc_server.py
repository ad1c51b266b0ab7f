"""A gRPC server speaking the guardian public API's ``GetSignedVAA``, from files of VAAs or
from the event store.

Why it exists: gap backfill (``chainloom spark run gap-backfill``, the indexer's missed-VAA
recovery) fetches from ``publicrpc.v1.PublicRPCService/GetSignedVAA``, and tests and demos need
an endpoint they control. It answers as a guardian does where a client can observe it:

* the request names ``(emitter_chain, emitter_address hex, sequence)``; an address that is not
  hex of at most 32 bytes is ``INVALID_ARGUMENT``;
* a VAA it holds comes back as ``vaa_bytes``; one it does not is ``NOT_FOUND "requested VAA
  not found in store"``.

For tests it can also *withhold* messages it has (answered NOT_FOUND, as a guardian that never
saw them) and *fail* others (answered ``INTERNAL "internal server error"``, as a guardian whose
store errs), and it counts what it answered. Served by ``chainloom-dev spy serve-public-api``.

The archive is anything with ``get(id) -> bytes | None`` (:class:`VaaArchive`): a dict of the
files' VAAs, or :class:`StoreArchive`, which reads each request's ``QuorumState:SignedVAA``
cell from the events table, so a store can stand in for a guardian.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from chainloom.eventstore import schema
from chainloom.eventstore.errors import EventStoreError
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import EventReader
from chainloom.rpc.generated.publicrpc.v1 import publicrpc_pb2, publicrpc_pb2_grpc
from chainloom.spy.errors import SpyError
from chainloom.wormhole import parse_vaa
from chainloom.wormhole.errors import WormholeError
from chainloom_dev.sim.spy_server import MessageId, read_vaa_lines

NOT_FOUND_DETAIL = "requested VAA not found in store"
"""The guardian's detail text for a VAA it does not hold."""

FAILURE_DETAIL = "internal server error"
"""The detail text of a failure the server is told to answer."""


def message_id_of(raw: bytes) -> MessageId:
    """The id of a VAA (raises the wormhole library's error for bytes that are not one)."""
    vaa = parse_vaa(raw)
    return (vaa.emitter_chain, vaa.emitter_address.hex(), vaa.sequence)


def load_archive(paths: Iterable[str]) -> dict[MessageId, bytes]:
    """Every VAA in the files (hex or base64 lines; blank and ``#`` lines skipped), by id.

    A later copy of an id replaces an earlier one. SpyError names the file and line of a line
    that is not a VAA.
    """
    archive: dict[MessageId, bytes] = {}
    for path in paths:
        try:
            with open(path) as handle:
                for number, raw in enumerate(read_vaa_lines(handle, source=path), start=1):
                    try:
                        archive[message_id_of(raw)] = raw
                    except WormholeError as error:
                        raise SpyError(f"{path}: VAA {number}: {error}") from None
        except OSError as error:
            raise SpyError(f"cannot read {path}: {error.strerror}") from None
    return archive


class VaaArchive(Protocol):
    """Where the server looks a message up."""

    def get(self, key: MessageId, /) -> bytes | None:
        """The signed VAA of ``key``, or None when not held."""
        ...


class StoreArchive:
    """The signed VAAs of the event store, one row read per request (thread-safe reads)."""

    def __init__(self, reader: EventReader) -> None:
        self.reader = reader

    def get(self, key: MessageId, /) -> bytes | None:
        chain, emitter, sequence = key
        try:
            stored = self.reader.get(
                MessageKey(chain, emitter, sequence), families=[schema.QUORUM_STATE]
            )
        except EventStoreError as error:
            raise ArchiveUnavailableError(str(error)) from None
        return None if stored is None else stored.signed_vaa


class ArchiveUnavailableError(Exception):
    """The store behind a :class:`StoreArchive` did not answer (the call is UNAVAILABLE)."""


@dataclass(slots=True)
class PublicRpcCounters:
    """What the server answered since it started."""

    calls: int = 0
    """GetSignedVAA requests received."""
    found: int = 0
    """Answered with a VAA."""
    not_found: int = 0
    """Answered NOT_FOUND (not held, or withheld)."""
    failed: int = 0
    """Answered INTERNAL on purpose."""
    invalid: int = 0
    """Answered INVALID_ARGUMENT."""


class PublicRpcServicer(publicrpc_pb2_grpc.PublicRPCServiceServicer):
    """The GetSignedVAA method over an in-memory archive."""

    def __init__(
        self,
        archive: VaaArchive,
        *,
        withhold: Iterable[MessageId] = (),
        fail: Iterable[MessageId] = (),
    ) -> None:
        self.archive = archive
        """The VAAs it holds, by id."""
        self.withhold = set(withhold)
        """Ids answered NOT_FOUND even when held."""
        self.fail = set(fail)
        """Ids answered INTERNAL."""
        self.counters = PublicRpcCounters()
        """What it answered."""
        self._lock = threading.Lock()

    def GetSignedVAA(  # noqa: N802 - the generated servicer's method name
        self, request: publicrpc_pb2.GetSignedVAARequest, context: Any
    ) -> publicrpc_pb2.GetSignedVAAResponse:
        message = request.message_id
        emitter = message.emitter_address.lower().removeprefix("0x")
        valid = len(emitter) <= 64 and all(c in "0123456789abcdef" for c in emitter)
        key = (int(message.emitter_chain), emitter.rjust(64, "0"), int(message.sequence))
        with self._lock:
            self.counters.calls += 1
        if not valid:
            self._count("invalid")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid emitter address encoding")
        if key in self.fail:
            self._count("failed")
            context.abort(grpc.StatusCode.INTERNAL, FAILURE_DETAIL)
        try:
            raw = None if key in self.withhold else self.archive.get(key)
        except ArchiveUnavailableError as error:
            self._count("failed")
            context.abort(grpc.StatusCode.UNAVAILABLE, str(error))
        if raw is not None:
            self._count("found")
            return publicrpc_pb2.GetSignedVAAResponse(vaa_bytes=raw)
        self._count("not_found")
        context.abort(grpc.StatusCode.NOT_FOUND, NOT_FOUND_DETAIL)
        raise AssertionError("context.abort returned")  # it raises

    def _count(self, outcome: str) -> None:
        with self._lock:
            setattr(self.counters, outcome, getattr(self.counters, outcome) + 1)


class PublicRpcServer:
    """A plaintext gRPC server around a :class:`PublicRpcServicer` (threads, not asyncio, so a
    test or a CLI command runs it beside anything)."""

    def __init__(self, servicer: PublicRpcServicer, address: str = "127.0.0.1:7071") -> None:
        self.servicer = servicer
        self.address = address
        self.port = 0
        self._server: grpc.Server | None = None

    def start(self) -> int:
        """Bind and serve; the bound port (useful with port 0)."""
        server = grpc.server(ThreadPoolExecutor(max_workers=8, thread_name_prefix="publicrpc"))
        publicrpc_pb2_grpc.add_PublicRPCServiceServicer_to_server(self.servicer, server)
        try:
            self.port = server.add_insecure_port(self.address)
        except RuntimeError as error:
            raise SpyError(f"cannot listen on {self.address}: {error}") from None
        if self.port == 0:
            raise SpyError(f"cannot listen on {self.address}")
        server.start()
        self._server = server
        return self.port

    @property
    def target(self) -> str:
        """``host:port`` a client connects to."""
        return f"{self.address.rsplit(':', 1)[0]}:{self.port}"

    def stop(self, grace: float | None = 0.5) -> None:
        """Stop serving (calls in progress get ``grace`` seconds)."""
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (True) or ``timeout`` passes (False)."""
        if self._server is None:
            return True
        return bool(self._server.wait_for_termination(timeout))

    def __enter__(self) -> PublicRpcServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
