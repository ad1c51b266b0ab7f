"""Parameters of the account, NFT-offer, book-change and server methods, pure.

The methods Clio answers from an account's owner directory (``account_lines``,
``account_objects``, ...) share their fields: ``account``, a ledger, ``limit`` clamped to the
method's bounds (rippled's and Clio's), and an opaque ``marker``. A marker is a
:class:`~chainloom.ledger.xrpl.directory.DirectoryCursor` (``"<KEY>,<page>"``) or, for the NFT
listings, a key; one that does not parse is ``invalidParams`` here, one that parses but names no
position of the walk is ``invalidParams`` from the walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.api.readers import (
    LedgerSelector,
    ascii_decimal,
    parse_ledger_selector,
    read_account,
    read_bool,
    read_currency,
    read_hash,
    read_issue,
)
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.directory import DirectoryCursor, InvalidMarkerError

ACCOUNT_LINES_LIMIT = (200, 10, 400)
"""``account_lines``, ``account_channels``, ``account_objects``, ``account_offers``: default,
smallest and largest ``limit``."""
ACCOUNT_NFTS_LIMIT = (100, 20, 400)
"""``account_nfts``: default, smallest and largest ``limit``."""
NFT_OFFERS_LIMIT = (250, 50, 500)
"""``nft_buy_offers`` / ``nft_sell_offers``: default, smallest and largest ``limit``."""
NORIPPLE_LIMIT = (300, 1, 500)
"""``noripple_check``: default, smallest and largest ``limit``."""

OBJECT_TYPES: dict[str, str] = {
    "account": "AccountRoot",
    "amendments": "Amendments",
    "amm": "AMM",
    "bridge": "Bridge",
    "check": "Check",
    "credential": "Credential",
    "delegate": "Delegate",
    "deposit_preauth": "DepositPreauth",
    "did": "DID",
    "directory": "DirectoryNode",
    "escrow": "Escrow",
    "fee": "FeeSettings",
    "hashes": "LedgerHashes",
    "mpt_issuance": "MPTokenIssuance",
    "mptoken": "MPToken",
    "nft_offer": "NFTokenOffer",
    "nft_page": "NFTokenPage",
    "offer": "Offer",
    "oracle": "Oracle",
    "payment_channel": "PayChannel",
    "permissioned_domain": "PermissionedDomain",
    "signer_list": "SignerList",
    "state": "RippleState",
    "ticket": "Ticket",
    "vault": "Vault",
    "xchain_owned_claim_id": "XChainOwnedClaimID",
    "xchain_owned_create_account_claim_id": "XChainOwnedCreateAccountClaimID",
}
"""``account_objects``' ``type`` values (rippled's short names) and the entry type each means."""

DELETION_BLOCKERS = frozenset(
    {"Check", "Escrow", "NFTokenPage", "PayChannel", "RippleState", "XChainOwnedClaimID",
     "XChainOwnedCreateAccountClaimID", "Bridge", "MPToken", "MPTokenIssuance", "Vault"}
)  # fmt: skip
"""Entry types that keep an account from being deleted (``deletion_blockers_only``)."""


@dataclass(frozen=True, slots=True)
class AccountParams:
    """An ``account_*`` method, ``gateway_balances`` or ``noripple_check``."""

    account: bytes
    """The 20-byte AccountID."""
    account_text: str
    """The address as given (echoed)."""
    ledger: LedgerSelector
    """The ledger."""
    limit: int
    """Most entries per page."""
    marker: DirectoryCursor | None = None
    """Where the previous page stopped."""
    peer: bytes | None = None
    """``account_lines``: only lines with this account; ``account_channels``: only channels
    to this destination."""
    peer_text: str | None = None
    """The peer as given."""
    entry_type: int | None = None
    """``account_objects``: only this entry type."""
    deletion_blockers_only: bool = False
    """``account_objects``: only entries that block deleting the account."""
    signer_lists: bool = False
    """``account_info``: also the account's SignerList."""
    hotwallets: tuple[bytes, ...] = ()
    """``gateway_balances``: operational addresses whose balances are listed apart."""
    role: str = ""
    """``noripple_check``: ``gateway`` or ``user``."""
    transactions: bool = False
    """``noripple_check``: suggest the fixing transactions."""
    nft_marker: bytes | None = None
    """``account_nfts``: continue after this NFTokenID."""


@dataclass(frozen=True, slots=True)
class DepositAuthorizedParams:
    """``deposit_authorized``."""

    source: bytes
    """Who would send."""
    destination: bytes
    """Who would receive."""
    source_text: str
    """The source as given."""
    destination_text: str
    """The destination as given."""
    ledger: LedgerSelector
    """The ledger."""


@dataclass(frozen=True, slots=True)
class NftOffersParams:
    """``nft_buy_offers`` / ``nft_sell_offers``."""

    nft_id: bytes
    """The 32-byte NFTokenID."""
    ledger: LedgerSelector
    """The ledger."""
    limit: int
    """Most offers."""
    marker: bytes | None
    """Continue after this offer key."""


@dataclass(frozen=True, slots=True)
class LedgerOnlyParams:
    """Methods that only take a ledger (``book_changes``, ``ledger_index`` and ``feature``)."""

    ledger: LedgerSelector
    """The ledger."""
    feature: str | None = None
    """``feature``: one amendment by name or ID."""


@dataclass(frozen=True, slots=True)
class LedgerIndexParams:
    """``ledger_index`` (Clio)."""

    date: datetime | None
    """The newest ledger closed at or before this moment (``None``: the newest)."""


@dataclass(frozen=True, slots=True)
class TransactionEntryParams:
    """``transaction_entry``."""

    tx_hash: bytes
    """The transaction."""
    ledger: LedgerSelector
    """The ledger it must be in."""


@dataclass(frozen=True, slots=True)
class AmmInfoParams:
    """``amm_info``: the AMM by its account, or by its two assets."""

    amm_account: bytes | None
    """The AMM's account."""
    assets: tuple[tuple[bytes, bytes], tuple[bytes, bytes]] | None
    """``(currency, issuer)`` of both assets."""
    ledger: LedgerSelector
    """The ledger."""


@dataclass(frozen=True, slots=True)
class AggregatePriceParams:
    """``get_aggregate_price``."""

    base: bytes
    """The 20-byte currency code priced."""
    quote: bytes
    """The 20-byte currency code it is priced in."""
    oracles: tuple[tuple[bytes, int], ...]
    """``(owner, OracleDocumentID)`` of each Oracle to read."""
    trim: int | None
    """Percent of the highest and lowest prices left out of ``trimmed_set``."""
    time_threshold: int | None
    """Only prices this many seconds older than the newest at most."""
    ledger: LedgerSelector
    """The ledger."""


@dataclass(frozen=True, slots=True)
class MptHoldersParams:
    """``mpt_holders`` (Clio)."""

    issuance_id: bytes
    """The 24-byte MPTokenIssuanceID."""
    ledger: LedgerSelector
    """The ledger."""
    limit: int
    """Most holders per page."""
    marker: bytes | None
    """Continue after this MPToken key."""


MPT_HOLDERS_LIMIT = (50, 1, 100)
"""``mpt_holders``: default, smallest and largest ``limit`` (Clio's)."""

MAX_ORACLES = 200
"""Most Oracles one ``get_aggregate_price`` reads (rippled's bound)."""


def clamp_limit(params: Mapping[str, Any], bounds: tuple[int, int, int]) -> int:
    """``limit`` clamped to ``[smallest, largest]`` (rippled clamps rather than refuses)."""
    default, smallest, largest = bounds
    if "limit" not in params:
        return default
    value = params["limit"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_params("Invalid field 'limit', not unsigned integer.")
    if value < 1:
        raise invalid_params("Invalid field 'limit'.")
    return max(smallest, min(int(value), largest))


def _required_account(params: Mapping[str, Any], name: str = "account") -> tuple[bytes, str]:
    if name not in params:
        raise invalid_params(f"Missing field '{name}'.")
    value = params[name]
    return read_account(value, name), str(value)


def _cursor(params: Mapping[str, Any]) -> DirectoryCursor | None:
    if params.get("marker") is None:
        return None
    try:
        return DirectoryCursor.parse(params["marker"])
    except InvalidMarkerError as bad:
        raise invalid_params(str(bad)) from None


def parse_account_info(params: Mapping[str, Any]) -> AccountParams:
    """``account_info``: ``account`` (``ident`` is rippled's old name), ``signer_lists``."""
    name = "account" if "account" in params or "ident" not in params else "ident"
    account, text = _required_account(params, name)
    return AccountParams(
        account=account,
        account_text=text,
        ledger=parse_ledger_selector(params),
        limit=1,
        signer_lists=read_bool(params, "signer_lists"),
    )


def parse_directory_listing(
    params: Mapping[str, Any], bounds: tuple[int, int, int] = ACCOUNT_LINES_LIMIT
) -> AccountParams:
    """``account_lines``, ``account_channels``, ``account_offers``, ``account_currencies``:
    ``account``, ``limit``, ``marker``, ``peer`` / ``destination_account``."""
    account, text = _required_account(params)
    peer_name = "peer" if "peer" in params else "destination_account"
    peer = peer_text = None
    if params.get(peer_name) is not None:
        peer, peer_text = _required_account(params, peer_name)
    return AccountParams(
        account=account,
        account_text=text,
        ledger=parse_ledger_selector(params),
        limit=clamp_limit(params, bounds),
        marker=_cursor(params),
        peer=peer,
        peer_text=peer_text,
    )


def parse_account_objects(params: Mapping[str, Any]) -> AccountParams:
    """``account_objects``: the listing fields, ``type``, ``deletion_blockers_only``."""
    base = parse_directory_listing(params)
    entry_type = None
    if params.get("type") is not None:
        name = params["type"]
        if not isinstance(name, str) or name.lower() not in OBJECT_TYPES:
            raise invalid_params("Invalid field 'type'.")
        entry_type = sf.LEDGER_ENTRY_CODES.get(OBJECT_TYPES[name.lower()])
        if entry_type is None:
            raise invalid_params("Invalid field 'type'.")
    return AccountParams(
        account=base.account,
        account_text=base.account_text,
        ledger=base.ledger,
        limit=base.limit,
        marker=base.marker,
        entry_type=entry_type,
        deletion_blockers_only=read_bool(params, "deletion_blockers_only"),
    )


def parse_account_nfts(params: Mapping[str, Any]) -> AccountParams:
    """``account_nfts``: ``account``, ``limit``, ``marker`` (an NFTokenID)."""
    account, text = _required_account(params)
    marker = params.get("marker")
    return AccountParams(
        account=account,
        account_text=text,
        ledger=parse_ledger_selector(params),
        limit=clamp_limit(params, ACCOUNT_NFTS_LIMIT),
        nft_marker=None if marker is None else read_hash(marker, "marker"),
    )


def parse_gateway_balances(params: Mapping[str, Any]) -> AccountParams:
    """``gateway_balances``: ``account``, ``hotwallet`` (one address or a list)."""
    account, text = _required_account(params)
    hot = params.get("hotwallet")
    wallets: list[Any] = [] if hot is None else hot if isinstance(hot, list) else [hot]
    return AccountParams(
        account=account,
        account_text=text,
        ledger=parse_ledger_selector(params),
        limit=1,
        hotwallets=tuple(read_account(wallet, "hotwallet", error="invalidHotWallet")
                         for wallet in wallets),
    )  # fmt: skip


def parse_noripple_check(params: Mapping[str, Any]) -> AccountParams:
    """``noripple_check``: ``account``, ``role`` (``gateway`` / ``user``), ``transactions``,
    ``limit``."""
    account, text = _required_account(params)
    if "role" not in params:
        raise invalid_params("Missing field 'role'.")
    role = params["role"]
    if role not in ("gateway", "user"):
        raise invalid_params("Invalid field 'role'.")
    return AccountParams(
        account=account,
        account_text=text,
        ledger=parse_ledger_selector(params),
        limit=clamp_limit(params, NORIPPLE_LIMIT),
        role=role,
        transactions=read_bool(params, "transactions"),
    )


def parse_deposit_authorized(params: Mapping[str, Any]) -> DepositAuthorizedParams:
    """``deposit_authorized``: ``source_account``, ``destination_account``."""
    source, source_text = _required_account(params, "source_account")
    destination, destination_text = _required_account(params, "destination_account")
    return DepositAuthorizedParams(
        source=source,
        destination=destination,
        source_text=source_text,
        destination_text=destination_text,
        ledger=parse_ledger_selector(params),
    )


def parse_nft_offers(params: Mapping[str, Any]) -> NftOffersParams:
    """``nft_buy_offers`` / ``nft_sell_offers``: ``nft_id``, ``limit``, ``marker``."""
    if "nft_id" not in params:
        raise invalid_params("Missing field 'nft_id'.")
    marker = params.get("marker")
    return NftOffersParams(
        nft_id=read_hash(params["nft_id"], "nft_id"),
        ledger=parse_ledger_selector(params),
        limit=clamp_limit(params, NFT_OFFERS_LIMIT),
        marker=None if marker is None else read_hash(marker, "marker"),
    )


def parse_ledger_only(params: Mapping[str, Any]) -> LedgerOnlyParams:
    """A ledger and nothing else."""
    return LedgerOnlyParams(ledger=parse_ledger_selector(params))


def parse_feature(params: Mapping[str, Any]) -> LedgerOnlyParams:
    """``feature``: an optional amendment name or ID (``vetoed`` is admin-only: refused)."""
    if "vetoed" in params:
        raise invalid_params("Invalid field 'vetoed': changing votes needs an admin.")
    feature = params.get("feature")
    if feature is not None and not isinstance(feature, str):
        raise invalid_params("Invalid field 'feature', not string.")
    return LedgerOnlyParams(ledger=parse_ledger_selector(params), feature=feature)


def parse_transaction_entry(params: Mapping[str, Any]) -> TransactionEntryParams:
    """``transaction_entry``: ``tx_hash`` and a ledger (required by rippled)."""
    if "tx_hash" not in params:
        raise invalid_params("Missing field 'tx_hash'.")
    return TransactionEntryParams(
        tx_hash=read_hash(params["tx_hash"], "tx_hash"), ledger=parse_ledger_selector(params)
    )


def parse_amm_info(params: Mapping[str, Any]) -> AmmInfoParams:
    """``amm_info``: ``amm_account``, or ``asset`` and ``asset2`` (not both ways)."""
    has_assets = "asset" in params or "asset2" in params
    if ("amm_account" in params) == has_assets:
        raise invalid_params("Give amm_account, or asset and asset2.")
    if "amm_account" in params:
        return AmmInfoParams(
            amm_account=read_account(params["amm_account"], "amm_account"),
            assets=None,
            ledger=parse_ledger_selector(params),
        )
    if "asset" not in params or "asset2" not in params:
        raise invalid_params(f"Missing field '{'asset2' if 'asset' in params else 'asset'}'.")
    return AmmInfoParams(
        amm_account=None,
        assets=(read_issue(params["asset"], "asset"), read_issue(params["asset2"], "asset2")),
        ledger=parse_ledger_selector(params),
    )


def parse_ledger_index(params: Mapping[str, Any]) -> LedgerIndexParams:
    """``ledger_index``: an optional ISO 8601 ``date`` with a time zone."""
    text = params.get("date")
    if text is None:
        return LedgerIndexParams(date=None)
    if not isinstance(text, str):
        raise invalid_params("Invalid field 'date', not string.")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_params("Invalid field 'date', not ISO 8601.") from None
    if moment.tzinfo is None:
        raise invalid_params("Invalid field 'date', no time zone.")
    return LedgerIndexParams(date=moment)


def parse_aggregate_price(params: Mapping[str, Any]) -> AggregatePriceParams:
    """``get_aggregate_price``: ``base_asset``, ``quote_asset``, ``oracles`` (``[{account,
    oracle_document_id}]``, 1 to 200), ``trim`` (1 to 25), ``time_threshold``."""
    for name in ("base_asset", "quote_asset", "oracles"):
        if name not in params:
            raise invalid_params(f"Missing field '{name}'.")
    oracles = params["oracles"]
    if not isinstance(oracles, list) or not 0 < len(oracles) <= MAX_ORACLES:
        raise RpcError("oracleMalformed")
    read: list[tuple[bytes, int]] = []
    for oracle in oracles:
        if not isinstance(oracle, dict) or "account" not in oracle:
            raise RpcError("oracleMalformed")
        document = oracle.get("oracle_document_id")
        if ascii_decimal(document):
            document = int(str(document))
        if isinstance(document, bool) or not isinstance(document, int) or document < 0:
            raise invalid_params("Invalid field 'oracle_document_id'.")
        read.append((read_account(oracle["account"], "account"), document))
    trim = params.get("trim")
    if trim is not None and (
        isinstance(trim, bool) or not isinstance(trim, int) or not 1 <= trim <= 25
    ):
        raise invalid_params("Invalid field 'trim'.")
    threshold = params.get("time_threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0
    ):
        raise invalid_params("Invalid field 'time_threshold'.")
    return AggregatePriceParams(
        base=read_currency(params["base_asset"], "base_asset"),
        quote=read_currency(params["quote_asset"], "quote_asset"),
        oracles=tuple(read),
        trim=trim,
        time_threshold=threshold,
        ledger=parse_ledger_selector(params),
    )


def parse_mpt_holders(params: Mapping[str, Any]) -> MptHoldersParams:
    """``mpt_holders``: ``mpt_issuance_id`` (48 hex digits), ``limit``, ``marker``."""
    if "mpt_issuance_id" not in params:
        raise invalid_params("Missing field 'mpt_issuance_id'.")
    value = params["mpt_issuance_id"]
    if not isinstance(value, str) or len(value) != 48:
        raise invalid_params("Invalid field 'mpt_issuance_id', not 192-bit hex.")
    try:
        issuance = bytes.fromhex(value)
    except ValueError:
        raise invalid_params("Invalid field 'mpt_issuance_id', not 192-bit hex.") from None
    marker = params.get("marker")
    return MptHoldersParams(
        issuance_id=issuance,
        ledger=parse_ledger_selector(params),
        limit=clamp_limit(params, MPT_HOLDERS_LIMIT),
        marker=None if marker is None else read_hash(marker, "marker"),
    )
