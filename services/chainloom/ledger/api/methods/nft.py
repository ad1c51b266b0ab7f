"""Token methods: Clio's ``nft_info``, ``nfts_by_issuer`` and ``mpt_holders``, and
``nft_buy_offers`` / ``nft_sell_offers`` (a token's offer directory, walked a page at a time)."""

from __future__ import annotations

import bisect

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError, invalid_params
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    read_object,
    reader,
    resolve_ledger,
)
from chainloom.ledger.mpt import mptoken_holder
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.directory import DirectoryCursor, InvalidMarkerError, walk_directory
from chainloom.ledger.xrpl.jsonform import to_json


def nft_info(ctx: Context, params: rq.NftInfoParams, api_version: int) -> JSON:
    """``nft_info`` (Clio): an NFT's owner, URI and burn state at a ledger."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    found = ctx.backend.fetch_nft(params.nft_id, header.sequence)
    if found is None:
        raise RpcError("objectNotFound", "NFT not found")
    result = shapes.nft_json(found, header.sequence)
    result["validated"] = True
    return result


def nfts_by_issuer(ctx: Context, params: rq.NftsByIssuerParams, api_version: int) -> JSON:
    """``nfts_by_issuer`` (Clio): an issuer's NFTs in (taxon, ID) order, paged by NFT ID."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    page = ctx.backend.fetch_nfts_by_issuer(
        params.issuer, params.taxon, header.sequence, params.limit, params.marker
    )
    result: JSON = {
        "issuer": params.issuer_text,
        "ledger_index": header.sequence,
        "limit": params.limit,
        "nfts": [shapes.nft_json(nft, header.sequence) for nft in page.nfts],
        "validated": True,
    }
    if params.taxon is not None:
        result["nft_taxon"] = params.taxon
    if page.cursor is not None:
        result["marker"] = shapes.hex_upper(page.cursor)
    return result


def nft_buy_offers(ctx: Context, params: pm.NftOffersParams, api_version: int) -> JSON:
    """``nft_buy_offers``: the token's buy offers."""
    del api_version
    return _offers(ctx, params, keylets.nftoken_buy_offers(params.nft_id))


def nft_sell_offers(ctx: Context, params: pm.NftOffersParams, api_version: int) -> JSON:
    """``nft_sell_offers``: the token's sell offers."""
    del api_version
    return _offers(ctx, params, keylets.nftoken_sell_offers(params.nft_id))


def _offers(ctx: Context, params: pm.NftOffersParams, root: bytes) -> JSON:
    header = resolve_ledger(ctx, params.ledger)
    read = reader(ctx, header.sequence)
    if not read([root])[0]:
        raise RpcError("objectNotFound", "The requested object was not found.")
    after = None
    if params.marker is not None:
        marked = read_object(ctx, params.marker, header.sequence)
        node = binary.decode(marked) if marked else {}
        page = node.get(sf.NFTOKEN_OFFER_NODE)
        if node.get(sf.NFTOKEN_ID) != params.nft_id or not isinstance(page, bytes):
            raise invalid_params("Invalid marker: not an offer of this token.")
        after = DirectoryCursor(params.marker, int.from_bytes(page, "big"))
    try:
        walked = walk_directory(read, root, limit=params.limit, after=after)
    except InvalidMarkerError as bad:
        raise invalid_params(str(bad)) from None
    offers = []
    for key, blob in walked.entries:
        decoded = to_json(blob)
        offer: JSON = {
            "nft_offer_index": shapes.hex_upper(key),
            "flags": int(decoded.get("Flags", 0)),
            "owner": decoded["Owner"],
            "amount": decoded["Amount"],
        }
        if "Destination" in decoded:
            offer["destination"] = decoded["Destination"]
        if "Expiration" in decoded:
            offer["expiration"] = decoded["Expiration"]
        offers.append(offer)
    result: JSON = {
        "nft_id": shapes.hex_upper(params.nft_id),
        "offers": offers,
        "limit": params.limit,
        "ledger_index": header.sequence,
        "validated": True,
    }
    if walked.cursor is not None:
        result["marker"] = shapes.hex_upper(walked.cursor.entry)
    return result


def mpt_holders(ctx: Context, params: pm.MptHoldersParams, api_version: int) -> JSON:
    """``mpt_holders`` (Clio): an issuance's MPTokens at a ledger in holder order, paged by
    MPToken key.

    The newest ledger is answered from the cache's index of holders when it holds that ledger;
    any other ledger from the ``mp_token_holders`` table, each holder's MPToken read at the
    ledger (absent ones skipped). Both give the same order and markers.
    """
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    sequence = header.sequence
    if read_object(ctx, keylets.mpt_issuance(params.issuance_id), sequence) is None:
        raise RpcError("objectNotFound", "The MPTokenIssuance was not found.")
    after = b""
    if params.marker is not None:
        marked = mptoken_holder(read_object(ctx, params.marker, sequence) or b"")
        if marked is None or marked.mpt_id != params.issuance_id:
            raise invalid_params("Invalid marker: not an MPToken of this issuance.")
        after = marked.holder
    tokens, more = _holders_page(ctx, params.issuance_id, sequence, params.limit, after)
    holders = []
    for key, blob in tokens:
        decoded = to_json(blob)
        holder: JSON = {
            "account": decoded["Account"],
            "flags": int(decoded.get("Flags", 0)),
            "mpt_amount": str(decoded.get("MPTAmount", "0")),
            "mptoken_index": shapes.hex_upper(key),
        }
        if "LockedAmount" in decoded:
            holder["locked_amount"] = str(decoded["LockedAmount"])
        holders.append(holder)
    result: JSON = {
        "mpt_issuance_id": shapes.hex_upper(params.issuance_id),
        "mptokens": holders,
        "limit": params.limit,
        "ledger_index": sequence,
        "validated": True,
    }
    if more and tokens:
        result["marker"] = shapes.hex_upper(tokens[-1][0])
    return result


def _holders_page(
    ctx: Context, issuance_id: bytes, sequence: int, limit: int, after: bytes
) -> tuple[list[tuple[bytes, bytes]], bool]:
    """``limit`` MPTokens (key, blob) after holder ``after``, and whether a marker is due."""
    cached = None
    if ctx.cache is not None:
        ctx.cache.follow(ctx.backend)
        cached = ctx.cache.mpt_holders(issuance_id, sequence)
    if cached is None:
        page = ctx.backend.fetch_mpt_holders(issuance_id, sequence, limit, after or None)
        return [(o.key, o.blob) for o in page.mptokens], page.cursor is not None
    start = bisect.bisect_right(cached, after)
    chosen = cached[start : start + limit]
    keys = [keylets.mptoken(issuance_id, holder) for holder in chosen]
    tokens = list(zip(keys, reader(ctx, sequence)(keys), strict=True))
    return tokens, start + limit < len(cached)
