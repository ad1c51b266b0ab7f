"""The file price source: CSV and JSON points, nearest point in the window, clear errors."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import PriceSourceError
from chainloom.eventstore.prices import FilePriceSource

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
