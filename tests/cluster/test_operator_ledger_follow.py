"""A streaming IngestPipeline with ``spec.ledger`` on the real API server, its pods run by KWOK:
the operator renders the following ledger ETL's ConfigMap and Deployment over the sink's
Cassandra keyspace, the pipeline is Ready once KWOK's pods are available, and ``status.writer``
stays empty because KWOK's pods answer no ``/status`` (the role itself is tested in
``tests/integration/ledger/test_follow.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.cluster.test_operator import KWOK_PLACEMENT, SAMPLES, _apply, _condition
from tests.conftest import StackForTests
from tests.ledger_api_support import drop_keyspace
from tests.operator_support import chainloom_crds, kubectl_json, start_operator, wait_for

__all__ = ["chainloom_crds"]


def test_a_ledger_pipeline_renders_the_following_etl(
    chainloom_crds: str, kube_namespace: str, tmp_path: Path,
    cassandra_address: tuple[str, int], local_stack: StackForTests,
) -> None:  # fmt: skip
    local_stack.require("kwok")
    kubeconfig, namespace = chainloom_crds, kube_namespace
    host, port = cassandra_address
    keyspace = f"follow_{namespace.replace('-', '_')}"
    running = start_operator(kubeconfig, namespace, tmp_path / "operator.log")
    try:
        table: dict[str, Any] = yaml.safe_load(
            (SAMPLES / "backendtable-cassandra.yaml").read_text()
        )
        table["spec"]["cassandra"] = {"hosts": [host], "port": port, "keyspace": keyspace,
                                      "replication_factor": 1}  # fmt: skip
        del table["spec"]["api"]
        del table["spec"]["feed"]  # the sample's feed is a real cluster's Redis and Secrets
        _apply(kubeconfig, namespace, table)
        pipeline: dict[str, Any] = yaml.safe_load(
            (SAMPLES / "ingestpipeline-ledger-follow.yaml").read_text()
        )
        pipeline["spec"]["ledger"]["placement"] = KWOK_PLACEMENT
        _apply(kubeconfig, namespace, pipeline)

        wait_for(lambda: _condition(kubeconfig, namespace, "ipl/xrpl-live", "Ready").get("status")
                 == "True", timeout=120, what="the ledger ETL available")  # fmt: skip
        deployment = kubectl_json(kubeconfig, "-n", namespace, "get", "deployment",
                                  "xrpl-live-ledger-etl")  # fmt: skip
        assert deployment["spec"]["replicas"] == 2
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"][:6] == ["ledger", "follow", "--config",
                                         "/etc/chainloom/ledger.yaml", "--grpc",
                                         "rippled.xrpl.svc:50051"]  # fmt: skip
        assert (deployment["status"].get("availableReplicas") or 0) == 2
        config = kubectl_json(kubeconfig, "-n", namespace, "get", "configmap",
                              "xrpl-live-ledger-etl")  # fmt: skip
        settings = yaml.safe_load(config["data"]["ledger.yaml"])
        assert settings["database"]["cassandra"]["keyspace"] == keyspace
        found = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", "xrpl-live")
        assert found["status"]["writer"] == ""
        assert "Traceback" not in running.output()
    finally:
        running.stop()
        drop_keyspace(cassandra_address, keyspace)
