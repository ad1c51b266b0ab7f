"""The observations route and ``POST /api/v1/vaas/parse``: thin handlers over
:mod:`chainloom.eventstore.api.vaa_tools` (their pure cores) and the store reads.

``parse`` reads and stores nothing: it decodes the VAA in the body (hex, base64, raw bytes or
``{"vaa": ...}``) so a client can see a VAA in the API's shape before (or without) it being
stored. Its body is bounded by ``api.max_parse_bytes`` (the wire guard answers 413 above it,
from ``Content-Length`` or while reading a chunked body).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response

from chainloom.eventstore.api import models, params, shapes, tool_models, vaa_tools
from chainloom.eventstore.api.app import (
    ChainPath,
    EmitterPath,
    EventsApi,
    SequencePath,
    error_responses,
    only,
)
from chainloom.eventstore.api.errors import ApiError, NotFoundError
from chainloom.eventstore.keys import MessageKey


class TooLargeError(ApiError):
    """A body over ``api.max_parse_bytes``."""

    status = 413
    word = "too_large"


_PARSE_BODY: dict[str, Any] = {
    "required": True,
    "description": "One VAA: hex (0x optional) or base64 text, raw bytes, or JSON "
    '`{"vaa": "<hex or base64>"}`; at most api.max_parse_bytes.',
    "content": {
        "text/plain": {"schema": {"type": "string"}},
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"vaa": {"type": "string"}},
                "required": ["vaa"],
            }
        },
    },
}


def add_routes(app: FastAPI, api: EventsApi) -> None:
    """Register the observations and parse routes on ``app`` (called by
    :func:`~chainloom.eventstore.api.app.events_app`)."""
    errors = error_responses
    settings = api.settings

    @app.get(
        "/api/v1/observations/{chain}/{emitter}/{seq}",
        operation_id="get_observations",
        summary="The per-guardian signatures the store keeps for one VAA.",
        response_model=tool_models.ObservationsResponse,
        responses=errors(400, 404, 503),
    )
    async def get_observations(
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
        return _json(vaa_tools.observations(key, message.families))

    @app.post(
        "/api/v1/vaas/parse",
        operation_id="parse_vaa",
        summary="Decode a VAA sent in the body into the API's VAA shape (nothing is stored).",
        response_model=tool_models.ParsedVaaResponse,
        responses={
            **errors(400),
            413: {"model": models.ErrorBody, "description": "The body is too large."},
        },
        openapi_extra={"requestBody": _PARSE_BODY},
    )
    async def parse_vaa(
        request: Request, _: Annotated[dict[str, str], Depends(only())]
    ) -> Response:
        body = await request.body()
        if len(body) > settings.max_parse_bytes:
            raise TooLargeError(
                f"body: {len(body)} bytes, more than api.max_parse_bytes "
                f"({settings.max_parse_bytes})"
            )
        raw = vaa_tools.vaa_bytes(request.headers.get("content-type"), body)
        answer = vaa_tools.parse(raw)[1]
        return _json(answer)


def _json(model: Any) -> Response:
    return Response(shapes.body(model), 200, media_type="application/json")
