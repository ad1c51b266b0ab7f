"""The spec models: fields copied from the settings models stay identical, samples validate,
and the CEL rules the CRDs declare are enforced by the models too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from chainloom.eventstore.config import EventStoreSettings
from chainloom.indexer.config import IndexerSettings
from chainloom.relayer.config import RelayerSettings, RelayRedisSettings, RestSettings
from chainloom_operator import models
from chainloom_spark.jobs import JOBS
from chainloom_spark.settings import KubernetesSettings
from tests.conftest import REPO_ROOT

SAMPLES = REPO_ROOT / "docs" / "samples"

# spec model -> (settings model the fields are copied from, the copied field names)
COPIED: list[tuple[type[BaseModel], type[BaseModel], tuple[str, ...]]] = [
    (models.RedisRef, RelayRedisSettings, ("key_prefix",)),
    (models.RelayValidation, RelayerSettings,
     ("guardian_sets", "known_emitters", "tokens", "payload3")),
    (models.ListenerRest, RestSettings,
     ("enabled", "max_request_bytes", "header_timeout", "body_timeout")),
    (models.ListenerSpec, RelayerSettings,
     ("spy_buffer", "spy_overflow", "intake_threads", "redeem_check")),
    (models.RelayerPoolSpec, RelayerSettings, ("spy_address", "worker")),
    (models.SparkResources, KubernetesSettings, tuple(models.SparkResources.model_fields)),
    (models.BatchSpec, EventStoreSettings, ("guardian_sets",)),
    (models.StreamingSpec, IndexerSettings,
     ("spy", "guardian_sets", "buffer", "batch", "dedupe_window", "drain_timeout")),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "source", "names"), COPIED)
def test_copied_fields_match_the_settings_models(
    spec: type[BaseModel], source: type[BaseModel], names: tuple[str, ...]
) -> None:
    for name in names:
        mine, theirs = spec.model_fields[name], source.model_fields[name]
        assert mine.annotation == theirs.annotation, name
        assert mine.description == theirs.description, name
        assert mine.get_default(call_default_factory=True) == theirs.get_default(
            call_default_factory=True
        ), name
        assert repr(mine.metadata) == repr(theirs.metadata), name


def test_batch_jobs_are_the_spark_jobs() -> None:
    assert models.BatchSpec.model_fields["job"].annotation.__args__ == tuple(JOBS)  # type: ignore[union-attr]


def _samples() -> list[Path]:
    return sorted(SAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", _samples(), ids=lambda p: p.name)
def test_samples_validate(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    spec_model, _ = models.SPECS[document["kind"]]
    spec_model.model_validate(document["spec"])


def _pool(**changes: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "redis": {"url": "redis://redis:6379/0"},
        "chains": [{"chain": "ethereum", "wallets": [{"name": "a", "secret_ref": {"name": "s"}}]}],
    }
    return spec | changes


@pytest.mark.parametrize(
    ("model", "spec", "message"),
    [
        (models.RelayerPoolSpec, _pool(chains=[{"chain": 2, "wallets": []}]),
         "every chain needs at least one wallet"),
        (models.RelayerPoolSpec, _pool(redis={}), "give exactly one of redis.url"),
        (models.RelayerPoolSpec,
         _pool(redis={"url": "redis://r:1/0", "secret_ref": {"name": "x"}}),
         "give exactly one of redis.url"),
        (models.RelayerPoolSpec, _pool(redis={"url": "redis://:pw@r:1/0"}), "should match"),
        (models.RelayerPoolSpec,
         _pool(chains=[{"chain": 2, "wallets": [{"name": "a", "secret_ref": {"name": "s"}}] * 2}]),
         "wallet names must be unique"),
        (models.RelayerPoolSpec,
         _pool(chains=[{"chain": c, "wallets": [{"name": "a", "secret_ref": {"name": "s"}}]}
                       for c in ("ethereum", 2)]),
         "a chain may be listed only once"),
        (models.IngestPipelineSpec,
         {"mode": "streaming", "sink": "e", "schedule": "* * * * *",
          "streaming": {"spy": {"address": "spy:7073"}}},
         "schedule is only for batch jobs"),
        (models.IngestPipelineSpec,
         {"mode": "batch", "sink": "e", "batch": {"job": "vaa-ingest"}},
         "input is required for vaa-ingest, ledger-load and enrich"),
        (models.IngestPipelineSpec, {"mode": "batch", "sink": "e"}, "give batch for mode batch"),
        (models.BackendTableSpec, {"backend": "bigtable"}, "give bigtable for backend bigtable"),
    ],
)  # fmt: skip
def test_rules_refuse(model: type[BaseModel], spec: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        model.model_validate(spec)


def test_defaults_come_from_the_settings_models() -> None:
    spec = models.RelayerPoolSpec.model_validate(_pool())
    assert spec.worker == RelayerSettings().worker
    assert spec.redis.key_prefix == RelayerSettings().redis.key_prefix
    assert spec.chains[0].chain == 2
