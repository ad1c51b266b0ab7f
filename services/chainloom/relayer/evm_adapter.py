"""The relayer's chain adapter for EVM chains: redeem on the project's token bridge with web3.

What a worker gets from it (the :class:`~chainloom.relayer.adapters.ChainAdapter` Protocol):

* ``is_redeemed``: ``isTransferCompleted(digest)`` on the token bridge (an ``eth_call``).
* ``submit``: ``completeTransfer(vaa)`` estimated (``eth_estimateGas``, which also runs it: a
  revert there is classified before anything is sent; against the pending state after a start
  or a rollback, where transactions sent before a crash already ran), capped by the fee policy
  of the settings, signed with the worker's wallet key and sent raw. Its nonce comes from a
  :class:`NonceManager` owned by this worker ({chain + wallet} is one worker, so nobody else
  uses the nonces of this wallet on this chain): it starts from the chain's *pending*
  transaction count, which also recovers after a crash, and after any send whose outcome is
  unknown it reads that count again instead of guessing, so two transactions never carry one
  nonce by mistake.
* ``finality``: the receipt, N confirmations deep (settings), and still in the canonical chain
  (the block at its height has its hash); a receipt whose block was reorganised away, a
  transaction the node no longer knows, or a reverted transaction (out of gas, or another
  submission won) is reported rolled back, so the request goes back to Incoming through the
  workers' existing rollback path, where ``is_redeemed`` is asked again before any resubmission.

Reverts are sorted by :func:`classify_revert` from the contract's fixed reason strings
(``docs/evm.md``): already completed -> :class:`AlreadyRedeemedError` (done, counted); a bad VAA,
an unknown emitter, another target chain -> :class:`RefusedForGoodError` (Failed with the
reason); everything else, and every transport error, -> :class:`SubmitError` (retried with
backoff and re-estimated). Wallet keys are used only to sign; no message carries one.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
from eth_account import Account
from web3 import Web3
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3Exception
from web3.types import RPCEndpoint

from chainloom.evm.compile import contract
from chainloom.relayer.errors import (
    AlreadyRedeemedError,
    ConfigError,
    RefusedForGoodError,
    SubmitError,
    UnknownSubmissionError,
)
from chainloom.relayer.evm_endpoints import EndpointPool, redacted
from chainloom.relayer.evm_provider import FailoverProvider
from chainloom.relayer.evm_settings import EvmChainSettings
from chainloom.relayer.model import Finality
from chainloom.relayer.wallet import Wallet
from chainloom.wormhole import parse_vaa
from chainloom.wormhole.errors import WormholeError

__all__ = [
    "EvmAdapter",
    "NonceManager",
    "Revert",
    "classify_revert",
    "classify_send_error",
    "evm_adapters",
]

logger = logging.getLogger("chainloom.relayer.evm")

_GWEI = 10**9

_BASE_FEE_TTL = 1.0
"""Seconds a base fee read from the latest block is reused for the next submissions (a base fee
moves at most 12.5 % a block and the fee cap allows twice it; a refusal is retried anyway)."""


class Revert(enum.Enum):
    """What a revert (or a refused send) means for the request."""

    ALREADY_COMPLETED = "already_completed"
    """The transfer is redeemed already: done."""
    FOR_GOOD = "for_good"
    """The chain will never accept this VAA: Failed, no retry."""
    RETRY = "retry"
    """Worth another attempt later (gas, fees, nonces, a node hiccup)."""


_FOR_GOOD_REASONS = (
    "invalid VAA",
    "unknown emitter",
    "transfer is for another chain",
    "payload 3 may only be redeemed by its recipient",
    "fee exceeds amount",
    "not a transfer",
    "malformed transfer payload",
    "recipient is not an EVM address",
    "token is not an EVM address",
    "guardian indices must be strictly ascending",
    "VAA truncated",
    "unsupported VAA version",
)
"""Reason strings of the token bridge and core contracts that no retry can change."""


def classify_revert(reason: str) -> Revert:
    """Sort a revert reason of the token bridge (``execution reverted: ...``)."""
    if "transfer already completed" in reason:
        return Revert.ALREADY_COMPLETED
    if any(known in reason for known in _FOR_GOOD_REASONS):
        return Revert.FOR_GOOD
    return Revert.RETRY


def classify_send_error(message: str) -> tuple[Revert, bool]:
    """Sort an ``eth_sendRawTransaction`` refusal: (what to do, whether to re-read the nonce).

    Every refusal is retried: ``nonce too low`` (a transaction with this nonce was mined: ours
    from before a crash), ``underpriced`` (a pending transaction holds the nonce and pays
    more), ``insufficient funds`` (until an operator tops the wallet up). The nonce is read from
    the chain again after each, except after ``already known``: that is this very transaction,
    already in the node's pool, whose nonce is spent.
    """
    return Revert.RETRY, "already known" not in message.lower()


class NonceManager:
    """The next nonce of each wallet on one chain, for the single worker that owns the wallet.

    The first nonce is the chain's pending transaction count (which counts transactions this
    wallet sent before a crash that are still in the pool); after that it counts up locally,
    and :meth:`forget` makes the next :meth:`reserve` read the chain again.
    """

    def __init__(self, pending_count: Callable[[str], int]) -> None:
        self._pending_count = pending_count
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    def reserve(self, address: str) -> int:
        """The nonce the next transaction of ``address`` must carry."""
        with self._lock:
            if address not in self._next:
                self._next[address] = self._pending_count(address)
            return self._next[address]

    def known(self, address: str) -> bool:
        """Whether the next nonce of ``address`` is counted locally (False: it will be read)."""
        with self._lock:
            return address in self._next

    def sent(self, address: str, nonce: int) -> None:
        """A transaction with ``nonce`` was accepted by the node."""
        with self._lock:
            self._next[address] = nonce + 1

    def forget(self, address: str | None = None) -> None:
        """Read the chain's pending count before the next transaction of ``address`` (of every
        wallet when None): after a send whose outcome is unknown, or a rollback."""
        with self._lock:
            if address is None:
                self._next.clear()
            else:
                self._next.pop(address, None)


class EvmAdapter:
    """Redeems transfers on one EVM chain's token bridge (see the module docstring)."""

    def __init__(self, settings: EvmChainSettings) -> None:
        self.settings = settings
        self.chain_id = settings.chain
        failover = settings.failover
        self.endpoints = EndpointPool(
            settings.chain,
            settings.endpoints(),
            failover.backoff.schedule(),
            max_lag_blocks=failover.max_lag_blocks,
        )
        """The chain's RPC endpoints and their health (failover: docs/evm.md)."""
        # web3 checks the chain id before every call it validates: answer that from a cache
        # (only eth_chainId: blocks and receipts must stay live for the reorg check).
        self._provider = FailoverProvider(
            self.endpoints,
            timeout=settings.rpc_timeout,
            health_interval=failover.health_interval,
            cacheable={RPCEndpoint("eth_chainId")},
        )
        self._w3 = Web3(self._provider)
        abi, _ = contract("ChainloomTokenBridge")
        self._bridge = self._w3.eth.contract(
            address=Web3.to_checksum_address(settings.token_bridge), abi=abi
        )
        self.nonces = NonceManager(self._pending_count)
        """This worker's nonces (one wallet per worker)."""
        self._accounts: dict[str, Any] = {}
        self._base_fee = (0, -_BASE_FEE_TTL)  # (wei, monotonic time it was read)

    def __repr__(self) -> str:
        return f"EvmAdapter(chain={self.chain_id}, rpc={redacted(self.endpoints.current.url)})"

    # start-up ---------------------------------------------------------------------------
    def check_chain(self) -> None:
        """Refuse endpoints that serve another chain (ConfigError), or when none answers;
        one that does not answer yet is only set aside (a warning)."""
        answered = 0
        for url in self.settings.endpoints():
            where = redacted(url)
            w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": self.settings.rpc_timeout}))
            try:
                served = w3.eth.chain_id
                code = w3.eth.get_code(self._bridge.address)
            except (OSError, Web3Exception, ValueError) as error:
                logger.warning(
                    "evm chain %s: endpoint %s does not answer: %s",
                    self.chain_id,
                    where,
                    type(error).__name__,
                )
                endpoint = next(e for e in self.endpoints.endpoints if e.url == url)
                self.endpoints.failed(endpoint, "no answer at start", time.monotonic())
                continue
            if served != self.settings.evm_chain_id:
                raise ConfigError(
                    f"evm chain {self.chain_id}: {where} serves EVM chain id "
                    f"{served}, not the configured {self.settings.evm_chain_id}"
                )
            if not code:
                raise ConfigError(
                    f"evm chain {self.chain_id}: no contract at token_bridge "
                    f"{self.settings.token_bridge} on {where}"
                )
            answered += 1
        if not answered:
            raise ConfigError(f"evm chain {self.chain_id}: no RPC endpoint answers")

    # the Protocol -----------------------------------------------------------------------
    def is_redeemed(self, vaa: bytes) -> bool:
        digest = _digest(vaa)
        try:
            completed: bool = self._bridge.functions.isTransferCompleted(digest).call()
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"isTransferCompleted on chain {self.chain_id}: {error}") from None
        return completed

    def balance(self, address: str) -> int:
        """The wallet's native balance in wei (``eth_getBalance`` at the latest block)."""
        try:
            return int(self._w3.eth.get_balance(Web3.to_checksum_address(address)))
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"balance on chain {self.chain_id}: {error}") from None

    def redeemed_many(self, vaas: Sequence[bytes]) -> list[bool]:
        """:meth:`is_redeemed` of each VAA, all in one JSON-RPC batch request."""
        digests = [_digest(vaa) for vaa in vaas]
        try:
            with self._w3.batch_requests() as batch:
                for digest in digests:
                    batch.add(self._bridge.functions.isTransferCompleted(digest))
                answers = batch.execute()
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"isTransferCompleted on chain {self.chain_id}: {error}") from None
        return [bool(answer) for answer in answers]

    def submit(self, vaa: bytes, wallet: Wallet) -> str:
        _digest(vaa)  # a VAA that does not parse is refused for good before any RPC
        sender = Web3.to_checksum_address(wallet.address)
        call = self._bridge.functions.completeTransfer(vaa)
        # Right after a start or a rollback this wallet may have transactions in flight (sent
        # before a crash): estimate against the pending state, where they already ran, so a
        # redemption waiting in the pool is found instead of sent again. Otherwise the latest
        # state is the same and several times cheaper to ask.
        block = "latest" if self.nonces.known(sender) else "pending"
        gas = self._estimate(call, sender, block)
        max_fee, tip = self._fees()
        try:
            nonce = self.nonces.reserve(sender)
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"pending nonce on chain {self.chain_id}: {error}") from None
        transaction = call.build_transaction(
            {  # type: ignore[arg-type]
                "from": sender,
                "nonce": nonce,
                "gas": gas,
                "maxFeePerGas": max_fee,
                "maxPriorityFeePerGas": tip,
                "chainId": self.settings.evm_chain_id,
            }
        )
        signed = self._account(wallet).sign_transaction(transaction)
        try:
            tx_hash = self._w3.eth.send_raw_transaction(signed.raw_transaction)
        except (Web3Exception, ValueError) as error:
            message = str(error)
            _, resync = classify_send_error(message)
            if "already known" in message.lower():
                self.nonces.sent(sender, nonce)  # this very transaction is in the pool
                return "0x" + bytes(signed.hash).hex()
            if resync:
                self.nonces.forget(sender)
            raise SubmitError(f"chain {self.chain_id} refused the transaction: {message}") from None
        except OSError as error:  # sent or not: unknown, so read the nonce again next time
            self.nonces.forget(sender)
            raise SubmitError(f"sending to chain {self.chain_id}: {error}") from None
        self.nonces.sent(sender, nonce)
        return "0x" + bytes(tx_hash).hex()

    def finality(self, submission_id: str) -> Finality:
        w3 = self._w3
        try:
            receipt = w3.eth.get_transaction_receipt(submission_id)  # type: ignore[arg-type]
        except TransactionNotFound:
            try:
                w3.eth.get_transaction(submission_id)  # type: ignore[arg-type]
            except TransactionNotFound:
                self.nonces.forget()  # its nonce may be free again (a reorg, a dropped tx)
                raise UnknownSubmissionError(
                    f"chain {self.chain_id} does not know transaction {submission_id}"
                ) from None
            return Finality.PENDING  # still in the pool
        if receipt["status"] != 1:
            return self._judge(submission_id, receipt, None, 0)
        canonical = w3.eth.get_block(receipt["blockNumber"]).get("hash")
        return self._judge(submission_id, receipt, canonical, w3.eth.block_number)

    def finality_many(self, submission_ids: Sequence[str]) -> list[Finality]:
        """The finality of many submissions in two JSON-RPC batch requests.

        One batch asks for the head and every receipt, a second for the blocks at their
        heights; each receipt is then judged as :meth:`finality` judges it. If any
        transaction has no receipt yet (still in the pool, or unknown) the node's answer for
        the first batch is an error, so these are asked one by one instead, where a
        transaction the node does not know counts as rolled back (what the worker does with
        :class:`UnknownSubmissionError`). Transport errors raise :class:`SubmitError`.
        """
        if not submission_ids:
            return []
        w3 = self._w3
        try:
            try:
                with w3.batch_requests() as batch:
                    batch.add(w3.eth.get_block_number())
                    for submission_id in submission_ids:
                        batch.add(w3.eth.get_transaction_receipt(submission_id))  # type: ignore[arg-type]
                    answers: list[Any] = list(batch.execute())
                    head, receipts = int(answers[0]), answers[1:]
            except TransactionNotFound:
                return [self._finality_or_gone(submission_id) for submission_id in submission_ids]
            heights = sorted({r["blockNumber"] for r in receipts if r["status"] == 1})
            canonical: dict[int, Any] = {}
            if heights:
                with w3.batch_requests() as batch:
                    for height in heights:
                        batch.add(w3.eth.get_block(height))
                    blocks = batch.execute()
                canonical = {h: b.get("hash") for h, b in zip(heights, blocks, strict=True)}
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"receipts on chain {self.chain_id}: {error}") from None
        return [
            self._judge(submission_id, receipt, canonical.get(receipt["blockNumber"]), head)
            for submission_id, receipt in zip(submission_ids, receipts, strict=True)
        ]

    def _finality_or_gone(self, submission_id: str) -> Finality:
        try:
            return self.finality(submission_id)
        except UnknownSubmissionError:
            return Finality.ROLLED_BACK

    def _judge(self, submission_id: str, receipt: Any, canonical: Any, head: int) -> Finality:
        """A mined transaction's finality: its status, its block's place, its depth."""
        if receipt["status"] != 1:
            logger.warning(
                "chain %s: transaction %s reverted (gas used %s of its limit): rolled back",
                self.chain_id,
                submission_id,
                receipt["gasUsed"],
            )
            return Finality.ROLLED_BACK
        height = receipt["blockNumber"]
        if canonical != receipt["blockHash"]:
            logger.warning(
                "chain %s: block %s holding %s was reorganised away",
                self.chain_id,
                height,
                submission_id,
            )
            self.nonces.forget()  # the chain went back: so did this wallet's nonce
            return Finality.ROLLED_BACK
        depth = head - height + 1
        return Finality.FINAL if depth >= self.settings.confirmations else Finality.PENDING

    # helpers ----------------------------------------------------------------------------
    def _pending_count(self, address: str) -> int:
        return self._w3.eth.get_transaction_count(Web3.to_checksum_address(address), "pending")

    def _account(self, wallet: Wallet) -> Any:
        account = self._accounts.get(wallet.address)
        if account is None:
            account = self._accounts[wallet.address] = Account.from_key(wallet.private_key_bytes())
        return account

    def _estimate(self, call: Any, sender: str, block: str) -> int:
        """Gas for ``call`` from ``sender`` with headroom; a revert is classified here."""
        try:
            estimate = int(call.estimate_gas({"from": sender}, block))
        except ContractLogicError as error:
            reason = str(error.message or error)
            kind = classify_revert(reason)
            if kind is Revert.ALREADY_COMPLETED:
                raise AlreadyRedeemedError(reason) from None
            if kind is Revert.FOR_GOOD:
                raise RefusedForGoodError(reason) from None
            raise SubmitError(f"estimating gas on chain {self.chain_id}: {reason}") from None
        except (OSError, Web3Exception, ValueError) as error:
            raise SubmitError(f"estimating gas on chain {self.chain_id}: {error}") from None
        gas = int(estimate * self.settings.gas.estimate_multiplier)
        if gas > self.settings.gas.max_gas:
            raise SubmitError(
                f"redemption needs {gas} gas, above gas.max_gas {self.settings.gas.max_gas}"
            )
        return gas

    def _fees(self) -> tuple[int, int]:
        """(maxFeePerGas, maxPriorityFeePerGas) within the cap of the settings."""
        policy = self.settings.gas
        cap = int(policy.max_fee_gwei * _GWEI)
        tip = min(int(policy.priority_fee_gwei * _GWEI), cap)
        base_fee, read_at = self._base_fee
        if time.monotonic() - read_at >= _BASE_FEE_TTL:
            try:
                base_fee = int(self._w3.eth.get_block("latest").get("baseFeePerGas", 0))
            except (OSError, Web3Exception, ValueError) as error:
                raise SubmitError(
                    f"reading the base fee of chain {self.chain_id}: {error}"
                ) from None
            self._base_fee = (base_fee, time.monotonic())
        if base_fee + tip > cap:
            raise SubmitError(
                f"base fee {base_fee / _GWEI:.3f} gwei + tip is above the fee cap "
                f"gas.max_fee_gwei {policy.max_fee_gwei}; waiting for cheaper blocks"
            )
        return min(2 * base_fee + tip, cap), tip


def _digest(vaa: bytes) -> bytes:
    try:
        return parse_vaa(vaa).digest
    except WormholeError as error:
        raise RefusedForGoodError(f"the VAA does not parse: {error}") from None


def evm_adapters(
    chains: tuple[EvmChainSettings, ...],
) -> Callable[[redis.Redis, int], EvmAdapter]:
    """An adapter factory (``service.AdapterFactory``) over the configured EVM chains."""
    by_chain = {entry.chain: entry for entry in chains}

    def build(client: redis.Redis, chain: int) -> EvmAdapter:
        del client  # the chain is the EVM node, not Redis
        settings = by_chain.get(chain)
        if settings is None:
            configured = ", ".join(str(c) for c in sorted(by_chain)) or "none"
            raise ConfigError(f"no evm_chains entry for chain {chain} (configured: {configured})")
        adapter = EvmAdapter(settings)
        adapter.check_chain()
        return adapter

    return build
