"""The app's request handling over in-memory reads: parsing before reading, statuses,
busy and outage answers (no Bigtable, no sockets: httpx's ASGI transport)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chainloom.eventstore.api.app import ERRORS, EventsApi, cursor_key, events_app
from chainloom.eventstore.api.config import EventsApiSettings
from chainloom.eventstore.api.params import Cursor
from chainloom.eventstore.errors import StoreConfigError, StoreUnavailableError
from chainloom.eventstore.filter_index import Filters
from chainloom.eventstore.filter_scan import FilteredPage
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import StoredMessage
from chainloom.eventstore.rollups import Volume
from chainloom.wormhole.sequences import OpenGap
from tests.unit.eventstore.api.rows import stored_row, transfer_vaa
from tests.unit.eventstore.api.schema_check import check


class MemoryReads:
    """Reads over a dict of messages, recording each call."""

    def __init__(self, messages: list[StoredMessage]) -> None:
        self.messages = {m.key: m for m in messages}
        self.calls: list[str] = []
        self.outage: StoredMessage | None = None
        self.gate: threading.Event | None = None

    def _called(self, name: str) -> None:
        self.calls.append(name)
        if self.gate is not None:
            self.gate.wait(10)

    def check(self) -> None:
        self._called("check")
        if self.outage is not None:
            raise StoreUnavailableError("emulator 127.0.0.1:1", "no answer within 1 s")

    def message(self, key: MessageKey) -> StoredMessage | None:
        self._called("message")
        if self.outage is not None:
            raise StoreUnavailableError("emulator 127.0.0.1:1", "no answer within 1 s")
        return self.messages.get(key)

    def emitter_page(
        self, chain: int, emitter: str, after: int | None, size: int
    ) -> tuple[list[StoredMessage], bool]:
        self._called("emitter_page")
        found = sorted(
            (m for k, m in self.messages.items() if (k.chain, k.emitter) == (chain, emitter)),
            key=lambda m: m.key.sequence,
        )
        found = [m for m in found if after is None or m.key.sequence > after]
        return found[:size], len(found) > size

    def chain_page(
        self, chain: int, after: Cursor | None, size: int
    ) -> tuple[list[StoredMessage], bool]:
        self._called("chain_page")
        return [], False

    def by_tx(self, tx_id: str) -> list[StoredMessage]:
        self._called("by_tx")
        return []

    def daily_counts(
        self, first: dt.date, last: dt.date, chain: int | None
    ) -> dict[tuple[int, str], int]:
        self._called("daily_counts")
        return {(2, first.isoformat()): 4}

    def open_gaps(
        self, chain: int | None, emitter: str | None
    ) -> tuple[list[OpenGap], int, list[str]]:
        self._called("open_gaps")
        return [], 0, []

    def filtered(self, filters: Filters, order: str, after: str | None, size: int) -> FilteredPage:
        self._called("filtered")
        return FilteredPage([], None, 0)

    def volume(
        self, dimension: str, first: dt.date, last: dt.date, by_hour: bool
    ) -> dict[tuple[str, str], Volume]:
        self._called("volume")
        return {}


def _messages(count: int) -> list[StoredMessage]:
    found = []
    for sequence in range(count):
        vaa = transfer_vaa(sequence)
        found.append(StoredMessage(MessageKey.parse(vaa.message_id), stored_row(vaa)))
    return found


MESSAGES = _messages(5)
EMITTER = MESSAGES[0].key.emitter


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    headers: httpx.Headers


def document() -> dict[str, Any]:
    return events_app(_api(MemoryReads([]))).openapi()


async def _ask(api: EventsApi, target: str, method: str = "GET") -> Response:
    transport = httpx.ASGITransport(app=events_app(api), client=("192.0.2.1", 4000))
    async with httpx.AsyncClient(transport=transport, base_url="http://events") as client:
        answer = await client.request(method, target)
    return Response(answer.status_code, answer.content, answer.headers)


def _get(api: EventsApi, target: str, method: str = "GET") -> Response:
    return asyncio.run(_ask(api, target, method))


def _body(response: Response) -> Any:
    return json.loads(response.body)


def _api(reads: MemoryReads, **settings: Any) -> EventsApi:
    return EventsApi(reads, EventsApiSettings(**settings))


def test_a_stored_message_and_a_missing_one() -> None:
    reads = MemoryReads(MESSAGES)
    api = _api(reads)
    found = _get(api, f"/api/v1/vaas/ethereum/0x{EMITTER.lstrip('0')}/3")
    assert found.status == 200
    check(document(), "/api/v1/vaas/{chain}/{emitter}/{seq}", 200, _body(found))
    assert _body(found)["data"]["sequence"] == 3
    missing = _get(api, f"/api/v1/vaas/2/{EMITTER}/99")
    assert missing.status == 404
    assert _body(missing) == {
        "error": "not_found",
        "reason": f"no message 2/{EMITTER}/99 is stored",
        "parameter": None,
    }
    api.close()


@pytest.mark.parametrize(
    ("target", "parameter"),
    [
        (f"/api/v1/vaas/nochain/{EMITTER}/1", "chain"),
        ("/api/v1/vaas/2/xyz/1", "emitter"),
        (f"/api/v1/vaas/2/{EMITTER}/-1", "seq"),
        (f"/api/v1/vaas/2/{EMITTER}?pageSize=0", "pageSize"),
        (f"/api/v1/vaas/2/{EMITTER}?pageSize=1001", "pageSize"),
        (f"/api/v1/vaas/2/{EMITTER}?cursor=nonsense", "cursor"),
        (f"/api/v1/vaas/2/{EMITTER}?limit=5", "limit"),
        ("/api/v1/stats/daily?from=2024-01-01", "to"),
        ("/api/v1/stats/daily?from=2024-01-01&to=2026-01-01", "to"),
        ("/api/v1/gaps?emitter=ab", "emitter"),
        # ASCII digits only: Arabic-Indic 2, fullwidth 2, a space before 2.
        ("/api/v1/vaas/%D9%A2", "chain"),
        ("/api/v1/vaas/%EF%BC%92", "chain"),
        ("/api/v1/vaas/%202", "chain"),
        (f"/api/v1/vaas/%D9%A2/{EMITTER}/1", "chain"),
        (f"/api/v1/vaas/2/{EMITTER}/%EF%BC%91", "seq"),
        ("/api/v1/gaps?chain=%D9%A2", "chain"),
        ("/api/v1/stats/daily?from=2024-01-01&to=2024-01-02&chain=%EF%BC%92", "chain"),
    ],
)
def test_bad_parameters_are_named_and_never_reach_the_store(target: str, parameter: str) -> None:
    reads = MemoryReads(MESSAGES)
    api = _api(reads)
    answer = _get(api, target)
    assert answer.status == 400
    body = _body(answer)
    assert body["parameter"] == parameter
    assert body["reason"].startswith(f"{parameter}: ")
    assert reads.calls == []
    api.close()


def test_pages_follow_the_cursor_and_end_with_null() -> None:
    api = _api(MemoryReads(MESSAGES))
    seen: list[int] = []
    target = f"/api/v1/vaas/2/{EMITTER}?pageSize=2"
    pages = 0
    while True:
        answer = _body(_get(api, target))
        check(document(), "/api/v1/vaas/{chain}/{emitter}", 200, answer)
        seen += [d["sequence"] for d in answer["data"]]
        pages += 1
        following = answer["pagination"]["next"]
        if following is None:
            break
        target = f"/api/v1/vaas/2/{EMITTER}?pageSize=2&cursor={following}"
    assert seen == [0, 1, 2, 3, 4]
    assert pages == 3
    api.close()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_a_cursor_the_server_did_not_issue_is_refused(tmp_path: Path) -> None:
    api = _api(MemoryReads(MESSAGES))
    issued = _body(_get(api, f"/api/v1/vaas/2/{EMITTER}?pageSize=2"))["pagination"]["next"]
    # The old, unsigned form of a cursor, written by hand: it would start after sequence 1.
    for forged in (_b64(f"v1:2:{EMITTER}:1"), _b64(f"v2:2:{EMITTER}:1"), issued[:-2] + "AA"):
        answer = _get(api, f"/api/v1/vaas/2/{EMITTER}?cursor={forged}")
        assert answer.status == 400, forged
        assert _body(answer)["parameter"] == "cursor"
    assert _get(api, f"/api/v1/vaas/2/{EMITTER}?cursor={issued}").status == 200
    # Another process (another random key) did not issue it either ...
    other = _api(MemoryReads(MESSAGES))
    assert _get(other, f"/api/v1/vaas/2/{EMITTER}?cursor={issued}").status == 400
    # ... unless both read the deployment's key from the same file.
    key = tmp_path / "cursor.key"
    key.write_bytes(os.urandom(32))
    first = _api(MemoryReads(MESSAGES), cursor_key_file=key)
    second = _api(MemoryReads(MESSAGES), cursor_key_file=key)
    shared = _body(_get(first, f"/api/v1/vaas/2/{EMITTER}?pageSize=2"))["pagination"]["next"]
    again = _body(_get(second, f"/api/v1/vaas/2/{EMITTER}?pageSize=2&cursor={shared}"))
    assert [d["sequence"] for d in again["data"]] == [2, 3]
    for each in (api, other, first, second):
        each.close()


def test_a_cursor_key_file_that_cannot_serve_is_refused(tmp_path: Path) -> None:
    short = tmp_path / "short.key"
    short.write_bytes(b"0123456789\n")
    with pytest.raises(StoreConfigError, match="holds 10 bytes"):
        cursor_key(short)
    with pytest.raises(StoreConfigError, match="cannot read it"):
        cursor_key(tmp_path / "missing.key")
    assert cursor_key(None) != cursor_key(None)


def test_an_outage_is_a_503_in_one_line() -> None:
    reads = MemoryReads(MESSAGES)
    reads.outage = MESSAGES[0]
    api = _api(reads)
    answer = _get(api, f"/api/v1/vaas/2/{EMITTER}/1")
    assert answer.status == 503
    body = _body(answer)
    check(document(), "/api/v1/vaas/{chain}/{emitter}/{seq}", 503, body)
    assert body["error"] == "unavailable"
    assert body["reason"] == "Bigtable unavailable at emulator 127.0.0.1:1: no answer within 1 s"
    api.close()


def test_requests_past_max_pending_are_refused_busy() -> None:
    reads = MemoryReads(MESSAGES)
    reads.gate = threading.Event()
    api = _api(reads, max_pending=1, workers=2)

    async def both() -> tuple[Response, Response]:
        target = f"/api/v1/vaas/2/{EMITTER}/1"
        first = asyncio.ensure_future(_ask(api, target))
        await asyncio.sleep(0.05)  # the first is now waiting on the store
        second = await _ask(api, target)
        assert reads.gate is not None
        reads.gate.set()
        return await first, second

    first, second = asyncio.run(both())
    assert first.status == 200
    assert second.status == 503
    assert _body(second)["error"] == "busy"
    api.close()


def test_methods_openapi_and_health() -> None:
    api = _api(MemoryReads([]))
    refused = _get(api, "/api/v1/gaps", method="DELETE")
    assert refused.status == 405
    check(document(), "/api/v1/gaps", "default", _body(refused))
    assert refused.headers["allow"] == "GET, HEAD"
    assert _get(api, "/nowhere").status == 404
    assert _body(_get(api, "/openapi.json"))["openapi"] == "3.1.0"
    assert _body(_get(api, "/healthz")) == {"status": "ok"}
    stats = _get(api, "/api/v1/stats/daily?from=2024-01-01&to=2024-01-02&chain=ethereum")
    check(document(), "/api/v1/stats/daily", 200, _body(stats))
    assert _body(stats)["chain"] == 2
    gaps = _get(api, "/api/v1/gaps?chain=2")
    check(document(), "/api/v1/gaps", 200, _body(gaps))
    refusal, _ = ERRORS.render(431, "request head exceeds 8192 bytes")
    assert json.loads(refusal)["error"] == "head_too_large"
    api.close()


def test_readiness_is_a_round_trip_to_the_store() -> None:
    reads = MemoryReads(MESSAGES)
    api = _api(reads, probe_interval=30)
    answer = _get(api, "/readyz")
    assert (answer.status, _body(answer)) == (200, {"status": "ready"})
    assert reads.calls == ["check"]  # the store was asked; /healthz never asks it
    assert _get(api, "/healthz").status == 200
    assert reads.calls == ["check"]
    reads.outage = MESSAGES[0]
    down = _get(api, "/readyz")
    assert down.status == 503
    check(document(), "/readyz", 503, _body(down))
    assert _get(api, "/healthz").status == 200  # liveness does not follow the store
    api.close()


def test_a_store_outage_opens_the_circuit_until_a_probe_finds_it_back() -> None:
    reads = MemoryReads(MESSAGES)
    reads.outage = MESSAGES[0]
    api = _api(reads, probe_interval=0.2)
    target = f"/api/v1/vaas/2/{EMITTER}/1"

    async def run() -> list[tuple[int, int]]:
        transport = httpx.ASGITransport(app=events_app(api))
        seen: list[tuple[int, int]] = []
        async with httpx.AsyncClient(transport=transport, base_url="http://events") as client:
            for _ in range(5):  # the first read finds the outage; the others are not tried
                seen.append(((await client.get(target)).status_code, len(reads.calls)))
            reads.outage = None  # the store is back; the next probe (every 0.2 s) finds it
            back = time.monotonic()
            while (status := (await client.get(target)).status_code) == 503:
                assert time.monotonic() - back < 5, "the circuit stayed open"
                await asyncio.sleep(0.05)
            seen.append((status, len(reads.calls)))
        return seen

    seen = asyncio.run(run())
    api.close()
    assert seen[:5] == [(503, 1)] * 5
    assert seen[5][0] == 200
    assert "check" in reads.calls  # the probe


def test_a_read_not_done_within_the_deadline_is_answered_503() -> None:
    reads = MemoryReads(MESSAGES)
    reads.gate = threading.Event()  # every read waits (up to 10 s)
    api = _api(reads, request_deadline=0.3, workers=1)
    target = f"/api/v1/vaas/2/{EMITTER}/1"

    async def run() -> list[tuple[int, str, float]]:
        transport = httpx.ASGITransport(app=events_app(api))
        async with httpx.AsyncClient(transport=transport, base_url="http://events") as client:

            async def timed() -> tuple[int, str, float]:
                start = time.monotonic()
                answer = await client.get(target)
                return answer.status_code, answer.json()["error"], time.monotonic() - start

            return list(await asyncio.gather(timed(), timed()))

    answers = asyncio.run(run())
    assert reads.gate is not None
    reads.gate.set()
    api.close()
    # One read runs and is late; the other never got the only thread.
    assert sorted(a[:2] for a in answers) == [(503, "busy"), (503, "unavailable")]
    assert all(seconds < 2.0 for *_, seconds in answers)  # not the 10 s the read would take
