"""bench/bare_http.py, the benches' HTTP ceiling, answers exactly the backend's reads: each
route's blobs are the ones the backend returns for the same arguments (a SQLite history)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.api import start_bare_server
from chainloom.ledger.backend import BackendInterface
from chainloom.ledger.books import is_book_root
from chainloom.ledger.config import DatabaseSettings, SqliteSettings
from chainloom.ledger.service import make_backend
from chainloom.ledger.xrpl import keylets
from chainloom.ledger.xrpl.directory import page_entries
from chainloom.ledger.xrpl.parse import book_base, parse_metadata
from tests.ledger_api_support import load, make_dump, walk_state


@pytest.fixture(scope="module")
def stored(vectors_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    directory = tmp_path_factory.mktemp("bare")
    config = DatabaseSettings(type="sqlite", sqlite=SqliteSettings(path=str(directory / "l.db")))
    load(config, make_dump(vectors_dir, directory / "ledgers.jsonl"))
    backend = make_backend(config.model_copy(update={"read_only": True}))
    server, port = start_bare_server(["--sqlite-path", str(directory / "l.db")], 4)
    try:
        yield backend, f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=30)
        assert server.stderr is not None
        server.stderr.close()
        backend.close()


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, orjson.dumps(body), method="POST")
    with urllib.request.urlopen(request, timeout=30) as reply:
        return orjson.loads(reply.read())


def newest(backend: BackendInterface) -> int:
    found = backend.fetch_ledger_range()
    assert found is not None
    return found.max_sequence


def accounts(backend: BackendInterface) -> list[bytes]:
    last, seen = newest(backend), set[bytes]()
    for tx in backend.fetch_all_transactions_in_ledger(last):
        seen |= parse_metadata(tx.metadata).affected_accounts
    return sorted(seen)


def test_ledger_data_pages_walk_the_whole_state(stored: Any) -> None:
    backend, url = stored
    last, walked, cursor = newest(backend), dict[bytes, bytes](), None
    while True:
        page = post(url + "ledger_data", {"ledger": last, "limit": 256, "cursor": cursor})
        walked.update((bytes.fromhex(k), bytes.fromhex(b)) for k, b in page["objects"])
        cursor = page["cursor"]
        if cursor is None:
            break
    assert walked == walk_state(backend, last)


def test_account_reads_are_the_backends(stored: Any) -> None:
    backend, url = stored
    last = newest(backend)
    for account in accounts(backend)[:10]:
        body = {"account": account.hex(), "ledger": last}
        root = backend.fetch_ledger_object(keylets.account_root(account), last)
        assert post(url + "account_info", body) == {"root": None if root is None else root.hex()}
        lines = post(url + "account_lines", body)["objects"]
        directory = backend.fetch_ledger_object(keylets.owner_directory(account), last)
        entries = page_entries(directory)[0] if directory else []
        assert len(lines) == 2 + len(entries)
        assert lines[2:] == [b.hex() for b in backend.fetch_ledger_objects(entries, last)]
        txs = backend.fetch_account_transactions(account, 20, False).transactions
        answered = post(url + "account_tx", {"account": account.hex(), "limit": 20})
        assert answered["transactions"] == [[t.transaction.hex(), t.metadata.hex()] for t in txs]
        assert txs


def test_book_offers_are_the_backends(stored: Any) -> None:
    backend, url = stored
    last = newest(backend)
    books = {book_base(k) for k, b in walk_state(backend, last).items() if is_book_root(k, b)}
    assert books
    for book in sorted(books):
        offers = backend.fetch_book_offers(book, last, 60).offers
        answer = post(url + "book_offers", {"book": book.hex(), "ledger": last, "limit": 60})
        assert answer["offers"] == [offer.blob.hex() for offer in offers]


def test_an_unknown_route_is_a_json_404(stored: Any) -> None:
    _, url = stored
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(url + "ledger", {})
    assert refused.value.code == 404
    assert orjson.loads(refused.value.read())["error"] == "error"
