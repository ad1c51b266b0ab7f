"""Deploy the core and token bridge on an EVM chain, install guardian sets, register emitters.

One function per step, each a plain web3 transaction: a deployment is what ``chainloom evm
deploy`` prints (and what tests and the demo use to configure the relayer's chain adapter).
Transactions are sent from the node's unlocked account (geth ``--dev``'s funded account) or,
with a key, signed locally; the relayer's own wallets are only ever funded from here, never
used to deploy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eth_account import Account
from eth_typing import ChecksumAddress
from web3 import Web3
from web3.exceptions import Web3Exception

from chainloom.evm.compile import contract
from chainloom.evm.errors import DeployError, RpcUnavailableError
from chainloom.wormhole.guardians import GuardianSets

DEFAULT_FUNDING_WEI = 1000 * 10**18
"""What each relayer wallet gets from the dev account (1000 ETH)."""


@dataclass(frozen=True, slots=True)
class Deployment:
    """Where the contracts of one chain are and what they trust."""

    rpc_url: str
    """The chain's JSON-RPC endpoint."""
    evm_chain_id: int
    """Its EIP-155 chain id (``eth_chainId``)."""
    wormhole_chain: int
    """The Wormhole chain id it stands for (transfers to it name this id)."""
    core: str
    """Address of ChainloomCore (EIP-55)."""
    token_bridge: str
    """Address of ChainloomTokenBridge (EIP-55)."""
    guardian_set_indices: tuple[int, ...]
    """Guardian sets installed in the core."""
    emitters: Mapping[int, str] = field(default_factory=dict)
    """Registered token-bridge emitter per Wormhole chain (64 hex digits)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (what ``chainloom evm deploy --json`` prints)."""
        return {
            "rpc_url": self.rpc_url,
            "evm_chain_id": self.evm_chain_id,
            "wormhole_chain": self.wormhole_chain,
            "core": self.core,
            "token_bridge": self.token_bridge,
            "guardian_set_indices": list(self.guardian_set_indices),
            "emitters": {str(chain): address for chain, address in self.emitters.items()},
        }


def connect(rpc_url: str, *, timeout: float = 10.0) -> Web3:
    """A web3 client for ``rpc_url`` that answered ``eth_chainId`` (else RpcUnavailableError)."""
    w3 = Web3(Web3.HTTPProvider(rpc_url, request_kwargs={"timeout": timeout}))
    try:
        w3.eth.chain_id  # noqa: B018 (a round trip proves the endpoint answers)
    except (OSError, Web3Exception, ValueError) as error:
        raise RpcUnavailableError(f"{rpc_url} does not answer: {error}") from None
    return w3


class Sender:
    """Sends transactions from the node's unlocked account or from a local key."""

    def __init__(self, w3: Web3, private_key: bytes | None = None) -> None:
        self.w3 = w3
        self._account = Account.from_key(private_key) if private_key is not None else None
        if self._account is not None:
            self.address: ChecksumAddress = Web3.to_checksum_address(self._account.address)
        else:
            accounts = w3.eth.accounts
            if not accounts:
                raise DeployError("the node has no unlocked account; give a deployer key file")
            self.address = Web3.to_checksum_address(accounts[0])

    def send(self, transaction: dict[str, Any], what: str) -> dict[str, Any]:
        """Send ``transaction`` (``to``/``data``/``value``) and wait for its receipt (DeployError
        if it reverts)."""
        w3 = self.w3
        transaction = {**transaction, "from": self.address}
        try:
            if self._account is None:
                tx_hash = w3.eth.send_transaction(transaction)  # type: ignore[arg-type]
            else:
                transaction.setdefault(
                    "nonce", w3.eth.get_transaction_count(self.address, "pending")
                )
                transaction.setdefault("chainId", w3.eth.chain_id)
                transaction.setdefault("gas", w3.eth.estimate_gas(transaction))  # type: ignore[arg-type]
                base_fee = w3.eth.get_block("latest").get("baseFeePerGas", 0)
                transaction.setdefault("maxPriorityFeePerGas", 10**9)
                transaction.setdefault("maxFeePerGas", 2 * base_fee + 10**9)
                signed = self._account.sign_transaction(transaction)
                tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
            receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=120)
        except (Web3Exception, ValueError) as error:
            raise DeployError(f"{what}: {error}") from None
        if receipt["status"] != 1:
            raise DeployError(f"{what}: transaction {tx_hash.hex()} reverted")
        return dict(receipt)


def _deploy(sender: Sender, name: str, *args: object) -> str:
    abi, bytecode = contract(name)
    factory = sender.w3.eth.contract(abi=abi, bytecode=bytecode)
    data = factory.constructor(*args).data_in_transaction
    receipt = sender.send({"data": data}, f"deploying {name}")
    address = receipt.get("contractAddress")
    if not address:
        raise DeployError(f"deploying {name}: the receipt names no contract address")
    return str(address)


def _call(sender: Sender, name: str, address: str, function: str, *args: object) -> None:
    abi, _ = contract(name)
    bound = sender.w3.eth.contract(address=Web3.to_checksum_address(address), abi=abi)
    data = bound.encode_abi(function, args=list(args))
    sender.send({"to": bound.address, "data": data}, f"{name}.{function}")


def deploy_core(sender: Sender, *, wormhole_chain: int, guardian_sets: GuardianSets) -> str:
    """Deploy ChainloomCore with ``guardian_sets`` (their expiry times too); return its address."""
    core = _deploy(sender, "ChainloomCore", wormhole_chain)
    for guardian_set in guardian_sets:
        _call(
            sender,
            "ChainloomCore",
            core,
            "setGuardianSet",
            guardian_set.index,
            [Web3.to_checksum_address(a) for a in guardian_set.addresses],
            guardian_set.expiration_time or 0,
        )
    return core


def deploy(
    sender: Sender,
    *,
    rpc_url: str,
    wormhole_chain: int,
    guardian_sets: GuardianSets,
    emitters: Mapping[int, bytes],
) -> Deployment:
    """Deploy core + token bridge, install ``guardian_sets`` and register ``emitters``."""
    w3 = sender.w3
    core = deploy_core(sender, wormhole_chain=wormhole_chain, guardian_sets=guardian_sets)
    bridge = _deploy(sender, "ChainloomTokenBridge", core)
    for chain, emitter in sorted(emitters.items()):
        _call(sender, "ChainloomTokenBridge", bridge, "registerEmitter", chain, emitter)
    return Deployment(
        rpc_url=rpc_url,
        evm_chain_id=w3.eth.chain_id,
        wormhole_chain=wormhole_chain,
        core=core,
        token_bridge=bridge,
        guardian_set_indices=tuple(guardian_sets.indices),
        emitters={chain: emitter.hex() for chain, emitter in sorted(emitters.items())},
    )


def fund(sender: Sender, addresses: Sequence[str], wei: int = DEFAULT_FUNDING_WEI) -> None:
    """Send ``wei`` to each address (the relayer's wallets) from the deployer."""
    for address in addresses:
        sender.send({"to": Web3.to_checksum_address(address), "value": wei}, f"funding {address}")
