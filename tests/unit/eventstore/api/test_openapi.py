"""The document FastAPI renders is valid OpenAPI 3.1 and covers every route, parameter and
status."""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from openapi_spec_validator import validate

from chainloom.eventstore.api.app import EventsApi, events_app
from chainloom.eventstore.api.config import EventsApiSettings


def _app(version: str = "0") -> Any:
    return events_app(EventsApi(None, EventsApiSettings(), version=version))  # type: ignore[arg-type]


def test_the_document_is_valid_openapi_3_1() -> None:
    spec = _app("1.2.3").openapi()
    validate(spec)
    assert spec["openapi"].startswith("3.1")
    assert spec["info"]["version"] == "1.2.3"


def test_every_route_is_documented_with_its_parameters_and_errors() -> None:
    app = _app()
    spec = app.openapi()
    routes = [r for r in app.routes if isinstance(r, APIRoute)]
    assert set(spec["paths"]) == {r.path for r in routes} | {"/openapi.json"} - {"/openapi.json"}
    for route in routes:
        (method,) = sorted(route.methods or [])
        operation = spec["paths"][route.path][method.lower()]
        assert operation["operationId"] == route.operation_id
        named = [(p["name"], p["in"]) for p in operation.get("parameters", [])]
        for part in route.path.split("/"):
            if part.startswith("{"):
                assert (part[1:-1], "path") in named
        assert "200" in operation["responses"]
        if route.path not in ("/healthz", "/readyz"):
            assert {"400", "default"} <= set(operation["responses"])


def test_query_parameters_are_documented() -> None:
    spec = _app().openapi()
    listing = spec["paths"]["/api/v1/vaas/{chain}/{emitter}"]["get"]
    assert [(p["name"], p["in"]) for p in listing["parameters"]] == [
        ("chain", "path"),
        ("emitter", "path"),
        ("pageSize", "query"),
        ("cursor", "query"),
    ]
    stats = spec["paths"]["/api/v1/stats/daily"]["get"]
    assert [p["name"] for p in stats["parameters"]] == ["from", "to", "chain"]


def test_response_schemas_refuse_unknown_fields() -> None:
    schemas = _app().openapi()["components"]["schemas"]
    assert schemas["VaaDoc"]["additionalProperties"] is False
    assert "vaa" in schemas["VaaDoc"]["required"]
