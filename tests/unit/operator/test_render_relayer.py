"""RelayerPool -> manifests, as data."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.relayer.config import RelayerSettings
from chainloom.settings import load_settings
from chainloom_operator._render.common import Owner, stale_children
from chainloom_operator._render.relayer import (
    WALLET_FILE,
    WORKER_MIN_READY_SECONDS,
    render_relayer_pool,
    secret_references,
)
from chainloom_operator.models import RelayerPoolSpec
from tests.conftest import REPO_ROOT

OWNER = Owner("RelayerPool", "mainnet", "relay", "0b4c-uid", 3)


def _sample() -> dict[str, Any]:
    document = yaml.safe_load((REPO_ROOT / "docs/samples/relayerpool.yaml").read_text())
    spec: dict[str, Any] = document["spec"]
    return spec


def _render(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    children = render_relayer_pool(OWNER, RelayerPoolSpec.model_validate(spec))
    return {(c["kind"], c["metadata"]["name"]): c for c in children}


def test_children_of_the_sample_pool() -> None:
    children = _render(_sample())
    assert sorted(children) == [
        ("ConfigMap", "mainnet-relayer"),
        ("Deployment", "mainnet-listener"),
        ("Deployment", "mainnet-worker-ethereum-hot-1"),
        ("Deployment", "mainnet-worker-ethereum-hot-2"),
        ("Deployment", "mainnet-worker-solana-hot-1"),
        ("NetworkPolicy", "mainnet-relayer"),
        ("Service", "mainnet-listener"),
    ]
    for child in children.values():
        meta = child["metadata"]
        assert meta["namespace"] == "relay"
        assert meta["ownerReferences"] == [
            {"apiVersion": "chainloom.io/v1alpha1", "kind": "RelayerPool", "name": "mainnet",
             "uid": "0b4c-uid", "controller": True, "blockOwnerDeletion": True}
        ]  # fmt: skip
        assert meta["labels"]["chainloom.io/owner-name"] == "mainnet"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "chainloom-operator"


def test_one_worker_per_wallet_with_its_key_as_a_file() -> None:
    worker = _render(_sample())[("Deployment", "mainnet-worker-ethereum-hot-2")]
    assert worker["spec"]["replicas"] == 1
    assert worker["spec"]["strategy"] == {"type": "Recreate"}
    # No port to probe: a worker counts as available only once it has kept running a while.
    assert worker["spec"]["minReadySeconds"] == WORKER_MIN_READY_SECONDS > 0
    pod = worker["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:4] == ["relayer", "work", "--chain", "2"]
    assert container["args"][4:6] == ["--wallet-file", WALLET_FILE]
    wallet = next(v for v in pod["volumes"] if v["name"] == "wallet")
    assert wallet["secret"] == {
        "secretName": "eth-hot-2",
        "items": [{"key": "key", "path": "key"}],
        "defaultMode": 0o440,
    }
    assert "eth-hot-2" not in json.dumps(container.get("env", []))
    selector = worker["spec"]["selector"]["matchLabels"]
    assert selector["chainloom.io/wallet"] == "hot-2"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_wallet_secrets_appear_nowhere_but_their_volume() -> None:
    children = _render(_sample())
    for (kind, name), child in children.items():
        text = json.dumps(child)
        if kind == "Deployment" and "worker-ethereum-hot-1" in name:
            assert text.count("eth-hot-1") == 1
        else:
            assert "eth-hot-1" not in text, name


def test_config_map_is_the_relayer_settings(tmp_path: Path) -> None:
    config = _render(_sample())[("ConfigMap", "mainnet-relayer")]
    path = tmp_path / "relayer.yaml"
    path.write_text(config["data"]["relayer.yaml"])
    settings = load_settings(RelayerSettings, config_file=path)
    assert settings.spy_address == "spy.wormhole.svc:7073"
    assert settings.target_chains == (2, 1)
    assert settings.rest.host == "0.0.0.0"
    assert settings.redis.url.get_secret_value() == "redis://redis.databases.svc:6379/0"
    assert settings.known_emitters == ("mainnet",)
    chains = yaml.safe_load(config["data"]["chains.yaml"])["chains"]
    assert chains[0]["confirmations"] == 12
    assert chains[0]["wallets"] == ["hot-1", "hot-2"]


def test_redis_url_from_a_secret_is_environment_from_the_secret() -> None:
    spec = _sample() | {"redis": {"secret_ref": {"name": "redis-url", "key": "url"}}}
    children = _render(spec)
    config = children[("ConfigMap", "mainnet-relayer")]["data"]["relayer.yaml"]
    assert "url" not in yaml.safe_load(config)["redis"]
    listener = children[("Deployment", "mainnet-listener")]
    env = listener["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "CHAINLOOM_REDIS__URL",
            "valueFrom": {"secretKeyRef": {"name": "redis-url", "key": "url"}}} in env  # fmt: skip
    assert ("redis-url", "url", "Redis URL") in secret_references(
        RelayerPoolSpec.model_validate(spec)
    )


def test_redis_password_and_tls_are_files_of_secrets(tmp_path: Path) -> None:
    redis = {
        "url": "rediss://redis.databases.svc:6380/0",
        "username": "relayer",
        "password_ref": {"name": "redis-login", "key": "password"},
        "tls": {"ca_ref": {"name": "redis-ca", "key": "ca.crt"}, "client_secret": "relayer-tls"},
    }
    spec = _sample() | {"redis": redis}
    children = _render(spec)
    path = tmp_path / "relayer.yaml"
    path.write_text(children[("ConfigMap", "mainnet-relayer")]["data"]["relayer.yaml"])
    settings = load_settings(RelayerSettings, config_file=path).redis
    assert settings.uses_tls
    assert settings.username == "relayer"
    assert settings.password_file == "/var/run/chainloom/redis/password"
    assert (settings.tls.ca_file, settings.tls.cert_file, settings.tls.key_file) == (
        "/var/run/chainloom/redis/ca.crt",
        "/var/run/chainloom/redis/tls.crt",
        "/var/run/chainloom/redis/tls.key",
    )
    assert settings.tls.check_hostname
    for name in ("mainnet-listener", "mainnet-worker-ethereum-hot-1"):
        pod = children[("Deployment", name)]["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == "redis"]
        sources = [(s["secret"]["name"], [i["key"] for i in s["secret"]["items"]])
                   for s in volume["projected"]["sources"]]  # fmt: skip
        assert sources == [("redis-login", ["password"]), ("redis-ca", ["ca.crt"]),
                           ("relayer-tls", ["tls.crt", "tls.key"])]  # fmt: skip
        container = pod["containers"][0]
        assert {"name": "redis", "mountPath": "/var/run/chainloom/redis", "readOnly": True} in (
            container["volumeMounts"]
        )
        assert not [e for e in container["env"] if "PASSWORD" in e["name"]]
    assert secret_references(RelayerPoolSpec.model_validate(spec))[:4] == [
        ("redis-login", "password", "Redis password"),
        ("redis-ca", "ca.crt", "Redis CA bundle"),
        ("relayer-tls", "tls.crt", "Redis client certificate"),
        ("relayer-tls", "tls.key", "Redis client certificate"),
    ]


def test_a_pool_without_redis_secrets_mounts_none() -> None:
    pod = _render(_sample())[("Deployment", "mainnet-listener")]["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["config"]


def test_a_spec_change_rolls_the_pods_and_prunes_removed_wallets() -> None:
    before = render_relayer_pool(OWNER, RelayerPoolSpec.model_validate(_sample()))
    changed = copy.deepcopy(_sample())
    changed["chains"][0]["wallets"] = changed["chains"][0]["wallets"][:1]
    changed["worker"]["max_retries"] = 3
    after = render_relayer_pool(OWNER, RelayerPoolSpec.model_validate(changed))

    def hash_of(children: list[dict[str, Any]], name: str) -> str:
        deployment = next(c for c in children if c["metadata"]["name"] == name)
        annotations: dict[str, str] = deployment["spec"]["template"]["metadata"]["annotations"]
        return annotations["chainloom.io/config-hash"]

    assert hash_of(before, "mainnet-listener") != hash_of(after, "mainnet-listener")
    stale = stale_children(after, before)
    assert [c["metadata"]["name"] for c in stale] == ["mainnet-worker-ethereum-hot-2"]


def test_network_policy_admits_only_the_rest_port() -> None:
    policy = _render(_sample())[("NetworkPolicy", "mainnet-relayer")]["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    assert policy["ingress"] == [{"ports": [{"protocol": "TCP", "port": 4201}]}]
    assert policy["podSelector"]["matchLabels"]["chainloom.io/owner-name"] == "mainnet"


@pytest.mark.parametrize("enabled", [True, False])
def test_service_only_with_rest(enabled: bool) -> None:
    spec = _sample()
    spec["listener"]["rest"]["enabled"] = enabled
    assert (("Service", "mainnet-listener") in _render(spec)) is enabled


def test_placement_goes_into_every_pod_template() -> None:
    plain = _render(_sample())
    for child in plain.values():
        if child["kind"] == "Deployment":
            pod = child["spec"]["template"]["spec"]
            assert "nodeSelector" not in pod
            assert "tolerations" not in pod
    spec = _sample()
    spec["placement"] = {
        "node_selector": {"pool": "relayers"},
        "tolerations": [{"key": "dedicated", "value": "relay", "effect": "NoSchedule"},
                        {"operator": "Exists"}],
    }  # fmt: skip
    deployments = [c for c in _render(spec).values() if c["kind"] == "Deployment"]
    assert len(deployments) == 4
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"pool": "relayers"}
        assert pod["tolerations"] == [
            {"key": "dedicated", "operator": "Equal", "value": "relay", "effect": "NoSchedule"},
            {"operator": "Exists"},
        ]


def test_a_toleration_with_an_unknown_effect_is_refused() -> None:
    spec = _sample()
    spec["placement"] = {"tolerations": [{"key": "k", "effect": "Sometimes"}]}
    with pytest.raises(ValueError, match="effect"):
        RelayerPoolSpec.model_validate(spec)


def _env(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {variable["name"]: variable.get("value") for variable in container["env"]}


def test_an_otlp_endpoint_reaches_the_listener_and_every_worker() -> None:
    spec = RelayerPoolSpec.model_validate(_sample())
    endpoint = "http://otel-collector.observability:4318"
    children = render_relayer_pool(OWNER, spec, otlp_endpoint=endpoint)
    deployments = {c["metadata"]["name"]: c for c in children if c["kind"] == "Deployment"}
    assert len(deployments) == 4
    for name, deployment in deployments.items():
        env = _env(deployment)
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
        service = "chainloom-relayer-listener" if "listener" in name else "chainloom-relayer-worker"
        assert env["OTEL_SERVICE_NAME"] == service
        assert env["OTEL_RESOURCE_ATTRIBUTES"] == (
            "k8s.namespace.name=relay,chainloom.owner=RelayerPool/mainnet"
        )
        assert env["CHAINLOOM_RELAYER_CONFIG"] is not None  # the rest is kept
    # Without an endpoint the pods get no OTEL_* variable at all (telemetry off).
    for child in render_relayer_pool(OWNER, spec):
        if child["kind"] == "Deployment":
            assert not any(name.startswith("OTEL_") for name in _env(child))
