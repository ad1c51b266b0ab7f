"""Wallet balances: what each worker's wallet holds on its chain, for people and the operator.

Why in Redis as well as a metric: a worker reads its own balance (it has the chain's endpoint
and knows its address); the OpenTelemetry gauge ``chainloom.relayer.wallet.balance`` serves
dashboards, and the same number in the relay tables' Redis lets the operator, which never talks
to the chains, compare it with a pool's ``minBalance`` as it already reads queue depths there.

Layout (``P`` is the relay tables' ``{<prefix>}``)::

    P:balances      hash    "<chain>/<wallet address>" -> {"wei": N, "at": unix seconds}

Addresses are public; no key ever passes here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import orjson
import redis
from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from chainloom.relayer._redis import sync, text
from chainloom.relayer.adapters import ChainAdapter
from chainloom.relayer.errors import SubmitError, TablesUnavailableError
from chainloom.relayer.tables import RelayTables

log = logging.getLogger(__name__)


@runtime_checkable
class BalanceReader(Protocol):
    """A chain adapter that can read a wallet's native balance (EVM: ``eth_getBalance``)."""

    def balance(self, address: str) -> int:
        """The wallet's balance in the chain's smallest unit (SubmitError when unreachable)."""
        ...


@dataclass(frozen=True, slots=True)
class WalletBalance:
    """One wallet's balance on one chain, as last read by its worker."""

    chain: int
    """The Wormhole chain id."""
    address: str
    """The wallet's address (public)."""
    wei: int
    """The balance in the chain's smallest unit."""
    at: float
    """Unix time of the read."""


class BalanceBoard:
    """The ``P:balances`` hash of one relay tables' Redis (see the module docstring)."""

    def __init__(self, tables: RelayTables) -> None:
        self.client = tables.client
        self.key = tables.key("balances")
        self._address = tables.address

    def publish(self, balance: WalletBalance) -> None:
        """Record ``balance`` (TablesUnavailableError when Redis does not answer)."""
        value = orjson.dumps({"wei": str(balance.wei), "at": balance.at})
        try:
            field_name = f"{balance.chain}/{balance.address}"
            sync(self.client.hset(self.key, mapping={field_name: value}))
        except redis.RedisError as error:
            raise TablesUnavailableError(f"Redis at {self._address} failed: {error}") from None

    def read(self) -> list[WalletBalance]:
        """Every balance recorded; entries that do not parse are skipped."""
        try:
            raw = sync(self.client.hgetall(self.key))
        except redis.RedisError as error:
            raise TablesUnavailableError(f"Redis at {self._address} failed: {error}") from None
        return sorted(_parsed(raw.items()), key=lambda b: (b.chain, b.address))


class WalletBalances:
    """A worker's reader of its wallet's balance: every ``every`` seconds, read it from the
    chain, report it to the gauge and publish it to Redis (a failure is one warning line)."""

    def __init__(self, tables: RelayTables, adapter: ChainAdapter, address: str) -> None:
        self.board = BalanceBoard(tables)
        self.reader = adapter if isinstance(adapter, BalanceReader) else None
        self.chain = adapter.chain_id
        self.address = address
        self.last: WalletBalance | None = None
        """The last balance read."""
        self._read_at: float | None = None

    def maybe_publish(self, now: float, every: float) -> WalletBalance | None:
        """Read and publish the balance when ``every`` seconds passed since the last read."""
        if self.reader is None or (self._read_at is not None and now - self._read_at < every):
            return None
        self._read_at = now
        try:
            balance = WalletBalance(
                self.chain, self.address, self.reader.balance(self.address), now
            )
            observe(balance)
            self.board.publish(balance)
        except (SubmitError, TablesUnavailableError) as error:
            log.warning("worker %s/%s: balance not published: %s", self.chain, self.address, error)
            return None
        self.last = balance
        return balance


def _parsed(items: Iterable[tuple[bytes | str, bytes | str]]) -> Iterable[WalletBalance]:
    for field_name, value in items:
        chain, _, address = text(field_name).partition("/")
        try:
            data = orjson.loads(value)
            yield WalletBalance(int(chain), address, int(data["wei"]), float(data["at"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue


_latest: dict[tuple[int, str], int] = {}
_latest_lock = threading.Lock()


def observe(balance: WalletBalance) -> None:
    """Make ``balance`` the value the gauge reports for its chain and wallet."""
    with _latest_lock:
        _latest[(balance.chain, balance.address)] = balance.wei


def _observations(options: CallbackOptions) -> Iterable[Observation]:
    with _latest_lock:
        latest = dict(_latest)
    for (chain, address), wei in latest.items():
        yield Observation(wei, {"chainloom.target_chain": chain, "chainloom.wallet": address})


def register_gauge(meter: metrics.Meter) -> None:
    """Create the ``chainloom.relayer.wallet.balance`` gauge on ``meter`` (done once at import
    on the worker's meter; tests pass a meter of their own provider)."""
    meter.create_observable_gauge(
        "chainloom.relayer.wallet.balance",
        callbacks=[_observations],
        unit="wei",
        description="Native balance of a worker's wallet on its target chain, as last read.",
    )


register_gauge(metrics.get_meter("chainloom.relayer.worker"))
