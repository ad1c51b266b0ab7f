"""Parsing and validating JSON-RPC requests: pure, so a malformed request never reaches a backend.

A request is ``{"method": name, "params": [{...}]}`` (rippled's JSON-RPC 1.0 envelope; ``params``
may be absent). :func:`parse_call` checks the envelope (a failure is a plain-text 400, as rippled
answers), then each method's parser turns the one params object into a frozen dataclass or raises
:class:`~chainloom.ledger.api.errors.RpcError` (``invalidParams``, ``actMalformed``,
``lgrIdxMalformed``, ...). Limits are clamped to each method's bounds, as rippled and Clio do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from chainloom.ledger.api import params as pm
from chainloom.ledger.api.errors import MalformedRequestError, RpcError, invalid_params
from chainloom.ledger.api.readers import (
    LedgerSelector,
    parse_ledger_selector,
    read_account,
    read_bool,
    read_currency,
    read_hash,
    read_issue,
    read_limit,
    read_uint32,
)
from chainloom.ledger.types import TransactionsCursor
from chainloom.ledger.xrpl import keylets

MAX_BODY_BYTES = 64 * 1024
"""Largest request body accepted (413 above it): every read method fits in a few hundred bytes."""

API_VERSIONS = (1, 2, 3)
"""Supported ``api_version`` values; 1 when absent (rippled's default)."""

LEDGER_DATA_LIMIT = 256
"""Most objects per ``ledger_data`` page in JSON (rippled's and Clio's bound)."""
LEDGER_DATA_BINARY_LIMIT = 2048
"""Most objects per ``ledger_data`` page in binary."""
ACCOUNT_TX_LIMIT = (200, 1000)
"""``account_tx``: default and largest ``limit`` (Clio's)."""
NFT_LIMIT = (50, 100)
"""``nft_history`` and ``nfts_by_issuer``: default and largest ``limit`` (Clio's)."""
BOOK_OFFERS_LIMIT = (60, 100)
"""``book_offers``: default and largest ``limit`` (Clio's)."""


@dataclass(frozen=True, slots=True)
class Call:
    """One JSON-RPC call: the method and its (single) params object."""

    method: str
    """The method name."""
    params: Mapping[str, Any]
    """The params object (empty when the request had none)."""
    api_version: int
    """The API version the answer is shaped for (1 or 2)."""
    version_error: str | None = None
    """Why the requested ``api_version`` is refused (answered as ``invalidParams``)."""


@dataclass(frozen=True, slots=True)
class LedgerParams:
    """``ledger``."""

    ledger: LedgerSelector
    """The ledger."""
    transactions: bool
    """Include the transactions."""
    expand: bool
    """Whole transactions rather than hashes."""
    binary: bool
    """Transactions as hex blobs."""


@dataclass(frozen=True, slots=True)
class LedgerDataParams:
    """``ledger_data``."""

    ledger: LedgerSelector
    """The ledger."""
    marker: bytes | None
    """Continue after this key."""
    limit: int
    """Objects per page."""
    binary: bool
    """Objects as hex blobs."""


@dataclass(frozen=True, slots=True)
class LedgerEntryParams:
    """``ledger_entry``: one object by key (given, or derived from a typed form)."""

    ledger: LedgerSelector
    """The ledger."""
    key: bytes
    """The object's 32-byte key."""
    binary: bool
    """The object as a hex blob."""


@dataclass(frozen=True, slots=True)
class TxParams:
    """``tx``."""

    tx_hash: bytes
    """The transaction hash."""
    binary: bool
    """Hex blobs."""
    min_ledger: int | None
    """Lower bound of the searched range (for ``searched_all``)."""
    max_ledger: int | None
    """Upper bound of the searched range."""


@dataclass(frozen=True, slots=True)
class HistoryParams:
    """``account_tx`` and ``nft_history``: a paged history of an account or an NFT."""

    subject: bytes
    """The 20-byte account or the 32-byte NFT ID."""
    subject_text: str
    """The subject as the request gave it (echoed in the answer)."""
    ledger_min: int | None
    """Lowest ledger (``None``: the oldest stored)."""
    ledger_max: int | None
    """Highest ledger (``None``: the newest stored)."""
    ledger: LedgerSelector | None
    """One ledger only (``ledger_index`` / ``ledger_hash``), instead of the bounds."""
    binary: bool
    """Hex blobs."""
    forward: bool
    """Oldest first."""
    limit: int
    """Transactions per page."""
    marker: TransactionsCursor | None
    """Continue after this ``{ledger, seq}``."""


@dataclass(frozen=True, slots=True)
class NftInfoParams:
    """``nft_info``."""

    nft_id: bytes
    """The 32-byte NFTokenID."""
    ledger: LedgerSelector
    """The ledger."""


@dataclass(frozen=True, slots=True)
class NftsByIssuerParams:
    """``nfts_by_issuer``."""

    issuer: bytes
    """The issuer's 20-byte AccountID."""
    issuer_text: str
    """The issuer as given."""
    taxon: int | None
    """Only this taxon."""
    ledger: LedgerSelector
    """The ledger."""
    limit: int
    """NFTs per page."""
    marker: bytes | None
    """Continue after this NFTokenID."""


@dataclass(frozen=True, slots=True)
class BookOffersParams:
    """``book_offers``."""

    book: bytes
    """The book's base key."""
    ledger: LedgerSelector
    """The ledger."""
    limit: int
    """Most offers."""


@dataclass(frozen=True, slots=True)
class NoParams:
    """``server_info``, ``ledger_range`` and the like."""


Params = (
    LedgerParams
    | LedgerDataParams
    | LedgerEntryParams
    | TxParams
    | HistoryParams
    | NftInfoParams
    | NftsByIssuerParams
    | BookOffersParams
    | NoParams
    | pm.AccountParams
    | pm.DepositAuthorizedParams
    | pm.NftOffersParams
    | pm.LedgerOnlyParams
    | pm.LedgerIndexParams
    | pm.TransactionEntryParams
    | pm.AmmInfoParams
    | pm.AggregatePriceParams
    | pm.MptHoldersParams
)


# --- the envelope ------------------------------------------------------------------------------


def parse_call(body: bytes) -> Call:
    """The call in an HTTP body; :class:`MalformedRequestError` (400) when it is not JSON-RPC."""
    if len(body) > MAX_BODY_BYTES:
        raise MalformedRequestError(f"request body over {MAX_BODY_BYTES} bytes", http_status=413)
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as bad:
        raise MalformedRequestError(f"Unable to parse request: {bad}") from None
    if not isinstance(document, dict):
        raise MalformedRequestError("Unable to parse request: not a JSON object")
    method = document.get("method")
    if method is None:
        raise MalformedRequestError("Null method")
    if not isinstance(method, str):
        raise MalformedRequestError("method is not string")
    if not method:
        raise MalformedRequestError("method is empty")
    params_list = document.get("params", [{}])
    if params_list is None:
        params_list = [{}]
    if not isinstance(params_list, list) or len(params_list) > 1:
        raise MalformedRequestError("params unparseable")
    params = params_list[0] if params_list else {}
    if not isinstance(params, dict):
        raise MalformedRequestError("params unparseable")
    return _with_version(method, params)


def _with_version(method: str, params: dict[str, Any]) -> Call:
    version = params.get("api_version", 1)
    if isinstance(version, bool) or version not in API_VERSIONS:
        # Answered as the method's error: the call is well formed, the version is not served.
        refusal = f"Invalid API version: {version!r}"
        return Call(method=method, params=params, api_version=1, version_error=refusal)
    return Call(method=method, params=params, api_version=int(version))


def parse_websocket_call(text: str | bytes) -> tuple[Any, Call]:
    """The ``id`` and the call of a WebSocket message (``{"id", "command", ...params}``, as
    rippled's WebSocket API takes it); :class:`MalformedRequestError` when it is not one."""
    if len(text) > MAX_BODY_BYTES:
        raise MalformedRequestError(f"message over {MAX_BODY_BYTES} bytes", http_status=413)
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as bad:
        raise MalformedRequestError(f"Unable to parse request: {bad}") from None
    if not isinstance(document, dict):
        raise MalformedRequestError("Unable to parse request: not a JSON object")
    method = document.get("command", document.get("method"))
    if not isinstance(method, str) or not method:
        raise MalformedRequestError("Missing command entry.")
    params = {key: value for key, value in document.items() if key not in ("id", "command")}
    return document.get("id"), _with_version(method, params)


# --- methods -----------------------------------------------------------------------------------


def parse_ledger(params: Mapping[str, Any]) -> LedgerParams:
    """``ledger``: ``ledger_index``/``ledger_hash``, ``transactions``, ``expand``, ``binary``."""
    return LedgerParams(
        ledger=parse_ledger_selector(params),
        transactions=read_bool(params, "transactions"),
        expand=read_bool(params, "expand"),
        binary=read_bool(params, "binary"),
    )


def parse_ledger_data(params: Mapping[str, Any]) -> LedgerDataParams:
    """``ledger_data``: ``marker`` (a key), ``limit``, ``binary``."""
    binary = read_bool(params, "binary")
    largest = LEDGER_DATA_BINARY_LIMIT if binary else LEDGER_DATA_LIMIT
    marker = params.get("marker")
    return LedgerDataParams(
        ledger=parse_ledger_selector(params),
        marker=None if marker is None else read_hash(marker, "marker"),
        limit=read_limit(params, (largest, largest)),
        binary=binary,
    )


def parse_ledger_entry(params: Mapping[str, Any]) -> LedgerEntryParams:  # noqa: PLR0912
    """``ledger_entry``: ``index`` or one of ``account_root``, ``offer``, ``ripple_state``,
    ``directory``, ``nft_page``."""
    key: bytes
    if "index" in params:
        key = read_hash(params["index"], "index")
    elif "account_root" in params:
        key = keylets.account_root(read_account(params["account_root"], "account_root"))
    elif "offer" in params:
        offer = params["offer"]
        if isinstance(offer, str):
            key = read_hash(offer, "offer")
        elif isinstance(offer, dict):
            owner = read_account(offer.get("account"), "offer.account", error="invalidParams")
            key = keylets.offer(owner, read_uint32(offer.get("seq"), "offer.seq"))
        else:
            raise invalid_params("Invalid field 'offer'.")
    elif "ripple_state" in params:
        state = params["ripple_state"]
        accounts = state.get("accounts") if isinstance(state, dict) else None
        if not isinstance(accounts, list) or len(accounts) != 2:
            raise invalid_params("Invalid field 'ripple_state.accounts', not two accounts.")
        first, second = (
            read_account(account, "ripple_state.accounts", error="invalidParams")
            for account in accounts
        )
        if first == second:
            raise invalid_params("Invalid field 'ripple_state.accounts', the same account.")
        currency = read_currency(state.get("currency"), "ripple_state.currency")
        if not any(currency):
            raise invalid_params("Invalid field 'ripple_state.currency', XRP has no trust line.")
        key = keylets.ripple_state(first, second, currency)
    elif "directory" in params:
        key = _directory_key(params["directory"])
    elif "nft_page" in params:
        key = read_hash(params["nft_page"], "nft_page")
    else:
        raise invalid_params("No ledger_entry params provided.")
    return LedgerEntryParams(
        ledger=parse_ledger_selector(params), key=key, binary=read_bool(params, "binary")
    )


def _directory_key(directory: Any) -> bytes:
    if isinstance(directory, str):
        return read_hash(directory, "directory")
    if not isinstance(directory, dict):
        raise invalid_params("Invalid field 'directory'.")
    sub_index = read_uint32(directory.get("sub_index", 0), "directory.sub_index")
    roots = []
    if "dir_root" in directory:
        roots.append(read_hash(directory["dir_root"], "directory.dir_root"))
    if "owner" in directory:
        owner = read_account(directory["owner"], "directory.owner", error="invalidParams")
        roots.append(keylets.owner_directory(owner))
    if not roots:
        raise invalid_params("Invalid field 'directory', needs dir_root or owner.")
    # rippled refuses both; xrpl-py's model requires both, so both are taken when they agree.
    if len(roots) == 2 and roots[0] != roots[1]:
        raise invalid_params("Invalid field 'directory', dir_root is not the owner's directory.")
    root = roots[0]
    if sub_index == 0:
        return root
    return keylets.directory_page(root, sub_index)


def parse_tx(params: Mapping[str, Any]) -> TxParams:
    """``tx``: ``transaction`` (the hash), ``binary``, ``min_ledger``/``max_ledger``."""
    if "transaction" not in params:
        raise invalid_params("Missing field 'transaction'.")
    bounds = [
        None if params.get(name) is None else read_uint32(params[name], name)
        for name in ("min_ledger", "max_ledger")
    ]
    if (bounds[0] is None) != (bounds[1] is None):
        raise invalid_params("Give both min_ledger and max_ledger, or neither.")
    if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
        raise RpcError("lgrIdxsInvalid")
    return TxParams(
        tx_hash=read_hash(params["transaction"], "transaction"),
        binary=read_bool(params, "binary"),
        min_ledger=bounds[0],
        max_ledger=bounds[1],
    )


def _history(
    params: Mapping[str, Any], subject: bytes, subject_text: str, bounds: tuple[int, int]
) -> HistoryParams:
    limits: list[int | None] = []
    for name in ("ledger_index_min", "ledger_index_max"):
        value = params.get(name, -1)
        if value == -1 or value is None:
            limits.append(None)
        else:
            limits.append(read_uint32(value, name))
    low, high = limits
    if low is not None and high is not None and low > high:
        raise RpcError("lgrIdxsInvalid")
    ledger = None
    if params.get("ledger_index") is not None or params.get("ledger_hash") is not None:
        if low is not None or high is not None:
            raise invalid_params("Give ledger_index/ledger_hash or ledger_index_min/max.")
        ledger = parse_ledger_selector(params)
    marker = params.get("marker")
    cursor = None
    if marker is not None:
        if not isinstance(marker, dict) or set(marker) != {"ledger", "seq"}:
            raise invalid_params("Invalid field 'marker'.")
        cursor = TransactionsCursor(
            read_uint32(marker["ledger"], "marker.ledger"), read_uint32(marker["seq"], "marker.seq")
        )
    return HistoryParams(
        subject=subject,
        subject_text=subject_text,
        ledger_min=low,
        ledger_max=high,
        ledger=ledger,
        binary=read_bool(params, "binary"),
        forward=read_bool(params, "forward"),
        limit=read_limit(params, bounds),
        marker=cursor,
    )


def parse_account_tx(params: Mapping[str, Any]) -> HistoryParams:
    """``account_tx``: ``account``, bounds or one ledger, ``forward``, ``limit``, ``marker``."""
    if "account" not in params:
        raise invalid_params("Missing field 'account'.")
    account = read_account(params["account"], "account")
    return _history(params, account, params["account"], ACCOUNT_TX_LIMIT)


def parse_nft_history(params: Mapping[str, Any]) -> HistoryParams:
    """``nft_history``: ``nft_id`` and the paging of ``account_tx``."""
    if "nft_id" not in params:
        raise invalid_params("Missing field 'nft_id'.")
    token = read_hash(params["nft_id"], "nft_id")
    return _history(params, token, params["nft_id"], NFT_LIMIT)


def parse_nft_info(params: Mapping[str, Any]) -> NftInfoParams:
    """``nft_info``: ``nft_id`` and a ledger."""
    if "nft_id" not in params:
        raise invalid_params("Missing field 'nft_id'.")
    return NftInfoParams(
        nft_id=read_hash(params["nft_id"], "nft_id"), ledger=parse_ledger_selector(params)
    )


def parse_nfts_by_issuer(params: Mapping[str, Any]) -> NftsByIssuerParams:
    """``nfts_by_issuer``: ``issuer``, optional ``nft_taxon``, ``limit``, ``marker``."""
    if "issuer" not in params:
        raise invalid_params("Missing field 'issuer'.")
    taxon = params.get("nft_taxon")
    marker = params.get("marker")
    return NftsByIssuerParams(
        issuer=read_account(params["issuer"], "issuer"),
        issuer_text=params["issuer"],
        taxon=None if taxon is None else read_uint32(taxon, "nft_taxon"),
        ledger=parse_ledger_selector(params),
        limit=read_limit(params, NFT_LIMIT),
        marker=None if marker is None else read_hash(marker, "marker"),
    )


def parse_book_offers(params: Mapping[str, Any]) -> BookOffersParams:
    """``book_offers``: ``taker_gets``, ``taker_pays``, ``limit`` (``taker`` is accepted and not
    used: offers are listed as stored, without funding adjustments)."""
    gets_currency, gets_issuer = read_issue(params.get("taker_gets"), "taker_gets")
    pays_currency, pays_issuer = read_issue(params.get("taker_pays"), "taker_pays")
    if (gets_currency, gets_issuer) == (pays_currency, pays_issuer):
        raise invalid_params("taker_gets and taker_pays are the same asset.")
    if "taker" in params:
        read_account(params["taker"], "taker", error="invalidParams")
    return BookOffersParams(
        book=keylets.book(pays_currency, pays_issuer, gets_currency, gets_issuer),
        ledger=parse_ledger_selector(params),
        limit=read_limit(params, BOOK_OFFERS_LIMIT),
    )


WEBSOCKET_ONLY = ("subscribe", "unsubscribe")
"""Methods answered on a WebSocket only (their parser refuses them over HTTP)."""


def parse_subscription(params: Mapping[str, Any]) -> NoParams:
    """``subscribe`` / ``unsubscribe`` over HTTP: rippled's answer without a callback ``url``
    (the WebSocket API serves them, :mod:`.websocket`)."""
    del params
    raise invalid_params("subscribe and unsubscribe need a WebSocket connection.")


def parse_nothing(params: Mapping[str, Any]) -> NoParams:
    """Methods without parameters (anything given is ignored, as rippled does)."""
    del params
    return NoParams()


PARSERS: dict[str, Callable[[Mapping[str, Any]], Params]] = {
    "server_info": parse_nothing,
    "ledger_range": parse_nothing,
    "ledger": parse_ledger,
    "ledger_data": parse_ledger_data,
    "ledger_entry": parse_ledger_entry,
    "tx": parse_tx,
    "account_tx": parse_account_tx,
    "nft_info": parse_nft_info,
    "nft_history": parse_nft_history,
    "nfts_by_issuer": parse_nfts_by_issuer,
    "book_offers": parse_book_offers,
    "version": parse_nothing,
    "ping": parse_nothing,
    "random": parse_nothing,
    "feature": pm.parse_feature,
    "ledger_index": pm.parse_ledger_index,
    "transaction_entry": pm.parse_transaction_entry,
    "nft_buy_offers": pm.parse_nft_offers,
    "nft_sell_offers": pm.parse_nft_offers,
    "account_info": pm.parse_account_info,
    "account_lines": pm.parse_directory_listing,
    "account_objects": pm.parse_account_objects,
    "account_offers": pm.parse_directory_listing,
    "account_channels": pm.parse_directory_listing,
    "account_currencies": pm.parse_account_info,
    "account_nfts": pm.parse_account_nfts,
    "gateway_balances": pm.parse_gateway_balances,
    "noripple_check": pm.parse_noripple_check,
    "deposit_authorized": pm.parse_deposit_authorized,
    "book_changes": pm.parse_ledger_only,
    "amm_info": pm.parse_amm_info,
    "get_aggregate_price": pm.parse_aggregate_price,
    "mpt_holders": pm.parse_mpt_holders,
    "subscribe": parse_subscription,
    "unsubscribe": parse_subscription,
}
"""Every method the server answers, with its parameter parser."""


def parse_params(call: Call) -> Params:
    """The validated parameters of ``call``; ``unknownCmd`` for a method this server lacks,
    ``invalidParams`` for an ``api_version`` it does not serve."""
    if call.version_error is not None:
        raise invalid_params(call.version_error)
    parser = PARSERS.get(call.method)
    if parser is None:
        raise RpcError("unknownCmd")
    return parser(call.params)
