"""The routes as data: matched by the server and rendered into ``/openapi.json``: pure.

Each :class:`Route` names its path template, its query parameters, the model it answers with
and the error statuses it can give, so the router (:func:`match`) and the document
(:mod:`chainloom.eventstore.api.openapi`) cannot disagree. Every route is ``GET`` (and
``HEAD``, which the HTTP server answers without the body).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from chainloom.eventstore.api import models
from chainloom.eventstore.api.errors import MethodNotAllowedError, NotFoundError

METHODS = ("GET", "HEAD")
"""The methods every route answers."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One path or query parameter."""

    name: str
    """As the client writes it."""
    location: str
    """``path`` or ``query``."""
    description: str
    """For the document."""
    schema: dict[str, object]
    """Its JSON Schema (the wire form: always a string in a URL, with a pattern or format)."""
    required: bool = False
    """Path parameters always are."""


@dataclass(frozen=True, slots=True)
class Route:
    """One operation."""

    name: str
    """The operation id (also the handler's name in :mod:`chainloom.eventstore.api.app`)."""
    path: str
    """The template, ``{name}`` for a path parameter (one whole segment)."""
    summary: str
    """One line for the document."""
    response: type[models.ApiModel] | None
    """The 200 body's model (None: the document itself, ``/openapi.json``)."""
    errors: tuple[int, ...]
    """Statuses other than 200 the route gives (each with an :class:`models.ErrorBody`)."""
    parameters: tuple[Parameter, ...] = ()
    """Path parameters first, in template order, then query parameters."""

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))

    @property
    def query_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters if p.location == "query")


CHAIN = Parameter(
    "chain",
    "path",
    "Emitter chain: a Wormhole chain id (2) or name (ethereum).",
    {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
    required=True,
)
EMITTER = Parameter(
    "emitter",
    "path",
    "Emitter address: hex of up to 32 bytes, optional 0x (left-padded to 64 characters).",
    {"type": "string", "pattern": "^(0x)?[0-9a-fA-F]{1,64}$"},
    required=True,
)
SEQ = Parameter(
    "seq",
    "path",
    "The sequence, decimal uint64.",
    {"type": "string", "pattern": "^[0-9]{1,20}$"},
    required=True,
)
PAGE_SIZE = Parameter(
    "pageSize",
    "query",
    "VAAs per page (settings api.default_page_size; at most api.max_page_size).",
    {"type": "string", "pattern": "^[0-9]+$"},
)
CURSOR = Parameter(
    "cursor",
    "query",
    "pagination.next of the previous page (opaque; bound to this list).",
    {"type": "string"},
)
_ERRORS = (400, 404, 503)

ROUTES: tuple[Route, ...] = (
    Route(
        "get_vaa",
        "/api/v1/vaas/{chain}/{emitter}/{seq}",
        "One message: decoded fields, the signed VAA (base64) and its enrichment.",
        models.VaaResponse,
        _ERRORS,
        (CHAIN, EMITTER, SEQ),
    ),
    Route(
        "list_emitter_vaas",
        "/api/v1/vaas/{chain}/{emitter}",
        "One emitter's messages by ascending sequence, a page at a time.",
        models.VaaPage,
        (400, 503),
        (CHAIN, EMITTER, PAGE_SIZE, CURSOR),
    ),
    Route(
        "list_chain_vaas",
        "/api/v1/vaas/{chain}",
        "A chain's messages by emitter, then ascending sequence, a page at a time.",
        models.VaaPage,
        (400, 503),
        (CHAIN, PAGE_SIZE, CURSOR),
    ),
    Route(
        "get_transaction",
        "/api/v1/transactions/{tx_id}",
        "The messages a source transaction emitted (through the index table's tx: rows).",
        models.TransactionResponse,
        _ERRORS,
        (
            Parameter(
                "tx_id",
                "path",
                "Source transaction id: hex (0x optional, any case) or a chain's native form.",
                {"type": "string", "minLength": 1, "maxLength": 200},
                required=True,
            ),
        ),
    ),
    Route(
        "daily_stats",
        "/api/v1/stats/daily",
        "Messages per UTC day and chain (counted from the index table's count: rows).",
        models.DailyStats,
        (400, 503),
        (
            Parameter(
                "from",
                "query",
                "First UTC day, YYYY-MM-DD.",
                {"type": "string", "format": "date"},
                required=True,
            ),
            Parameter(
                "to",
                "query",
                "Last UTC day (included), YYYY-MM-DD.",
                {"type": "string", "format": "date"},
                required=True,
            ),
            Parameter("chain", "query", "Only this chain (id or name).", {"type": "string"}),
        ),
    ),
    Route(
        "gaps",
        "/api/v1/gaps",
        "Open gaps in emitters' sequences, from the indexer's saved state (gaps: rows).",
        models.GapsResponse,
        (400, 503),
        (
            Parameter("chain", "query", "Only this chain (id or name).", {"type": "string"}),
            Parameter(
                "emitter", "query", "Only this emitter (hex; with chain).", {"type": "string"}
            ),
        ),
    ),
    Route("openapi", "/openapi.json", "This document (OpenAPI 3.1).", None, ()),
    Route("health", "/healthz", "Liveness: the server's event loop answers.", models.Health, ()),
)
"""Every route, most specific first where templates overlap."""


def match(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """The route of ``path`` and its path parameters (percent-decoded).

    Raises NotFoundError for a path no route takes, MethodNotAllowedError for a method other
    than GET and HEAD.
    """
    segments = path.strip("/").split("/") if path.strip("/") else []
    for route in ROUTES:
        found = _bind(route, segments)
        if found is None:
            continue
        if method not in METHODS:
            raise MethodNotAllowedError(method, _shown(path), METHODS)
        return route, found
    raise NotFoundError(f"no route {_shown(path)} (GET /openapi.json lists the routes)")


def _bind(route: Route, segments: list[str]) -> dict[str, str] | None:
    template = route.segments
    if len(template) != len(segments):
        return None
    bound: dict[str, str] = {}
    for pattern, segment in zip(template, segments, strict=True):
        if pattern.startswith("{"):
            value = urllib.parse.unquote(segment, errors="replace")
            if not value:
                return None
            bound[pattern[1:-1]] = value
        elif pattern != segment:
            return None
    return bound


def _shown(path: str) -> str:
    return path if len(path) <= 200 else path[:200] + "..."
