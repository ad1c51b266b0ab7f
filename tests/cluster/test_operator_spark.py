"""The operator and the spark-operator's real CRDs (v2.5.0) on the real API server: the options an
IngestPipeline passes through survive the SparkApplication schema; the pipeline's status mirrors
the states, attempts and executors the spark-operator writes, for one-off and scheduled runs;
SubmissionDelayed past the start deadline (a condition and a Warning event); a missing Secret
named before anything is rendered.

No spark-operator controller runs here: each test writes the application's status through its
status subresource as the controller would (field names from its v1beta2 types), which tests the
operator's side only. The run through the real controller is ``test_node_spark``'s.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.operator_support import (
    OperatorProcess,
    chainloom_crds,
    kubectl,
    kubectl_json,
    spark_crds,
    start_operator,
    wait_for,
)

__all__ = ["chainloom_crds", "spark_crds"]

SAMPLES = REPO_ROOT / "docs" / "samples"
APPS = "sparkapplication"
SCHEDULES = "scheduledsparkapplication"


@pytest.fixture
def operator(
    spark_crds: str, kube_namespace: str, tmp_path: Path, bigtable_emulator: str
) -> Iterator[OperatorProcess]:
    running = start_operator(spark_crds, kube_namespace, tmp_path / "operator.log",
                             env={"BIGTABLE_EMULATOR_HOST": bigtable_emulator})  # fmt: skip
    table = yaml.safe_load((SAMPLES / "backendtable-bigtable.yaml").read_text())
    table["spec"]["bigtable"]["table"] = f"events-{kube_namespace}"
    _apply(spark_crds, kube_namespace, table)
    yield running
    running.stop()


def _apply(kubeconfig: str, namespace: str, document: dict[str, Any]) -> None:
    kubectl(kubeconfig, "-n", namespace, "apply", "--server-side", "-f", "-",
            stdin=yaml.safe_dump(document))  # fmt: skip


def _now(offset: float = 0) -> str:
    moment = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=offset)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pipeline(name: str, **batch: Any) -> dict[str, Any]:
    return {
        "apiVersion": "chainloom.io/v1alpha1",
        "kind": "IngestPipeline",
        "metadata": {"name": name},
        "spec": {"mode": "batch", "sink": "events",
                 "batch": {"job": "vaa-ingest", "input": "/data/vaas", **batch}},
    }  # fmt: skip


def _write_status(kubeconfig: str, namespace: str, kind: str, name: str,
                  status: dict[str, Any]) -> None:  # fmt: skip
    """What the spark-operator controller does: the whole status written through the status
    subresource (an update: what ``status`` leaves out is gone)."""
    patch = [{"op": "add", "path": "/status", "value": status}]
    kubectl(kubeconfig, "-n", namespace, "patch", kind, name, "--subresource=status",
            "--type=json", "-p", json.dumps(patch))  # fmt: skip


def _status(kubeconfig: str, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl_json(kubeconfig, "-n", namespace, "get", "ipl", name)
    return found.get("status") or {}


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


def _submission(attempt: int, state: str, submission: str, error: str = "", **more: Any
                ) -> dict[str, Any]:  # fmt: skip
    """An application's status as the spark-operator writes it for one submission."""
    application_state = {"state": state, **({"errorMessage": error} if error else {})}
    return {"applicationState": application_state, "submissionID": submission,
            "submissionAttempts": attempt, "executionAttempts": attempt,
            "lastSubmissionAttemptTime": _now(), "driverInfo": {"podName": "p-driver"},
            **more}  # fmt: skip


def test_options_survive_the_spark_operators_schema(
    operator: OperatorProcess, kube_namespace: str, spark_crds: str
) -> None:
    kubeconfig, namespace = spark_crds, kube_namespace
    for secret in ("bigtable-key", "cassandra"):
        kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", secret,
                "--from-literal=password=s3cr3t-value")  # fmt: skip
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["spark"]}]}]}}}  # fmt: skip
    options = {
        "restart_policy": {"type": "OnFailure", "on_failure_retries": 2,
                           "on_failure_retry_interval": 5, "on_submission_failure_retries": 1,
                           "on_submission_failure_retry_interval": 7},
        "time_to_live_seconds": 600,
        "dynamic_allocation": {"enabled": True, "min_executors": 1, "max_executors": 4,
                               "initial_executors": 2, "shuffle_tracking_enabled": True},
        "volumes": [{"name": "scratch", "mount_path": "/scratch", "empty_dir": {}},
                    {"name": "conf", "mount_path": "/etc/extra", "roles": ["driver"],
                     "config_map": "extra"}],
        "secrets": {"files": [{"name": "bigtable-key", "path": "/var/run/gcp",
                               "secret_type": "GCPServiceAccount"}],
                    "env": [{"name": "CHAINLOOM_CASSANDRA__PASSWORD",
                             "secret_ref": {"name": "cassandra", "key": "password"}}]},
        "driver_placement": {"node_selector": {"pool": "drivers"},
                             "tolerations": [{"key": "spark", "operator": "Exists"}]},
        "executor_placement": {"affinity": {"node_affinity": affinity["nodeAffinity"]}},
        "priority_class_name": "batch-low",
        "batch_scheduler": {"name": "volcano", "queue": "ingest"},
    }  # fmt: skip
    _apply(kubeconfig, namespace, _pipeline("p", **options))
    found = wait_for(
        lambda: kubectl(kubeconfig, "-n", namespace, "get", APPS, "p", "-o", "json",
                        check=False).stdout or None,
        what="the SparkApplication")  # fmt: skip
    # What the API server kept (it prunes fields its schema does not know).
    spec = json.loads(found)["spec"]
    assert spec["restartPolicy"] == {"type": "OnFailure", "onFailureRetries": 2,
                                     "onFailureRetryInterval": 5,
                                     "onSubmissionFailureRetries": 1,
                                     "onSubmissionFailureRetryInterval": 7}  # fmt: skip
    assert spec["timeToLiveSeconds"] == 600
    assert spec["dynamicAllocation"] == {"enabled": True, "minExecutors": 1, "maxExecutors": 4,
                                         "initialExecutors": 2,
                                         "shuffleTrackingEnabled": True}  # fmt: skip
    assert spec["volumes"] == [{"name": "scratch", "emptyDir": {}},
                               {"name": "conf", "configMap": {"name": "extra"}}]  # fmt: skip
    assert (spec["batchScheduler"], spec["batchSchedulerOptions"]) == (
        "volcano",
        {"queue": "ingest"},
    )
    driver, executor = spec["driver"], spec["executor"]
    assert [m["mountPath"] for m in driver["volumeMounts"]] == ["/scratch", "/etc/extra"]
    assert [m["mountPath"] for m in executor["volumeMounts"]] == ["/scratch"]
    for pod in (driver, executor):
        assert pod["secrets"] == [{"name": "bigtable-key", "path": "/var/run/gcp",
                                   "secretType": "GCPServiceAccount"}]  # fmt: skip
        assert pod["envSecretKeyRefs"] == {
            "CHAINLOOM_CASSANDRA__PASSWORD": {"name": "cassandra", "key": "password"}
        }
        assert pod["priorityClassName"] == "batch-low"
    assert driver["nodeSelector"] == {"pool": "drivers"}
    assert driver["tolerations"] == [{"key": "spark", "operator": "Exists"}]
    assert executor["affinity"] == affinity
    assert "s3cr3t-value" not in found


def test_states_attempts_and_executors_are_mirrored(
    operator: OperatorProcess, kube_namespace: str, spark_crds: str
) -> None:
    kubeconfig, namespace = spark_crds, kube_namespace
    _apply(
        kubeconfig,
        namespace,
        _pipeline("p", restart_policy={"type": "OnFailure", "on_failure_retries": 3}),
    )
    wait_for(lambda: kubectl(kubeconfig, "-n", namespace, "get", APPS, "p",
                             check=False).returncode == 0, what="the SparkApplication")  # fmt: skip

    def mirrored(**expected: Any) -> dict[str, Any] | None:
        status = _status(kubeconfig, namespace, "p")
        return status if all(status.get(k) == v for k, v in expected.items()) else None

    # The first submission runs with two executors, then its driver is lost.
    _write_status(kubeconfig, namespace, APPS, "p", _submission(1, "SUBMITTED", "s1"))
    wait_for(lambda: mirrored(state="SUBMITTED"), what="SUBMITTED mirrored")
    _write_status(
        kubeconfig,
        namespace,
        APPS,
        "p",
        _submission(
            1, "RUNNING", "s1", executorState={"p-exec-1": "RUNNING", "p-exec-2": "RUNNING"}
        ),
    )
    running = wait_for(lambda: mirrored(state="RUNNING"), what="RUNNING mirrored")
    assert running["executorState"] == {"p-exec-1": "RUNNING", "p-exec-2": "RUNNING"}
    assert running["driverPod"] == "p-driver"
    assert _condition(running, "Progressing")["status"] == "True"
    _write_status(kubeconfig, namespace, APPS, "p", _submission(
        1, "FAILING", "s1", error="driver pod p-driver deleted",
        executorState={"p-exec-1": "FAILED", "p-exec-2": "FAILED"}))  # fmt: skip
    wait_for(lambda: mirrored(state="FAILING"), what="FAILING mirrored")
    # restartPolicy OnFailure: the spark-operator submits again, with a new submission id.
    _write_status(kubeconfig, namespace, APPS, "p", _submission(
        2, "RUNNING", "s2", executorState={"p-exec-3": "RUNNING"}))  # fmt: skip
    again = wait_for(lambda: mirrored(state="RUNNING", executionAttempts=2),
                     what="the second attempt mirrored")  # fmt: skip
    assert again["executorState"] == {"p-exec-3": "RUNNING"}  # the first run's are gone
    _write_status(kubeconfig, namespace, APPS, "p", _submission(
        2, "COMPLETED", "s2", terminationTime=_now()))  # fmt: skip
    done = wait_for(lambda: mirrored(state="COMPLETED"), what="COMPLETED mirrored")
    assert _condition(done, "Ready")["status"] == "True"
    assert [(a["number"], a["submissionId"], a["state"]) for a in done["attempts"]] == [
        (1, "s1", "FAILING"), (2, "s2", "COMPLETED")]  # fmt: skip
    assert done["attempts"][0]["message"] == "driver pod p-driver deleted"
    assert done["attempts"][1]["terminated"]
    assert (done["submissionAttempts"], done["executionAttempts"]) == (2, 2)


def test_a_schedules_runs_are_mirrored(
    operator: OperatorProcess, kube_namespace: str, spark_crds: str
) -> None:
    kubeconfig, namespace = spark_crds, kube_namespace
    pipeline = _pipeline("nightly")
    pipeline["spec"]["schedule"] = "0 2 * * *"
    _apply(kubeconfig, namespace, pipeline)
    schedule = wait_for(
        lambda: kubectl(kubeconfig, "-n", namespace, "get", SCHEDULES, "nightly", "-o", "json",
                        check=False).stdout or None,
        what="the ScheduledSparkApplication")  # fmt: skip
    found = json.loads(schedule)
    # The spark-operator's run: the template, the schedule's labels, the schedule as owner.
    run = {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {
            "name": "nightly-1764208800",
            "labels": {**found["metadata"]["labels"],
                       "sparkoperator.k8s.io/scheduled-app-name": "nightly"},
            "ownerReferences": [{"apiVersion": "sparkoperator.k8s.io/v1beta2",
                                 "kind": "ScheduledSparkApplication", "name": "nightly",
                                 "uid": found["metadata"]["uid"], "controller": True}],
        },
        "spec": found["spec"]["template"],
    }  # fmt: skip
    _apply(kubeconfig, namespace, run)
    _write_status(kubeconfig, namespace, SCHEDULES, "nightly", {
        "scheduleState": "Scheduled", "lastRun": _now(), "nextRun": _now(86400),
        "lastRunName": "nightly-1764208800"})  # fmt: skip
    _write_status(kubeconfig, namespace, APPS, "nightly-1764208800",
                  _submission(1, "RUNNING", "r1"))  # fmt: skip

    def run_state(expected: str) -> dict[str, Any] | None:
        status = _status(kubeconfig, namespace, "nightly")
        return status if (status.get("schedule") or {}).get("lastRunState") == expected else None

    # The run changes alone (the schedule's status stays): its own watch brings it.
    status = wait_for(lambda: run_state("RUNNING"), what="the run's RUNNING mirrored")
    assert (status["state"], status["lastRun"]) == ("Scheduled", "nightly-1764208800")
    assert status["schedule"]["lastRunName"] == "nightly-1764208800"
    assert status["schedule"]["nextRun"]
    _write_status(kubeconfig, namespace, APPS, "nightly-1764208800",
                  _submission(1, "COMPLETED", "r1"))  # fmt: skip
    done = wait_for(lambda: run_state("COMPLETED"), what="the run's COMPLETED mirrored")
    assert [(a["application"], a["state"]) for a in done["attempts"]] == [
        ("nightly-1764208800", "COMPLETED")]  # fmt: skip


def test_a_run_waiting_past_its_start_deadline_is_reported(
    operator: OperatorProcess, kube_namespace: str, spark_crds: str
) -> None:
    kubeconfig, namespace = spark_crds, kube_namespace
    _apply(kubeconfig, namespace, _pipeline("slow", start_deadline_seconds=4))
    wait_for(lambda: kubectl(kubeconfig, "-n", namespace, "get", APPS, "slow",
                             check=False).returncode == 0, what="the SparkApplication")  # fmt: skip
    _write_status(kubeconfig, namespace, APPS, "slow", _submission(1, "SUBMITTED", "s1"))
    within = wait_for(
        lambda: (c := _condition(_status(kubeconfig, namespace, "slow"), "SubmissionDelayed"))
        .get("reason") == "WithinDeadline" and c,
        what="SubmissionDelayed False within the deadline")  # fmt: skip
    assert within["status"] == "False"
    # Nothing changes: the operator notices the deadline pass by itself.
    delayed = wait_for(
        lambda: (c := _condition(_status(kubeconfig, namespace, "slow"), "SubmissionDelayed"))
        .get("status") == "True" and c,
        timeout=30, what="SubmissionDelayed True past the deadline")  # fmt: skip
    assert delayed["reason"] == "StartDeadlineExceeded"
    assert "start_deadline_seconds 4" in delayed["message"]

    def warned() -> dict[str, Any] | None:
        events = kubectl_json(kubeconfig, "-n", namespace, "get", "events", "--field-selector",
                              "reason=StartDeadlineExceeded")["items"]  # fmt: skip
        return events[0] if events else None

    event = wait_for(warned, what="a StartDeadlineExceeded event")
    assert event["type"] == "Warning"
    assert (event["involvedObject"]["kind"], event["involvedObject"]["name"]) == (
        "IngestPipeline", "slow")  # fmt: skip
    # The driver starts: the condition clears, no second event.
    _write_status(kubeconfig, namespace, APPS, "slow", _submission(1, "RUNNING", "s1"))
    wait_for(lambda: _condition(_status(kubeconfig, namespace, "slow"), "SubmissionDelayed")
             .get("reason") == "DriverStarted", what="SubmissionDelayed cleared")  # fmt: skip
    events = kubectl_json(kubeconfig, "-n", namespace, "get", "events", "--field-selector",
                          "reason=StartDeadlineExceeded")["items"]  # fmt: skip
    assert len(events) == 1


def test_a_missing_secret_is_named_before_anything_is_rendered(
    operator: OperatorProcess, kube_namespace: str, spark_crds: str
) -> None:
    kubeconfig, namespace = spark_crds, kube_namespace
    secrets = {"env": [{"name": "CHAINLOOM_CASSANDRA__PASSWORD",
                        "secret_ref": {"name": "cassandra-creds", "key": "password"}}]}  # fmt: skip
    _apply(kubeconfig, namespace, _pipeline("creds", secrets=secrets))
    degraded = wait_for(
        lambda: (c := _condition(_status(kubeconfig, namespace, "creds"), "Degraded"))
        .get("status") == "True" and c,
        what="Degraded")  # fmt: skip
    assert degraded["reason"] == "MissingSecret"
    assert f"Secret {namespace}/cassandra-creds" in degraded["message"]
    assert "variable CHAINLOOM_CASSANDRA__PASSWORD" in degraded["message"]
    assert kubectl(kubeconfig, "-n", namespace, "get", APPS, "creds", check=False).returncode
    kubectl(kubeconfig, "-n", namespace, "create", "secret", "generic", "cassandra-creds",
            "--from-literal=password=pw")  # fmt: skip
    wait_for(lambda: kubectl(kubeconfig, "-n", namespace, "get", APPS, "creds",
                             check=False).returncode == 0,
             timeout=60, what="the SparkApplication once the Secret exists")  # fmt: skip
