"""Helpers for the ledger API's method tests: a generated history served over SQLite or
Cassandra, and the model of its newest ledger that answers are checked against; and for the
tests of ``ledger follow``, a generated live dump, its replay server (rippled's gRPC API) and
the check that a followed history equals a clean load of the dump.

The model is the newest ledger's objects decoded by xrpl-py's own codec
(``binarycodec.decode``), never by the API's code: trust lines from the RippleStates, owned
objects from the fields that name their owner, NFTs from the NFTokenPages.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner
from xrpl.clients import JsonRpcClient
from xrpl.core import binarycodec
from xrpl.models.response import Response

from chainloom.cli.ledger import ledger
from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.service import make_backend
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom.settings import CassandraSettings
from chainloom_dev.cli.ledger import ledger as dev_ledger
from chainloom_dev.sim.ledger_generator import WorkloadGenerator, vectors_ledger

FIRST = 38129
LEDGERS = 8
UNKNOWN = "rDsbeomae4FXwgQTJp9Rs64Qg9vDiTCdBv"  # a valid address with no AccountRoot

LSF_LOW_NO_RIPPLE, LSF_HIGH_NO_RIPPLE = 0x00100000, 0x00200000
LSF_DEFAULT_RIPPLE = 0x00800000


# ------------------------------------------------------------------------ the stored history


def make_dump(vectors_dir: Path, path: Path) -> Path:
    """Ledger ``FIRST``'s real state and ``LEDGERS`` generated ledgers, as a dump file."""
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = WorkloadGenerator(initial, seed=23, txs_per_ledger=60)
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
    return path


@dataclass
class State:
    """The newest ledger's objects, decoded by xrpl-py: the model the answers are checked
    against."""

    objects: dict[str, dict[str, Any]]
    """Every object by its key (upper-case hex)."""
    blobs: dict[str, str] = field(default_factory=dict)
    """Every object's blob (upper-case hex)."""

    def of_type(self, entry_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.objects.items() if v["LedgerEntryType"] == entry_type}

    def accounts(self) -> list[str]:
        return sorted(v["Account"] for v in self.of_type("AccountRoot").values())

    def lines_of(self, account: str) -> list[dict[str, Any]]:
        """The account's trust lines from its side, as the rippled docs define them."""
        found = []
        for line in self.of_type("RippleState").values():
            low, high = line["LowLimit"], line["HighLimit"]
            if account not in (low["issuer"], high["issuer"]):
                continue
            is_low = low["issuer"] == account
            own, other = (low, high) if is_low else (high, low)
            balance = Decimal(line["Balance"]["value"])
            found.append(
                {
                    "account": other["issuer"],
                    "currency": line["Balance"]["currency"],
                    "balance": balance if is_low else -balance,
                    "limit": Decimal(own["value"]),
                    "limit_peer": Decimal(other["value"]),
                    "no_ripple": bool(
                        line["Flags"] & (LSF_LOW_NO_RIPPLE if is_low else LSF_HIGH_NO_RIPPLE)
                    ),
                }
            )
        return found

    def owned(self, account: str) -> set[str]:
        """Keys of the objects the account owns (what its owner directory lists)."""
        keys = set()
        for key, value in self.objects.items():
            kind = value["LedgerEntryType"]
            if kind == "RippleState":
                sides = (value["LowLimit"]["issuer"], value["HighLimit"]["issuer"])
                if account in sides:
                    keys.add(key)
            elif kind in ("Offer", "PayChannel", "Check", "Escrow", "SignerList", "Ticket"):
                if value.get("Account") == account:
                    keys.add(key)
            elif kind == "NFTokenOffer" and value.get("Owner") == account:
                keys.add(key)
        return keys

    def nft_pages(self, account_id: bytes) -> list[str]:
        prefix = account_id.hex().upper()
        return sorted(k for k in self.of_type("NFTokenPage") if k.startswith(prefix))


def load(config: DatabaseSettings, dump: Path) -> None:
    backend = make_backend(config)
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(backend, source).run()
    finally:
        backend.close()
        source.close()


@dataclass
class Served:
    kind: str
    backend: BackendInterface
    client: JsonRpcClient
    state: State
    config: DatabaseSettings | None = None
    """The store's settings (read only), to open more backends on it."""

    @property
    def last(self) -> int:
        found = self.backend.fetch_ledger_range()
        assert found is not None
        return found.max_sequence

    def call(self, request: Any) -> Response:
        return self.client.request(request)

    def ok(self, request: Any) -> dict[str, Any]:
        response = self.call(request)
        assert response.is_successful(), response.result
        return response.result

    def error(self, request: Any) -> str:
        response = self.call(request)
        assert not response.is_successful(), response.result
        return str(response.result["error"])


def walk_state(backend: BackendInterface, sequence: int) -> dict[bytes, bytes]:
    """Every object of ledger ``sequence``'s state, ``{key: blob}``, page by page in key order."""
    found: dict[bytes, bytes] = {}
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, 2048)
        found.update((o.key, o.blob) for o in page.objects)
        if page.cursor is None:
            return found
        cursor = page.cursor


def state_at(backend: BackendInterface, sequence: int) -> State:
    state = State({})
    for key_bytes, blob in walk_state(backend, sequence).items():
        key = key_bytes.hex().upper()
        state.blobs[key] = blob.hex().upper()
        state.objects[key] = binarycodec.decode(state.blobs[key])
    return state


def generate_live_dump(vectors_dir: Path, path: Path, ledgers: int, seed: int) -> Path:
    """``chainloom-dev ledger generate``: ledger ``FIRST``'s real state and ``ledgers`` generated
    ledgers of 20 transactions each, as a dump file for the replay server."""
    arguments = ["generate", "--from-state", str(FIRST), "--ledgers", str(ledgers),
                 "--txs-per-ledger", "20", "--seed", str(seed), "--vectors", str(vectors_dir),
                 "--out", str(path), "--json"]  # fmt: skip
    generated = CliRunner().invoke(dev_ledger, arguments, catch_exceptions=False)
    assert generated.exit_code == 0, generated.output
    return path


def start_replay(dump: Path, port: int, interval: float, stderr: int) -> subprocess.Popen[bytes]:
    """The replay server of ``dump`` on 127.0.0.1:``port``, releasing a ledger every
    ``interval`` seconds as a live network does (``stderr``: a subprocess target)."""
    return subprocess.Popen(
        [sys.executable, "-m", "chainloom_dev", "ledger", "replay", str(dump),
         "--listen", f"127.0.0.1:{port}", "--interval", str(interval)],
        stderr=stderr,
    )  # fmt: skip


def stop_replay(replay: subprocess.Popen[bytes]) -> None:
    """SIGTERM, a kill when it has not stopped within 30 s, and its stderr pipe closed."""
    replay.send_signal(signal.SIGTERM)
    try:
        replay.wait(timeout=30)
    finally:
        if replay.poll() is None:
            replay.kill()
            replay.wait()
        if replay.stderr:
            replay.stderr.close()


def assert_same_history(
    followed: BackendInterface, clean: BackendInterface, first: int, last: int
) -> None:
    """Headers, diffs, transactions of ledgers ``first`` to ``last`` and the whole state at the
    first, middle and last, read back through the read paths, equal in both backends."""
    for sequence in range(first, last + 1):
        assert followed.fetch_ledger_by_sequence(sequence) == clean.fetch_ledger_by_sequence(
            sequence
        ), sequence
        assert sorted(followed.fetch_ledger_diff(sequence), key=lambda o: o.key) == sorted(
            clean.fetch_ledger_diff(sequence), key=lambda o: o.key
        ), sequence
        hashes = sorted(followed.fetch_all_transaction_hashes_in_ledger(sequence))
        assert hashes == sorted(clean.fetch_all_transaction_hashes_in_ledger(sequence)), sequence
        assert followed.fetch_transactions(hashes) == clean.fetch_transactions(hashes), sequence
    for sequence in (first, first + (last - first) // 2, last):
        assert walk_state(followed, sequence) == walk_state(clean, sequence), sequence


def assert_equals_clean_load(
    followed: BackendInterface, dump: Path, directory: Path, first: int, last: int
) -> None:
    """``followed`` holds ledgers ``first`` to ``last``, the same history as ``chainloom ledger
    load`` of ``dump`` makes in a fresh SQLite file in ``directory``."""
    clean_db = directory / "clean.db"
    arguments = ["load", str(dump), "--quiet", "--json", "--sqlite-path", str(clean_db)]
    loaded = CliRunner().invoke(ledger, arguments, catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    clean = make_backend({"type": "sqlite", "sqlite": {"path": str(clean_db)}})
    try:
        found = followed.hard_fetch_ledger_range()
        assert found is not None
        assert (found.min_sequence, found.max_sequence) == (first, last)
        assert_same_history(followed, clean, first, last)
    finally:
        clean.close()


def serve_history(
    kind: str, dump: Path, directory: Path, cassandra: tuple[str, int] | None
) -> Iterator[Served]:
    """Load ``dump`` into SQLite (a file in ``directory``) or a fresh Cassandra keyspace
    (dropped after), and serve it with ``chainloom ledger api``'s server."""
    keyspace = None
    if kind == "sqlite":
        config = DatabaseSettings(
            type="sqlite", sqlite=SqliteSettings(path=str(directory / "ledger.db"))
        )
    else:
        assert cassandra is not None
        keyspace = f"t_{uuid.uuid4().hex[:12]}"
        config = DatabaseSettings(
            type="cassandra",
            cassandra=CassandraSettings(
                hosts=(cassandra[0],), port=cassandra[1], keyspace=keyspace, replication_factor=1
            ),
        )
    load(config, dump)
    reading = config.model_copy(update={"read_only": True})
    backend = make_backend(reading)
    server = ServerThread(backend)
    port_number = server.start()
    found = backend.fetch_ledger_range()
    assert found is not None
    try:
        yield Served(
            kind,
            backend,
            JsonRpcClient(f"http://127.0.0.1:{port_number}/"),
            state_at(backend, found.max_sequence),
            reading,
        )
    finally:
        server.stop()
        backend.close()
        if keyspace is not None and cassandra is not None:
            drop_keyspace(cassandra, keyspace)


def drop_keyspace(address: tuple[str, int], keyspace: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([address[0]], port=address[1], protocol_version=5)
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    finally:
        cluster.shutdown()


def pages(served: Served, make: Any, rows: str) -> list[dict[str, Any]]:
    """Every row of a paged listing, following markers; each page within its limit."""
    seen: list[dict[str, Any]] = []
    marker = None
    for _ in range(1000):
        result = served.ok(make(marker))
        assert len(result[rows]) <= result["limit"]
        seen.extend(result[rows])
        marker = result.get("marker")
        if marker is None:
            return seen
    raise AssertionError("the listing never ended")


def busiest(served: Served, count: int) -> list[str]:
    """The ``count`` accounts owning the most objects."""
    by_lines = sorted(served.state.accounts(), key=lambda a: -len(served.state.owned(a)))
    return by_lines[:count]


def post(served: Served, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A raw JSON-RPC call (parameters of any type): the HTTP status and the result."""
    body = orjson.dumps({"method": method, "params": [params]})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(served.client.url, data=body, method="POST")
    try:
        with opener.open(request, timeout=60) as reply:
            return reply.status, orjson.loads(reply.read())["result"]
    except urllib.error.HTTPError as refused:
        return refused.code, orjson.loads(refused.read())["result"]
