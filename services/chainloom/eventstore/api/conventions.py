"""HTTP conventions of the events API: CORS, gzip, and conditional GETs of VAAs.

* **CORS** is off unless ``api.cors_origins`` names origins (or ``*``): whether browser pages
  of other sites may read the API is the deployment's decision (an internal replica behind a
  company network should not be readable by any page its users open), so the server does not
  make it. When on, it is read-only in spirit: ``GET``/``HEAD`` and the side-effect-free
  ``POST /vaas/parse``, no credentials, ``ETag`` exposed. Starlette's middleware answers the
  preflight (``OPTIONS``).
* **gzip** (Starlette's middleware) for answers of ``api.gzip_min_bytes`` or more when the
  client sends ``Accept-Encoding: gzip``; it adds ``Vary: Accept-Encoding`` and leaves the
  event stream (``text/event-stream``) alone.
* **Conditional GET of a VAA by id**: a weak ``ETag`` of the answer's bytes (weak, since the
  same JSON is served gzip-encoded or not) and, once the row has its signed VAA,
  ``Cache-Control: public, max-age=api.vaa_max_age, immutable``. The signed bytes never change,
  but the document around them can still gain a conflict flag or enrichment, so ``max-age`` is
  bounded rather than a year; an answer without the signed VAA yet is ``no-cache`` (revalidate
  each time). ``If-None-Match`` with a matching tag is a 304 without a body.
"""

from __future__ import annotations

import hashlib

from fastapi import FastAPI
from fastapi.responses import Response
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware

from chainloom.eventstore.api.config import EventsApiSettings

CORS_METHODS = ("GET", "HEAD", "POST")
CORS_HEADERS = ("Content-Type", "If-None-Match", "Last-Event-ID")
CORS_EXPOSED = ("ETag",)


def install(app: FastAPI, settings: EventsApiSettings) -> None:
    """Add gzip and (when origins are configured) CORS around ``app``'s routes."""
    app.add_middleware(GZipMiddleware, minimum_size=settings.gzip_min_bytes)
    if settings.cors_origins:  # added last: the outermost, so it answers preflights first
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=CORS_METHODS,
            allow_headers=CORS_HEADERS,
            expose_headers=CORS_EXPOSED,
            allow_credentials=False,
            max_age=600,
        )


def etag(body: bytes) -> str:
    """A weak entity tag of an answer's bytes."""
    return 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (weak comparison, RFC 9110 section 13.1.2)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    opaque = tag.removeprefix("W/")
    return any(
        candidate.strip().removeprefix("W/") == opaque for candidate in if_none_match.split(",")
    )


def vaa_answer(
    body: bytes, *, signed: bool, if_none_match: str | None, settings: EventsApiSettings
) -> Response:
    """A VAA-by-id answer with its validators: 200 with the body, or 304 when the client's
    copy is current."""
    tag = etag(body)
    cache = f"public, max-age={settings.vaa_max_age}, immutable" if signed else "no-cache"
    headers = {"ETag": tag, "Cache-Control": cache}
    if matches(if_none_match, tag):
        return Response(status_code=304, headers=headers)
    return Response(body, 200, headers, media_type="application/json")
