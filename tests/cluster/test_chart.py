"""The Helm chart lints, renders, and is accepted by the real API server."""

from __future__ import annotations

import subprocess

import yaml

from chainloom.stack.components.kubernetes import helm_dir, k8s_dir
from tests.conftest import REPO_ROOT

CHART = REPO_ROOT / "charts" / "chainloom"


def _run(*argv: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_chart_lints_renders_and_applies(kubeconfig: str, kube_namespace: str) -> None:
    helm = str(helm_dir() / "bin" / "helm")
    _run(helm, "lint", str(CHART), "--strict")
    rendered = _run(
        helm,
        "template",
        "demo",
        str(CHART),
        "--namespace",
        kube_namespace,
        "--kubeconfig",
        kubeconfig,
        "--set",
        "config.ledger.databaseType=sqlite",
    )
    documents = [doc for doc in yaml.safe_load_all(rendered) if doc]
    kinds = sorted(doc["kind"] for doc in documents)
    assert kinds == ["ConfigMap", "ServiceAccount"]
    config = next(doc for doc in documents if doc["kind"] == "ConfigMap")
    assert (
        yaml.safe_load(config["data"]["chainloom.yaml"])["ledger"]["database"]["type"] == "sqlite"
    )

    kubectl = str(k8s_dir() / "bin" / "kubectl")
    applied = _run(
        kubectl,
        f"--kubeconfig={kubeconfig}",
        "-n",
        kube_namespace,
        "apply",
        "--dry-run=server",
        "-f",
        "-",
        stdin=rendered,
    )
    assert "configmap/demo-chainloom-config created (server dry run)" in applied
