"""A :class:`~chainloom.ledger.sources.base.LedgerSource` speaking rippled's gRPC API.

The same three calls Clio's ETL makes: ``GetLedger`` with transactions and the state diff for
each new ledger, ``GetLedgerData`` paged by marker for the first ledger's full state, and
``GetLedger`` on the validated shortcut for the network's newest ledger (the lag). A ledger
the server does not have yet is ``NOT_FOUND``: the ETL then waits (``--follow``) or stops. A
ledger the server lacks although it has validated later ones is a gap in its history, not the
end of it: that, and an answer for another ledger than the one asked, is
:class:`~chainloom.ledger.sources.errors.LedgerSequenceError`.
Transient failures (``UNAVAILABLE``, deadlines) are retried with backoff before giving up.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TypeVar

import grpc

from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.sources.errors import LedgerSequenceError, LedgerSourceError
from chainloom.ledger.types import LedgerHeader, LedgerObject
from chainloom.rpc.generated.org.xrpl.rpc.v1 import (
    get_ledger_data_pb2,
    get_ledger_pb2,
    ledger_pb2,
)

T = TypeVar("T")

_MAX_MESSAGE = 256 * 1024 * 1024
_RETRIED = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}
)


class GrpcLedgerSource:
    """Ledgers from a rippled (or replay) server at ``host:port``."""

    def __init__(
        self,
        address: str,
        *,
        start: int | None = None,
        timeout: float = 30.0,
        retries: int = 5,
    ) -> None:
        self.address = address
        self._start = start
        self._timeout = timeout
        self._retries = retries
        self._channel = grpc.insecure_channel(
            address,
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
            ],
        )
        service = "/org.xrpl.rpc.v1.XRPLedgerAPIService/"
        self._get_ledger_call = self._channel.unary_unary(
            service + "GetLedger",
            request_serializer=get_ledger_pb2.GetLedgerRequest.SerializeToString,
            response_deserializer=get_ledger_pb2.GetLedgerResponse.FromString,
        )
        self._get_ledger_data_call = self._channel.unary_unary(
            service + "GetLedgerData",
            request_serializer=get_ledger_data_pb2.GetLedgerDataRequest.SerializeToString,
            response_deserializer=get_ledger_data_pb2.GetLedgerDataResponse.FromString,
        )
        self._latest: tuple[float, int | None] = (0.0, None)

    def _call(self, what: str, call: Callable[[], T]) -> T | None:
        """Run ``call``; None on NOT_FOUND; retry transient errors; else LedgerSourceError."""
        delay = 0.1
        for attempt in range(self._retries + 1):
            try:
                return call()
            except grpc.RpcError as failed:
                code = failed.code()
                if code == grpc.StatusCode.NOT_FOUND:
                    return None
                if code not in _RETRIED or attempt == self._retries:
                    raise LedgerSourceError(
                        f"gRPC source {self.address}: {what} failed: {code.name} {failed.details()}"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _get_ledger(
        self, specifier: ledger_pb2.LedgerSpecifier, *, transactions: bool, objects: bool
    ) -> get_ledger_pb2.GetLedgerResponse | None:
        request = get_ledger_pb2.GetLedgerRequest(
            ledger=specifier,
            transactions=transactions,
            expand=transactions,
            get_objects=objects,
            user="ETL",
        )
        response: get_ledger_pb2.GetLedgerResponse | None = self._call(
            "GetLedger", functools.partial(self._get_ledger_call, request, timeout=self._timeout)
        )
        return response

    def latest_sequence(self) -> int | None:
        """The server's newest validated ledger (asked at most once a second)."""
        asked_at, known = self._latest
        if time.monotonic() - asked_at < 1.0 and known is not None:
            return known
        return self._validated_sequence()

    def _validated_sequence(self) -> int | None:
        """Ask the server for its newest validated ledger now (and remember the answer)."""
        validated = ledger_pb2.LedgerSpecifier(
            shortcut=ledger_pb2.LedgerSpecifier.SHORTCUT_VALIDATED
        )
        response = self._get_ledger(validated, transactions=False, objects=False)
        sequence = None
        if response is not None and response.ledger_header:
            sequence = LedgerHeader.parse(response.ledger_header).sequence
        self._latest = (time.monotonic(), sequence)
        return sequence

    def first_sequence(self) -> int:
        """``start`` if given, else the newest validated ledger."""
        if self._start is not None:
            return self._start
        latest = self.latest_sequence()
        if latest is None:
            raise LedgerSourceError(f"gRPC source {self.address} has no validated ledger")
        return latest

    def _ledger(self, sequence: int, *, objects: bool) -> get_ledger_pb2.GetLedgerResponse | None:
        return self._get_ledger(
            ledger_pb2.LedgerSpecifier(sequence=sequence), transactions=True, objects=objects
        )

    @staticmethod
    def _transactions(
        response: get_ledger_pb2.GetLedgerResponse,
    ) -> tuple[tuple[bytes, bytes], ...]:
        return tuple(
            (t.transaction_blob, t.metadata_blob) for t in response.transactions_list.transactions
        )

    def fetch_full(self, sequence: int) -> SourceLedger:
        """The header and transactions (GetLedger), then the state page by page
        (GetLedgerData)."""
        response = self._ledger(sequence, objects=False)
        if response is None:
            raise LedgerSourceError(f"gRPC source {self.address} does not have ledger {sequence}")
        self._check_answer(response, sequence)
        objects: list[LedgerObject] = []
        marker = b""
        while True:
            request = get_ledger_data_pb2.GetLedgerDataRequest(
                ledger=ledger_pb2.LedgerSpecifier(sequence=sequence), marker=marker, user="ETL"
            )
            page: get_ledger_data_pb2.GetLedgerDataResponse | None = self._call(
                "GetLedgerData",
                functools.partial(self._get_ledger_data_call, request, timeout=self._timeout),
            )
            if page is None:
                raise LedgerSourceError(
                    f"gRPC source {self.address}: the state of ledger {sequence} is not available"
                )
            objects.extend(LedgerObject(o.key, o.data) for o in page.ledger_objects.objects)
            if not page.marker:
                break
            marker = page.marker
        return SourceLedger(
            header=response.ledger_header,
            transactions=self._transactions(response),
            objects=tuple(objects),
            is_full_state=True,
        )

    def fetch_diff(self, sequence: int) -> SourceLedger | None:
        """GetLedger with transactions and the state diff; None if the server has not
        validated it yet.

        A server that has validated a later ledger but not this one skips it: that raises
        :class:`LedgerSequenceError`, as does an answer for a different ledger.
        """
        response = self._ledger(sequence, objects=True)
        if response is None:
            validated = self._validated_sequence()
            if validated is None or validated <= sequence:
                return None
            # Asked again: the ledger may have been validated between the two calls.
            response = self._ledger(sequence, objects=True)
            if response is None:
                raise LedgerSequenceError(
                    f"gRPC source {self.address}: ledger {sequence} is missing: the server "
                    f"has validated ledgers up to {validated} but answers NOT_FOUND for "
                    f"{sequence}",
                    expected=sequence,
                )
        self._check_answer(response, sequence)
        if not response.objects_included:
            raise LedgerSourceError(
                f"gRPC source {self.address}: ledger {sequence} came without its state diff"
            )
        return SourceLedger(
            header=response.ledger_header,
            transactions=self._transactions(response),
            objects=tuple(LedgerObject(o.key, o.data) for o in response.ledger_objects.objects),
            is_full_state=False,
        )

    def _check_answer(self, response: get_ledger_pb2.GetLedgerResponse, sequence: int) -> None:
        """Refuse an answer about another ledger than the one asked for."""
        header = response.ledger_header
        answered = int.from_bytes(header[:4], "big") if len(header) >= 4 else None
        if answered is not None and answered != sequence:
            raise LedgerSequenceError(
                f"gRPC source {self.address}: asked for ledger {sequence}, the server answered "
                f"with ledger {answered}",
                expected=sequence,
                found=answered,
            )

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
