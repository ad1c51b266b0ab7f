"""The filtered list routes: ``GET /api/v1/vaas`` and ``GET /api/v1/addresses/{chain}/{address}``.

Both are served from the filter index rows (:mod:`chainloom.eventstore.filter_scan`), never by
scanning the events table. Parameters are parsed by the pure
:mod:`chainloom.eventstore.api.filter_params` before any read; the routes only orchestrate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import Response

from chainloom.eventstore.api import filter_params, models, params, shapes
from chainloom.eventstore.filter_index import Filters
from chainloom.eventstore.filter_scan import FilteredPage
from chainloom.wormhole import native_address

if TYPE_CHECKING:
    from chainloom.eventstore.api.app import EventsApi

_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": models.ErrorBody, "description": "A malformed parameter (named in it)."},
    503: {
        "model": models.ErrorBody,
        "description": "The store is unreachable, or the server is busy (`error` says which).",
    },
    "default": {"model": models.ErrorBody, "description": "Any other refusal."},
}


def query_of(*names: str) -> Callable[[Request], Awaitable[dict[str, str]]]:
    """A dependency refusing query parameters other than ``names`` (and repeated ones)."""

    async def query(request: Request) -> dict[str, str]:
        return params.parse_query("?" + request.url.query, names)

    return query


SourceChain = Annotated[
    str | None, Query(alias="sourceChain", description="Emitter chain (id or name).")
]
TargetChain = Annotated[
    str | None, Query(alias="targetChain", description="Transfer target chain (id or name).")
]
EmitterQuery = Annotated[str | None, Query(description="Emitter address (hex, up to 32 bytes).")]
PayloadType = Annotated[
    str | None,
    Query(
        alias="payloadType",
        description="Payload type byte(s), comma-separated (token bridge 1, 2, 3; NFT bridge 1).",
    ),
]
TokenChain = Annotated[
    str | None,
    Query(alias="tokenChain", description="Origin chain of the token (with tokenAddress)."),
]
TokenAddress = Annotated[
    str | None,
    Query(alias="tokenAddress", description="Origin token address, hex (with tokenChain)."),
]
Sender = Annotated[
    str | None, Query(description="Sender on sourceChain (native form or 32-byte hex).")
]
Recipient = Annotated[
    str | None, Query(description="Recipient on targetChain (native form or 32-byte hex).")
]
TxHash = Annotated[str | None, Query(alias="txHash", description="Source transaction id.")]
From = Annotated[
    str | None, Query(alias="from", description="Earliest VAA time: YYYY-MM-DD or RFC 3339.")
]
To = Annotated[str | None, Query(description="VAA times before this one: YYYY-MM-DD or RFC 3339.")]
Order = Annotated[
    str | None, Query(description="asc (oldest first) or desc (newest first, the default).")
]
PageSize = Annotated[
    str | None, Query(alias="pageSize", description="VAAs per page (at most api.max_page_size).")
]
Cursor = Annotated[
    str | None,
    Query(
        description="pagination.next of the previous page (opaque; bound to the list and order)."
    ),
]


def display_address(chain: int, canonical: str) -> str:
    """An indexed address in its chain's native form (EIP-55 for EVM chains)."""
    body = canonical.removeprefix("0x")
    if canonical.startswith("0x") and len(body) <= 64:
        try:
            return native_address(chain, bytes.fromhex(body.rjust(64, "0")))
        except ValueError:
            return canonical
    return canonical


def add_routes(app: FastAPI, api: EventsApi) -> None:
    """Register the filtered list routes on ``app``."""
    settings = api.settings

    def page_body(found: FilteredPage, order: str, filters: Filters) -> models.Pagination:
        following = None
        if found.after is not None:
            following = filter_params.encode_cursor(order, filters, found.after, api.cursor_key)
        return models.Pagination(next=following)

    @app.get(
        "/api/v1/vaas",
        operation_id="list_vaas",
        summary="Messages of every chain matching the filters, in VAA time order, a page at a "
        "time (served from the filter index rows).",
        response_model=models.VaaPage,
        responses=_RESPONSES,
    )
    async def list_vaas(
        query: Annotated[dict[str, str], Depends(query_of(*filter_params.LIST_PARAMETERS))],
        *,
        source_chain: SourceChain = None,
        target_chain: TargetChain = None,
        emitter: EmitterQuery = None,
        payload_type: PayloadType = None,
        token_chain: TokenChain = None,
        token_address: TokenAddress = None,
        sender: Sender = None,
        recipient: Recipient = None,
        tx_hash: TxHash = None,
        from_: From = None,
        to: To = None,
        order: Order = None,
        page_size: PageSize = None,
        cursor: Cursor = None,
    ) -> Response:
        del source_chain, target_chain, emitter, payload_type, token_chain, token_address
        del sender, recipient, tx_hash, from_, to, order, page_size, cursor  # from ``query``
        filters = filter_params.parse_list_filters(query)
        asked = filter_params.parse_list_query(
            query, filters, settings.default_page_size, settings.max_page_size, api.cursor_key
        )
        found = await api.read(api.reads.filtered, filters, asked.order, asked.after, asked.size)
        answer = models.VaaPage(
            data=[shapes.vaa_doc(m.key, m.families) for m in found.messages],
            pagination=page_body(found, asked.order, filters),
        )
        return Response(shapes.body(answer), 200, media_type="application/json")

    @app.get(
        "/api/v1/addresses/{chain}/{address}",
        operation_id="address_history",
        summary="Transfers an address sent or received, in VAA time order, a page at a time.",
        response_model=models.AddressPage,
        responses=_RESPONSES,
    )
    async def address_history(
        chain: Annotated[
            str,
            Path(description="The address's chain: id or name.", pattern="^[A-Za-z0-9_-]{1,40}$"),
        ],
        address: Annotated[
            str,
            Path(
                description="Native form (EIP-55/hex, base58, bech32) or 32-byte hex.",
                min_length=1,
                max_length=128,
            ),
        ],
        query: Annotated[dict[str, str], Depends(query_of(*filter_params.ADDRESS_PARAMETERS))],
        *,
        payload_type: PayloadType = None,
        from_: From = None,
        to: To = None,
        order: Order = None,
        page_size: PageSize = None,
        cursor: Cursor = None,
    ) -> Response:
        del payload_type, from_, to, order, page_size, cursor
        chain_id = params.parse_chain(chain)
        filters = filter_params.parse_address_filters(chain_id, address, query)
        asked = filter_params.parse_list_query(
            query, filters, settings.default_page_size, settings.max_page_size, api.cursor_key
        )
        found = await api.read(api.reads.filtered, filters, asked.order, asked.after, asked.size)
        assert filters.address is not None
        answer = models.AddressPage(
            address=display_address(chain_id, filters.address[1]),
            chain=chain_id,
            data=[shapes.vaa_doc(m.key, m.families) for m in found.messages],
            pagination=page_body(found, asked.order, filters),
        )
        return Response(shapes.body(answer), 200, media_type="application/json")
