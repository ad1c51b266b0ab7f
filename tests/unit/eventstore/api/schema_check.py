"""Validating answers against the served OpenAPI document (shared by unit and integration
tests): jsonschema's draft 2020-12 validator, the document registered so ``$ref`` resolves."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT_URI = "urn:chainloom:events-api"


def response_validator(
    document: dict[str, Any], path: str, status: int | str, method: str = "get"
) -> Draft202012Validator:
    """The validator of the JSON body the document promises for ``method path`` with
    ``status`` (a code, or ``"default"``)."""
    registry: Registry[Any] = Registry().with_resource(
        DOCUMENT_URI, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    responses = document["paths"][path][method]["responses"]
    assert str(status) in responses, f"{path} does not document status {status}"
    pointer = f"/paths/{_escape(path)}/{method}/responses/{status}/content/application~1json/schema"
    return Draft202012Validator(
        {"$ref": f"{DOCUMENT_URI}#{pointer}"},
        registry=registry,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def check(
    document: dict[str, Any], path: str, status: int | str, body: Any, method: str = "get"
) -> None:
    """Raise jsonschema's ValidationError unless ``body`` is what the document promises."""
    response_validator(document, path, status, method).validate(body)


def _escape(path: str) -> str:
    return path.replace("~", "~0").replace("/", "~1")
