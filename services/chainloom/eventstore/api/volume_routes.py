"""The volume routes, answered from the rollup rows (:mod:`chainloom.eventstore.rollups`).

``/api/v1/volume/totals``, ``/top-tokens`` and ``/top-corridors`` sum the ``vol:`` cells of the
days asked (one per token transfer, so a replayed VAA is never counted twice). Parameters are
parsed before any read; shapes are :mod:`chainloom.eventstore.api.volume_shapes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response

from chainloom.eventstore.api import models, params, shapes, volume_models, volume_shapes
from chainloom.eventstore.api.errors import BadParameterError

if TYPE_CHECKING:
    from chainloom.eventstore.api.app import EventsApi

MAX_TOP = 100
"""The most rows a top list returns (``limit``)."""

_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": models.ErrorBody, "description": "A malformed parameter (named in it)."},
    503: {"model": models.ErrorBody, "description": "The store is unreachable, or busy."},
    "default": {"model": models.ErrorBody, "description": "Any other refusal."},
}

From = Annotated[str | None, Query(alias="from", description="First UTC day, YYYY-MM-DD.")]
To = Annotated[str | None, Query(description="Last UTC day (included), YYYY-MM-DD.")]
ChainQuery = Annotated[str | None, Query(description="Only this source chain (id or name).")]
By = Annotated[str | None, Query(description="day (the default) or hour.")]
Limit = Annotated[str | None, Query(description=f"Rows returned, 1-{MAX_TOP} (default 10).")]


def _query(*names: str) -> Callable[[Request], Awaitable[dict[str, str]]]:
    async def query(request: Request) -> dict[str, str]:
        return params.parse_query("?" + request.url.query, names)

    return query


def parse_limit(values: Mapping[str, str]) -> int:
    text = values.get("limit", "10")
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_TOP:
        raise BadParameterError("limit", f"{text[:80]!r} is not a whole number 1-{MAX_TOP}")
    return int(text)


def parse_by(values: Mapping[str, str]) -> str:
    text = values.get("by", "day")
    if text not in {"day", "hour"}:
        raise BadParameterError("by", f"{text[:80]!r} is not day or hour")
    return text


def _json(model: Any) -> Response:
    return Response(shapes.body(model), 200, media_type="application/json")


def add_routes(app: FastAPI, api: EventsApi) -> None:
    """Register the volume routes on ``app``."""
    max_days = api.settings.max_stats_days

    @app.get(
        "/api/v1/volume/totals",
        operation_id="volume_totals",
        summary="Token transfers and USD volume per source chain and UTC day (or hour), from "
        "the rollup rows.",
        response_model=volume_models.VolumeTotals,
        responses=_RESPONSES,
    )
    async def volume_totals(
        query: Annotated[dict[str, str], Depends(_query("from", "to", "chain", "by"))],
        *,
        from_: From = None,
        to: To = None,
        chain: ChainQuery = None,
        by: By = None,
    ) -> Response:
        del from_, to, by
        first, last = params.parse_day_range(query, max_days)
        chain_id = None if chain is None else params.parse_chain(chain)
        by_text = parse_by(query)
        parts = await api.read(api.reads.volume, "chain", first, last, by_text == "hour")
        return _json(volume_shapes.totals(parts, first, last, chain_id, by_text))

    @app.get(
        "/api/v1/volume/top-tokens",
        operation_id="volume_top_tokens",
        summary="The tokens with the largest USD volume over a range of days.",
        response_model=volume_models.TopTokens,
        responses=_RESPONSES,
    )
    async def top_tokens(
        query: Annotated[dict[str, str], Depends(_query("from", "to", "limit"))],
        *,
        from_: From = None,
        to: To = None,
        limit: Limit = None,
    ) -> Response:
        del from_, to, limit
        first, last = params.parse_day_range(query, max_days)
        count = parse_limit(query)
        parts = await api.read(api.reads.volume, "tok", first, last, False)
        return _json(volume_shapes.top_tokens(parts, first, last, count))

    @app.get(
        "/api/v1/volume/top-corridors",
        operation_id="volume_top_corridors",
        summary="The (source, target) chain pairs with the largest USD volume over a range "
        "of days.",
        response_model=volume_models.TopCorridors,
        responses=_RESPONSES,
    )
    async def top_corridors(
        query: Annotated[dict[str, str], Depends(_query("from", "to", "limit"))],
        *,
        from_: From = None,
        to: To = None,
        limit: Limit = None,
    ) -> Response:
        del from_, to, limit
        first, last = params.parse_day_range(query, max_days)
        count = parse_limit(query)
        parts = await api.read(api.reads.volume, "cor", first, last, False)
        return _json(volume_shapes.top_corridors(parts, first, last, count))
