"""A Bigtable BackendTable's ``spec.google`` in every pod that opens its tables, as data: the
API's and the indexer's Deployments, the Spark driver and executors, the Workload Identity
ServiceAccount; a key only ever as a Secret volume and a path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore.config import EventStoreSettings
from chainloom.indexer.config import IndexerSettings
from chainloom.settings import load_settings
from chainloom_operator._render.api import render_api, secret_references
from chainloom_operator._render.common import Owner
from chainloom_operator._render.google import (
    CREDENTIALS_ENV,
    KEY_DIR,
    WORKLOAD_IDENTITY_ANNOTATION,
    service_account,
)
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec
from tests.conftest import REPO_ROOT

TABLE = Owner("BackendTable", "events", "data", "uid-9", 4)
PIPELINE = Owner("IngestPipeline", "follow", "data", "uid-7", 2)
GSA = "indexer@chainloom-prod.iam.gserviceaccount.com"
KEY = {"key": {"name": "bigtable-key", "key": "sa.json"}}
WORKLOAD_IDENTITY = {"gcp_service_account": GSA}
EXISTING = {"service_account": "bigtable-reader"}


def _table(google: dict[str, Any] | None, **bigtable: Any) -> BackendTableSpec:
    document: dict[str, Any] = {
        "backend": "bigtable",
        "bigtable": {"project": "p", "instance": "i", "app_profile": "reads", **bigtable},
        "api": {"image": "chainloom:dev"},
    }
    if google is not None:
        document["google"] = google
    return BackendTableSpec.model_validate(document)


def _sample(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docs/samples" / name).read_text())["spec"]
    return spec


def _events_settings(config: dict[str, Any]) -> EventStoreSettings:
    return EventStoreSettings.model_validate(yaml.safe_load(config["data"]["events.yaml"]))


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item for item in container["env"]}


def test_a_key_is_a_read_only_secret_file_named_by_path() -> None:
    config, deployment, *_ = render_api(TABLE, _table(KEY))
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    path = f"{KEY_DIR}/sa.json"
    assert _env(container)[CREDENTIALS_ENV] == {"name": CREDENTIALS_ENV, "value": path}
    assert {"name": "google-key", "mountPath": KEY_DIR, "readOnly": True} in (
        container["volumeMounts"]
    )
    (volume,) = [v for v in pod["volumes"] if v["name"] == "google-key"]
    assert volume["secret"] == {"secretName": "bigtable-key", "defaultMode": 0o440,
                                "items": [{"key": "sa.json", "path": "sa.json"}]}  # fmt: skip
    settings = _events_settings(config)
    assert settings.bigtable.credentials_file == path
    assert settings.bigtable.app_profile == "reads"
    assert "serviceAccountName" not in pod
    assert pod["automountServiceAccountToken"] is False
    assert secret_references(_table(KEY)) == [
        ("bigtable-key", "sa.json", "Google service-account key")
    ]
    # the key is never a variable's value taken from the Secret, nor anywhere in the config
    assert not any("valueFrom" in variable for variable in container["env"])
    assert "bigtable-key" not in json.dumps(config)


def test_workload_identity_renders_the_annotated_service_account() -> None:
    spec = _table(WORKLOAD_IDENTITY, credentials_file="/var/run/operator/key.json")
    (account,) = service_account(TABLE, spec.google)
    assert account["kind"] == "ServiceAccount"
    assert account["metadata"]["name"] == "events-bigtable"
    assert account["metadata"]["annotations"] == {WORKLOAD_IDENTITY_ANNOTATION: GSA}
    assert account["metadata"]["ownerReferences"][0]["uid"] == "uid-9"
    config, deployment, *_ = render_api(TABLE, spec)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "events-bigtable"
    assert CREDENTIALS_ENV not in _env(pod["containers"][0])
    assert not any(v["name"] == "google-key" for v in pod["volumes"])
    # the operator's own key path is not the pods': they use the ServiceAccount's identity
    assert _events_settings(config).bigtable.credentials_file is None


def test_an_existing_service_account_is_named_not_rendered() -> None:
    spec = _table(EXISTING)
    assert service_account(TABLE, spec.google) == []
    _, deployment, *_ = render_api(TABLE, spec)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "bigtable-reader"
    named = _table({**EXISTING, **WORKLOAD_IDENTITY})
    (account,) = service_account(TABLE, named.google)
    assert account["metadata"]["name"] == "bigtable-reader"


def test_without_google_the_pods_are_unchanged() -> None:
    spec = _table(None)
    assert service_account(TABLE, spec.google) == []
    _, deployment, *_ = render_api(TABLE, spec)
    pod = deployment["spec"]["template"]["spec"]
    assert "serviceAccountName" not in pod
    assert CREDENTIALS_ENV not in _env(pod["containers"][0])


@pytest.mark.parametrize(
    ("google", "message"),
    [
        ({}, "one way"),
        ({**KEY, **EXISTING}, "one way"),
        ({"gcp_service_account": "not-an-email"}, "gcp_service_account"),
    ],
)
def test_refused_google_sections(google: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _table(google)


def test_google_is_for_bigtable_only() -> None:
    with pytest.raises(ValueError, match="google is for backend bigtable only"):
        BackendTableSpec.model_validate(
            {"backend": "cassandra", "cassandra": {}, "google": WORKLOAD_IDENTITY}
        )


def test_the_indexer_gets_the_sinks_credentials(tmp_path: Path) -> None:
    spec = IngestPipelineSpec.model_validate({**_sample("ingestpipeline-streaming.yaml"),
                                              "sink": "events"})  # fmt: skip
    config, deployment = render_pipeline(PIPELINE, spec, _table(KEY))
    path = tmp_path / "indexer.yaml"
    path.write_text(config["data"]["indexer.yaml"])
    settings = load_settings(IndexerSettings, config_file=path)
    assert settings.bigtable.credentials_file == f"{KEY_DIR}/sa.json"
    assert settings.bigtable.app_profile == "reads"
    pod = deployment["spec"]["template"]["spec"]
    assert _env(pod["containers"][0])[CREDENTIALS_ENV]["value"] == f"{KEY_DIR}/sa.json"
    assert any(v.get("secret", {}).get("secretName") == "bigtable-key" for v in pod["volumes"])
    _, identity = render_pipeline(PIPELINE, spec, _table(WORKLOAD_IDENTITY))
    assert identity["spec"]["template"]["spec"]["serviceAccountName"] == "events-bigtable"


def _batch() -> IngestPipelineSpec:
    return IngestPipelineSpec.model_validate({**_sample("ingestpipeline-batch.yaml"),
                                              "sink": "events"})  # fmt: skip


def test_spark_driver_and_executors_get_the_key_as_secret_files() -> None:
    (app,) = render_pipeline(PIPELINE, _batch(), _table(KEY))
    path = f"{KEY_DIR}/sa.json"
    for role in ("driver", "executor"):
        pod = app["spec"][role]
        assert {"name": "bigtable-key", "path": KEY_DIR, "secretType": "Generic"} in pod["secrets"]
        assert pod["envVars"][CREDENTIALS_ENV] == path
        assert pod["envVars"]["CHAINLOOM_BIGTABLE__CREDENTIALS_FILE"] == path
        assert pod["envVars"]["CHAINLOOM_BIGTABLE__APP_PROFILE"] == "reads"
    assert app["spec"]["driver"]["serviceAccount"] == "chainloom-spark"  # the sample's
    assert "serviceAccount" not in app["spec"]["executor"]


def test_spark_driver_and_executors_run_as_the_workload_identity() -> None:
    (app,) = render_pipeline(PIPELINE, _batch(), _table(WORKLOAD_IDENTITY))
    for role in ("driver", "executor"):
        pod = app["spec"][role]
        assert pod["serviceAccount"] == "events-bigtable"
        assert CREDENTIALS_ENV not in pod["envVars"]
        assert "CHAINLOOM_BIGTABLE__CREDENTIALS_FILE" not in pod["envVars"]
        assert "secrets" not in pod
