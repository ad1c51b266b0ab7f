"""The generated CRDs: crds/ and the chart's copy are current, and the schemas are structural."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom_operator import crds
from chainloom_operator.models import SPECS
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("directory", ["crds", "charts/chainloom/crds"])
def test_checked_in_crds_are_current(directory: str) -> None:
    stale = crds.stale_files(REPO_ROOT / directory)
    assert not stale, f"{directory} is stale ({stale}): run `chainloom operator crds`"


def _nodes(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path, schema)]
    for name, sub in schema.get("properties", {}).items():
        found += _nodes(sub, f"{path}.{name}")
    if "items" in schema:
        found += _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += _nodes(schema["additionalProperties"], f"{path}{{}}")
    return found


@pytest.mark.parametrize("kind", list(SPECS))
def test_schemas_are_structural(kind: str) -> None:
    version = crds.definition(kind)["spec"]["versions"][0]
    for path, node in _nodes(version["schema"]["openAPIV3Schema"]):
        assert "$ref" not in node, path
        assert not {"anyOf", "oneOf", "allOf", "const", "title", "default"} & set(node), path
        assert node.get("additionalProperties") is not False, path
        assert (
            "type" in node
            or node.get("x-kubernetes-int-or-string")
            or node.get("x-kubernetes-preserve-unknown-fields")
        ), path
        for flag in ("exclusiveMinimum", "exclusiveMaximum"):
            assert isinstance(node.get(flag, True), bool), path
    assert version["subresources"]["status"] == {}
    assert ("scale" in version["subresources"]) == (kind == "BackendTable")


def test_the_backend_table_scales_its_api() -> None:
    version = crds.definition("BackendTable")["spec"]["versions"][0]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.api.replicas",
        "statusReplicasPath": ".status.api.replicas",
        "labelSelectorPath": ".status.api.selector",
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["API"] == ".status.apiReady"
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["api"]["properties"]["replicas"]["type"] == "integer"
    assert status["api"]["properties"]["selector"]["type"] == "string"


def test_unknown_fields_are_kept_only_where_a_value_has_several_shapes() -> None:
    schema = crds.definition("RelayerPool")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    kept = [p for p, n in _nodes(schema) if n.get("x-kubernetes-preserve-unknown-fields")]
    assert kept == [".spec.validation.known_emitters[]"]


def test_names_columns_and_rules() -> None:
    pool = crds.definition("RelayerPool")
    assert pool["spec"]["names"]["shortNames"] == ["rpool"]
    assert pool["spec"]["names"]["categories"] == ["chainloom"]
    columns = [c["name"] for c in pool["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert columns == ["Spy", "Workers", "Ready", "Reason", "Age"]
    spec = pool["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    chain = spec["properties"]["chains"]["items"]
    assert chain["x-kubernetes-validations"] == [
        {"rule": "size(self.wallets) >= 1", "message": "every chain needs at least one wallet"}
    ]
    status = pool["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert "observedGeneration" in status["properties"]
    condition = status["properties"]["conditions"]["items"]
    assert condition["properties"]["type"]["enum"] == [
        "Ready",
        "Progressing",
        "Degraded",
        "LowBalance",
        "ReconciliationPaused",
    ]
    assert "observedGeneration" in condition["properties"]


def test_a_construct_without_structural_form_is_refused() -> None:
    with pytest.raises(crds.SchemaTranslationError):
        crds.structural({"type": "array", "prefixItems": [{"type": "string"}]})


def test_chart_crds_are_identical_to_crds() -> None:
    top = {p.name: p.read_bytes() for p in (REPO_ROOT / "crds").glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in (REPO_ROOT / "charts/chainloom/crds").glob("*.yaml")}
    assert top == chart
