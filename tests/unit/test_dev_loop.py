"""The Docker users' dev loop (skaffold.yaml, scripts/kind-dev), checked as files.

Neither Docker, kind nor skaffold runs on the test machines, so what can be checked without
them is checked here: both images are built from the Dockerfile's targets, the chart receives
the built image through values it has, the Spark image is the one IngestPipelines name by
default, and the script installs the spark-operator and applies the samples.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from chainloom_spark.settings import KubernetesSettings
from tests.conftest import REPO_ROOT

KIND_DEV = REPO_ROOT / "scripts" / "kind-dev"


def _skaffold() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO_ROOT / "skaffold.yaml").read_text())
    return loaded


def _artifacts() -> dict[str, dict[str, Any]]:
    return {artifact["image"]: artifact for artifact in _skaffold()["build"]["artifacts"]}


def _dockerfile_stages() -> set[str]:
    text = (REPO_ROOT / "Dockerfile").read_text()
    return set(re.findall(r"^FROM \S+ AS (\S+)$", text, flags=re.MULTILINE))


def test_skaffold_builds_the_plain_image_and_the_spark_target() -> None:
    artifacts = _artifacts()
    assert set(artifacts) == {"chainloom", "chainloom-spark"}
    assert "target" not in artifacts["chainloom"]["docker"]  # the Dockerfile's default target
    assert artifacts["chainloom-spark"]["docker"]["target"] == "spark"
    assert "spark" in _dockerfile_stages()
    for artifact in artifacts.values():
        assert (REPO_ROOT / artifact["docker"]["dockerfile"]).is_file()
    assert _skaffold()["build"]["local"]["push"] is False  # kind loads local images


def test_the_spark_image_is_the_pipelines_default() -> None:
    # kind-dev tags both images latest: the default kubernetes.image of a SparkApplication.
    assert KubernetesSettings().image == "chainloom-spark:latest"
    assert "--tag latest" in KIND_DEV.read_text()
    samples = [yaml.safe_load(path.read_text()) for path in (REPO_ROOT / "docs" / "samples").glob(
        "ingestpipeline-*.yaml")]  # fmt: skip
    batch = [sample for sample in samples if sample["spec"]["mode"] == "batch"]
    assert batch
    for sample in batch:
        image = sample["spec"]["batch"].get("resources", {}).get("image")
        assert image in (None, "chainloom-spark:latest"), sample["metadata"]["name"]


def _value(values: dict[str, Any], dotted: str) -> object:
    found: object = values
    for key in dotted.split("."):
        assert isinstance(found, dict), dotted
        assert key in found, dotted
        found = found[key]
    return found


def test_the_chart_receives_the_built_image() -> None:
    (release,) = _skaffold()["manifests"]["helm"]["releases"]
    chart = REPO_ROOT / release["chartPath"]
    assert (chart / "Chart.yaml").is_file()
    values = yaml.safe_load((chart / "values.yaml").read_text())
    templates = release["setValueTemplates"]
    assert templates == {
        "image.repository": "{{.IMAGE_REPO_chainloom}}",
        "image.tag": "{{.IMAGE_TAG_chainloom}}",
    }
    for dotted in templates:
        _value(values, dotted)
    helpers = (chart / "templates" / "_helpers.tpl").read_text()
    assert ".Values.image.repository" in helpers
    assert ".Values.image.tag" in helpers
    deployment = (chart / "templates" / "operator-deployment.yaml").read_text()
    assert 'include "chainloom.image"' in deployment


def test_kind_dev_installs_the_spark_operator_and_applies_the_samples() -> None:
    script = KIND_DEV.read_text()
    assert "helm upgrade --install spark-operator spark-operator/spark-operator" in script
    assert "https://kubeflow.github.io/spark-operator" in script
    # The chart's driver service account is the one SparkApplications run as by default.
    service_account = KubernetesSettings().service_account
    assert f"spark.serviceAccount.name={service_account}" in script
    assert "spark.jobNamespaces=" in script
    assert "skaffold run" in script
    assert "apply -f docs/samples/" in script
    # In that order: the operator's CRDs come with the chart, the samples need them.
    order = [script.index(step) for step in ("kind create cluster", "helm upgrade --install",
                                             "skaffold run", "apply -f docs/samples/")]  # fmt: skip
    assert order == sorted(order)


def test_kind_dev_is_valid_bash() -> None:
    result = subprocess.run(["bash", "-n", str(KIND_DEV)], capture_output=True, text=True,
                            check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert Path(KIND_DEV).stat().st_mode & 0o111
