"""The OpenAPI 3.1 document of the API, rendered from :data:`routes.ROUTES` and the models.

Pure and computed once per process: component schemas are pydantic's JSON Schemas of the
response models (in serialization mode, camelCase names) with references rewritten to
``#/components/schemas/...``; paths come from the route table. JSON Schema draft 2020-12 is
OpenAPI 3.1's own dialect, so the schemas go in unchanged.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic.json_schema import models_json_schema

from chainloom.eventstore.api import models
from chainloom.eventstore.api.routes import ROUTES, Route

REF_TEMPLATE = "#/components/schemas/{model}"

_DESCRIPTIONS = {
    200: "OK",
    400: "A malformed parameter (named in `parameter`).",
    404: "Nothing stored for what was asked.",
    503: "The store is unreachable, or the server is busy (`error` says which).",
}


@functools.cache
def document(version: str = "0") -> dict[str, Any]:
    """The whole document (do not mutate: it is shared)."""
    _, top = models_json_schema(
        [(model, "serialization") for model in models.RESPONSE_MODELS],
        ref_template=REF_TEMPLATE,
    )
    paths: dict[str, Any] = {}
    for route in ROUTES:
        paths[route.path] = {"get": _operation(route)}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "chainloom events API",
            "version": version,
            "description": "Wormhole messages from the chainloom event store (Bigtable). "
            "See docs/events-api.md.",
        },
        "paths": paths,
        "components": {"schemas": top["$defs"]},
    }


def _operation(route: Route) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    if route.response is None:
        ok: dict[str, Any] = {"schema": {"type": "object"}}
    else:
        ok = {"schema": {"$ref": REF_TEMPLATE.format(model=route.response.__name__)}}
    responses["200"] = {"description": "OK", "content": {"application/json": ok}}
    error = {"schema": {"$ref": REF_TEMPLATE.format(model=models.ErrorBody.__name__)}}
    for status in route.errors:
        responses[str(status)] = {
            "description": _DESCRIPTIONS[status],
            "content": {"application/json": error},
        }
    responses["default"] = {
        "description": "Any other refusal (405, and the HTTP server's 408, 413, 431, 505).",
        "content": {"application/json": error},
    }
    operation: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "responses": responses,
    }
    if route.parameters:
        operation["parameters"] = [
            {
                "name": p.name,
                "in": p.location,
                "required": p.required,
                "description": p.description,
                "schema": p.schema,
            }
            for p in route.parameters
        ]
    return operation
