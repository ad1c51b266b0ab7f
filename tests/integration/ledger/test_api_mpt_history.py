"""``mpt_holders`` over a generated history loaded by the ETL into real stores: MPTokens are
created and destroyed ledger after ledger, and every issuance is listed at every stored ledger
(through the ``mp_token_holders`` rows the ETL wrote) exactly as the objects present then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from xrpl.clients import JsonRpcClient
from xrpl.models.requests import GenericRequest

from chainloom.ledger.api.server import ServerThread
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.etl import LedgerEtl
from chainloom.ledger.mpt import mptoken_holder
from chainloom.ledger.sources.dump import DumpWriter
from chainloom.ledger.sources.file import FileLedgerSource
from chainloom_dev.sim.ledger_generator import vectors_ledger
from chainloom_dev.sim.ledger_generator_mpt import MptWorkloadGenerator
from tests.integration.ledger.test_conformance import Store, store  # noqa: F401

FIRST = 38129
LEDGERS = 8


@pytest.fixture(scope="module")
def dump(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    initial = vectors_ledger(vectors_dir / "xrpl_vectors.json", FIRST)
    generator = MptWorkloadGenerator(initial, seed=3, txs_per_ledger=40)
    path = tmp_path_factory.mktemp("mpt") / "ledgers.jsonl"
    with DumpWriter(path) as writer:
        writer.write(initial, FIRST)
        for sequence, ledger in generator.ledgers(LEDGERS):
            writer.write(ledger, sequence)
    return path


def _holders_at(backend: BackendInterface, sequence: int) -> dict[bytes, set[str]]:
    """Issuance ID -> its MPToken keys, from a walk of the whole stored state at ``sequence``."""
    found: dict[bytes, set[str]] = {}
    cursor = None
    while True:
        page = backend.fetch_ledger_page(cursor, sequence, 2048)
        for obj in page.objects:
            holder = mptoken_holder(obj.blob)
            if holder is not None:
                found.setdefault(holder.mpt_id, set()).add(obj.key.hex().upper())
        if page.cursor is None:
            return found
        cursor = page.cursor


def _listed(client: JsonRpcClient, issuance: bytes, sequence: int) -> list[str]:
    seen: list[str] = []
    marker = None
    while True:
        request = GenericRequest(
            method="mpt_holders",
            mpt_issuance_id=issuance.hex().upper(),
            ledger_index=sequence,
            limit=2,
            marker=marker,
        )
        page: dict[str, Any] = client.request(request).result
        assert len(page["mptokens"]) <= 2, page
        seen.extend(h["mptoken_index"] for h in page["mptokens"])
        marker = page.get("marker")
        if marker is None:
            return seen


def test_every_ledger_lists_the_mptokens_it_held(store: Store, dump: Path) -> None:  # noqa: F811
    source = FileLedgerSource(dump)
    try:
        LedgerEtl(store.open(), source).run()
    finally:
        source.close()
    reader = store.open()
    reader.hard_fetch_ledger_range()
    expected = {seq: _holders_at(reader, seq) for seq in range(FIRST + 1, FIRST + LEDGERS + 1)}
    issuances = sorted({issuance for held in expected.values() for issuance in held})
    alive = {seq: set().union(*held.values()) for seq, held in expected.items()}
    assert issuances, "the generator made no MPTokens"
    assert any(alive[seq] - alive[seq + 1] for seq in list(alive)[:-1]), "none was destroyed"
    server = ServerThread(reader)
    port = server.start()
    try:
        client = JsonRpcClient(f"http://127.0.0.1:{port}/")
        answers = {
            (seq, issuance): _listed(client, issuance, seq)
            for seq in expected
            for issuance in issuances
            if issuance in expected[seq] or seq == FIRST + LEDGERS
        }
    finally:
        server.stop()
    for (seq, issuance), listed in answers.items():
        assert len(listed) == len(set(listed))
        assert set(listed) == expected[seq].get(issuance, set()), (seq, issuance.hex())
