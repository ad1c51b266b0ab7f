"""Methods about the server and the store: ``server_info``, ``ledger_range``, ``version``,
``ping``, ``random`` and ``feature`` (the amendments the newest stored ledger records).
"""

from __future__ import annotations

import secrets
import time

from chainloom.ledger.api import params as pm
from chainloom.ledger.api import requests as rq
from chainloom.ledger.api import shapes
from chainloom.ledger.api.errors import RpcError
from chainloom.ledger.api.methods.context import (
    JSON,
    Context,
    ledger_result,
    read_object,
    resolve_ledger,
    stored_range,
)
from chainloom.ledger.xrpl import binary, keylets
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.hashing import sha512_half
from chainloom.ledger.xrpl.jsonform import to_json

FEE_SETTINGS_KEY = keylets.fee_settings()
"""The key of the FeeSettings object (rippled ``keylet::fees``)."""

_DROPS_PER_XRP = 1_000_000
_AMENDMENTS = sf.field_key("Amendments")
_MAJORITIES = sf.field_key("Majorities")
_AMENDMENT = sf.field_key("Amendment")
_CLOSE_TIME = sf.field_key("CloseTime")


def server_info(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``server_info``: the complete ledgers (the stored range) and the newest ledger."""
    del params, api_version
    found = ctx.backend.fetch_ledger_range()
    info: JSON = {
        "build_version": f"chainloom-{ctx.version}",
        "complete_ledgers": (
            "empty" if found is None else f"{found.min_sequence}-{found.max_sequence}"
        ),
        "hostid": "chainloom",
        "load_factor": 1,
        "peers": 0,
        "server_state": "full",
        "uptime": int(time.monotonic() - ctx.started),
    }
    if found is not None:
        header = ctx.backend.fetch_ledger_by_sequence(found.max_sequence)
        if header is not None:
            validated: JSON = {
                "age": max(0, int(time.time()) - shapes.RIPPLE_EPOCH - header.close_time),
                "hash": shapes.hex_upper(header.hash),
                "seq": header.sequence,
            }
            validated.update(fees(ctx, header.sequence))
            info["validated_ledger"] = validated
    return {"info": info}


def fees(ctx: Context, sequence: int) -> JSON:
    blob = read_object(ctx, FEE_SETTINGS_KEY, sequence)
    if blob is None:
        return {}
    fees = to_json(blob)

    def drops(new: str, old: str) -> int | None:
        if new in fees:
            return int(fees[new])
        if old in fees:
            value = fees[old]
            return int(value, 16) if isinstance(value, str) else int(value)
        return None

    out: JSON = {}
    for name, new, old in (
        ("base_fee_xrp", "BaseFeeDrops", "BaseFee"),
        ("reserve_base_xrp", "ReserveBaseDrops", "ReserveBase"),
        ("reserve_inc_xrp", "ReserveIncrementDrops", "ReserveIncrement"),
    ):
        value = drops(new, old)
        if value is not None:
            out[name] = value / _DROPS_PER_XRP
    return out


def ledger_range(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``ledger_range`` (Clio): the stored range."""
    del params, api_version
    found = stored_range(ctx)
    return {"ledger_index_min": found.min_sequence, "ledger_index_max": found.max_sequence}


def version(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``version``: the API versions served (``good`` is the one used when none is asked)."""
    del ctx, params, api_version
    return {"version": {"first": rq.API_VERSIONS[0], "good": 1, "last": rq.API_VERSIONS[-1]}}


def ping(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``ping``: an empty success."""
    del ctx, params, api_version
    return {}


def random(ctx: Context, params: rq.NoParams, api_version: int) -> JSON:
    """``random``: 256 bits from the operating system's generator."""
    del ctx, params, api_version
    return {"random": secrets.token_hex(32).upper()}


def feature(ctx: Context, params: pm.LedgerOnlyParams, api_version: int) -> JSON:
    """``feature``: the amendments the ledger's Amendments object records, by ID: enabled ones,
    and those with a majority (not yet enabled). A ``feature`` given by name is found by its ID
    (the SHA-512Half of the name); one the ledger does not mention is ``badFeature``."""
    del api_version
    header = resolve_ledger(ctx, params.ledger)
    blob = read_object(ctx, keylets.amendments(), header.sequence)
    table: dict[str, JSON] = {}
    if blob is not None:
        node = binary.decode(blob)
        enabled = node.get(_AMENDMENTS, b"")
        if isinstance(enabled, bytes):
            for start in range(0, len(enabled), 32):
                amendment = shapes.hex_upper(enabled[start : start + 32])
                table[amendment] = {"enabled": True, "supported": True}
        majorities = node.get(_MAJORITIES, [])
        for _, majority in majorities if isinstance(majorities, list) else []:
            amendment_raw, since = majority.get(_AMENDMENT), majority.get(_CLOSE_TIME)
            if isinstance(amendment_raw, bytes):
                entry: JSON = {"enabled": False, "supported": True}
                if isinstance(since, bytes):
                    entry["majority"] = int.from_bytes(since, "big")
                table[shapes.hex_upper(amendment_raw)] = entry
    result = ledger_result(header)
    if params.feature is not None:
        wanted = params.feature.upper()
        if wanted not in table:
            wanted = shapes.hex_upper(sha512_half(params.feature.encode()))
        if wanted not in table:
            raise RpcError("badFeature")
        result[wanted] = table[wanted]
        return result
    result["features"] = table
    return result
