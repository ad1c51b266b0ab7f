"""Price sources: a local file, and a CoinGecko-style API served by a real local HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import PriceSourceError
from chainloom.eventstore.prices import FilePriceSource, HttpPriceSource

WETH = AssetInfo(
    2, "00" * 12 + "c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2", 18, "WETH", "Wrapped Ether", 0
)
T = 1_700_000_000


def test_csv_prices_pick_the_nearest_point_within_the_window(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(f"coin,timestamp,price_usd\nweth,{T - 100},10\nWETH,{T + 50},11.5\n")
    source = FilePriceSource.from_path(path)
    assert source.price_usd(WETH, T) == Decimal("11.5")
    assert source.price_usd(WETH, T - 90) == Decimal("10")
    assert source.price_usd(WETH, T + 13 * 3600) is None
    other = AssetInfo(1, "11" * 32, 9, "SOL", "Solana", 0)
    assert source.price_usd(other, T) is None


def test_json_prices_by_exact_token(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({f"2:{WETH.token_address}": [[T, 2000.125]], "WETH": [[T, 1]]}))
    assert FilePriceSource.from_path(path).price_usd(WETH, T) == Decimal("2000.125")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("a.csv", "coin,when\nWETH,1\n", "missing columns price_usd, timestamp"),
        ("b.csv", "coin,timestamp,price_usd\nWETH,noon,1\n", "line 2: timestamp 'noon'"),
        ("c.csv", "coin,timestamp,price_usd\nWETH,1,cheap\n", "price 'cheap' is not a number"),
        ("d.json", "[1, 2]", "expected an object"),
        ("e.json", '{"WETH": [[1]]}', "is not \\[timestamp, price\\]"),
    ],
)
def test_malformed_price_files_say_where(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PriceSourceError, match=problem):
        FilePriceSource.from_path(path)


class _CoinGecko(BaseHTTPRequestHandler):
    requests: list[str] = []  # noqa: RUF012 - shared by the test server's handlers

    def do_GET(self) -> None:
        url = urlparse(self.path)
        type(self).requests.append(url.path)
        body: object
        if url.path == "/coins/list":
            body = [
                {"id": "weth", "symbol": "weth", "name": "WETH"},
                {"id": "usd-coin", "symbol": "usdc", "name": "USDC"},
                {"id": "usdc-fake", "symbol": "usdc", "name": "Fake"},
            ]
        elif url.path == "/coins/weth/market_chart/range":
            query = parse_qs(url.query)
            start, end = int(query["from"][0]), int(query["to"][0])
            assert query["vs_currency"] == ["usd"]
            body = {
                "prices": [[(start + 3600) * 1000, 1999.5], [(start + end) // 2 * 1000, 2001.25]]
            }
        elif url.path == "/coins/broken/market_chart/range":
            self.send_response(500)
            self.end_headers()
            return
        else:
            self.send_response(404)
            self.end_headers()
            return
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CoinGecko)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _CoinGecko.requests = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_source_resolves_the_coin_and_picks_the_price_at_the_vaa_time(api: str) -> None:
    source = HttpPriceSource(api, backoff=0.01)
    assert source.price_usd(WETH, T) == Decimal("2001.25")
    assert source.price_usd(WETH, T) == Decimal("2001.25")  # cached
    assert _CoinGecko.requests == ["/coins/list", "/coins/weth/market_chart/range"]
    ambiguous = AssetInfo(2, "22" * 32, 6, "USDC", "Unknown", 0)
    assert source.price_usd(ambiguous, T) is None
    resolved = AssetInfo(2, "22" * 32, 6, "USDC", "USDC", 0)
    assert source.coin_id(resolved) == "usd-coin"


def test_http_source_errors_name_the_url(api: str) -> None:
    source = HttpPriceSource(api, coin_ids={"WETH": "broken"}, retries=1, backoff=0.01)
    with pytest.raises(PriceSourceError, match=r"/coins/broken/market_chart/range.*HTTP 500"):
        source.price_usd(WETH, T)
    assert _CoinGecko.requests.count("/coins/broken/market_chart/range") == 2
    dead = HttpPriceSource("http://127.0.0.1:9", coin_ids={"WETH": "weth"}, retries=0, timeout=2)
    with pytest.raises(PriceSourceError, match=r"127\.0\.0\.1:9"):
        dead.price_usd(WETH, T)
