"""Status computation from observed children (pure)."""

from __future__ import annotations

from typing import Any

from chainloom_operator._render.status import (
    ConditionType,
    Failure,
    Verdict,
    conditions,
    driver_pod_name,
    driver_summary,
    last_run_name,
    low_balance_verdict,
    pipeline_status,
    previous_verdict,
    relayer_pool_status,
    summary_patch,
    table_status,
)
from chainloom_operator.models import Drift, IngestPipelineSpec, RelayerPoolSpec

POOL = RelayerPoolSpec.model_validate(
    {
        "redis": {"url": "redis://r:6379/0"},
        "chains": [{"chain": 2, "wallets": [{"name": "a", "secret_ref": {"name": "s"}}]}],
    }
)


def _deployment(
    component: str, available: int, *, chain: str = "", wallet: str = ""
) -> dict[str, Any]:
    labels = {"app.kubernetes.io/component": component}
    if chain:
        labels |= {"chainloom.io/chain": chain, "chainloom.io/wallet": wallet}
    return {
        "metadata": {"labels": labels, "generation": 2},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": 2, "updatedReplicas": available,
                   "availableReplicas": available},
    }  # fmt: skip


def _by_type(found: Any) -> dict[str, Any]:
    return {c.type: c for c in found.conditions}


def test_pool_ready_when_every_deployment_is_available() -> None:
    deployments = [_deployment("relayer-listener", 1),
                   _deployment("relayer-worker", 1, chain="2", wallet="a")]  # fmt: skip
    status = relayer_pool_status(POOL, deployments, generation=4, previous=[], now="T1")
    found = _by_type(status)
    assert found["Ready"].status == "True"
    assert found["Ready"].observed_generation == 4
    assert found["Progressing"].status == "False"
    assert found["Degraded"].status == "False"
    assert status.ready_workers == "1/1"
    assert status.model_dump(by_alias=True)["readyWorkers"] == "1/1"


def test_pool_waits_for_a_worker() -> None:
    deployments = [_deployment("relayer-listener", 1),
                   _deployment("relayer-worker", 0, chain="2", wallet="a")]  # fmt: skip
    found = _by_type(relayer_pool_status(POOL, deployments, generation=1, previous=[], now="T"))
    assert found["Ready"].status == "False"
    assert "workers 2/a" in found["Ready"].message
    assert found["Progressing"].status == "True"


def test_failure_is_degraded_with_its_reason() -> None:
    failure = Failure("MissingSecret", "Secret ns/s (wallet a) does not exist")
    found = _by_type(relayer_pool_status(POOL, [], generation=1, previous=[], now="T",
                                         failure=failure))  # fmt: skip
    assert (found["Degraded"].status, found["Degraded"].reason) == ("True", "MissingSecret")
    assert found["Ready"].status == "False"


def test_transition_time_kept_while_status_is_unchanged() -> None:
    verdicts: dict[ConditionType, Verdict] = {
        "Ready": Verdict("True", "A"),
        "Progressing": Verdict("False", "A"),
        "Degraded": Verdict("False", "A"),
    }
    first = conditions(verdicts, 1, [], "T1")
    previous = [c.model_dump(by_alias=True) for c in first]
    verdicts["Degraded"] = Verdict("True", "B")
    second = {c.type: c for c in conditions(verdicts, 2, previous, "T2")}
    assert second["Ready"].last_transition_time == "T1"
    assert second["Degraded"].last_transition_time == "T2"


BATCH = IngestPipelineSpec.model_validate(
    {"mode": "batch", "sink": "e", "batch": {"job": "vaa-ingest", "input": "x"}}
)


def test_pipeline_without_controller_says_so() -> None:
    child = {"metadata": {"name": "p"}}
    status = pipeline_status(BATCH, child, generation=1, previous=[], now="T", namespace="data")
    ready = _by_type(status)["Ready"]
    assert ready.reason == "AwaitingSparkOperator"
    assert "spark-operator" in ready.message
    assert "spark.jobNamespaces={data}" in ready.message


def test_pipeline_mirrors_the_application_state() -> None:
    state = {"state": "FAILED", "errorMessage": "driver OOM"}
    child = {"metadata": {"name": "p"}, "status": {"applicationState": state}}
    status = pipeline_status(BATCH, child, generation=1, previous=[], now="T", namespace="d")
    found = _by_type(status)
    assert status.state == "FAILED"
    assert (found["Degraded"].status, found["Degraded"].message) == ("True", "driver OOM")
    done = {"metadata": {"name": "p"}, "status": {"applicationState": {"state": "COMPLETED"}}}
    assert _by_type(pipeline_status(BATCH, done, generation=1, previous=[], now="T",
                                    namespace="d"))["Ready"].status == "True"  # fmt: skip


def test_table_drift_is_reported_not_hidden() -> None:
    drift = [Drift(table="t", item="f", problem="gc_rule", expected="max_versions=1",
                   actual="max_versions=5")]  # fmt: skip
    status = table_status(["t", "t-index"], [], drift, generation=1, previous=[], now="T")
    found = _by_type(status)
    assert found["Ready"].status == "True"
    assert (found["Degraded"].status, found["Degraded"].reason) == ("True", "Drifted")
    assert status.model_dump(by_alias=True)["drift"][0]["problem"] == "gc_rule"


def _driver_pod(message: str | None, container: str = "spark-kubernetes-driver") -> dict[str, Any]:
    terminated = {"exitCode": 0, **({"message": message} if message is not None else {})}
    return {"status": {"containerStatuses": [
        {"name": "istio-proxy", "state": {"terminated": {"message": "not json"}}},
        {"name": container, "state": {"terminated": terminated}},
    ]}}  # fmt: skip


def test_the_driver_pod_is_read_only_once_the_application_finished() -> None:
    running = {"status": {"applicationState": {"state": "RUNNING"},
                          "driverInfo": {"podName": "p-driver"}}}  # fmt: skip
    assert driver_pod_name(running) == ""
    assert driver_pod_name(None) == ""
    done = {"status": {"applicationState": {"state": "COMPLETED"},
                       "driverInfo": {"podName": "p-driver"}}}  # fmt: skip
    assert driver_pod_name(done) == "p-driver"
    failed = {"status": {"applicationState": {"state": "FAILED"}, "driverInfo": {}}}
    assert driver_pod_name(failed) == ""


def test_driver_summary_takes_the_counts_of_the_driver_containers_message() -> None:
    message = '{"job":"vaa-ingest","read":12,"new":10,"refused":2,"per_chain":{"x":{"new":1}}}'
    assert driver_summary(_driver_pod(message)) == {"read": 12, "new": 10, "refused": 2}
    assert driver_summary(_driver_pod(None)) == {}
    assert driver_summary(_driver_pod("Exception in thread main")) == {}  # a log tail
    assert driver_summary(_driver_pod("[1, 2]")) == {}
    assert driver_summary(_driver_pod('{"ok": true, "n": 1}')) == {"n": 1}
    assert driver_summary(None) == {}


def test_pipeline_status_carries_the_summary_only_when_finished() -> None:
    counts = {"read": 12, "new": 10}
    running = {"metadata": {"name": "p"}, "status": {"applicationState": {"state": "RUNNING"}}}
    status = pipeline_status(BATCH, running, generation=1, previous=[], now="T", namespace="d",
                             summary=counts)  # fmt: skip
    assert status.summary == {}
    done = {"metadata": {"name": "p"}, "status": {"applicationState": {"state": "COMPLETED"}}}
    status = pipeline_status(BATCH, done, generation=1, previous=[], now="T", namespace="d",
                             summary=counts)  # fmt: skip
    assert status.summary == counts
    assert status.model_dump(mode="json", by_alias=True)["summary"] == counts


def test_a_rerun_clears_the_last_runs_counts_in_the_merge_patch() -> None:
    assert summary_patch({"read": 3, "new": 2}, {}) == {"read": None, "new": None}
    assert summary_patch({"read": 3, "new": 2}, {"read": 5}) == {"read": 5, "new": None}
    assert summary_patch({}, {"read": 5}) == {"read": 5}


SCHEDULED = IngestPipelineSpec.model_validate(
    {"mode": "batch", "sink": "e", "schedule": "0 2 * * *",
     "batch": {"job": "vaa-ingest", "input": "x"}}
)  # fmt: skip


def test_a_schedules_last_run_is_the_name_the_spark_operator_records() -> None:
    assert last_run_name(None) == ""
    assert last_run_name({"status": {"scheduleState": "Scheduled"}}) == ""
    schedule = {"status": {"scheduleState": "Scheduled", "lastRunName": "p-1732400000000000000"}}
    assert last_run_name(schedule) == "p-1732400000000000000"


def test_a_schedules_status_carries_its_last_runs_summary() -> None:
    counts = {"read": 7, "new": 7}
    before = {"metadata": {"name": "p"}, "status": {"scheduleState": "Scheduled"}}
    status = pipeline_status(SCHEDULED, before, generation=1, previous=[], now="T",
                             namespace="d", summary=counts)  # fmt: skip
    assert status.summary == {}  # no run yet: nothing to show
    after = {"metadata": {"name": "p"},
             "status": {"scheduleState": "Scheduled", "lastRunName": "p-1"}}  # fmt: skip
    status = pipeline_status(SCHEDULED, after, generation=1, previous=[], now="T",
                             namespace="d", summary=counts)  # fmt: skip
    assert (status.state, status.last_run, status.summary) == ("Scheduled", "p-1", counts)


def test_low_balance_names_each_wallet_under_its_chains_minimum() -> None:
    spec = RelayerPoolSpec.model_validate(
        {
            "redis": {"url": "redis://r:6379/0"},
            "chains": [
                {
                    "chain": 2,
                    "min_balance": "1000",
                    "wallets": [{"name": "a", "secret_ref": {"name": "s"}}],
                },
                {"chain": 4, "wallets": [{"name": "b", "secret_ref": {"name": "t"}}]},
            ],
        }
    )
    balances = {(2, "0xA"): 999, (2, "0xB"): 1000, (4, "0xC"): 0}
    low = low_balance_verdict(spec, balances)
    assert low == Verdict(
        "True", "BalanceBelowMinimum", "0xA on chain 2 holds 999 (minBalance 1000)"
    )
    assert low_balance_verdict(spec, {(2, "0xA"): 5000}) == Verdict(
        "False", "BalancesAboveMinimum", "every published wallet balance is enough"
    )
    assert low_balance_verdict(POOL, balances) is None  # no chain sets a minimum: no condition


def test_a_low_balance_verdict_is_a_condition_of_the_pool_and_carried_over() -> None:
    verdict = Verdict("True", "BalanceBelowMinimum", "0xA on chain 2 holds 1 (minBalance 2)")
    status = relayer_pool_status(POOL, [], generation=1, previous=[], now="t0", low_balance=verdict)
    dumped = [c.model_dump(mode="json", by_alias=True) for c in status.conditions]
    [low] = [c for c in dumped if c["type"] == "LowBalance"]
    assert (low["status"], low["reason"]) == ("True", "BalanceBelowMinimum")
    assert previous_verdict(dumped, "LowBalance") == verdict
    assert previous_verdict(dumped[:1], "LowBalance") is None
