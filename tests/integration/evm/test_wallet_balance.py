"""Wallet balances on the real chain: a worker's balance reader publishes what geth says its
wallet holds to the real Redis and to the OpenTelemetry gauge, and sees a drained wallet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from eth_account import Account
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from web3 import Web3

from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.balances import BalanceBoard, WalletBalances, register_gauge
from chainloom.relayer.evm_adapter import EvmAdapter
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.tables import RelayTables
from tests.integration.evm.conftest import funded_wallet_key

CHAIN = 2


@pytest.fixture
def tables(redis_url: str) -> Iterator[RelayTables]:
    client = redis.Redis.from_url(redis_url)
    yield RelayTables(client)
    client.close()


def gauge_points(reader: InMemoryMetricReader) -> dict[tuple[int, str], int]:
    data = reader.get_metrics_data()
    assert data is not None
    found = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "chainloom.relayer.wallet.balance":
                    for point in metric.data.data_points:
                        assert isinstance(point, NumberDataPoint)
                        attributes = point.attributes or {}
                        key = (int(attributes["chainloom.target_chain"]),  # type: ignore[arg-type]
                               str(attributes["chainloom.wallet"]))  # fmt: skip
                        found[key] = int(point.value)
    return found


def test_a_drained_wallet_is_published_with_what_the_chain_says(
    tables: RelayTables, bridges: dict[int, Deployment], dev_sender: dict[int, Sender]
) -> None:
    deployment = bridges[CHAIN]
    adapter = EvmAdapter(
        EvmChainSettings(
            chain=CHAIN,
            rpc_url=deployment.rpc_url,
            evm_chain_id=deployment.evm_chain_id,
            token_bridge=deployment.token_bridge,
        )
    )
    key = funded_wallet_key(dev_sender[CHAIN], "balance")
    address = Account.from_key(key).address
    w3 = dev_sender[CHAIN].w3
    reader = InMemoryMetricReader()
    register_gauge(MeterProvider(metric_readers=[reader]).get_meter("test"))
    balances = WalletBalances(tables, adapter, address)

    funded = balances.maybe_publish(100.0, every=30)
    assert funded is not None
    assert funded.wei == w3.eth.get_balance(address) > 0
    assert BalanceBoard(tables).read() == [funded]
    assert gauge_points(reader)[(CHAIN, address)] == funded.wei

    # Drain: send nearly everything away from the wallet, signed with its key.
    gas_price = w3.eth.gas_price * 2
    keep = 10**12
    transaction = {
        "to": Web3.to_checksum_address("0x" + "11" * 20),
        "value": funded.wei - 21_000 * gas_price - keep,
        "gas": 21_000,
        "gasPrice": gas_price,
        "nonce": w3.eth.get_transaction_count(address),
        "chainId": deployment.evm_chain_id,
    }
    signed = Account.from_key(key).sign_transaction(transaction)
    w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(signed.raw_transaction))

    assert balances.maybe_publish(110.0, every=30) is None  # not due yet: not read
    assert BalanceBoard(tables).read() == [funded]
    drained = balances.maybe_publish(130.0, every=30)
    assert drained is not None
    assert drained.wei == w3.eth.get_balance(address) == keep
    assert BalanceBoard(tables).read() == [drained]
    assert gauge_points(reader)[(CHAIN, address)] == keep
