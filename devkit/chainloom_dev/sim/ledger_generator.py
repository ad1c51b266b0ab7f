"""A workload generator: consecutive, internally consistent ledgers with a mainnet-like mix.

Why: the ETL and the backends must be exercised (and benchmarked) on many ledgers shaped like
mainnet's, and real dumps are not in the vectors. Starting from a real state (ledger 38129 from
the vectors), the generator applies transactions itself, so every ledger it writes holds

* valid binary transactions (fields in canonical order; signatures are random bytes: nothing
  here verifies them) and metadata whose ``AffectedNodes`` are exactly the objects each
  transaction created, modified or deleted, with ``PreviousFields`` / ``FinalFields``;
* the state diff those transactions imply, plus the LedgerHashes skip list rippled updates
  every ledger;
* a header with the right parent hash, total coins (fees burn), transaction tree root and
  state tree root (a SHAMap over the whole state), and its hash.

The mix (weights in :data:`MIX`): XRP payments (some funding new accounts), issued-currency
payments from gateways along trust lines, offers created,
replaced (OfferCreate with OfferSequence) and cancelled, trust lines, NFT mint / sell offer /
accept / cancel / burn, and account deletes. Each transaction keeps the rules the ETL and Clio
rely on (directories hold their entries, owner counts follow, an NFT page holds its tokens, an
issuer of live NFTs is never deleted); economic rules such as offer crossing or
reserves beyond a fixed minimum are out of scope. Deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from chainloom.ledger.errors import LedgerInputError
from chainloom.ledger.sources.base import SourceLedger
from chainloom.ledger.types import LedgerHeader, LedgerObject
from chainloom.ledger.xrpl import binary, hashing, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.binary import STObject
from chainloom.ledger.xrpl.parse import native_drops

MIX: dict[str, int] = {
    "payment": 18,
    "payment_issued": 6,
    "payment_new_account": 12,
    "offer_create": 16,
    "offer_replace": 14,
    "offer_cancel": 8,
    "trust_set": 8,
    "nft_mint": 7,
    "nft_sell_offer": 4,
    "nft_accept": 3,
    "nft_cancel": 1,
    "nft_burn": 2,
    "account_delete": 1,
}
"""Relative weights of the transaction kinds (a kind that is impossible at that moment falls
back to a payment)."""

FEE = 12
"""Drops burned by an ordinary transaction."""
ACCOUNT_DELETE_FEE = 2_000_000
"""Drops burned by AccountDelete (the owner reserve, as on mainnet)."""
MIN_BALANCE = 50_000_000
"""Drops an account keeps at least (a stand-in for the reserve)."""
DIR_PAGE_CAPACITY = 32
"""Entries per directory page."""
NFT_PAGE_CAPACITY = 32
"""Tokens per NFTokenPage."""
CLOSE_INTERVAL = 10
"""Seconds between generated ledgers' close times."""

_THREADED = frozenset(
    {sf.ACCOUNT_ROOT, sf.RIPPLE_STATE, sf.OFFER, sf.NFTOKEN_PAGE, sf.NFTOKEN_OFFER}
)
_NODE_ONLY = (sf.LEDGER_ENTRY_TYPE, sf.PREVIOUS_TXN_ID, sf.PREVIOUS_TXN_LGR_SEQ)
_XRP = b"\x00" * 20
_NO_ACCOUNT = b"\x00" * 19 + b"\x01"
_CURRENCIES = ("USD", "EUR", "BTC", "JPY")


# --- value encoders ------------------------------------------------------------------------


def u16(value: int) -> bytes:
    """UInt16."""
    return value.to_bytes(2, "big")


def u32(value: int) -> bytes:
    """UInt32."""
    return value.to_bytes(4, "big")


def u64(value: int) -> bytes:
    """UInt64."""
    return value.to_bytes(8, "big")


def xrp(drops: int) -> bytes:
    """An XRP amount."""
    if drops < 0:
        raise LedgerInputError(f"negative XRP amount {drops}")
    return (0x4000000000000000 | drops).to_bytes(8, "big")


def currency_code(code: str) -> bytes:
    """A three-letter currency as its 20-byte code."""
    return b"\x00" * 12 + code.encode("ascii") + b"\x00" * 5


def _normalize(value: Decimal) -> tuple[int, int]:
    """(mantissa, exponent) with 10^15 <= mantissa < 10^16 (value > 0)."""
    _, digits, exponent = value.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)))
    while mantissa < 10**15:
        mantissa *= 10
        exponent -= 1
    while mantissa >= 10**16:
        mantissa //= 10
        exponent += 1
    return mantissa, exponent


def issued(value: Decimal, currency: bytes, issuer: bytes) -> bytes:
    """An issued-currency amount."""
    if value == 0:
        return (0x8000000000000000).to_bytes(8, "big") + currency + issuer
    mantissa, exponent = _normalize(abs(value))
    raw = 0x8000000000000000 | ((exponent + 97) << 54) | mantissa
    if value > 0:
        raw |= 0x4000000000000000
    return raw.to_bytes(8, "big") + currency + issuer


def issued_value(amount: bytes) -> Decimal:
    """The value of an issued-currency amount (the inverse of :func:`issued`)."""
    raw = int.from_bytes(amount[:8], "big")
    mantissa = raw & ((1 << 54) - 1)
    if mantissa == 0:
        return Decimal(0)
    exponent = ((raw >> 54) & 0xFF) - 97
    value = Decimal(mantissa).scaleb(exponent)
    return value if raw & 0x4000000000000000 else -value


def quality(pays: Decimal, gets: Decimal) -> int:
    """An offer's quality (pays / gets) in the 64-bit directory form."""
    mantissa, exponent = _normalize(pays / gets)
    return ((exponent + 100) << 56) | mantissa


def _get_u32(obj: STObject, field: int, default: int = 0) -> int:
    value = obj.get(field)
    return int.from_bytes(value, "big") if isinstance(value, bytes) else default


def _token_order(item: tuple[int, STObject]) -> tuple[bytes, bytes]:
    """rippled's NFToken order in a page: the low 96 bits, then the whole ID."""
    token_id = item[1][sf.NFTOKEN_ID]
    assert isinstance(token_id, bytes)
    return token_id[20:], token_id


def _balance(obj: STObject) -> int:
    value = obj.get(sf.BALANCE)
    drops = native_drops(value) if isinstance(value, bytes) else None
    return 0 if drops is None else drops


# --- the generator -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _NftOffer:
    """A sell offer the generator placed and may later accept or cancel."""

    key: bytes
    """The NFTokenOffer's key."""
    owner: bytes
    """The seller."""
    token_id: bytes
    """The token offered."""
    amount: int
    """The price in drops."""


class _Transaction:
    """One transaction being built: its working view of the state and what it touched."""

    def __init__(self, state: dict[bytes, STObject]) -> None:
        self._state = state
        self.before: dict[bytes, STObject | None] = {}
        self.after: dict[bytes, STObject | None] = {}

    def get(self, key: bytes) -> STObject | None:
        if key in self.after:
            current = self.after[key]
            return None if current is None else current
        found = self._state.get(key)
        if found is None:
            return None
        copy = dict(found)
        self.before[key] = found
        self.after[key] = copy
        return copy

    def require(self, key: bytes) -> STObject:
        found = self.get(key)
        if found is None:
            raise LedgerInputError(f"generator: object {key.hex().upper()} does not exist")
        return found

    def create(self, key: bytes, obj: STObject) -> None:
        if self.get(key) is not None:
            raise LedgerInputError(f"generator: object {key.hex().upper()} already exists")
        self.before.setdefault(key, None)
        self.after[key] = obj

    def delete(self, key: bytes) -> None:
        self.require(key)
        self.after[key] = None


class WorkloadGenerator:
    """Generates ledgers following an initial full-state ledger."""

    def __init__(self, initial: SourceLedger, *, seed: int, txs_per_ledger: int) -> None:
        if not initial.is_full_state:
            raise LedgerInputError("the generator starts from a full-state ledger")
        self._rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not secrets
        self._txs_per_ledger = txs_per_ledger
        self._header = LedgerHeader.parse(initial.header)
        self._state: dict[bytes, STObject] = {o.key: binary.decode(o.blob) for o in initial.objects}
        self._blobs: dict[bytes, bytes] = {o.key: o.blob for o in initial.objects}
        self._leaves: dict[bytes, bytes] = {
            o.key: hashing.state_leaf_hash(o.key, o.blob) for o in initial.objects
        }
        self._accounts: list[bytes] = sorted(
            obj[sf.ACCOUNT]  # type: ignore[misc]
            for obj in self._state.values()
            if _get_u32(obj, sf.LEDGER_ENTRY_TYPE) == sf.ACCOUNT_ROOT
        )
        rich = [a for a in self._accounts if self._account_balance(a) > 10 * MIN_BALANCE]
        self._gateways = {
            currency_code(code): rich[i % len(rich)] for i, code in enumerate(_CURRENCIES)
        }
        self._offers: list[tuple[bytes, bytes, bytes]] = []  # (offer key, owner, book dir)
        self._lines: list[tuple[bytes, bytes, bytes, bytes]] = []  # (key, holder, gateway, cur)
        self._tokens: dict[bytes, bytes] = {}  # token id -> owner
        self._nft_offers: list[_NftOffer] = []
        self._created_accounts: list[bytes] = []
        self._mix = MIX

    def _account_balance(self, account: bytes) -> int:
        root = self._state.get(keylets.account_root(account))
        return 0 if root is None else _balance(root)

    @property
    def state(self) -> dict[bytes, bytes]:
        """The current state as ``key -> blob``."""
        return dict(self._blobs)

    def ledgers(self, count: int) -> Iterator[tuple[int, SourceLedger]]:
        """The next ``count`` ledgers."""
        for _ in range(count):
            yield self.next_ledger()

    # ------------------------------------------------------------------ one ledger

    def next_ledger(self) -> tuple[int, SourceLedger]:
        """Apply one ledger's transactions; return it as a diff record."""
        previous = self._header
        sequence = previous.sequence + 1
        originals: dict[bytes, STObject | None] = {}
        transactions: list[tuple[bytes, bytes]] = []
        burned = 0
        for index in range(self._txs_per_ledger):
            tx, meta, fee, touched = self._one_transaction(sequence, index)
            transactions.append((tx, meta))
            burned += fee
            for key, before in touched.items():
                originals.setdefault(key, before)
        originals.setdefault(keylets.skip_list(), self._state.get(keylets.skip_list()))
        self._update_skip_list(sequence, previous.hash)
        diff: list[LedgerObject] = []
        for key in sorted(originals):
            obj = self._state.get(key)
            if obj is None:
                if originals[key] is None:
                    continue  # created and deleted within the ledger
                del self._blobs[key]
                del self._leaves[key]
                diff.append(LedgerObject(key, b""))
            else:
                blob = binary.encode(obj)
                self._blobs[key] = blob
                self._leaves[key] = hashing.state_leaf_hash(key, blob)
                diff.append(LedgerObject(key, blob))
        close_time = previous.close_time + CLOSE_INTERVAL
        fields = LedgerHeader(
            sequence=sequence,
            total_drops=previous.total_drops - burned,
            parent_hash=previous.hash,
            transaction_hash=hashing.transaction_root(transactions),
            account_hash=hashing.shamap_root(sorted(self._leaves.items())),
            parent_close_time=previous.close_time,
            close_time=close_time,
            close_time_resolution=previous.close_time_resolution,
            close_flags=0,
            hash=b"\x00" * 32,
        )
        header = LedgerHeader.parse(fields.serialize())
        self._header = header
        ledger = SourceLedger(
            header=header.serialize(include_hash=True),
            transactions=tuple(transactions),
            objects=tuple(diff),
            is_full_state=False,
        )
        return sequence, ledger

    def _update_skip_list(self, sequence: int, parent_hash: bytes) -> None:
        key = keylets.skip_list()
        current = self._state.get(key)
        hashes = b""
        if current is not None:
            value = current.get(sf.HASHES)
            hashes = value if isinstance(value, bytes) else b""
        hashes = (hashes + parent_hash)[-256 * 32 :]
        updated: STObject = dict(current) if current is not None else {}
        updated[sf.LEDGER_ENTRY_TYPE] = u16(sf.LEDGER_HASHES)
        updated.setdefault(sf.FLAGS, u32(0))
        updated[sf.HASHES] = hashes
        updated[sf.LAST_LEDGER_SEQUENCE] = u32(sequence - 1)
        self._state[key] = updated

    # ------------------------------------------------------------------ one transaction

    def _one_transaction(
        self, sequence: int, index: int
    ) -> tuple[bytes, bytes, int, dict[bytes, STObject | None]]:
        kinds = list(self._mix)
        kind = self._rng.choices(kinds, weights=[self._mix[k] for k in kinds])[0]
        for attempt in (kind, *["payment"] * 32):
            view = _Transaction(self._state)
            built = getattr(self, f"_tx_{attempt}")(view, sequence)
            if built is not None:
                tx_fields, fee, extra_meta = built
                return self._finish(
                    view,
                    tx_fields=tx_fields,
                    fee=fee,
                    extra_meta=extra_meta,
                    sequence=sequence,
                    index=index,
                )
        raise LedgerInputError("generator: no account can pay")  # pragma: no cover

    def _finish(
        self,
        view: _Transaction,
        *,
        tx_fields: STObject,
        fee: int,
        extra_meta: STObject,
        sequence: int,
        index: int,
    ) -> tuple[bytes, bytes, int, dict[bytes, STObject | None]]:
        tx_fields[sf.FEE] = xrp(fee)
        tx_fields[sf.FLAGS] = tx_fields.get(sf.FLAGS, u32(0x80000000))
        tx_fields[sf.LAST_LEDGER_SEQUENCE] = u32(sequence + 4)
        tx_fields[sf.SIGNING_PUB_KEY] = b"\x02" + self._rng.randbytes(32)
        tx_fields[sf.TXN_SIGNATURE] = b"\x30\x44\x02\x20" + self._rng.randbytes(66)
        tx_blob = binary.encode(tx_fields)
        tx_id = hashing.transaction_id(tx_blob)
        nodes: binary.STArray = []
        touched: dict[bytes, STObject | None] = {}
        for key in sorted(view.after):
            before = view.before.get(key)
            after = view.after[key]
            if after == before:
                continue  # only read (or created and deleted again)
            touched[key] = before
            nodes.append(self._node(key, before, after, tx_id, sequence))
            if after is None:
                self._state.pop(key, None)
            else:
                self._state[key] = after
        meta: STObject = {
            sf.TRANSACTION_INDEX: u32(index),
            sf.TRANSACTION_RESULT: bytes((sf.TES_SUCCESS,)),
            sf.AFFECTED_NODES: nodes,
            **extra_meta,
        }
        return tx_blob, binary.encode(meta), fee, touched

    @staticmethod
    def _node(
        key: bytes,
        before: STObject | None,
        after: STObject | None,
        tx_id: bytes,
        sequence: int,
    ) -> tuple[int, STObject]:
        source = after if after is not None else before
        assert source is not None
        entry_type = source[sf.LEDGER_ENTRY_TYPE]
        threaded = _get_u32(source, sf.LEDGER_ENTRY_TYPE) in _THREADED
        if after is not None and threaded:
            after[sf.PREVIOUS_TXN_ID] = tx_id
            after[sf.PREVIOUS_TXN_LGR_SEQ] = u32(sequence)
        node: STObject = {sf.LEDGER_ENTRY_TYPE: entry_type, sf.LEDGER_INDEX: key}
        if before is None:
            assert after is not None
            node[sf.NEW_FIELDS] = {k: v for k, v in after.items() if k not in _NODE_ONLY}
            return sf.CREATED_NODE, node
        final_source = after if after is not None else before
        node[sf.FINAL_FIELDS] = {k: v for k, v in final_source.items() if k not in _NODE_ONLY}
        if after is not None:
            previous = {
                k: v for k, v in before.items() if k not in _NODE_ONLY and after.get(k) != v
            }
            if previous:
                node[sf.PREVIOUS_FIELDS] = previous
            for field in (sf.PREVIOUS_TXN_ID, sf.PREVIOUS_TXN_LGR_SEQ):
                if threaded and field in before:
                    node[field] = before[field]
            return sf.MODIFIED_NODE, node
        return sf.DELETED_NODE, node

    # ------------------------------------------------------------------ helpers

    def _pick_account(self, view: _Transaction, minimum: int) -> tuple[bytes, STObject] | None:
        for _ in range(8):
            account = self._rng.choice(self._accounts)
            root = view.get(keylets.account_root(account))
            if root is not None and _balance(root) >= minimum + MIN_BALANCE:
                return account, root
        return None

    def _spend(self, root: STObject, drops: int) -> int:
        """Consume a sequence and ``drops``; return the sequence used."""
        used = _get_u32(root, sf.SEQUENCE)
        root[sf.SEQUENCE] = u32(used + 1)
        root[sf.BALANCE] = xrp(_balance(root) - drops)
        return used

    def _owner_count(self, root: STObject, delta: int) -> None:
        root[sf.OWNER_COUNT] = u32(_get_u32(root, sf.OWNER_COUNT) + delta)

    def _base_tx(self, kind: int, account: bytes, sequence: int) -> STObject:
        return {
            sf.TRANSACTION_TYPE: u16(kind),
            sf.ACCOUNT: account,
            sf.SEQUENCE: u32(sequence),
        }

    def _dir_add(self, view: _Transaction, root_key: bytes, entry: bytes, fields: STObject) -> bool:
        """Add ``entry`` to a single-page directory, creating it; False if that is impossible."""
        directory = view.get(root_key)
        if directory is None:
            view.create(
                root_key,
                {
                    sf.LEDGER_ENTRY_TYPE: u16(sf.DIRECTORY_NODE),
                    sf.FLAGS: u32(0),
                    sf.ROOT_INDEX: root_key,
                    sf.INDEXES: entry,
                    **fields,
                },
            )
            return True
        indexes = directory.get(sf.INDEXES, b"")
        assert isinstance(indexes, bytes)
        if sf.INDEX_NEXT in directory or len(indexes) >= 32 * DIR_PAGE_CAPACITY:
            return False
        directory[sf.INDEXES] = indexes + entry
        return True

    def _dir_can_add(self, view: _Transaction, root_key: bytes) -> bool:
        directory = view.get(root_key)
        if directory is None:
            return True
        indexes = directory.get(sf.INDEXES, b"")
        assert isinstance(indexes, bytes)
        return sf.INDEX_NEXT not in directory and len(indexes) < 32 * DIR_PAGE_CAPACITY

    def _dir_remove(self, view: _Transaction, root_key: bytes, entry: bytes) -> None:
        directory = view.require(root_key)
        indexes = directory.get(sf.INDEXES, b"")
        assert isinstance(indexes, bytes)
        entries = [indexes[i : i + 32] for i in range(0, len(indexes), 32)]
        entries.remove(entry)
        if not entries and sf.INDEX_NEXT not in directory:
            view.delete(root_key)
        else:
            directory[sf.INDEXES] = b"".join(entries)

    # ------------------------------------------------------------------ transaction kinds

    def _tx_payment(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        amount = self._rng.randint(1, 500) * 100_000
        picked = self._pick_account(view, amount + FEE)
        if picked is None:
            return None
        sender, root = picked
        destination = self._rng.choice(self._accounts)
        if destination == sender:
            return None
        used = self._spend(root, amount + FEE)
        dest_root = view.require(keylets.account_root(destination))
        dest_root[sf.BALANCE] = xrp(_balance(dest_root) + amount)
        tx = self._base_tx(sf.PAYMENT, sender, used)
        tx[sf.DESTINATION] = destination
        tx[sf.AMOUNT_FIELD] = xrp(amount)
        return tx, FEE, {sf.DELIVERED_AMOUNT: xrp(amount)}

    def _tx_payment_new_account(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        amount = self._rng.randint(60, 400) * 1_000_000
        picked = self._pick_account(view, amount + FEE)
        if picked is None:
            return None
        sender, root = picked
        destination = self._rng.randbytes(20)
        used = self._spend(root, amount + FEE)
        view.create(
            keylets.account_root(destination),
            {
                sf.LEDGER_ENTRY_TYPE: u16(sf.ACCOUNT_ROOT),
                sf.FLAGS: u32(0),
                sf.SEQUENCE: u32(sequence),
                sf.OWNER_COUNT: u32(0),
                sf.BALANCE: xrp(amount),
                sf.ACCOUNT: destination,
            },
        )
        self._accounts.append(destination)
        self._created_accounts.append(destination)
        tx = self._base_tx(sf.PAYMENT, sender, used)
        tx[sf.DESTINATION] = destination
        tx[sf.AMOUNT_FIELD] = xrp(amount)
        return tx, FEE, {sf.DELIVERED_AMOUNT: xrp(amount)}

    def _tx_offer_create(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        picked = self._pick_account(view, FEE)
        if picked is None:
            return None
        return self._place_offer(view, *picked)

    def _tx_offer_replace(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        """An OfferCreate with OfferSequence: cancel one's offer and place a new one (what
        market makers send most)."""
        if not self._offers:
            return None
        index = self._rng.randrange(len(self._offers))
        offer_key, account, book_dir = self._offers[index]
        root = view.require(keylets.account_root(account))
        if _balance(root) < MIN_BALANCE + FEE:
            return None
        offer_sequence = _get_u32(view.require(offer_key), sf.SEQUENCE)
        view.delete(offer_key)
        self._dir_remove(view, book_dir, offer_key)
        self._dir_remove(view, keylets.owner_directory(account), offer_key)
        self._owner_count(root, -1)
        built = self._place_offer(view, account, root)
        if built is None:
            return None
        del self._offers[index]
        built[0][sf.OFFER_SEQUENCE] = u32(offer_sequence)
        return built

    def _place_offer(
        self, view: _Transaction, account: bytes, root: STObject
    ) -> tuple[STObject, int, STObject] | None:
        currency, gateway = self._rng.choice(sorted(self._gateways.items()))
        drops = self._rng.randint(1, 50) * 1_000_000
        value = Decimal(self._rng.choice((1, 2, 5, 10, 20, 25, 50)))
        if self._rng.random() < 0.5:  # sell XRP for the currency
            pays, gets = issued(value, currency, gateway), xrp(drops)
            base = keylets.book(currency, gateway, _XRP, _XRP)
            rate = quality(value, Decimal(drops))
            book_fields: STObject = {
                sf.TAKER_PAYS_CURRENCY: currency,
                sf.TAKER_PAYS_ISSUER: gateway,
                sf.TAKER_GETS_CURRENCY: _XRP,
                sf.TAKER_GETS_ISSUER: _XRP,
            }
        else:
            pays, gets = xrp(drops), issued(value, currency, gateway)
            base = keylets.book(_XRP, _XRP, currency, gateway)
            rate = quality(Decimal(drops), value)
            book_fields = {
                sf.TAKER_PAYS_CURRENCY: _XRP,
                sf.TAKER_PAYS_ISSUER: _XRP,
                sf.TAKER_GETS_CURRENCY: currency,
                sf.TAKER_GETS_ISSUER: gateway,
            }
        book_dir = keylets.book_directory(base, rate)
        owner_dir = keylets.owner_directory(account)
        if not self._dir_can_add(view, book_dir) or not self._dir_can_add(view, owner_dir):
            return None
        used = self._spend(root, FEE)
        self._owner_count(root, 1)
        offer_key = keylets.offer(account, used)
        book_fields[sf.EXCHANGE_RATE] = u64(rate)
        self._dir_add(view, book_dir, offer_key, book_fields)
        self._dir_add(view, owner_dir, offer_key, {sf.OWNER: account})
        view.create(
            offer_key,
            {
                sf.LEDGER_ENTRY_TYPE: u16(sf.OFFER),
                sf.FLAGS: u32(0),
                sf.SEQUENCE: u32(used),
                sf.BOOK_NODE: u64(0),
                sf.OWNER_NODE: u64(0),
                sf.BOOK_DIRECTORY: book_dir,
                sf.TAKER_PAYS: pays,
                sf.TAKER_GETS: gets,
                sf.ACCOUNT: account,
            },
        )
        self._offers.append((offer_key, account, book_dir))
        tx = self._base_tx(sf.OFFER_CREATE, account, used)
        tx[sf.TAKER_PAYS] = pays
        tx[sf.TAKER_GETS] = gets
        return tx, FEE, {}

    def _tx_offer_cancel(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        if not self._offers:
            return None
        offer_key, account, book_dir = self._offers.pop(self._rng.randrange(len(self._offers)))
        root = view.require(keylets.account_root(account))
        offer_sequence = _get_u32(view.require(offer_key), sf.SEQUENCE)
        used = self._spend(root, FEE)
        self._owner_count(root, -1)
        view.delete(offer_key)
        self._dir_remove(view, book_dir, offer_key)
        self._dir_remove(view, keylets.owner_directory(account), offer_key)
        tx = self._base_tx(sf.OFFER_CANCEL, account, used)
        tx[sf.OFFER_SEQUENCE] = u32(offer_sequence)
        return tx, FEE, {}

    def _tx_trust_set(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        picked = self._pick_account(view, FEE)
        if picked is None:
            return None
        holder, root = picked
        currency, gateway = self._rng.choice(sorted(self._gateways.items()))
        if holder == gateway:
            return None
        line_key = keylets.ripple_state(holder, gateway, currency)
        limit = Decimal(self._rng.choice((100, 1000, 5000, 1_000_000)))
        low, high = sorted((holder, gateway))
        holder_is_low = holder == low
        line = view.get(line_key)
        if line is None:
            holder_dir = keylets.owner_directory(holder)
            gateway_dir = keylets.owner_directory(gateway)
            if not self._dir_can_add(view, holder_dir) or not self._dir_can_add(view, gateway_dir):
                return None
            self._dir_add(view, holder_dir, line_key, {sf.OWNER: holder})
            self._dir_add(view, gateway_dir, line_key, {sf.OWNER: gateway})
            self._owner_count(root, 1)
            self._lines.append((line_key, holder, gateway, currency))
            view.create(
                line_key,
                {
                    sf.LEDGER_ENTRY_TYPE: u16(sf.RIPPLE_STATE),
                    sf.FLAGS: u32(0x00010000 if holder_is_low else 0x00020000),
                    sf.BALANCE: issued(Decimal(0), currency, _NO_ACCOUNT),
                    sf.LOW_LIMIT: issued(limit if holder_is_low else Decimal(0), currency, low),
                    sf.HIGH_LIMIT: issued(Decimal(0) if holder_is_low else limit, currency, high),
                    sf.LOW_NODE: u64(0),
                    sf.HIGH_NODE: u64(0),
                },
            )
        else:
            side = sf.LOW_LIMIT if holder_is_low else sf.HIGH_LIMIT
            line[side] = issued(limit, currency, holder)
        used = self._spend(root, FEE)
        tx = self._base_tx(sf.TRUST_SET, holder, used)
        tx[sf.LIMIT_AMOUNT] = issued(limit, currency, gateway)
        return tx, FEE, {}

    def _tx_payment_issued(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        """A gateway pays its currency to a holder along their trust line (the line's balance
        moves; rippling through other holders is not modelled)."""
        if not self._lines:
            return None
        line_key, holder, gateway, currency = self._rng.choice(self._lines)
        gateway_root = view.require(keylets.account_root(gateway))
        line = view.get(line_key)
        if line is None or _balance(gateway_root) < MIN_BALANCE + FEE:
            return None
        holder_is_low = holder < gateway
        limit_field = sf.LOW_LIMIT if holder_is_low else sf.HIGH_LIMIT
        limit = issued_value(line[limit_field])  # type: ignore[arg-type]
        held = issued_value(line[sf.BALANCE])  # type: ignore[arg-type]
        held = held if holder_is_low else -held
        room = limit - held
        if room < 1:
            return None
        amount = Decimal(self._rng.randint(1, int(min(room, Decimal(500)))))
        held += amount
        line[sf.BALANCE] = issued(held if holder_is_low else -held, currency, _NO_ACCOUNT)
        used = self._spend(gateway_root, FEE)
        delivered = issued(amount, currency, gateway)
        tx = self._base_tx(sf.PAYMENT, gateway, used)
        tx[sf.DESTINATION] = holder
        tx[sf.AMOUNT_FIELD] = delivered
        return tx, FEE, {sf.DELIVERED_AMOUNT: delivered}

    def _page_add(
        self, view: _Transaction, owner_root: STObject, owner: bytes, token: STObject
    ) -> bool:
        page_key = keylets.nftoken_page_max(owner)
        page = view.get(page_key)
        wrapped = (sf.NFTOKEN, token)
        if page is None:
            view.create(
                page_key,
                {
                    sf.LEDGER_ENTRY_TYPE: u16(sf.NFTOKEN_PAGE),
                    sf.FLAGS: u32(0),
                    sf.NFTOKENS: [wrapped],
                },
            )
            self._owner_count(owner_root, 1)
            return True
        tokens = page[sf.NFTOKENS]
        assert isinstance(tokens, list)
        if len(tokens) >= NFT_PAGE_CAPACITY:
            return False
        # Tokens sort by their low 96 bits, then the whole ID (rippled's compareTokens).
        page[sf.NFTOKENS] = sorted([*tokens, wrapped], key=_token_order)
        return True

    def _page_remove(
        self, view: _Transaction, owner_root: STObject, owner: bytes, token_id: bytes
    ) -> STObject:
        page_key = keylets.nftoken_page_max(owner)
        page = view.require(page_key)
        tokens = page[sf.NFTOKENS]
        assert isinstance(tokens, list)
        kept = [t for t in tokens if t[1].get(sf.NFTOKEN_ID) != token_id]
        removed = [t for t in tokens if t[1].get(sf.NFTOKEN_ID) == token_id]
        if not kept:
            view.delete(page_key)
            self._owner_count(owner_root, -1)
        else:
            page[sf.NFTOKENS] = kept
        return removed[0][1]

    def _page_has_room(self, view: _Transaction, owner: bytes) -> bool:
        page = view.get(keylets.nftoken_page_max(owner))
        if page is None:
            return True
        tokens = page[sf.NFTOKENS]
        assert isinstance(tokens, list)
        return len(tokens) < NFT_PAGE_CAPACITY

    def _tx_nft_mint(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        picked = self._pick_account(view, FEE)
        if picked is None:
            return None
        minter, root = picked
        if not self._page_has_room(view, minter):
            return None
        serial = _get_u32(root, sf.MINTED_NFTOKENS)
        taxon = self._rng.randrange(4)
        flags, transfer_fee = 0x0008, self._rng.choice((0, 0, 50, 500))
        scrambled = taxon ^ ((384160001 * serial + 2459) & 0xFFFFFFFF)
        token_id = u16(flags) + u16(transfer_fee) + minter + u32(scrambled) + u32(serial)
        uri = f"ipfs://chainloom/{token_id.hex()[-16:]}".encode()
        used = self._spend(root, FEE)
        root[sf.MINTED_NFTOKENS] = u32(serial + 1)
        self._page_add(view, root, minter, {sf.NFTOKEN_ID: token_id, sf.URI: uri})
        self._tokens[token_id] = minter
        tx = self._base_tx(sf.NFTOKEN_MINT, minter, used)
        tx[sf.NFTOKEN_TAXON] = u32(taxon)
        tx[sf.FLAGS] = u32(flags)
        tx[sf.URI] = uri
        if transfer_fee:
            tx[sf.TRANSFER_FEE] = u16(transfer_fee)
        return tx, FEE, {}

    def _free_tokens(self) -> list[bytes]:
        offered = {offer.token_id for offer in self._nft_offers}
        return sorted(t for t in self._tokens if t not in offered)

    def _tx_nft_sell_offer(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        free = self._free_tokens()
        if not free:
            return None
        token_id = self._rng.choice(free)
        owner = self._tokens[token_id]
        root = view.require(keylets.account_root(owner))
        owner_dir = keylets.owner_directory(owner)
        sell_dir = keylets.nftoken_sell_offers(token_id)
        if _balance(root) < MIN_BALANCE + FEE or not self._dir_can_add(view, owner_dir):
            return None
        amount = self._rng.randint(1, 100) * 1_000_000
        used = self._spend(root, FEE)
        self._owner_count(root, 1)
        offer_key = keylets.nftoken_offer(owner, used)
        self._dir_add(view, owner_dir, offer_key, {sf.OWNER: owner})
        self._dir_add(view, sell_dir, offer_key, {sf.FLAGS: u32(2), sf.NFTOKEN_ID: token_id})
        view.create(
            offer_key,
            {
                sf.LEDGER_ENTRY_TYPE: u16(sf.NFTOKEN_OFFER),
                sf.FLAGS: u32(1),
                sf.OWNER_NODE: u64(0),
                sf.NFTOKEN_OFFER_NODE: u64(0),
                sf.NFTOKEN_ID: token_id,
                sf.AMOUNT_FIELD: xrp(amount),
                sf.OWNER: owner,
            },
        )
        self._nft_offers.append(_NftOffer(offer_key, owner, token_id, amount))
        tx = self._base_tx(sf.NFTOKEN_CREATE_OFFER, owner, used)
        tx[sf.NFTOKEN_ID] = token_id
        tx[sf.AMOUNT_FIELD] = xrp(amount)
        tx[sf.FLAGS] = u32(1)
        return tx, FEE, {}

    def _remove_nft_offer(self, view: _Transaction, offer: _NftOffer) -> STObject:
        owner_root = view.require(keylets.account_root(offer.owner))
        self._owner_count(owner_root, -1)
        view.delete(offer.key)
        self._dir_remove(view, keylets.owner_directory(offer.owner), offer.key)
        self._dir_remove(view, keylets.nftoken_sell_offers(offer.token_id), offer.key)
        self._nft_offers.remove(offer)
        return owner_root

    def _tx_nft_accept(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        if not self._nft_offers:
            return None
        offer = self._rng.choice(self._nft_offers)
        picked = self._pick_account(view, offer.amount + FEE)
        if picked is None:
            return None
        buyer, buyer_root = picked
        if buyer == offer.owner or not self._page_has_room(view, buyer):
            return None
        seller_root = self._remove_nft_offer(view, offer)
        used = self._spend(buyer_root, offer.amount + FEE)
        seller_root[sf.BALANCE] = xrp(_balance(seller_root) + offer.amount)
        token = self._page_remove(view, seller_root, offer.owner, offer.token_id)
        self._page_add(view, buyer_root, buyer, token)
        self._tokens[offer.token_id] = buyer
        tx = self._base_tx(sf.NFTOKEN_ACCEPT_OFFER, buyer, used)
        tx[sf.NFTOKEN_SELL_OFFER] = offer.key
        return tx, FEE, {}

    def _tx_nft_cancel(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        if not self._nft_offers:
            return None
        offer = self._rng.choice(self._nft_offers)
        root = self._remove_nft_offer(view, offer)
        used = self._spend(root, FEE)
        tx = self._base_tx(sf.NFTOKEN_CANCEL_OFFER, offer.owner, used)
        tx[sf.key(sf.VECTOR256, 4)] = offer.key  # NFTokenOffers
        return tx, FEE, {}

    def _tx_nft_burn(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        free = self._free_tokens()
        if not free:
            return None
        token_id = self._rng.choice(free)
        owner = self._tokens.pop(token_id)
        root = view.require(keylets.account_root(owner))
        used = self._spend(root, FEE)
        self._page_remove(view, root, owner, token_id)
        issuer_root = view.require(keylets.account_root(token_id[4:24]))
        issuer_root[sf.BURNED_NFTOKENS] = u32(_get_u32(issuer_root, sf.BURNED_NFTOKENS) + 1)
        tx = self._base_tx(sf.NFTOKEN_BURN, owner, used)
        tx[sf.NFTOKEN_ID] = token_id
        return tx, FEE, {}

    def _tx_account_delete(
        self, view: _Transaction, sequence: int
    ) -> tuple[STObject, int, STObject] | None:
        candidates = [
            a
            for a in self._created_accounts
            if keylets.owner_directory(a) not in self._state
            and keylets.nftoken_page_max(a) not in self._state
            and a not in self._tokens.values()
        ]
        if not candidates:
            return None
        account = self._rng.choice(candidates)
        destination = self._rng.choice(self._accounts)
        if destination == account:
            return None
        root = view.require(keylets.account_root(account))
        if _get_u32(root, sf.OWNER_COUNT) or _balance(root) < ACCOUNT_DELETE_FEE:
            return None
        if _get_u32(root, sf.MINTED_NFTOKENS) != _get_u32(root, sf.BURNED_NFTOKENS):
            return None  # an issuer of live NFTs cannot be deleted (tecHAS_OBLIGATIONS)
        delivered = _balance(root) - ACCOUNT_DELETE_FEE
        used = _get_u32(root, sf.SEQUENCE)
        view.delete(keylets.account_root(account))
        dest_root = view.require(keylets.account_root(destination))
        dest_root[sf.BALANCE] = xrp(_balance(dest_root) + delivered)
        self._accounts.remove(account)
        self._created_accounts.remove(account)
        tx = self._base_tx(sf.ACCOUNT_DELETE, account, used)
        tx[sf.DESTINATION] = destination
        return tx, ACCOUNT_DELETE_FEE, {sf.DELIVERED_AMOUNT: xrp(delivered)}


# --- the starting state --------------------------------------------------------------------


def vectors_ledger(vectors_file: Path, sequence: int) -> SourceLedger:
    """A full-state ledger assembled from ``xrpl_vectors.json``: header, transactions, state."""
    if not vectors_file.is_file():
        raise LedgerInputError(f"vectors file {vectors_file} does not exist")
    vectors = json.loads(vectors_file.read_text())
    headers = [
        v
        for v in vectors
        if v["kind"] == "ledger_header" and v["expected"]["ledger_index"] == sequence
    ]
    if not headers:
        raise LedgerInputError(f"{vectors_file} holds no header of ledger {sequence}")
    header = LedgerHeader.parse(bytes.fromhex(headers[0]["hex"]))
    objects = tuple(
        sorted(
            (
                LedgerObject(bytes.fromhex(v["expected"]["key"]), bytes.fromhex(v["hex"]))
                for v in vectors
                if v["kind"] == "ledger_object" and v["expected"].get("state_at_ledger") == sequence
            ),
            key=lambda o: o.key,
        )
    )
    if not objects:
        raise LedgerInputError(f"{vectors_file} holds no state of ledger {sequence}")
    metas = {
        v["expected"]["tx_hash"]: bytes.fromhex(v["hex"])
        for v in vectors
        if v["kind"] == "metadata" and v["expected"].get("ledger_index") == sequence
    }
    transactions = tuple(
        (bytes.fromhex(v["hex"]), metas[v["expected"]["hash"]])
        for v in vectors
        if v["kind"] == "transaction" and v["expected"]["hash"] in metas
    )
    return SourceLedger(
        header=header.serialize(include_hash=True),
        transactions=transactions,
        objects=objects,
        is_full_state=True,
    )
