"""A BackendTable's ``spec.feed`` in the pods that announce (the ledger ETL, the indexer) and
hear (the ledger and events APIs), as data: the same Redis and channel on both sides, the
Secrets as files or a URL variable, nothing secret in a ConfigMap."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from chainloom.eventstore.config import EventStoreSettings
from chainloom.indexer.config import IndexerSettings
from chainloom.ledger.config import LedgerSettings
from chainloom.settings import ServiceSettings, load_settings
from chainloom_operator._render.api import render_api, secret_references
from chainloom_operator._render.common import Owner
from chainloom_operator._render.feed import FEED_DIR
from chainloom_operator._render.pipeline import render_pipeline
from chainloom_operator.models import BackendTableSpec, IngestPipelineSpec
from tests.conftest import REPO_ROOT

TABLE = Owner("BackendTable", "ledger", "data", "uid-9", 4)
PIPELINE = Owner("IngestPipeline", "xrpl-live", "data", "uid-7", 2)
SECURED = {
    "url": "rediss://redis-master.data:6380/0",
    "username": "ledger-feed",
    "password_ref": {"name": "ledger-feed-redis", "key": "password"},
    "tls": {"ca_ref": {"name": "redis-ca", "key": "ca.crt"}},
    "key_prefix": "prod",
}
FROM_SECRET = {"secret_ref": {"name": "feed-url", "key": "url"}}


def _sample(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docs/samples" / name).read_text())["spec"]
    return spec


def _ledger_table(feed: dict[str, Any] | None) -> BackendTableSpec:
    document = {**_sample("backendtable-cassandra.yaml"), "feed": feed}
    return BackendTableSpec.model_validate({k: v for k, v in document.items() if v is not None})


def _events_table(feed: dict[str, Any] | None) -> BackendTableSpec:
    document = {**_sample("backendtable-bigtable.yaml"), "api": {"image": "chainloom:dev"}}
    if feed is not None:
        document["feed"] = feed
    return BackendTableSpec.model_validate(document)


S = TypeVar("S", bound=ServiceSettings)


def _load(model: type[S], config: dict[str, Any], name: str, tmp_path: Path) -> S:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_text(config["data"][name])
    return load_settings(model, config_file=path)


def _pod(deployment: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _follow(sink: BackendTableSpec) -> list[dict[str, Any]]:
    spec = IngestPipelineSpec.model_validate(_sample("ingestpipeline-ledger-follow.yaml"))
    return render_pipeline(PIPELINE, spec, sink)


def test_the_ledger_api_and_etl_meet_on_one_channel(tmp_path: Path) -> None:
    sink = _ledger_table(SECURED)
    api_config, api_deployment, *_ = render_api(TABLE, sink)
    etl_config, etl_deployment = _follow(sink)
    api = _load(LedgerSettings, api_config, "ledger.yaml", tmp_path / "api")
    etl = _load(LedgerSettings, etl_config, "ledger.yaml", tmp_path / "etl")
    for loaded in (api, etl):
        redis = loaded.feed.redis
        assert redis is not None
        assert redis.url.get_secret_value() == "rediss://redis-master.data:6380/0"
        assert redis.username == "ledger-feed"
        assert redis.password_file == f"{FEED_DIR}/password"
        assert redis.tls.ca_file == f"{FEED_DIR}/ca.crt"
        assert loaded.feed.channel_name == "prod:ledger:committed"
    assert api.database.read_only
    assert not etl.database.read_only
    for deployment in (api_deployment, etl_deployment):
        pod = _pod(deployment)
        (volume,) = [v for v in pod["volumes"] if v["name"] == "feed-redis"]
        assert [s["secret"]["name"] for s in volume["projected"]["sources"]] == [
            "ledger-feed-redis", "redis-ca"]  # fmt: skip
        assert volume["projected"]["defaultMode"] == 0o440
        mounts = pod["containers"][0]["volumeMounts"]
        assert {"name": "feed-redis", "mountPath": FEED_DIR, "readOnly": True} in mounts
    assert ("ledger-feed-redis", "password", "feed Redis password") in secret_references(sink)


def test_a_url_from_a_secret_is_a_variable_not_in_the_config_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = _ledger_table(FROM_SECRET)
    api_config, api_deployment, *_ = render_api(TABLE, sink)
    etl_config, etl_deployment = _follow(sink)
    variable = {"name": "CHAINLOOM_FEED__REDIS__URL",
                "valueFrom": {"secretKeyRef": {"name": "feed-url", "key": "url"}}}  # fmt: skip
    for config, deployment in ((api_config, api_deployment), (etl_config, etl_deployment)):
        assert "url" not in yaml.safe_load(config["data"]["ledger.yaml"])["feed"]["redis"]
        assert variable in _pod(deployment)["containers"][0]["env"]
        assert not any(v["name"] == "feed-redis" for v in _pod(deployment)["volumes"])
        monkeypatch.setenv("CHAINLOOM_FEED__REDIS__URL", "redis://:pw@feed.data:6379/2")
        loaded = _load(LedgerSettings, config, "ledger.yaml", tmp_path / deployment["kind"])
        assert loaded.feed.redis is not None
        assert loaded.feed.redis.url.get_secret_value() == "redis://:pw@feed.data:6379/2"
    assert ("feed-url", "url", "feed Redis URL") in secret_references(sink)


def test_the_indexer_announces_where_the_events_api_listens(tmp_path: Path) -> None:
    sink = _events_table(SECURED)
    api_config, api_deployment, *_ = render_api(TABLE, sink)
    events = _load(EventStoreSettings, api_config, "events.yaml", tmp_path / "api")
    pipeline = IngestPipelineSpec.model_validate(_sample("ingestpipeline-streaming.yaml"))
    indexer_config, indexer_deployment = render_pipeline(PIPELINE, pipeline, sink)
    indexer = _load(IndexerSettings, indexer_config, "indexer.yaml", tmp_path / "ix")
    assert events.api.feed_redis is not None
    assert events.api.feed_redis == indexer.feed_redis
    assert events.api.feed_redis.key_prefix == "prod"  # channel prod:eventstore:vaas
    assert events.api.feed_redis.password_file == f"{FEED_DIR}/password"
    for deployment in (api_deployment, indexer_deployment):
        assert any(v["name"] == "feed-redis" for v in _pod(deployment)["volumes"])
    by_secret = _events_table(FROM_SECRET)
    _, api_deployment, *_ = render_api(TABLE, by_secret)
    _, indexer_deployment = render_pipeline(PIPELINE, pipeline, by_secret)
    api_env = {v["name"] for v in _pod(api_deployment)["containers"][0]["env"]}
    indexer_env = {v["name"] for v in _pod(indexer_deployment)["containers"][0]["env"]}
    assert "CHAINLOOM_API__FEED_REDIS__URL" in api_env
    assert "CHAINLOOM_FEED_REDIS__URL" in indexer_env


def test_without_a_feed_nothing_is_rendered(tmp_path: Path) -> None:
    sink = _ledger_table(None)
    api_config, api_deployment, *_ = render_api(TABLE, sink)
    assert _load(LedgerSettings, api_config, "ledger.yaml", tmp_path).feed.redis is None
    assert not any(v["name"] == "feed-redis" for v in _pod(api_deployment)["volumes"])
    events = _events_table(None)
    pipeline = IngestPipelineSpec.model_validate(_sample("ingestpipeline-streaming.yaml"))
    indexer_config, _ = render_pipeline(PIPELINE, pipeline, events)
    assert _load(IndexerSettings, indexer_config, "indexer.yaml", tmp_path).feed_redis is None


def test_a_feed_url_with_a_password_is_refused() -> None:
    with pytest.raises(ValueError, match="url"):
        _ledger_table({"url": "redis://:secret@feed.data:6379/0"})
