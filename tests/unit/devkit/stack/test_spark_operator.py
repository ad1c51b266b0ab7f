"""The spark-operator component's command line and environment, rendered as data."""

from __future__ import annotations

from pathlib import Path

from chainloom_dev.stack import manager
from chainloom_dev.stack.components.spark_operator import (
    CRD_FILES,
    CRD_NAMES,
    ControllerConfig,
    controller_argv,
    controller_env,
)

CONFIG = ControllerConfig(
    kubeconfig="/run/kubeconfig",
    server="https://127.0.0.1:6443",
    namespace_selector="chainloom.io/spark-operator=enabled",
    lease_name="chainloom-spark-operator",
    health_port=18081,
    metrics_port=18080,
)


def test_the_controller_runs_with_leader_election_on_loopback_for_labelled_namespaces():
    argv = controller_argv(Path("/cache/spark-operator"), CONFIG)
    assert argv[:3] == ["/cache/spark-operator", "controller", "start"]
    flags = dict(flag.split("=", 1) for flag in argv[3:])
    assert flags["--kubeconfig"] == "/run/kubeconfig"
    assert flags["--namespace-selector"] == "chainloom.io/spark-operator=enabled"
    assert "--namespaces" not in flags  # none listed: only the selector's
    assert flags["--leader-election"] == "true"
    assert flags["--leader-election-lock-name"] == "chainloom-spark-operator"
    assert flags["--leader-election-lock-namespace"] == "kube-system"
    assert flags["--health-probe-bind-address"] == "127.0.0.1:18081"
    assert flags["--metrics-bind-address"] == "127.0.0.1:18080"
    assert flags["--enable-ui-service"] == "false"


def test_spark_submit_gets_spark_the_master_and_the_kubeconfig():
    env = controller_env(CONFIG, Path("/venv/lib/python3.11/site-packages/pyspark"))
    assert env == {
        "SPARK_HOME": "/venv/lib/python3.11/site-packages/pyspark",
        "KUBECONFIG": "/run/kubeconfig",
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "6443",
    }


def test_the_three_crds_and_the_node_group():
    assert CRD_NAMES == (
        "sparkapplications.sparkoperator.k8s.io",
        "scheduledsparkapplications.sparkoperator.k8s.io",
        "sparkconnects.sparkoperator.k8s.io",
    )
    assert len(CRD_FILES) == 3
    assert "spark-operator" in manager.GROUPS["node"]
    order = manager.resolve(["spark-operator"])
    assert order.index("kube-apiserver") < order.index("spark-operator")
