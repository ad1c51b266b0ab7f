"""``GET /api/v1/vaas/stream``: Server-Sent Events of newly stored VAAs.

The handler parses the filters and the cursor (``after``, or the ``Last-Event-ID`` header a
browser's EventSource sends when it reconnects), registers the client with the hub and answers
with :class:`EventStreamResponse`, which writes the hub's frames (:mod:`.stream`) and bounds
every write by ``api.stream_send_timeout``: a client that reads nothing for that long is
dropped without waiting further. A client that disconnects is cancelled by the app's
disconnect watch and unregistered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from chainloom.eventstore.api import params, tool_models
from chainloom.eventstore.api.app import (
    BusyError,
    ChainQuery,
    EventsApi,
    error_responses,
    only,
)
from chainloom.eventstore.api.errors import ApiError, BadParameterError
from chainloom.eventstore.api.models import ApiModel
from chainloom.eventstore.api.stream import StreamClient, StreamHub, close_frame
from chainloom.eventstore.errors import StoreUnavailableError, TableMissingError
from chainloom.eventstore.feed import is_cursor

log = logging.getLogger(__name__)

_DESCRIPTION = (
    "`text/event-stream`. Each VAA stored from now on (or after `after`) is an event "
    "`vaa` whose `id` is its cursor and whose `data` is the JSON of StreamEventDoc; a "
    "comment line after api.stream_heartbeat seconds of silence; an event `close` "
    "(data: StreamCloseDoc) when the server ends the stream. Reconnect with the last id as "
    "`after` or Last-Event-ID to resume with nothing lost or repeated."
)


class NotStreamingError(ApiError):
    """The server runs without a stream (no store reads for it)."""

    status = 503
    word = "unavailable"


class EventStreamResponse(StreamingResponse):
    """A ``text/event-stream`` answer whose every write is bounded in time."""

    media_type = "text/event-stream"

    def __init__(
        self, frames: AsyncIterator[bytes], send_timeout: float, on_end: StreamEnd
    ) -> None:
        super().__init__(
            frames,
            status_code=200,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            media_type=self.media_type,
        )
        self.frames = frames
        self.send_timeout = send_timeout
        self.on_end = on_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        del receive  # the app's disconnect watch cancels this when the client goes away
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for frame in self.frames:
                async with asyncio.timeout(self.send_timeout):
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            async with asyncio.timeout(self.send_timeout):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except TimeoutError:
            self.on_end.stuck(self.send_timeout)
        finally:
            self.on_end.done()


class StreamEnd:
    """Unregisters a client when its answer ends, and logs a stuck one."""

    def __init__(self, hub: StreamHub, client: StreamClient) -> None:
        self.hub = hub
        self.client = client

    def stuck(self, timeout: float) -> None:
        self.hub.dropped += 1
        log.info("events stream: dropped a client that read nothing for %g s", timeout)

    def done(self) -> None:
        self.hub.unregister(self.client)


async def _frames(
    hub: StreamHub, client: StreamClient, after: str | None, heartbeat: float
) -> AsyncIterator[bytes]:
    try:
        async for frame in hub.follow(client, after, heartbeat):
            yield frame
    except (StoreUnavailableError, TableMissingError, ApiError) as error:
        yield close_frame(f"the store could not be read ({error}); reconnect to resume")


def _event_schema(model: type[ApiModel]) -> dict[str, Any]:
    """The JSON Schema of an event's ``data``, its nested models referring to the document's
    components (every one of them is also in a JSON route's answer)."""
    schema = model.model_json_schema(
        by_alias=True, mode="serialization", ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    return schema


def _json_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented refusals, as JSON (the route's own media type is the event stream)."""
    return {
        status: {
            "description": answer["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
        for status, answer in error_responses(*statuses).items()
    }


def add_routes(app: FastAPI, api: EventsApi) -> None:
    """Register the stream route on ``app`` (before ``/vaas/{chain}``, which would match)."""
    settings = api.settings

    @app.get(
        "/api/v1/vaas/stream",
        operation_id="stream_vaas",
        summary="Newly stored VAAs, pushed as Server-Sent Events; resumable from a cursor.",
        response_class=EventStreamResponse,
        status_code=200,
        responses={
            200: {
                "description": _DESCRIPTION,
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
                "x-event-data": {
                    "vaa": _event_schema(tool_models.StreamEventDoc),
                    "close": _event_schema(tool_models.StreamCloseDoc),
                },
            },
            **_json_errors(400, 503),
        },
    )
    async def stream_vaas(
        _: Annotated[dict[str, str], Depends(only("chain", "emitter", "after"))],
        chain: ChainQuery = None,
        emitter: Annotated[
            str | None, Query(description="Only this emitter (hex; with chain).")
        ] = None,
        after: Annotated[
            str | None,
            Query(description="Resume after this cursor (an event id); default: from now."),
        ] = None,
        last_event_id: Annotated[
            str | None,
            Header(description="The last event id (EventSource sends it when reconnecting)."),
        ] = None,
    ) -> Response:
        chain_id = None if chain is None else params.parse_chain(chain)
        emitter_hex = None
        if emitter is not None:
            if chain_id is None:
                raise BadParameterError("emitter", "needs chain (an emitter is per chain)")
            emitter_hex = params.parse_emitter(emitter)
        start, name = (after, "after") if after is not None else (last_event_id, "Last-Event-ID")
        if start is not None and not is_cursor(start):
            raise BadParameterError(name, "not a stream cursor (the id of an event it sent)")
        hub = api.stream
        if hub is None:
            raise NotStreamingError("this server runs without the event stream")
        if api.circuit.open:
            raise api.circuit.refusal()
        client = hub.register(chain_id, emitter_hex)
        if client is None and hub.closed:
            raise NotStreamingError("the server is stopping")
        if client is None:
            raise BusyError(f"{settings.stream_max_clients} stream clients already connected")
        frames = _frames(hub, client, start, settings.stream_heartbeat)
        return EventStreamResponse(frames, settings.stream_send_timeout, StreamEnd(hub, client))
