"""An IngestPipeline's spark-operator options -> the SparkApplication's v1beta2 fields, as data;
bad values refused with a message naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from chainloom_operator._handlers.shared import spec_of
from chainloom_operator._render.common import Owner
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator._render.spark_options import secret_references
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec

OWNER = Owner("IngestPipeline", "p", "data", "uid-1", 1)
SINK = BackendTableSpec.model_validate({"backend": "bigtable", "bigtable": {"table": "events"}})
NODE_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["spark"]}]}]}}  # fmt: skip
OPTIONS: dict[str, Any] = {
    "restart_policy": {"type": "OnFailure", "on_failure_retries": 3,
                       "on_failure_retry_interval": 10, "on_submission_failure_retries": 2,
                       "on_submission_failure_retry_interval": 20},
    "time_to_live_seconds": 3600,
    "dynamic_allocation": {"enabled": True, "initial_executors": 2, "min_executors": 1,
                           "max_executors": 6, "shuffle_tracking_enabled": True},
    "volumes": [
        {"name": "scratch", "mount_path": "/scratch", "empty_dir": {"medium": "Memory",
                                                                   "size_limit": "1Gi"}},
        {"name": "archive", "mount_path": "/archive", "read_only": True, "roles": ["executor"],
         "persistent_volume_claim": "vaa-archive"},
        {"name": "tls", "mount_path": "/etc/tls", "roles": ["driver"], "secret": "store-tls"},
    ],
    "secrets": {
        "files": [{"name": "bigtable-key", "path": "/var/run/gcp",
                   "secret_type": "GCPServiceAccount"}],
        "env": [{"name": "CHAINLOOM_CASSANDRA__PASSWORD",
                 "secret_ref": {"name": "cassandra", "key": "password"}}],
    },
    "driver_placement": {"node_selector": {"pool": "drivers"},
                         "tolerations": [{"key": "spark", "operator": "Exists",
                                          "effect": "NoSchedule"}]},
    "executor_placement": {"affinity": {"node_affinity": NODE_AFFINITY}},
    "priority_class_name": "batch-low",
    "batch_scheduler": {"name": "volcano", "queue": "ingest"},
    "start_deadline_seconds": 300,
}  # fmt: skip


def _batch(**options: Any) -> dict[str, Any]:
    return {"mode": "batch", "sink": "events",
            "batch": {"job": "vaa-ingest", "input": "/data/vaas", **options}}  # fmt: skip


def _application(spec: dict[str, Any]) -> dict[str, Any]:
    (rendered,) = render_pipeline(OWNER, IngestPipelineSpec.model_validate(spec), SINK)
    return rendered


def test_every_option_becomes_its_v1beta2_field() -> None:
    spec = _application(_batch(**OPTIONS))["spec"]
    assert spec["restartPolicy"] == {
        "type": "OnFailure", "onFailureRetries": 3, "onFailureRetryInterval": 10,
        "onSubmissionFailureRetries": 2, "onSubmissionFailureRetryInterval": 20,
    }  # fmt: skip
    assert spec["timeToLiveSeconds"] == 3600
    assert spec["dynamicAllocation"] == {"enabled": True, "initialExecutors": 2,
                                         "minExecutors": 1, "maxExecutors": 6,
                                         "shuffleTrackingEnabled": True}  # fmt: skip
    assert spec["volumes"] == [
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "archive",
         "persistentVolumeClaim": {"claimName": "vaa-archive", "readOnly": True}},
        {"name": "tls", "secret": {"secretName": "store-tls"}},
    ]  # fmt: skip
    assert spec["batchScheduler"] == "volcano"
    assert spec["batchSchedulerOptions"] == {"queue": "ingest"}
    driver, executor = spec["driver"], spec["executor"]
    assert [m["name"] for m in driver["volumeMounts"]] == ["scratch", "tls"]
    assert executor["volumeMounts"] == [
        {"name": "scratch", "mountPath": "/scratch", "readOnly": False},
        {"name": "archive", "mountPath": "/archive", "readOnly": True},
    ]
    for pod in (driver, executor):
        assert pod["secrets"] == [{"name": "bigtable-key", "path": "/var/run/gcp",
                                   "secretType": "GCPServiceAccount"}]  # fmt: skip
        assert pod["envSecretKeyRefs"] == {
            "CHAINLOOM_CASSANDRA__PASSWORD": {"name": "cassandra", "key": "password"}
        }
        assert pod["priorityClassName"] == "batch-low"
        assert pod["cores"] >= 1  # the sizes rendered by the spark manifest are kept
    assert driver["nodeSelector"] == {"pool": "drivers"}
    assert driver["tolerations"] == [{"key": "spark", "operator": "Exists",
                                      "effect": "NoSchedule"}]  # fmt: skip
    assert "affinity" not in driver
    assert executor["affinity"] == {"nodeAffinity": NODE_AFFINITY}
    assert "nodeSelector" not in executor
    assert "tolerations" not in executor


def test_no_option_keeps_the_plain_application() -> None:
    spec = _application(_batch())["spec"]
    assert spec["restartPolicy"] == {"type": "Never"}
    for field in ("timeToLiveSeconds", "dynamicAllocation", "volumes", "batchScheduler",
                  "batchSchedulerOptions"):  # fmt: skip
        assert field not in spec
    for role in ("driver", "executor"):
        for field in ("volumeMounts", "secrets", "nodeSelector", "tolerations", "affinity",
                      "priorityClassName"):  # fmt: skip
            assert field not in spec[role]


def test_a_schedule_carries_the_options_in_its_template() -> None:
    spec = _batch(**OPTIONS)
    spec["schedule"] = "0 2 * * *"
    template = _application(spec)["spec"]["template"]
    assert template["restartPolicy"]["type"] == "OnFailure"
    assert template["batchSchedulerOptions"] == {"queue": "ingest"}


def test_no_secret_value_is_rendered_only_references() -> None:
    batch = IngestPipelineSpec.model_validate(_batch(**OPTIONS)).batch
    assert batch is not None
    assert secret_references(batch) == [
        ("bigtable-key", "", "files at /var/run/gcp"),
        ("cassandra", "password", "variable CHAINLOOM_CASSANDRA__PASSWORD"),
        ("store-tls", "", "volume tls"),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"restart_policy": {"type": "Never", "on_failure_retries": 3}},
         r"spec\.batch\.restart_policy: .*need type OnFailure or Always"),
        ({"restart_policy": {"type": "Sometimes"}}, r"spec\.batch\.restart_policy\.type"),
        ({"restart_policy": {"type": "OnFailure", "on_failure_retry_interval": 0}},
         r"spec\.batch\.restart_policy\.on_failure_retry_interval"),
        ({"time_to_live_seconds": 0}, r"spec\.batch\.time_to_live_seconds"),
        ({"dynamic_allocation": {"enabled": True, "min_executors": 5, "max_executors": 2}},
         r"spec\.batch\.dynamic_allocation: .*min_executors must not exceed max_executors"),
        ({"dynamic_allocation": {"enabled": True, "initial_executors": 9, "max_executors": 2}},
         r"spec\.batch\.dynamic_allocation: .*initial_executors must lie between"),
        ({"volumes": [{"name": "a", "mount_path": "/a", "secret": "s", "config_map": "c"}]},
         r"spec\.batch\.volumes\[0\]: .*exactly one of secret, config_map"),
        ({"volumes": [{"name": "a", "mount_path": "relative", "empty_dir": {}}]},
         r"spec\.batch\.volumes\[0\]\.mount_path"),
        ({"volumes": [{"name": "a", "mount_path": "/a", "empty_dir": {}}] * 2},
         r"spec\.batch: .*volume names must be unique"),
        ({"secrets": {"env": [{"name": "1X", "secret_ref": {"name": "s"}}]}},
         r"spec\.batch\.secrets\.env\[0\]\.name"),
        ({"secrets": {"env": [{"name": "X", "value": "hunter2"}]}},
         r"spec\.batch\.secrets\.env\[0\]"),
        ({"secrets": {"env": [{"name": "X", "secret_ref": {"name": "s"}}]},
          "resources": {"env": {"X": "1"}}},
         r"spec\.batch: .*given twice \(or also in resources\.env\)"),
        ({"priority_class_name": "Bad_Name"}, r"spec\.batch\.priority_class_name"),
        ({"batch_scheduler": {"queue": "q"}}, r"spec\.batch\.batch_scheduler\.name"),
        ({"driver_placement": {"affinity": {"nodeAffinity": {}}}},
         r"spec\.batch\.driver_placement\.affinity\.nodeAffinity"),
        ({"start_deadline_seconds": 0}, r"spec\.batch\.start_deadline_seconds"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_field(options: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        spec_of(IngestPipelineSpec, _batch(**options))
