"""The operations routes: ``GET /api/v1/operations`` and ``.../operations/{chain}/{emitter}/{seq}``.

An operation is a stored message with what the relayer knows of its redemption (when
``api.relay_redis`` is set), built by the pure :mod:`chainloom.eventstore.api.operation_shapes`.
The list takes the filters of ``GET /api/v1/vaas`` and is served by the same filter index scan
(:mod:`chainloom.eventstore.filter_scan`), so both lists hold the same ids in the same order.
The routes only orchestrate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, FastAPI
from fastapi.responses import Response

from chainloom.eventstore.api import filter_params, filter_routes, models, params, shapes
from chainloom.eventstore.api.app import (
    ChainPath,
    EmitterPath,
    EventsApi,
    SequencePath,
    error_responses,
    only,
)
from chainloom.eventstore.api.errors import NotFoundError
from chainloom.eventstore.api.operation_models import OperationDoc, OperationPage
from chainloom.eventstore.api.operation_shapes import operation_doc, redemption_key
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.queries import StoredMessage
from chainloom.eventstore.redemptions import Redemption, Redemptions

LIST_QUERY = filter_routes.query_of(*filter_params.LIST_PARAMETERS)
"""The list takes exactly the parameters of ``GET /api/v1/vaas``."""


def look_up(
    redemptions: Redemptions | None, messages: Sequence[StoredMessage]
) -> list[Redemption | None]:
    """What the relayer knows of each message's redemption (None for each without it)."""
    found: list[Redemption | None] = []
    for message in messages:
        key = None if redemptions is None else redemption_key(message.families)
        found.append(None if key is None or redemptions is None else redemptions.lookup(*key))
    return found


def add_routes(app: FastAPI, api: EventsApi) -> None:
    """Register the operations routes on ``app``."""
    settings = api.settings

    async def documents(messages: Sequence[StoredMessage]) -> list[OperationDoc]:
        known: list[Redemption | None] = [None] * len(messages)
        if api.redemptions is not None and messages:
            known = await api.read(look_up, api.redemptions, messages)
        return [operation_doc(m.key, m.families, r) for m, r in zip(messages, known, strict=True)]

    @app.get(
        "/api/v1/operations/{chain}/{emitter}/{seq}",
        operation_id="get_operation",
        summary="One transfer as an operation: source event, VAA, payload and its redemption "
        "on the target chain (from the relayer's tables).",
        response_model=OperationDoc,
        responses=error_responses(400, 404, 503),
    )
    async def get_operation(
        chain: ChainPath,
        emitter: EmitterPath,
        seq: SequencePath,
        _: Annotated[dict[str, str], Depends(only())],
    ) -> Response:
        key = MessageKey(
            params.parse_chain(chain), params.parse_emitter(emitter), params.parse_sequence(seq)
        )
        message = await api.read(api.reads.message, key)
        if message is None:
            raise NotFoundError(f"no message {key.message_id} is stored")
        (doc,) = await documents([message])
        return Response(shapes.body(doc), 200, media_type="application/json")

    @app.get(
        "/api/v1/operations",
        operation_id="list_operations",
        summary="Operations matching the filters of GET /api/v1/vaas, in VAA time order, a page "
        "at a time.",
        response_model=OperationPage,
        responses=error_responses(400, 503),
    )
    async def list_operations(
        query: Annotated[dict[str, str], Depends(LIST_QUERY)],
        *,
        source_chain: filter_routes.SourceChain = None,
        target_chain: filter_routes.TargetChain = None,
        emitter: filter_routes.EmitterQuery = None,
        payload_type: filter_routes.PayloadType = None,
        token_chain: filter_routes.TokenChain = None,
        token_address: filter_routes.TokenAddress = None,
        sender: filter_routes.Sender = None,
        recipient: filter_routes.Recipient = None,
        tx_hash: filter_routes.TxHash = None,
        from_: filter_routes.From = None,
        to: filter_routes.To = None,
        order: filter_routes.Order = None,
        page_size: filter_routes.PageSize = None,
        cursor: filter_routes.Cursor = None,
    ) -> Response:
        del source_chain, target_chain, emitter, payload_type, token_chain, token_address
        del sender, recipient, tx_hash, from_, to, order, page_size, cursor  # from ``query``
        filters = filter_params.parse_list_filters(query)
        asked = filter_params.parse_list_query(
            query, filters, settings.default_page_size, settings.max_page_size, api.cursor_key
        )
        found = await api.read(api.reads.filtered, filters, asked.order, asked.after, asked.size)
        following = None
        if found.after is not None:
            following = filter_params.encode_cursor(
                asked.order, filters, found.after, api.cursor_key
            )
        answer = OperationPage(
            operations=await documents(found.messages),
            pagination=models.Pagination(next=following),
        )
        return Response(shapes.body(answer), 200, media_type="application/json")
