"""The document is valid OpenAPI 3.1 and covers every route, parameter and status."""

from __future__ import annotations

from openapi_spec_validator import validate

from chainloom.eventstore.api.openapi import document
from chainloom.eventstore.api.routes import ROUTES


def test_the_document_is_valid_openapi_3_1() -> None:
    spec = document("1.2.3")
    validate(spec)
    assert spec["openapi"] == "3.1.0"
    assert spec["info"]["version"] == "1.2.3"


def test_every_route_is_documented_with_its_parameters_and_errors() -> None:
    spec = document()
    assert set(spec["paths"]) == {r.path for r in ROUTES}
    for route in ROUTES:
        operation = spec["paths"][route.path]["get"]
        assert operation["operationId"] == route.name
        named = [(p["name"], p["in"]) for p in operation.get("parameters", [])]
        assert named == [(p.name, p.location) for p in route.parameters]
        for part in route.path.split("/"):
            if part.startswith("{"):
                assert (part[1:-1], "path") in named
        assert set(operation["responses"]) == {"200", "default", *map(str, route.errors)}


def test_response_schemas_refuse_unknown_fields() -> None:
    schemas = document()["components"]["schemas"]
    assert schemas["VaaDoc"]["additionalProperties"] is False
    assert "vaa" in schemas["VaaDoc"]["required"]
