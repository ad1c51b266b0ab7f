"""The generated CRDs on the real API server: samples are accepted, CEL rules refuse with their
message, and the printer columns, short names and category work."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.operator_support import chainloom_crds, kubectl, kubectl_json

__all__ = ["chainloom_crds"]

SAMPLES = sorted((REPO_ROOT / "docs" / "samples").glob("*.yaml"))

WALLET = {"name": "a", "secret_ref": {"name": "s"}}


def _object(kind: str, spec: dict[str, object]) -> str:
    return yaml.safe_dump(
        {"apiVersion": "chainloom.io/v1alpha1", "kind": kind, "metadata": {"name": "bad"},
         "spec": spec}
    )  # fmt: skip


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_are_accepted(chainloom_crds: str, kube_namespace: str, path: object) -> None:
    result = kubectl(chainloom_crds, "-n", kube_namespace, "apply", "--server-side",
                     "-f", str(path))  # fmt: skip
    assert "serverside-applied" in result.stdout


INVALID = [
    ("RelayerPool",
     {"redis": {"url": "redis://r:6379/0"}, "chains": [{"chain": 2, "wallets": []}]},
     "every chain needs at least one wallet"),
    ("RelayerPool",
     {"redis": {}, "chains": [{"chain": 2, "wallets": [WALLET]}]},
     "give exactly one of redis.url and redis.secret_ref"),
    ("IngestPipeline",
     {"mode": "streaming", "sink": "e", "schedule": "0 * * * *",
      "streaming": {"spy": {"address": "spy:7073"}}},
     "schedule is only for batch jobs"),
    ("IngestPipeline", {"mode": "batch", "sink": "e", "batch": {"job": "ledger-load"}},
     "input is required for vaa-ingest, ledger-load and enrich"),
    ("IngestPipeline", {"mode": "batch", "sink": "e"},
     "give batch for mode batch, streaming for mode streaming"),
    ("IngestPipeline",
     {"mode": "streaming", "sink": "l", "ledger": {"grpc": "r:50051"},
      "streaming": {"spy": {"address": "spy:7073"}}},
     "ledger is for mode streaming, instead of streaming"),
    ("IngestPipeline", {"mode": "streaming", "sink": "l", "ledger": {"grpc": "no-port"}},
     "should match"),
    ("BackendTable", {"backend": "cassandra"},
     "give bigtable for backend bigtable, cassandra for backend cassandra"),
    ("BackendTable", {"backend": "sqlite", "cassandra": {}}, "Unsupported value"),
    ("BackendTable",
     {"backend": "cassandra", "cassandra": {}, "api": {"cursor_key": {"name": "k"}}},
     "api.cursor_key is for backend bigtable (the events API) only"),
    ("BackendTable", {"backend": "bigtable", "bigtable": {}, "api": {"replicas": 65}},
     "should be less than or equal to 64"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "spec", "message"), INVALID)
def test_invalid_specs_are_refused_with_the_rules_message(
    chainloom_crds: str, kube_namespace: str, kind: str, spec: dict[str, object], message: str
) -> None:
    result = kubectl(chainloom_crds, "-n", kube_namespace, "create", "-f", "-",
                     stdin=_object(kind, spec), check=False)  # fmt: skip
    assert result.returncode != 0
    assert message in result.stderr


def test_backend_is_immutable(chainloom_crds: str, kube_namespace: str) -> None:
    kubectl(chainloom_crds, "-n", kube_namespace, "apply", "--server-side", "-f", "-",
            stdin=_object("BackendTable", {"backend": "bigtable", "bigtable": {}}))  # fmt: skip
    result = kubectl(chainloom_crds, "-n", kube_namespace, "apply", "--server-side", "-f", "-",
                     stdin=_object("BackendTable", {"backend": "cassandra", "cassandra": {}}),
                     check=False)  # fmt: skip
    assert "backend is immutable" in result.stderr


def test_short_names_category_and_columns(chainloom_crds: str, kube_namespace: str) -> None:
    for path in SAMPLES:
        kubectl(chainloom_crds, "-n", kube_namespace, "apply", "--server-side", "-f", str(path))
    listed = kubectl_json(chainloom_crds, "-n", kube_namespace, "get", "chainloom")
    assert len(listed["items"]) == len(SAMPLES)
    table = kubectl(chainloom_crds, "-n", kube_namespace, "get", "btable").stdout
    assert table.split("\n")[0].split() == ["NAME", "BACKEND", "DELETION", "API", "READY", "AGE"]
    assert kubectl(chainloom_crds, "-n", kube_namespace, "get", "rpool", "mainnet").returncode == 0
