"""LowBalance against the real API server: a wallet on the real geth chain is drained below its
chain's ``minBalance``; its worker's balance reader publishes that to the pool's Redis, and the
operator (on the host, rechecking every 2 s) sets the LowBalance condition and posts one Warning
event naming the wallet's address."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from eth_account import Account
from web3 import Web3

from chainloom.evm.deploy import Deployment, Sender
from chainloom.relayer.balances import WalletBalances
from chainloom.relayer.evm_adapter import EvmAdapter
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.tables import RelayTables
from tests.conftest import REPO_ROOT, StackForTests
from tests.integration.evm.conftest import bridges, dev_sender, evm_rpc, funded_wallet_key
from tests.operator_support import chainloom_crds, kubectl, kubectl_json, start_operator, wait_for

__all__ = ["bridges", "chainloom_crds", "dev_sender", "evm_rpc"]

CHAIN = 2
KEEP = 10**12
KWOK_PLACEMENT = {
    "node_selector": {"type": "kwok"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
}


@pytest.fixture
def tables(redis_url: str) -> Iterator[RelayTables]:
    client = redis.Redis.from_url(redis_url)
    yield RelayTables(client)
    client.close()


def _low_balance(kubeconfig: str, namespace: str, status: str) -> dict[str, Any] | None:
    """The pool's LowBalance condition when its status is ``status``, else None."""
    found = kubectl_json(kubeconfig, "-n", namespace, "get", "rpool", "mainnet")
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "LowBalance" and c["status"] == status),
                None)  # fmt: skip


def _drain(w3: Web3, key: bytes, evm_chain_id: int) -> None:
    address = Account.from_key(key).address
    gas_price = w3.eth.gas_price * 2
    transaction = {
        "to": Web3.to_checksum_address("0x" + "22" * 20),
        "value": w3.eth.get_balance(address) - 21_000 * gas_price - KEEP,
        "gas": 21_000,
        "gasPrice": gas_price,
        "nonce": w3.eth.get_transaction_count(address),
        "chainId": evm_chain_id,
    }
    signed = Account.from_key(key).sign_transaction(transaction)
    w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(signed.raw_transaction))


def test_a_drained_wallet_sets_low_balance_and_posts_one_warning(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path, redis_url: str,
    tables: RelayTables, bridges: dict[int, Deployment], dev_sender: dict[int, Sender],
    local_stack: StackForTests,
) -> None:  # fmt: skip
    local_stack.require("kwok")
    kubeconfig, namespace = chainloom_crds, kube_namespace
    deployment = bridges[CHAIN]
    adapter = EvmAdapter(
        EvmChainSettings(
            chain=CHAIN,
            rpc_url=deployment.rpc_url,
            evm_chain_id=deployment.evm_chain_id,
            token_bridge=deployment.token_bridge,
        )
    )
    key = funded_wallet_key(dev_sender[CHAIN], "low-balance")
    address = Account.from_key(key).address
    balances = WalletBalances(tables, adapter, address)
    funded = balances.maybe_publish(0.0, every=30)
    assert funded is not None
    minimum = funded.wei // 2

    kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", "eth-hot-1",
            "--from-literal=key=" + key.hex())  # fmt: skip
    pool: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docs/samples/relayerpool.yaml").read_text())
    pool["spec"]["placement"] = KWOK_PLACEMENT
    pool["spec"]["redis"] = {"url": redis_url}
    pool["spec"]["chains"] = [
        {"chain": CHAIN, "min_balance": str(minimum),
         "wallets": [{"name": "hot-1", "secret_ref": {"name": "eth-hot-1", "key": "key"}}]}
    ]  # fmt: skip
    running = start_operator(kubeconfig, namespace, tmp_path / "operator.log")
    try:
        kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
                stdin=yaml.safe_dump(pool))  # fmt: skip
        above = wait_for(
            lambda: _low_balance(kubeconfig, namespace, "False"),
            what="LowBalance False while the wallet is funded",
        )
        assert above["reason"] == "BalancesAboveMinimum"

        _drain(dev_sender[CHAIN].w3, key, deployment.evm_chain_id)
        drained = balances.maybe_publish(60.0, every=30)
        assert drained is not None
        assert drained.wei == KEEP

        low = wait_for(
            lambda: _low_balance(kubeconfig, namespace, "True"),
            what="LowBalance True after the drain",
        )
        assert low["reason"] == "BalanceBelowMinimum"
        assert f"{address} on chain {CHAIN} holds {KEEP} (minBalance {minimum})" in low["message"]

        def warned() -> list[dict[str, Any]] | None:
            events = kubectl_json(kubeconfig, "-n", namespace, "get", "events",
                                  "--field-selector", "reason=LowBalance")["items"]  # fmt: skip
            return events or None

        [event] = wait_for(warned, what="a LowBalance event")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "RelayerPool"
        assert address in event["message"]
        # The condition stays through the pool's own status refreshes, with no second event.
        time.sleep(5)  # two or three more rechecks (every 2 s)
        assert _low_balance(kubeconfig, namespace, "True") is not None
    finally:
        running.stop()
    output = running.output()
    assert key.hex() not in output
    events = kubectl_json(kubeconfig, "-n", namespace, "get", "events",
                          "--field-selector", "reason=LowBalance")["items"]  # fmt: skip
    assert len(events) == 1
