"""The ``account_*`` methods: an account's root, and what hangs off its owner directory.

Each reads the AccountRoot (``actNotFound`` without one), then walks the owner directory (or the
NFT page chain) a page at a time with :mod:`chainloom.ledger.xrpl.directory`, reading through the
newest-ledger cache (:func:`.context.read_objects`). Rows are shaped as rippled shapes them.
"""

from __future__ import annotations

import functools

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    reader,
    resolve_ledger,
)
from chainloom.ledger.types import LedgerHeader, nft_taxon
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.directory import (
    NFT_PAGES,
    Accept,
    DirectoryCursor,
    InvalidMarkerError,
    Walked,
    nft_pages,
    page_tokens,
    walk_directory,
)
from chainloom.ledger.xrpl.hashing import sha512_half
from chainloom.ledger.xrpl.jsonform import address as encode_account
from chainloom.ledger.xrpl.jsonform import object_to_json, to_json
from chainloom.ledger.xrpl.lines import line_view

ACCOUNT_FLAGS = {
    "defaultRipple": 0x00800000,
    "depositAuth": 0x01000000,
    "disableMasterKey": 0x00100000,
    "disallowIncomingXRP": 0x00080000,
    "globalFreeze": 0x00400000,
    "noFreeze": 0x00200000,
    "passwordSpent": 0x00010000,
    "requireAuthorization": 0x00040000,
    "requireDestinationTag": 0x00020000,
    "disallowIncomingNFTokenOffer": 0x04000000,
    "disallowIncomingCheck": 0x08000000,
    "disallowIncomingPayChan": 0x10000000,
    "disallowIncomingTrustline": 0x20000000,
    "allowTrustLineLocking": 0x40000000,
    "allowTrustLineClawback": 0x80000000,
}
"""``account_info``'s ``account_flags``: rippled's names of the AccountRoot flags."""


_LEDGER_ENTRY_TYPE_HEADER = binary.field_header(sf.LEDGER_ENTRY_TYPE)[0]


def entry_type(blob: bytes) -> int:
    """The LedgerEntryType of an object blob (its first field in canonical order)."""
    if len(blob) >= 3 and blob[0] == _LEDGER_ENTRY_TYPE_HEADER:
        return int.from_bytes(blob[1:3], "big")
    raw = binary.decode(blob).get(sf.LEDGER_ENTRY_TYPE)
    return int.from_bytes(raw, "big") if isinstance(raw, bytes) else -1


def account_root(ctx: Context, account: bytes, header: LedgerHeader) -> bytes:
    """The account's AccountRoot blob at ``header``; ``actNotFound`` without one."""
    return root_at(ctx, keylets.account_root(account), header)


def root_at(ctx: Context, key: bytes, header: LedgerHeader) -> bytes:
    """The AccountRoot blob at ``key`` (its keylet, computed by the caller) at ``header``;
    ``actNotFound`` without one."""
    blob = read_object(ctx, key, header.sequence)
    if blob is None:
        raise RpcError("actNotFound")
    return blob


def walk_owned(
    ctx: Context,
    params: pm.AccountParams,
    header: LedgerHeader,
    wanted: int | None,
    accept_extra: Accept | None = None,
) -> Walked:
    """A page of the account's owner directory holding entries of type ``wanted``."""

    def accept(key: bytes, blob: bytes) -> bool:
        if wanted is not None and entry_type(blob) != wanted:
            return False
        return accept_extra is None or accept_extra(key, blob)

    try:
        return walk_directory(
            reader(ctx, header.sequence),
            keylets.owner_directory(params.account),
            limit=params.limit,
            after=params.marker,
            accept=accept,
        )
    except InvalidMarkerError as bad:
        raise invalid_params(str(bad)) from None


def _listing(params: pm.AccountParams, header: LedgerHeader, walked: Walked) -> JSON:
    result = ledger_result(header)
    result["account"] = params.account_text
    result["limit"] = params.limit
    if walked.cursor is not None:
        result["marker"] = walked.cursor.text()
    return result


# ------------------------------------------------------------------------------ account_info


ROOT_VIEWS_REMEMBERED = 4096
"""AccountRoots whose ``account_data`` and ``account_flags`` are kept built, by blob."""


@functools.lru_cache(maxsize=ROOT_VIEWS_REMEMBERED)
def _root_view(blob: bytes) -> tuple[JSON, JSON]:
    """The AccountRoot's JSON form and its flags by name. Remembered by blob, since the same
    accounts are asked about again and again and an unchanged root is the same bytes; the
    answer copies the outer object and never changes what it shares."""
    data = to_json(blob)
    flags = int(data.get("Flags", 0))
    return data, {name: bool(flags & bit) for name, bit in ACCOUNT_FLAGS.items()}


def account_info(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_info``: the AccountRoot, its flags by name, and the SignerList if asked."""
    header = resolve_ledger(ctx, params.ledger)
    key = keylets.account_root(params.account)
    shared, flags = _root_view(root_at(ctx, key, header))
    data = dict(shared)
    data["index"] = shapes.hex_upper(key)
    result = ledger_result(header)
    result["account_data"] = data
    result["account_flags"] = flags
    if params.signer_lists:
        signer_key = sha512_half(keylets.SIGNER_LIST + params.account + bytes(4))
        signer = read_object(ctx, signer_key, header.sequence)
        lists = []
        if signer is not None:
            decoded = to_json(signer)
            decoded["index"] = shapes.hex_upper(signer_key)
            lists.append(decoded)
        if api_version == 1:
            data["signer_lists"] = lists
        else:
            result["signer_lists"] = lists
    return result


# ----------------------------------------------------------------------------- account_lines


def account_lines(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_lines``: the account's trust lines (optionally with one ``peer``)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)

    def with_peer(key: bytes, blob: bytes) -> bool:
        del key
        return params.peer is None or line_view(blob, params.account).peer == params.peer

    walked = walk_owned(ctx, params, header, sf.RIPPLE_STATE, with_peer)
    lines = []
    for _, blob in walked.entries:
        view = line_view(blob, params.account)
        line: JSON = {
            "account": encode_account(view.peer),
            "balance": view.balance,
            "currency": view.currency_text,
            "limit": view.limit,
            "limit_peer": view.limit_peer,
            "no_ripple": view.no_ripple,
            "no_ripple_peer": view.no_ripple_peer,
            "quality_in": view.quality_in,
            "quality_out": view.quality_out,
        }
        for name in ("authorized", "peer_authorized", "freeze", "freeze_peer",
                     "deep_freeze", "deep_freeze_peer"):  # fmt: skip
            if getattr(view, name):
                line[name] = True
        lines.append(line)
    result = _listing(params, header, walked)
    result["lines"] = lines
    if params.peer_text is not None:
        result["peer"] = params.peer_text
    return result


# --------------------------------------------------------------------------- account_objects


def account_objects(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_objects``: the NFT pages, then every entry of the owner directory (one type
    only, or only deletion blockers, when asked)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    wanted = params.entry_type
    found: list[tuple[bytes, bytes]] = []
    marker = params.marker
    if wanted in (None, sf.NFTOKEN_PAGE) and (marker is None or marker.page == NFT_PAGES):
        pages = nft_pages(reader(ctx, header.sequence), params.account)
        start = 0
        if marker is not None:
            keys = [key for key, _ in pages]
            if marker.entry not in keys:
                raise invalid_params("Invalid marker: not an NFT page of the account.")
            start = keys.index(marker.entry) + 1
        found = pages[start : start + params.limit]
        if len(found) == params.limit and found:
            more = start + params.limit < len(pages) or wanted is None
            cursor = DirectoryCursor(found[-1][0], NFT_PAGES) if more else None
            return _objects_result(params, header, found, cursor)
        marker = None
    if wanted == sf.NFTOKEN_PAGE:
        return _objects_result(params, header, found, None)

    def blocker(key: bytes, blob: bytes) -> bool:
        del key
        if not params.deletion_blockers_only:
            return True
        return sf.LEDGER_ENTRY_NAMES.get(entry_type(blob), "") in pm.DELETION_BLOCKERS

    remaining = pm.AccountParams(
        account=params.account,
        account_text=params.account_text,
        ledger=params.ledger,
        limit=params.limit - len(found),
        marker=marker,
    )
    walked = walk_owned(ctx, remaining, header, wanted, blocker)
    return _objects_result(params, header, found + walked.entries, walked.cursor)


def _objects_result(
    params: pm.AccountParams,
    header: LedgerHeader,
    entries: list[tuple[bytes, bytes]],
    cursor: DirectoryCursor | None,
) -> JSON:
    result = _listing(params, header, Walked([], cursor))
    result["account_objects"] = [shapes.object_json(key, blob) for key, blob in entries]
    return result


# ---------------------------------------------------------------------------- account_offers


def account_offers(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_offers``: the account's offers with their quality."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    walked = walk_owned(ctx, params, header, sf.OFFER)
    offers = []
    for _, blob in walked.entries:
        node = binary.decode(blob)
        decoded = object_to_json(node)
        offer: JSON = {
            "flags": int(decoded.get("Flags", 0)),
            "seq": int(decoded["Sequence"]),
            "taker_gets": decoded["TakerGets"],
            "taker_pays": decoded["TakerPays"],
        }
        directory = node.get(sf.BOOK_DIRECTORY)
        if isinstance(directory, bytes):
            offer["quality"] = shapes.quality_text(directory)
        if "Expiration" in decoded:
            offer["expiration"] = decoded["Expiration"]
        offers.append(offer)
    result = _listing(params, header, walked)
    result["offers"] = offers
    return result


# -------------------------------------------------------------------------- account_channels


def account_channels(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_channels``: payment channels the account opened (to one destination, if
    given)."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    paychan = sf.LEDGER_ENTRY_CODES["PayChannel"]

    def outgoing(key: bytes, blob: bytes) -> bool:
        del key
        decoded = to_json(blob)
        if decoded.get("Account") != encode_account(params.account):
            return False
        return params.peer is None or decoded.get("Destination") == encode_account(params.peer)

    walked = walk_owned(ctx, params, header, paychan, outgoing)
    channels = []
    for key, blob in walked.entries:
        decoded = to_json(blob)
        channel: JSON = {
            "channel_id": shapes.hex_upper(key),
            "account": decoded["Account"],
            "destination_account": decoded["Destination"],
            "amount": decoded["Amount"],
            "balance": decoded.get("Balance", "0"),
            "settle_delay": decoded["SettleDelay"],
        }
        if "PublicKey" in decoded:
            channel["public_key_hex"] = decoded["PublicKey"]
        for source, name in (
            ("Expiration", "expiration"),
            ("CancelAfter", "cancel_after"),
            ("SourceTag", "source_tag"),
            ("DestinationTag", "destination_tag"),
        ):
            if source in decoded:
                channel[name] = decoded[source]  # fmt: skip
        channels.append(channel)
    result = _listing(params, header, walked)
    result["channels"] = channels
    if params.peer_text is not None:
        result["destination_account"] = params.peer_text
    return result


# ------------------------------------------------------------------------ account_currencies


def account_currencies(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_currencies``: currencies the account can still receive (balance below its
    limit) and send (the peer's limit not used up), over every trust line."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    receive: set[str] = set()
    send: set[str] = set()
    everything = pm.AccountParams(
        account=params.account, account_text=params.account_text, ledger=params.ledger,
        limit=1 << 30,
    )  # fmt: skip
    for _, blob in walk_owned(ctx, everything, header, sf.RIPPLE_STATE).entries:
        view = line_view(blob, params.account)
        if view.balance_value < view.limit_value:
            receive.add(view.currency_text)
        if -view.balance_value < view.limit_peer_value:
            send.add(view.currency_text)
    result = ledger_result(header)
    result["receive_currencies"] = sorted(receive)
    result["send_currencies"] = sorted(send)
    return result


# ------------------------------------------------------------------------------ account_nfts


def account_nfts(ctx: Context, params: pm.AccountParams, api_version: int) -> JSON:
    """``account_nfts``: the account's NFTs in page order, paged by NFTokenID."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    account_root(ctx, params.account, header)
    tokens = [
        token
        for _, blob in nft_pages(reader(ctx, header.sequence), params.account)
        for token in page_tokens(blob)
    ]
    start = 0
    if params.nft_marker is not None:
        ids = [token_id for token_id, _ in tokens]
        if params.nft_marker not in ids:
            raise invalid_params("Invalid marker: not an NFT of the account.")
        start = ids.index(params.nft_marker) + 1
    page = tokens[start : start + params.limit]
    nfts = []
    for token_id, uri in page:
        nft: JSON = {
            "Flags": int.from_bytes(token_id[0:2], "big"),
            "Issuer": encode_account(token_id[4:24]),
            "NFTokenID": shapes.hex_upper(token_id),
            "NFTokenTaxon": nft_taxon(token_id),
            "nft_serial": int.from_bytes(token_id[28:32], "big"),
            "TransferFee": int.from_bytes(token_id[2:4], "big"),
        }
        if uri is not None:
            nft["URI"] = shapes.hex_upper(uri)
        nfts.append(nft)
    result = ledger_result(header)
    result["account"] = params.account_text
    result["account_nfts"] = nfts
    result["limit"] = params.limit
    if page and start + len(page) < len(tokens):
        result["marker"] = shapes.hex_upper(page[-1][0])
    return result
