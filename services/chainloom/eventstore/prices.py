"""Historical USD prices for the TokenTransferDetails enrichment.

A :class:`PriceSource` answers "what was one whole token of this asset worth at this time". Two
implementations:

* :class:`FilePriceSource`: a local CSV or JSON file of price points, for tests, air-gapped
  back-fills and reproducible runs.
* :class:`HttpPriceSource`: an HTTP API speaking CoinGecko's historical shape
  (``/coins/{id}/market_chart/range`` and ``/coins/list``), as the reference used.

Both pick the point nearest the VAA's timestamp within a window (12 hours each side by default,
the reference's window) and answer ``None`` when there is none, so a missing price leaves
``NotionalUSD`` unwritten rather than wrong.
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Protocol

from chainloom.backoff import Backoff
from chainloom.eventstore.enrichment import AssetInfo
from chainloom.eventstore.errors import PriceSourceError

DEFAULT_WINDOW_SECONDS = 12 * 3600


class PriceSource(Protocol):
    """Where USD prices come from."""

    def price_usd(self, asset: AssetInfo, timestamp: int) -> Decimal | None:
        """USD per whole token at ``timestamp`` (unix seconds), or None if unknown."""
        ...


def _nearest(points: Sequence[tuple[int, Decimal]], timestamp: int, window: int) -> Decimal | None:
    """The price of the point nearest ``timestamp`` (earlier wins a tie) within ``window``."""
    if not points:
        return None
    times = [point[0] for point in points]
    position = bisect.bisect_left(times, timestamp)
    candidates = [i for i in (position - 1, position) if 0 <= i < len(points)]
    best = min(candidates, key=lambda i: (abs(times[i] - timestamp), times[i]))
    if abs(times[best] - timestamp) > window:
        return None
    return points[best][1]


def _price(text: Any, where: str) -> Decimal:
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        raise PriceSourceError(f"{where}: price {text!r} is not a number") from None
    if not value.is_finite() or value < 0:
        raise PriceSourceError(f"{where}: price {text!r} is not a non-negative number")
    return value


def asset_keys(asset: AssetInfo) -> list[str]:
    """The names a price file may use for an asset, most specific first."""
    return [f"{asset.token_chain}:{asset.token_address}", asset.symbol.upper()]


class FilePriceSource:
    """Prices from a local file.

    CSV: a header ``coin,timestamp,price_usd`` and one point per line. JSON: an object mapping
    each coin to a list of ``[timestamp, price]`` pairs. A coin is either a symbol (matched
    case-insensitively, e.g. ``WETH``) or ``tokenchain:tokenaddress64hex`` for an exact token.
    Timestamps are unix seconds.
    """

    def __init__(
        self,
        points: Mapping[str, Sequence[tuple[int, Decimal]]],
        *,
        window: int = DEFAULT_WINDOW_SECONDS,
    ) -> None:
        self._points = {key: sorted(values) for key, values in points.items()}
        self._window = window

    @classmethod
    def from_path(
        cls, path: str | Path, *, window: int = DEFAULT_WINDOW_SECONDS
    ) -> FilePriceSource:
        file = Path(path)
        try:
            text = file.read_text()
        except OSError as error:
            raise PriceSourceError(f"price file {file}: {error.strerror or error}") from None
        if file.suffix.lower() == ".json":
            return cls(_parse_json_points(text, str(file)), window=window)
        return cls(_parse_csv_points(text, str(file)), window=window)

    def price_usd(self, asset: AssetInfo, timestamp: int) -> Decimal | None:
        for key in asset_keys(asset):
            points = self._points.get(key)
            if points:
                return _nearest(points, timestamp, self._window)
        return None


def _coin_key(text: str) -> str:
    key = text.strip()
    return key if ":" in key else key.upper()


def _parse_csv_points(text: str, where: str) -> dict[str, list[tuple[int, Decimal]]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = {"coin", "timestamp", "price_usd"} - set(reader.fieldnames or [])
    if missing:
        raise PriceSourceError(f"price file {where}: missing columns {', '.join(sorted(missing))}")
    points: dict[str, list[tuple[int, Decimal]]] = {}
    for line, row in enumerate(reader, start=2):
        place = f"price file {where} line {line}"
        try:
            stamp = int(row["timestamp"])
        except (TypeError, ValueError):
            raise PriceSourceError(
                f"{place}: timestamp {row['timestamp']!r} is not an integer"
            ) from None
        points.setdefault(_coin_key(row["coin"]), []).append(
            (stamp, _price(row["price_usd"], place))
        )
    return points


def _parse_json_points(text: str, where: str) -> dict[str, list[tuple[int, Decimal]]]:
    try:
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        raise PriceSourceError(f"price file {where}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise PriceSourceError(f"price file {where}: expected an object of coin -> points")
    points: dict[str, list[tuple[int, Decimal]]] = {}
    for coin, pairs in data.items():
        place = f"price file {where} coin {coin!r}"
        if not isinstance(pairs, list):
            raise PriceSourceError(f"{place}: expected a list of [timestamp, price] pairs")
        parsed = []
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)):
                raise PriceSourceError(f"{place}: {pair!r} is not [timestamp, price]")
            parsed.append((pair[0], _price(pair[1], place)))
        points[_coin_key(coin)] = parsed
    return points


class HttpPriceSource:
    """Prices from a CoinGecko-style HTTP API.

    ``coin_ids`` maps symbols (or ``chain:address``) to the API's coin ids; unmapped symbols are
    resolved once through ``/coins/list`` (a unique symbol match, else a unique name match).
    """

    def __init__(
        self,
        base_url: str,
        *,
        coin_ids: Mapping[str, str] | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        window: int = DEFAULT_WINDOW_SECONDS,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._coin_ids = {_coin_key(k): v for k, v in (coin_ids or {}).items()}
        self._api_key = api_key
        self._timeout = timeout
        self._window = window
        self._retries = retries
        self._backoff = Backoff(initial=backoff, maximum=math.inf)
        self._coin_list: list[dict[str, Any]] | None = None
        self._cache: dict[tuple[str, int], Decimal | None] = {}
        self.requests = 0
        """How many HTTP requests were made (tests check caching with it)."""

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        url = f"{self._base}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["x-cg-pro-api-key"] = self._api_key
        for attempt in range(self._retries + 1):
            self.requests += 1
            request = urllib.request.Request(url, headers=headers)  # noqa: S310 (http(s) only)
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                    return json.loads(response.read(), parse_float=Decimal)
            except urllib.error.HTTPError as error:
                if error.code in (429, 500, 502, 503, 504) and attempt < self._retries:
                    time.sleep(self._backoff.delay(attempt))
                    continue
                raise PriceSourceError(f"price API {url}: HTTP {error.code}") from None
            except (urllib.error.URLError, TimeoutError, OSError) as error:
                if attempt < self._retries:
                    time.sleep(self._backoff.delay(attempt))
                    continue
                raise PriceSourceError(f"price API {url}: {error}") from None
            except json.JSONDecodeError:
                raise PriceSourceError(f"price API {url}: the answer is not JSON") from None
        raise PriceSourceError(f"price API {url}: no answer")  # pragma: no cover

    def coin_id(self, asset: AssetInfo) -> str | None:
        """The API's id of an asset, or None if it cannot be resolved unambiguously."""
        for key in asset_keys(asset):
            if key in self._coin_ids:
                return self._coin_ids[key]
        if self._coin_list is None:
            listing = self._get("/coins/list")
            if not isinstance(listing, list):
                raise PriceSourceError(f"price API {self._base}/coins/list: expected a list")
            self._coin_list = [item for item in listing if isinstance(item, dict)]
        by_symbol = [
            c for c in self._coin_list if str(c.get("symbol", "")).lower() == asset.symbol.lower()
        ]
        if len(by_symbol) == 1:
            return str(by_symbol[0]["id"])
        by_name = [
            c
            for c in by_symbol or self._coin_list
            if str(c.get("name", "")).lower() == asset.name.lower()
        ]
        if len(by_name) == 1:
            return str(by_name[0]["id"])
        return None

    def price_usd(self, asset: AssetInfo, timestamp: int) -> Decimal | None:
        coin = self.coin_id(asset)
        if coin is None:
            return None
        cache_key = (coin, timestamp)
        if cache_key in self._cache:
            return self._cache[cache_key]
        answer = self._get(
            f"/coins/{urllib.parse.quote(coin, safe='')}/market_chart/range",
            {
                "vs_currency": "usd",
                "from": str(timestamp - self._window),
                "to": str(timestamp + self._window),
            },
        )
        prices = answer.get("prices") if isinstance(answer, dict) else None
        if not isinstance(prices, list):
            raise PriceSourceError(f"price API: no 'prices' list for coin {coin!r}")
        points = []
        for pair in prices:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise PriceSourceError(f"price API: {pair!r} is not [milliseconds, price]")
            points.append((int(pair[0]) // 1000, _price(pair[1], f"price API coin {coin!r}")))
        price = _nearest(sorted(points), timestamp, self._window)
        self._cache[cache_key] = price
        return price
