"""A small events table for the table-reading jobs (enrich, export), and what it should hold.

The table gets the shared mainnet vectors, a generated dev-kit stream (mostly transfers of
tokens nobody attested) and hand-made token bridge messages whose tokens are attested, over
two UTC days and across midnight, written in phases so the store holds every state enrich
meets: transfers stored before their token's attestation (no details), after it (details
without a notional), with a notional already (written with a price source), and a token
attested twice (the newer attestation wins). Payload fields are read back here from the bytes
by hand, not with the project's codec, so the expectations are independent of the code under
test.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.config import EventStoreSettings
from chainloom.eventstore.prices import FilePriceSource
from chainloom.eventstore.service import locate
from chainloom.eventstore.writer import EventWriter
from chainloom.settings import BigtableSettings
from chainloom.wormhole import GuardianSets, all_known_emitters
from chainloom.wormhole.vaa import encode_body
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas

DEV_SET = 100
DAY1 = 1_709_251_200  # 2024-03-01T00:00:00Z
DAY2 = DAY1 + 86_400
SEQUENCE_BASE = 1_000_000  # above the generated stream's sequences on the same emitter


@dataclass(frozen=True)
class Token:
    chain: int
    address: bytes
    decimals: int
    symbol: str

    @property
    def hex(self) -> str:
        return self.address.hex()


WETH = Token(2, bytes(12) + bytes.fromhex("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"), 18, "WETH")
USDC = Token(1, bytes.fromhex("c6fa7af3bedbad3a3d65f36aabc97431b1bbe4c2d2f6e0e47ca60203452f5d61"),
             6, "USDC")  # fmt: skip
WBTC = Token(2, bytes(12) + bytes.fromhex("2260fac5e5542a773aa44fbcfedf7c193bc2c599"), 8, "WBTC")
DEVC = Token(4, bytes(12) + bytes.fromhex("1111111111111111111111111111111111111111"), 9, "DEVC")
NOPR = Token(2, bytes(12) + bytes.fromhex("2222222222222222222222222222222222222222"), 18, "NOPR")
ORPH = Token(6, bytes(12) + bytes.fromhex("3333333333333333333333333333333333333333"), 18, "ORPH")

PRICES_CSV = f"""date,coingecko_id,token_chain,token_address,price_usd
2024-03-01,,2,0x{WETH.hex[24:].upper()},3012.5
2024-03-02,,2,0x{WETH.hex[24:]},3100.25
2024-03-01,,1,{USDC.hex},1.0001
2024-03-02,,1,{USDC.hex},0.9999
2024-03-01,,2,{WBTC.hex},61000.123456789
2024-03-01,dev-coin,,,0.5
2024-03-02,dev-coin,,,0.75
2024-03-02,,4,{DEVC.hex},0.8
"""
"""WETH by its 20-byte address (upper case, 0x), WBTC priced on day 1 only, DEVC by CoinGecko id
(exact row wins on day 2), NOPR and ORPH not at all."""

COIN_IDS_CSV = f"coingecko_id,token_chain,token_address\ndev-coin,4,{DEVC.hex}\n"

PRICES: dict[tuple[int, str, str], Decimal] = {
    (2, WETH.hex, "2024-03-01"): Decimal("3012.5"),
    (2, WETH.hex, "2024-03-02"): Decimal("3100.25"),
    (1, USDC.hex, "2024-03-01"): Decimal("1.0001"),
    (1, USDC.hex, "2024-03-02"): Decimal("0.9999"),
    (2, WBTC.hex, "2024-03-01"): Decimal("61000.123456789"),
    (4, DEVC.hex, "2024-03-01"): Decimal("0.5"),
    (4, DEVC.hex, "2024-03-02"): Decimal("0.8"),
}
"""What PRICES_CSV means, written out by hand."""


def _padded(text: str) -> bytes:
    return text.encode().ljust(32, b"\x00")


def attestation(token: Token, symbol: str | None = None) -> bytes:
    return (b"\x02" + token.address + token.chain.to_bytes(2, "big") + bytes((token.decimals,))
            + _padded(symbol or token.symbol) + _padded(f"{token.symbol} token"))  # fmt: skip


def transfer(token: Token, amount: int, target: int, *, with_payload: bool = False) -> bytes:
    head = (b"\x03" if with_payload else b"\x01") + amount.to_bytes(32, "big") + token.address
    head += token.chain.to_bytes(2, "big") + bytes(12) + b"\x44" * 20 + target.to_bytes(2, "big")
    if with_payload:
        return head + bytes(12) + b"\x55" * 20 + b"hello"
    return head + (amount // 1000).to_bytes(32, "big")


@dataclass
class Workload:
    location: BigtableSettings
    sets: GuardianSets
    raws: list[bytes] = field(default_factory=list)
    """Every VAA written (repeats included)."""
    priced_at_ingest: set[str] = field(default_factory=set)
    """Row keys written with a price source (NotionalUSD before enrich runs)."""


class _Crafter:
    def __init__(self, guardians: DevGuardians) -> None:
        self.guardians = guardians
        self.sequences: dict[int, int] = {}

    def sign(self, chain: int, timestamp: int, payload: bytes) -> bytes:
        sequence = self.sequences.get(chain, SEQUENCE_BASE)
        self.sequences[chain] = sequence + 1
        body = encode_body(
            timestamp=timestamp,
            nonce=sequence,
            emitter_chain=chain,
            emitter_address=self.guardians.token_bridge_emitter,
            sequence=sequence,
            consistency_level=15,
            payload=payload,
        )
        return self.guardians.sign_body(body, guardian_set_index=DEV_SET)


def row_key(raw: bytes) -> str:
    body = raw[6 + raw[5] * 66 :]
    chain = int.from_bytes(body[8:10], "big")
    sequence = int.from_bytes(body[42:50], "big")
    return f"{chain}:{body[10:42].hex()}:{sequence:016d}"


def _write(workload: Workload, raws: Iterable[bytes], prices: Any = None) -> None:
    batch = list(raws)
    with BigtableTables(workload.location) as tables:
        writer = EventWriter(tables, workload.sets, emitters=all_known_emitters(), prices=prices)
        summary = writer.put_many(batch)
        writer.flush()
    assert summary.refused == 0, summary.refusals
    workload.raws += batch


def _ingest_prices(tmp: Path) -> FilePriceSource:
    """PRICES as price points at noon of each day (the writer takes the nearest within 12 h,
    so every moment of a day gets that day's price)."""
    points: dict[str, list[list[Any]]] = {}
    for (chain, address, day), price in PRICES.items():
        noon = int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()) + 43_200
        points.setdefault(f"{chain}:{address}", []).append([noon, str(price)])
    path = tmp / "all-prices.json"
    path.write_text(json.dumps(points))
    return FilePriceSource.from_path(path)


def populate(
    table: str, vaa_vectors: list[dict[str, Any]], tmp: Path, *, enrich_at_ingest: bool = False
) -> Workload:
    """Write the workload into a fresh ``table``; with ``enrich_at_ingest`` the attestations
    go first and the writer has every price, so the transfers are stored enriched."""
    guardians = DevGuardians()
    sets = GuardianSets.mainnet().with_set(guardians.guardian_set(DEV_SET))
    location = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    ensure_schema(location)
    workload = Workload(location, sets)
    mainnet = [
        bytes.fromhex(v["hex"])
        for v in vaa_vectors
        if v["expected"].get("num_signatures", 0) > 0
        and (v["expected"].get("verified_against") or "").startswith("mainnet")
    ]
    generated = generate_vaas(240, 23, guardians, Mix(conflict=0), guardian_set_index=DEV_SET)
    _write(workload, [*mainnet, *generated])

    craft = _Crafter(guardians)
    ingest_prices = _ingest_prices(tmp) if enrich_at_ingest else None
    if enrich_at_ingest:
        _write(workload, [craft.sign(t.chain, DAY1 - 3600, attestation(t))
                          for t in (WETH, USDC, WBTC, DEVC, NOPR)])  # fmt: skip
    early = []  # before the attestations: no details at all
    for i, token in enumerate((WETH, USDC, WBTC, DEVC, NOPR, ORPH)):
        for j, moment in enumerate((DAY1 + 3600 * (i + 1), DAY2 - 1, DAY2, DAY2 + 7200 * (i + 1))):
            amount = (123_456_789_012 + 987_654_321 * i) * (j + 1) + j
            payload = transfer(token, amount, 2 + j % 3, with_payload=j == 3)
            early.append(craft.sign(5 + (i + j) % 3, moment, payload))
    _write(workload, early, prices=ingest_prices)

    attestations = [
        craft.sign(WETH.chain, DAY1 - 86_400, attestation(WETH, "OLDWETH")),
        *(craft.sign(t.chain, DAY1 - 3600, attestation(t)) for t in (USDC, WBTC, DEVC, NOPR)),
    ]
    _write(workload, attestations)
    # WETH's first attestation is stored: these get details (symbol OLDWETH), no notional.
    stale = [
        craft.sign(2, DAY1 + 5 * 3600 + k, transfer(WETH, 10**8 * (k + 3), 4)) for k in range(3)
    ]
    _write(workload, stale)
    _write(workload, [craft.sign(WETH.chain, DAY1 - 60, attestation(WETH))])  # the newer one

    # Written with a price source: NotionalUSD from 42 USD, which enrich must leave alone.
    price_file = tmp / "ingest-prices.json"
    price_file.write_text(f'{{"1:{USDC.hex}": [[{DAY1 + 43_200}, "42"]]}}')
    priced = [
        craft.sign(2, DAY1 + 43_200 + k, transfer(USDC, 5_000_000 * (k + 1), 6)) for k in range(2)
    ]
    workload.priced_at_ingest |= {row_key(raw) for raw in priced}
    _write(workload, priced, prices=FilePriceSource.from_path(price_file))
    return workload


def populate_transfers(table: str, count: int) -> Workload:
    """A fresh ``table`` holding WETH's attestation and ``count`` WETH transfers on day 1
    without a notional (stored without a price source): enrich writes every one of them.
    Signed by a one-guardian dev set (under index DEV_SET), so it is quick to make."""
    guardians = DevGuardians(count=1)
    sets = GuardianSets.mainnet().with_set(guardians.guardian_set(DEV_SET))
    location = locate(EventStoreSettings(bigtable=BigtableSettings(table=table)))
    ensure_schema(location)
    workload = Workload(location, sets)
    craft = _Crafter(guardians)
    _write(workload, [craft.sign(WETH.chain, DAY1 - 60, attestation(WETH))])
    _write(workload, [craft.sign(5 + k % 3, DAY1 + 30 * k, transfer(WETH, 10**8 * (k + 1), 4))
                      for k in range(count)])  # fmt: skip
    return workload


# ----------------------------------------------------------------------------- expectations


def body_of(raw: bytes) -> bytes:
    return raw[6 + raw[5] * 66 :]


def timestamp_of(raw: bytes) -> int:
    return int.from_bytes(body_of(raw)[0:4], "big")


def payload_of(raw: bytes) -> bytes:
    return body_of(raw)[51:]


def utc_day(timestamp: int) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d")


def whole_tokens(amount: int, decimals: int) -> tuple[str, Decimal]:
    """(the text the store keeps, its value): at most 8 decimals, as the bridge normalises."""
    places = decimals if decimals < 8 else 8
    value = Decimal(amount) / (Decimal(10) ** places)
    return (f"{value:.{places}f}" if places else str(amount)), value


def notional(value: Decimal, price: Decimal) -> Decimal:
    return (value * price).quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN)
