"""The values the ledger history backend reads and writes.

These mirror Clio's ``data/Types.hpp`` so that every backend (Cassandra, SQLite, a future one)
and the ETL speak the same small vocabulary. They are frozen, slotted dataclasses because the
ETL creates hundreds of them per ledger and because a value handed to a backend must not change
under it. All keys and hashes are raw ``bytes`` (32 bytes), account IDs 20 bytes; hex only at
the edges (CLI, JSON).

The ledger header layout is fixed (rippled ``addRaw``)::

    4 sequence | 8 total drops | 32 parent hash | 32 tx hash | 32 account hash |
    4 parent close time | 4 close time | 1 close time resolution | 1 close flags | [32 hash]

and its hash is SHA512Half(``LWR\\0`` || the first 118 bytes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from chainloom.ledger.errors import LedgerHeaderError
from chainloom.ledger.xrpl.hashing import PREFIX_LEDGER, sha512_half

FIRST_KEY = b"\x00" * 32
"""The head of the successor list: the key "before" every state key."""

LAST_KEY = b"\xff" * 32
"""The tail of the successor list: ``next`` of the last state key."""

HEADER_SIZE = 118
"""Bytes of a canonical ledger header without its hash."""

STORED_HEADER_SIZE = HEADER_SIZE + 32
"""Bytes of a header with its hash appended (gRPC ``GetLedger`` and ``ledgers.header``)."""

_HEADER = struct.Struct(">IQ32s32s32sIIBB")

UINT32_MAX = 0xFFFFFFFF
"""The largest ledger sequence / transaction index; the "no cursor" start going backward."""


@dataclass(frozen=True, slots=True)
class LedgerHeader:
    """One ledger's header: the fixed 118-byte layout plus its hash."""

    sequence: int
    """The ledger index (uint32)."""

    total_drops: int
    """Total XRP in existence after this ledger, in drops (uint64)."""

    parent_hash: bytes
    """Hash of the previous ledger (32 bytes)."""

    transaction_hash: bytes
    """Root of this ledger's transaction SHAMap (32 bytes)."""

    account_hash: bytes
    """Root of this ledger's state SHAMap (32 bytes)."""

    parent_close_time: int
    """Close time of the previous ledger, seconds since 2000-01-01 (uint32)."""

    close_time: int
    """Close time of this ledger, seconds since 2000-01-01 (uint32)."""

    close_time_resolution: int
    """Rounding of close times in seconds (uint8)."""

    close_flags: int
    """Close flags (uint8; bit 0 = no consensus on the close time)."""

    hash: bytes
    """The ledger hash, SHA512Half(``LWR\\0`` || the 118-byte header)."""

    @classmethod
    def parse(cls, blob: bytes, *, verify: bool = True) -> LedgerHeader:
        """Parse 118 bytes (hash computed) or 150 bytes (hash appended, checked if ``verify``)."""
        if len(blob) not in (HEADER_SIZE, STORED_HEADER_SIZE):
            raise LedgerHeaderError(
                f"a ledger header is {HEADER_SIZE} or {STORED_HEADER_SIZE} bytes, got {len(blob)}"
            )
        (
            sequence,
            total_drops,
            parent_hash,
            transaction_hash,
            account_hash,
            parent_close_time,
            close_time,
            close_time_resolution,
            close_flags,
        ) = _HEADER.unpack_from(blob)
        computed = sha512_half(PREFIX_LEDGER + blob[:HEADER_SIZE])
        if len(blob) == STORED_HEADER_SIZE:
            stored = bytes(blob[HEADER_SIZE:])
            if verify and stored != computed:
                raise LedgerHeaderError(
                    f"ledger {sequence}: header hash {stored.hex().upper()} does not match the "
                    f"hash of its fields {computed.hex().upper()}"
                )
            ledger_hash = stored
        else:
            ledger_hash = computed
        return cls(
            sequence=sequence,
            total_drops=total_drops,
            parent_hash=parent_hash,
            transaction_hash=transaction_hash,
            account_hash=account_hash,
            parent_close_time=parent_close_time,
            close_time=close_time,
            close_time_resolution=close_time_resolution,
            close_flags=close_flags,
            hash=ledger_hash,
        )

    def serialize(self, *, include_hash: bool = False) -> bytes:
        """The canonical 118 bytes, or 150 with the hash appended (the stored form)."""
        body = _HEADER.pack(
            self.sequence,
            self.total_drops,
            self.parent_hash,
            self.transaction_hash,
            self.account_hash,
            self.parent_close_time,
            self.close_time,
            self.close_time_resolution,
            self.close_flags,
        )
        return body + self.hash if include_hash else body

    def compute_hash(self) -> bytes:
        """SHA512Half(``LWR\\0`` || the 118-byte header), recomputed from the fields."""
        return sha512_half(PREFIX_LEDGER + self.serialize())


@dataclass(frozen=True, slots=True)
class LedgerObject:
    """One state object at some sequence."""

    key: bytes
    """The object's 32-byte index."""

    blob: bytes
    """The serialized object; empty means deleted (or absent)."""


@dataclass(frozen=True, slots=True)
class LedgerPage:
    """One page of a ledger-state walk in key order."""

    objects: tuple[LedgerObject, ...]
    """The objects of this page, in key order."""

    cursor: bytes | None
    """The last key of this page if the walk may continue, ``None`` at the end."""


@dataclass(frozen=True, slots=True)
class TransactionAndMetadata:
    """A stored transaction with its metadata."""

    transaction: bytes
    """The serialized transaction."""

    metadata: bytes
    """The serialized metadata (TransactionIndex, TransactionResult, AffectedNodes)."""

    ledger_sequence: int
    """The ledger that included it."""

    date: int
    """That ledger's close time, seconds since 2000-01-01."""


@dataclass(frozen=True, slots=True, order=True)
class TransactionsCursor:
    """A position in an account's (or NFT's) transaction history: ``seq_idx``."""

    ledger_sequence: int
    """Ledger of the last transaction returned."""

    transaction_index: int
    """Its index within that ledger."""


@dataclass(frozen=True, slots=True)
class TransactionsAndCursor:
    """A page of transactions and where the next page starts."""

    transactions: tuple[TransactionAndMetadata, ...]
    """The transactions, in the order requested (newest first unless forward)."""

    cursor: TransactionsCursor | None
    """Set only when the page is full (so an exactly full last page yields an empty one)."""


@dataclass(frozen=True, slots=True)
class NFT:
    """An NFT's state at some sequence."""

    token_id: bytes
    """The 32-byte NFTokenID."""

    ledger_sequence: int
    """The ledger in which this state was recorded (last change at or before the query)."""

    owner: bytes
    """The 20-byte AccountID owning it (when burned: the owner at the burn)."""

    uri: bytes | None
    """The URI, ``None`` when unknown (for example burned in the first stored ledger)."""

    is_burned: bool
    """Whether the token was burned at or before the query sequence."""


@dataclass(frozen=True, slots=True)
class MPTHolderData:
    """An ``mp_token_holders`` row: an account that has held an MPToken of an issuance."""

    mpt_id: bytes
    """The 24-byte MPTokenIssuanceID."""
    holder: bytes
    """The holder's 20-byte AccountID."""


@dataclass(frozen=True, slots=True)
class MPTHoldersPage:
    """A page of an issuance's MPTokens present at one ledger, in holder order."""

    mptokens: tuple[LedgerObject, ...]
    """Each holder's MPToken (key and blob)."""
    cursor: bytes | None
    """The last holder returned when the page is full (the next page starts after it)."""


@dataclass(frozen=True, slots=True)
class NFTsAndCursor:
    """A page of NFTs by issuer."""

    nfts: tuple[NFT, ...]
    """The NFTs in (taxon, token_id) order."""

    cursor: bytes | None
    """The last token ID scanned when the page was full, else ``None``."""


@dataclass(frozen=True, slots=True)
class LedgerRange:
    """The ledgers readers may see: every ledger in ``[min_sequence, max_sequence]``."""

    min_sequence: int
    """The first stored ledger (the initial load)."""

    max_sequence: int
    """The newest ledger whose data is completely written."""


@dataclass(frozen=True, slots=True)
class AccountTransactionsData:
    """One transaction's ``account_tx`` rows: one per affected account."""

    accounts: frozenset[bytes]
    """20-byte AccountIDs affected by the transaction."""

    ledger_sequence: int
    """The ledger that included it."""

    transaction_index: int
    """Its TransactionIndex from the metadata."""

    tx_hash: bytes
    """The 32-byte transaction hash."""


def nft_issuer(token_id: bytes) -> bytes:
    """The issuer AccountID encoded in bytes 4..24 of an NFTokenID."""
    return token_id[4:24]


def nft_taxon(token_id: bytes) -> int:
    """The unscrambled taxon of an NFTokenID (bytes 24..28 xor the serial's cipher)."""
    scrambled = int.from_bytes(token_id[24:28], "big")
    serial = int.from_bytes(token_id[28:32], "big")
    return scrambled ^ ((384160001 * serial + 2459) & UINT32_MAX)


@dataclass(frozen=True, slots=True)
class NFTsData:
    """One NFT state change to store (mint, transfer, burn, URI change, initial load)."""

    token_id: bytes
    """The 32-byte NFTokenID."""

    ledger_sequence: int
    """The ledger of the change."""

    owner: bytes
    """The 20-byte owner after the change (the owner at the burn for a burn)."""

    is_burned: bool
    """Whether this change burns the token."""

    uri: bytes | None
    """Set for a mint or an initial load (writes the issuer and URI tables too)."""

    only_uri_changed: bool = False
    """NFTokenModify: write only ``nf_token_uris``."""

    @property
    def issuer(self) -> bytes:
        """The issuer encoded in the token ID."""
        return nft_issuer(self.token_id)

    @property
    def taxon(self) -> int:
        """The unscrambled taxon encoded in the token ID."""
        return nft_taxon(self.token_id)


@dataclass(frozen=True, slots=True)
class NFTTransactionsData:
    """One ``nf_token_transactions`` row: a transaction touching an NFT."""

    token_id: bytes
    """The 32-byte NFTokenID."""

    ledger_sequence: int
    """The ledger that included the transaction."""

    transaction_index: int
    """Its TransactionIndex."""

    tx_hash: bytes
    """The 32-byte transaction hash."""


@dataclass(frozen=True, slots=True)
class BookOffersPage:
    """Offers of one order book, best quality first."""

    offers: tuple[LedgerObject, ...]
    """The Offer objects, in directory order."""

    cursor: bytes | None
    """Never set by ``fetch_book_offers`` (as in Clio); kept for the API shape."""
