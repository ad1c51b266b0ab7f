"""The Helm chart lints, renders least-privilege RBAC and a locked-down operator pod, is
accepted by the real API server, and installs, upgrades and uninstalls (CRDs kept)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import yaml

from chainloom_dev.stack.components.kubernetes import helm_dir, k8s_dir
from tests.conftest import REPO_ROOT, StackForTests
from tests.operator_support import chainloom_crds, kubectl_json, wait_for

__all__ = ["chainloom_crds"]

CHART = REPO_ROOT / "charts" / "chainloom"


def _run(*argv: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _helm(*args: str) -> str:
    return _run(str(helm_dir() / "bin" / "helm"), *args)


def _render(kubeconfig: str, namespace: str, *sets: str) -> tuple[str, list[dict[str, Any]]]:
    flags = [flag for value in sets for flag in ("--set", value)]
    rendered = _helm("template", "demo", str(CHART), "--namespace", namespace,
                     "--kubeconfig", kubeconfig, *flags)  # fmt: skip
    return rendered, [doc for doc in yaml.safe_load_all(rendered) if doc]


def test_chart_lints_renders_and_applies(chainloom_crds: str, kube_namespace: str) -> None:
    kubeconfig = chainloom_crds
    _helm("lint", str(CHART), "--strict")
    rendered, documents = _render(kubeconfig, kube_namespace, "config.ledger.databaseType=sqlite")
    kinds = sorted(doc["kind"] for doc in documents)
    assert kinds == ["ClusterKopfPeering", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                     "Deployment", "ServiceAccount", "ServiceAccount"]  # fmt: skip
    config = next(doc for doc in documents if doc["kind"] == "ConfigMap")
    assert (
        yaml.safe_load(config["data"]["chainloom.yaml"])["ledger"]["database"]["type"] == "sqlite"
    )

    kubectl = str(k8s_dir() / "bin" / "kubectl")
    applied = _run(kubectl, f"--kubeconfig={kubeconfig}", "-n", kube_namespace, "apply",
                   "--dry-run=server", "-f", "-", stdin=rendered)  # fmt: skip
    assert "configmap/demo-chainloom-config created (server dry run)" in applied
    assert "deployment.apps/demo-chainloom-operator created (server dry run)" in applied


def test_operator_pod_is_locked_down(kubeconfig: str, kube_namespace: str) -> None:
    _, documents = _render(kubeconfig, kube_namespace)
    deployment = next(doc for doc in documents if doc["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["limits"]["memory"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz"
    assert "--peering=chainloom" in container["args"]
    assert deployment["spec"]["replicas"] == 2


def test_rbac_is_least_privilege(kubeconfig: str, kube_namespace: str) -> None:
    _, documents = _render(kubeconfig, kube_namespace, "operator.namespaces={team-a}")
    roles = [doc for doc in documents if doc["kind"] in ("ClusterRole", "Role")]
    for role in roles:
        for rule in role["rules"]:
            assert "*" not in rule["verbs"], rule
            assert "*" not in rule["resources"], rule
            assert "*" not in rule.get("apiGroups", []), rule
    cluster_role = next(doc for doc in roles if doc["kind"] == "ClusterRole")
    cluster_resources = {r for rule in cluster_role["rules"] for r in rule["resources"]}
    assert cluster_resources == {"customresourcedefinitions", "namespaces", "clusterkopfpeerings"}
    role = next(doc for doc in roles if doc["kind"] == "Role")
    assert role["metadata"]["namespace"] == "team-a"
    secrets = next(rule for rule in role["rules"] if rule["resources"] == ["secrets"])
    assert secrets["verbs"] == ["get"]


def test_service_monitor_is_optional(kubeconfig: str, kube_namespace: str) -> None:
    _, without = _render(kubeconfig, kube_namespace)
    assert "ServiceMonitor" not in {doc["kind"] for doc in without}
    _, with_monitor = _render(kubeconfig, kube_namespace, "serviceMonitor.enabled=true")
    monitor = next(doc for doc in with_monitor if doc["kind"] == "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def test_the_operators_metrics_service_is_accepted(
    chainloom_crds: str, kube_namespace: str
) -> None:
    """``operator.metrics.enabled``: the Deployment with its metrics port and the Service pass
    the real API server's validation (server-side dry run)."""
    kubeconfig = chainloom_crds
    _, documents = _render(kubeconfig, kube_namespace, "operator.metrics.enabled=true")
    wanted = [doc for doc in documents if doc["kind"] in ("Deployment", "Service")]
    assert sorted(doc["kind"] for doc in wanted) == ["Deployment", "Service"]
    kubectl = str(k8s_dir() / "bin" / "kubectl")
    applied = _run(kubectl, f"--kubeconfig={kubeconfig}", "-n", kube_namespace, "apply",
                   "--dry-run=server", "-f", "-",
                   stdin=yaml.safe_dump_all(wanted))  # fmt: skip
    assert "service/demo-chainloom-operator-metrics created (server dry run)" in applied
    assert "deployment.apps/demo-chainloom-operator created (server dry run)" in applied


def test_install_upgrade_uninstall_keeps_the_crds(
    chainloom_crds: str, kube_namespace: str, local_stack: StackForTests
) -> None:
    local_stack.require("kwok")  # the operator's pods run on the simulated node
    kubeconfig, namespace = chainloom_crds, kube_namespace
    release = f"r{namespace[2:]}"
    common = ["--namespace", namespace, "--kubeconfig", kubeconfig,
              "--set", f"operator.namespaces={{{namespace}}}",
              "--set", f"operator.peering.name=p{namespace[2:]}",
              # On the simulated node (labelled and tainted for it), not on a real one.
              "--set", "operator.nodeSelector.type=kwok",
              "--set-json", 'operator.tolerations=[{"key": "kwok.x-k8s.io/node", '
                            '"operator": "Exists", "effect": "NoSchedule"}]']  # fmt: skip
    _helm("install", release, str(CHART), *common, "--wait", "--timeout", "180s")
    deployment = kubectl_json(kubeconfig, "-n", namespace, "get", "deployment",
                              f"{release}-chainloom-operator")  # fmt: skip
    assert deployment["status"]["availableReplicas"] == 2
    _helm("upgrade", release, str(CHART), *common, "--set", "operator.replicas=1", "--wait",
          "--timeout", "180s")  # fmt: skip
    wait_for(lambda: kubectl_json(kubeconfig, "-n", namespace, "get", "deployment",
                                  f"{release}-chainloom-operator")["spec"]["replicas"] == 1,
             what="the upgrade")  # fmt: skip
    _helm("uninstall", release, "--namespace", namespace, "--kubeconfig", kubeconfig, "--wait")
    crds = kubectl_json(kubeconfig, "get", "crd", "-l", "app.kubernetes.io/part-of=chainloom")
    names = {item["metadata"]["name"] for item in crds["items"]}
    assert {"relayerpools.chainloom.io", "backendtables.chainloom.io",
            "ingestpipelines.chainloom.io"} <= names  # fmt: skip


def test_collector_endpoint_and_grafana_dashboard_are_optional(
    kubeconfig: str, kube_namespace: str
) -> None:
    _, plain = _render(kubeconfig, kube_namespace)
    assert "chainloom-overview" not in json.dumps(plain)
    operator = next(doc for doc in plain if doc["kind"] == "Deployment")
    env = {
        e["name"]: e.get("value")
        for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in env
    assert "CHAINLOOM_OTLP_ENDPOINT" not in env
    assert env["CHAINLOOM_TELEMETRY__LOG_FORMAT"] == "text"
    _, observed = _render(
        kubeconfig, kube_namespace,
        "telemetry.otlpEndpoint=http://otel-collector:4318",
        "telemetry.logFormat=json",
        "grafanaDashboard.enabled=true",
    )  # fmt: skip
    operator = next(doc for doc in observed if doc["kind"] == "Deployment")
    env = {
        e["name"]: e.get("value")
        for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert env["CHAINLOOM_OTLP_ENDPOINT"] == "http://otel-collector:4318"  # for its pods
    assert env["CHAINLOOM_TELEMETRY__LOG_FORMAT"] == "json"
    board = next(
        doc for doc in observed if doc["kind"] == "ConfigMap" and "chainloom.json" in doc["data"]
    )
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(board["data"]["chainloom.json"])
    exprs = " ".join(t["expr"] for panel in dashboard["panels"] for t in panel["targets"])
    # The dashboard reads the documented metrics of both services.
    documented = (REPO_ROOT / "docs" / "observability.md").read_text()
    for name in ("chainloom_listener_outcomes_total", "chainloom_relayer_queue_depth"):
        assert name in exprs
        assert name in documented
    assert "chainloom_indexer_lag_seconds" in exprs
