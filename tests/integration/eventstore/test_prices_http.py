"""The CoinGecko-style price source against a real HTTP server started by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import PriceSourceError
from chainloom.eventstore.prices import HttpPriceSource

WETH = AssetInfo(
    2, "00" * 12 + "c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2", 18, "WETH", "Wrapped Ether", 0
)
T = 1_700_000_000


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
