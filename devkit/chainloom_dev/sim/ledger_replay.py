"""A replay server: serves a ledger dump over rippled's gRPC API (``org.xrpl.rpc.v1``).

Why: the gRPC source must be tested against a real gRPC server speaking rippled's messages, and
a demo needs a "network" without running rippled. The server holds the dump in memory and
answers ``GetLedger`` (header, transactions, the diff with CREATED / MODIFIED / DELETED),
``GetLedgerData`` (the full state of any ledger of the dump, paged by marker),
``GetLedgerDiff`` (between two ledgers) and ``GetLedgerEntry``. With ``interval`` > 0 it
releases one ledger per interval, like a live network, so a follower has a real lag.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left, bisect_right
from concurrent import futures
from pathlib import Path

import grpc

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.sources.dump import DumpFile
from chainloom.ledger.types import LedgerHeader
from chainloom.ledger.xrpl.hashing import transaction_id
from chainloom.rpc.generated.org.xrpl.rpc.v1 import (
    get_ledger_data_pb2,
    get_ledger_diff_pb2,
    get_ledger_entry_pb2,
    get_ledger_pb2,
    ledger_pb2,
)

SERVICE = "org.xrpl.rpc.v1.XRPLedgerAPIService"
"""The gRPC service name (package + service of ``xrp_ledger.proto``)."""

PAGE_SIZE = 1024
"""Objects per GetLedgerData page."""

_MOD = ledger_pb2.RawLedgerObject


class _Ledgers:
    """The dump in memory: headers, transactions, diffs with modification types, states."""

    def __init__(self, path: Path) -> None:
        dump = DumpFile(path)
        try:
            records = list(dump)
        finally:
            dump.close()
        first_sequence, first = records[0]
        if not first.is_full_state:
            raise LedgerInputError(f"{path}: the first record must hold a full state")
        self.first = first_sequence
        self.last = records[-1][0]
        self.headers: dict[int, bytes] = {}
        self.by_hash: dict[bytes, int] = {}
        self.transactions: dict[int, tuple[tuple[bytes, bytes], ...]] = {}
        self.diffs: dict[int, list[ledger_pb2.RawLedgerObject]] = {}
        self._checkpoints: dict[int, dict[bytes, bytes]] = {}
        state: dict[bytes, bytes] = {}
        for sequence, record in records:
            header = LedgerHeader.parse(record.header)
            self.headers[sequence] = header.serialize(include_hash=True)
            self.by_hash[header.hash] = sequence
            self.transactions[sequence] = record.transactions
            if record.is_full_state:
                state = {o.key: o.blob for o in record.objects}
                self.diffs[sequence] = []
            else:
                diff = []
                for obj in record.objects:
                    if not obj.blob:
                        kind = _MOD.DELETED
                        state.pop(obj.key, None)
                    else:
                        kind = _MOD.MODIFIED if obj.key in state else _MOD.CREATED
                        state[obj.key] = obj.blob
                    diff.append(_MOD(key=obj.key, data=obj.blob, mod_type=kind))
                self.diffs[sequence] = diff
            if (sequence - self.first) % 64 == 0 or sequence == self.last:
                self._checkpoints[sequence] = dict(state)
        self._checkpoint_list = sorted(self._checkpoints)
        self._cache: tuple[int, list[tuple[bytes, bytes]]] | None = None
        self._lock = threading.Lock()

    def state(self, sequence: int) -> list[tuple[bytes, bytes]]:
        """The sorted state at ``sequence`` (from the nearest checkpoint at or below it)."""
        with self._lock:
            if self._cache is not None and self._cache[0] == sequence:
                return self._cache[1]
            base = self._checkpoint_list[bisect_right(self._checkpoint_list, sequence) - 1]
            state = dict(self._checkpoints[base])
            for later in range(base + 1, sequence + 1):
                for obj in self.diffs[later]:
                    if obj.data:
                        state[obj.key] = obj.data
                    else:
                        state.pop(obj.key, None)
            ordered = sorted(state.items())
            self._cache = (sequence, ordered)
            return ordered


class _Servicer:
    def __init__(self, ledgers: _Ledgers, interval: float) -> None:
        self._ledgers = ledgers
        self._interval = interval
        self._started = time.monotonic()

    def released(self) -> int:
        """The newest ledger "validated" so far."""
        if self._interval <= 0:
            return self._ledgers.last
        steps = int((time.monotonic() - self._started) / self._interval)
        return min(self._ledgers.first + steps, self._ledgers.last)

    def _resolve(self, specifier: ledger_pb2.LedgerSpecifier, context: grpc.ServicerContext) -> int:
        which = specifier.WhichOneof("ledger")
        if which == "sequence":
            sequence = specifier.sequence
        elif which == "hash":
            found = self._ledgers.by_hash.get(specifier.hash)
            sequence = -1 if found is None else found
        else:
            sequence = self.released()
        if not self._ledgers.first <= sequence <= self.released():
            context.abort(grpc.StatusCode.NOT_FOUND, "ledger not found")
        return sequence

    def get_ledger(
        self, request: get_ledger_pb2.GetLedgerRequest, context: grpc.ServicerContext
    ) -> get_ledger_pb2.GetLedgerResponse:
        sequence = self._resolve(request.ledger, context)
        response = get_ledger_pb2.GetLedgerResponse(
            ledger_header=self._ledgers.headers[sequence], validated=True, is_unlimited=True
        )
        if request.transactions:
            pairs = self._ledgers.transactions[sequence]
            if request.expand:
                response.transactions_list.transactions.extend(
                    get_ledger_pb2.TransactionAndMetadata(transaction_blob=t, metadata_blob=m)
                    for t, m in pairs
                )
            else:
                response.hashes_list.hashes.extend(transaction_id(t) for t, _ in pairs)
        if request.get_objects and sequence != self._ledgers.first:
            response.ledger_objects.objects.extend(self._ledgers.diffs[sequence])
            response.objects_included = True
            response.skiplist_included = True
        return response

    def get_ledger_data(
        self, request: get_ledger_data_pb2.GetLedgerDataRequest, context: grpc.ServicerContext
    ) -> get_ledger_data_pb2.GetLedgerDataResponse:
        sequence = self._resolve(request.ledger, context)
        state = self._ledgers.state(sequence)
        keys = [key for key, _ in state]
        start = bisect_right(keys, request.marker) if request.marker else 0
        end = bisect_left(keys, request.end_marker) if request.end_marker else len(keys)
        page = state[start : min(end, start + PAGE_SIZE)]
        response = get_ledger_data_pb2.GetLedgerDataResponse(
            ledger_index=sequence,
            ledger_hash=self._ledgers.headers[sequence][118:],
            is_unlimited=True,
        )
        response.ledger_objects.objects.extend(_MOD(key=k, data=b) for k, b in page)
        if start + PAGE_SIZE < end:
            response.marker = page[-1][0]
        return response

    def get_ledger_diff(
        self, request: get_ledger_diff_pb2.GetLedgerDiffRequest, context: grpc.ServicerContext
    ) -> get_ledger_diff_pb2.GetLedgerDiffResponse:
        base = dict(self._ledgers.state(self._resolve(request.base_ledger, context)))
        desired = dict(self._ledgers.state(self._resolve(request.desired_ledger, context)))
        response = get_ledger_diff_pb2.GetLedgerDiffResponse()
        for key in sorted(base.keys() | desired.keys()):
            before, after = base.get(key), desired.get(key)
            if before == after:
                continue
            kind = (
                _MOD.CREATED if before is None else _MOD.DELETED if after is None else _MOD.MODIFIED
            )
            data = (after or b"") if request.include_blobs else b""
            response.ledger_objects.objects.append(_MOD(key=key, data=data, mod_type=kind))
        return response

    def get_ledger_entry(
        self, request: get_ledger_entry_pb2.GetLedgerEntryRequest, context: grpc.ServicerContext
    ) -> get_ledger_entry_pb2.GetLedgerEntryResponse:
        sequence = self._resolve(request.ledger, context)
        blob = dict(self._ledgers.state(sequence)).get(request.key)
        if blob is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "object not found")
            raise AssertionError("unreachable")  # abort raises
        return get_ledger_entry_pb2.GetLedgerEntryResponse(
            ledger_object=_MOD(key=request.key, data=blob),
            ledger=ledger_pb2.LedgerSpecifier(sequence=sequence),
        )


class ReplayServer:
    """A gRPC server replaying one dump."""

    def __init__(self, dump: Path, *, interval: float = 0.0) -> None:
        self._servicer = _Servicer(_Ledgers(dump), interval)
        self._server: grpc.Server | None = None

    def start(self, address: str = "127.0.0.1:0") -> int:
        """Listen on ``host:port`` (port 0 = any free one); return the port."""
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4),
            options=[("grpc.max_send_message_length", 256 * 1024 * 1024)],
        )
        servicer = self._servicer
        handlers = {
            "GetLedger": grpc.unary_unary_rpc_method_handler(
                servicer.get_ledger,
                request_deserializer=get_ledger_pb2.GetLedgerRequest.FromString,
                response_serializer=get_ledger_pb2.GetLedgerResponse.SerializeToString,
            ),
            "GetLedgerData": grpc.unary_unary_rpc_method_handler(
                servicer.get_ledger_data,
                request_deserializer=get_ledger_data_pb2.GetLedgerDataRequest.FromString,
                response_serializer=get_ledger_data_pb2.GetLedgerDataResponse.SerializeToString,
            ),
            "GetLedgerDiff": grpc.unary_unary_rpc_method_handler(
                servicer.get_ledger_diff,
                request_deserializer=get_ledger_diff_pb2.GetLedgerDiffRequest.FromString,
                response_serializer=get_ledger_diff_pb2.GetLedgerDiffResponse.SerializeToString,
            ),
            "GetLedgerEntry": grpc.unary_unary_rpc_method_handler(
                servicer.get_ledger_entry,
                request_deserializer=get_ledger_entry_pb2.GetLedgerEntryRequest.FromString,
                response_serializer=get_ledger_entry_pb2.GetLedgerEntryResponse.SerializeToString,
            ),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        port: int = server.add_insecure_port(address)
        if port == 0:
            raise LedgerInputError(f"cannot listen on {address}")
        server.start()
        self._server = server
        return port

    def wait(self) -> None:
        """Block until the server stops."""
        if self._server is not None:
            self._server.wait_for_termination()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None
