"""The CustomResourceDefinitions, generated from the spec and status models.

pydantic writes JSON Schema (draft 2020-12) with shared ``$defs``; a CRD needs an OpenAPI v3
*structural* schema: no ``$ref``, a ``type`` on every node, no ``anyOf`` of different types,
``exclusiveMinimum`` as a flag, no ``additionalProperties: false`` (the server prunes unknown
fields and ``kubectl`` refuses them). :func:`structural` makes that translation, one rule per
construct, and stops with an error on one it does not know rather than writing a schema the
API server would refuse or read differently. Defaults are left out of the schema on purpose:
they live in the settings models (the operator applies them when it reads a spec), so a
resource stored today picks up a better default tomorrow; the description says the default.

``crds/`` and ``charts/chainloom/crds/`` hold the output (``chainloom operator crds``), and a
unit test fails when either is stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from chainloom_operator.models import CEL_RULES, GROUP, SPECS, VERSION, Spec, Status

SHORT_NAMES = {"IngestPipeline": ["ipl"], "RelayerPool": ["rpool"], "BackendTable": ["btable"]}
"""``kubectl get ipl`` and friends."""
CATEGORIES = ["chainloom"]
"""``kubectl get chainloom`` lists all three kinds."""

_READY = '.status.conditions[?(@.type=="Ready")]'
PRINTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "IngestPipeline": [
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "Job", "type": "string", "jsonPath": ".spec.batch.job"},
        {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"},
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
    ],
    "RelayerPool": [
        {"name": "Spy", "type": "string", "jsonPath": ".spec.spy_address"},
        {"name": "Workers", "type": "string", "jsonPath": ".status.readyWorkers"},
    ],
    "BackendTable": [
        {"name": "Backend", "type": "string", "jsonPath": ".spec.backend"},
        {"name": "Deletion", "type": "string", "jsonPath": ".spec.deletion_policy"},
        {"name": "API", "type": "string", "jsonPath": ".status.apiReady"},
    ],
}
"""Kind-specific columns of ``kubectl get``; Ready, Reason and Age follow on every kind."""
COMMON_COLUMNS: list[dict[str, Any]] = [
    {"name": "Ready", "type": "string", "jsonPath": f"{_READY}.status"},
    {"name": "Reason", "type": "string", "jsonPath": f"{_READY}.reason", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

SCALE = {
    "BackendTable": {
        "specReplicasPath": ".spec.api.replicas",
        "statusReplicasPath": ".status.api.replicas",
        "labelSelectorPath": ".status.api.selector",
    }
}
"""The scale subresource of the kinds that have one: ``kubectl scale btable/NAME
--replicas=N`` (and a HorizontalPodAutoscaler) set the API's replicas."""

_DROPPED = {"title", "writeOnly", "readOnly", "examples", "format", "discriminator"}
_FORMATS = {"int32", "int64", "date-time"}


class SchemaTranslationError(ValueError):
    """A construct of the JSON Schema that has no structural OpenAPI form here."""


def plural(kind: str) -> str:
    """``RelayerPool`` -> ``relayerpools``."""
    return kind.lower() + "s"


def structural(
    schema: dict[str, Any], cel_rules: dict[str, list[dict[str, str]]] | None = None
) -> dict[str, Any]:
    """``schema`` (pydantic's JSON Schema) as a structural OpenAPI v3 schema.

    ``cel_rules`` maps a ``$defs`` name to its CEL rules (default: :data:`CEL_RULES` by the
    model's class name).
    """
    rules = {model.__name__: found for model, found in CEL_RULES.items()}
    rules |= cel_rules or {}
    return _node(schema, schema.get("$defs", {}), rules)


def _node(node: dict[str, Any], defs: dict[str, Any], rules: dict[str, Any]) -> dict[str, Any]:
    node = dict(node)
    node.pop("$defs", None)
    ref = node.pop("$ref", None)
    if ref is not None:
        name = ref.removeprefix("#/$defs/")
        node = {**_node(defs[name], defs, rules), **node}
        if name in rules:
            node["x-kubernetes-validations"] = rules[name]
    if "anyOf" in node:
        node = _any_of(node, defs, rules)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    default = node.pop("default", None)
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(_translate(key, value, defs, rules))
    if default is not None and not isinstance(default, dict | list) and "description" in out:
        out["description"] = f"{out['description']} Default: {json.dumps(default)}."
    if "type" not in out and not (
        out.get("x-kubernetes-int-or-string") or out.get("x-kubernetes-preserve-unknown-fields")
    ):
        raise SchemaTranslationError(f"a schema node without a type: {node}")
    return out


def _translate(key: str, value: Any, defs: dict[str, Any], rules: dict[str, Any]
               ) -> dict[str, Any]:  # fmt: skip
    """One keyword of a JSON Schema node as the keywords of its structural form."""
    if key in _DROPPED and not (key == "format" and value in _FORMATS):
        return {}
    if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
        return {"minimum" if key == "exclusiveMinimum" else "maximum": value, key: True}
    if key == "properties":
        return {key: {name: _node(sub, defs, rules) for name, sub in value.items()}}
    if key == "items":
        return {key: _node(value, defs, rules)}
    if key == "additionalProperties":  # false: the server prunes; true: kept as it is
        kept = {"x-kubernetes-preserve-unknown-fields": True} if value is True else {}
        return {key: _node(value, defs, rules)} if isinstance(value, dict) else kept
    if key in ("prefixItems", "allOf", "oneOf", "not", "patternProperties"):
        raise SchemaTranslationError(f"no structural form for {key!r}: {value}")
    return {key: value}


def _any_of(node: dict[str, Any], defs: dict[str, Any], rules: dict[str, Any]) -> dict[str, Any]:
    """``anyOf`` as one structural node (Optional: the null branch goes, the field is optional)."""
    branches = [_node(b, defs, rules) for b in node.pop("anyOf") if b.get("type") != "null"]
    types = {b.get("type") for b in branches}
    if len(branches) == 1:
        return {**branches[0], **node}
    if types == {"string"}:
        enums = [b.get("enum") for b in branches]
        merged: dict[str, Any] = {"type": "string"}
        if all(enums):
            merged["enum"] = sorted({value for e in enums for value in e or ()})
        return {**merged, **node}
    if types == {"integer", "string"}:
        return {"x-kubernetes-int-or-string": True, **node}
    # A value of one of several shapes (a preset name or an object): the models check it.
    return {"x-kubernetes-preserve-unknown-fields": True, **node}


def schema_of(model: type[Spec] | type[Status]) -> dict[str, Any]:
    """The structural schema of one spec or status model."""
    by_alias = issubclass(model, Status)
    generated = model.model_json_schema(by_alias=by_alias, mode="validation")
    schema = structural(generated)
    if CEL_RULES.get(model):
        schema["x-kubernetes-validations"] = CEL_RULES[model]
    return schema


def definition(kind: str) -> dict[str, Any]:
    """The CustomResourceDefinition of ``kind`` as data."""
    spec_model, status_model = SPECS[kind]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural(kind)}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "chainloom"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural(kind),
                "singular": kind.lower(),
                "shortNames": SHORT_NAMES[kind],
                "categories": CATEGORIES,
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}}
                    | ({"scale": SCALE[kind]} if kind in SCALE else {}),
                    "additionalPrinterColumns": PRINTER_COLUMNS[kind] + COMMON_COLUMNS,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": (spec_model.__doc__ or kind).strip(),
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": schema_of(spec_model),
                                "status": schema_of(status_model),
                            },
                        }
                    },
                }
            ],
        },
    }


PEERING_GROUP = "kopf.dev"
"""kopf's peering API group (its replicas agree there which one acts)."""


def peering_definition(kind: str, scope: str) -> dict[str, Any]:
    """The CRD of kopf's ``ClusterKopfPeering`` or ``KopfPeering`` (``kopf.dev/v1``).

    kopf keeps each replica's heartbeat as a free-form map under ``status`` and never uses a
    status subresource, so the schema keeps unknown fields (the one place it must).
    """
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural(kind)}.{PEERING_GROUP}"},
        "spec": {
            "group": PEERING_GROUP,
            "names": {"kind": kind, "plural": plural(kind), "singular": kind.lower()},
            "scope": scope,
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "additionalPrinterColumns": [
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                    ],
                }
            ],
        },
    }


HEADER = "# Generated by `chainloom operator crds` from chainloom_operator.models: do not edit.\n"


def rendered() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    definitions = {f"{GROUP}_{plural(kind)}.yaml": definition(kind) for kind in SPECS}
    for kind, scope in (("ClusterKopfPeering", "Cluster"), ("KopfPeering", "Namespaced")):
        definitions[f"{PEERING_GROUP}_{plural(kind)}.yaml"] = peering_definition(kind, scope)
    return {
        name: HEADER + yaml.safe_dump(found, sort_keys=False, width=100)
        for name, found in definitions.items()
    }


def stale_files(directory: Path) -> list[str]:
    """Files of ``directory`` that differ from (or are missing beside) the generated ones."""
    wanted = rendered()
    stale = [
        name
        for name, text in wanted.items()
        if not (directory / name).is_file() or (directory / name).read_text() != text
    ]
    extra = [p.name for p in directory.glob("*.yaml") if p.name not in wanted]
    return sorted(set(stale + extra))


def write(directory: Path) -> list[str]:
    """Write every CRD into ``directory``; the names of the files that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in rendered().items():
        path = directory / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return changed
