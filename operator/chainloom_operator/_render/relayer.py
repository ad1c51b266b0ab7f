"""A RelayerPool as manifests: listener Deployment + Service, a worker Deployment per
{chain, wallet}, the ConfigMap, and a NetworkPolicy.

The ConfigMap's ``relayer.yaml`` is a :class:`~chainloom.relayer.config.RelayerSettings` built
from the spec and dumped by the model, so the pods load exactly the settings the operator
validated (``chainloom relayer listen|work --config``). Secrets never enter it: a Redis URL
from a Secret reaches the pods as ``CHAINLOOM_REDIS__URL`` (``secretKeyRef``), the Redis password
and TLS files are files of one projected Secret volume (the ConfigMap names their paths), and
each wallet key is a file of a Secret volume mounted into its one worker only
(``--wallet-file``): never a password in an environment variable. One worker Deployment per
wallet, one replica, ``Recreate``: two workers never hold the same wallet, not even during a
rollout.
"""

from __future__ import annotations

from typing import Any

import yaml

from chainloom.relayer.config import RelayerSettings
from chainloom.settings.parts import REVEAL_SECRETS
from chainloom.wormhole import chain_name
from chainloom_operator._render import common
from chainloom_operator._render.common import (
    CONFIG_DIR,
    Owner,
    chainloom_container,
    config_mount,
    config_volume,
    content_hash,
    http_probe,
    labels,
    metadata,
    pod_selector,
    read_only_mount,
    resources,
    secret_volume,
    service_environment,
)
from chainloom_operator._render.redis_access import (
    redis_secret_references,
    redis_settings,
    redis_volume,
    url_variable,
)
from chainloom_operator.models import ChainSpec, RelayerPoolSpec, WalletSpec

CONFIG_FILE = f"{CONFIG_DIR}/relayer.yaml"
"""The relayer's settings file inside the pods."""
WALLET_DIR = "/var/run/chainloom/wallet"
"""Where a worker's wallet Secret is mounted."""
WALLET_FILE = f"{WALLET_DIR}/key"
"""The wallet key file a worker reads (``--wallet-file``)."""
REDIS_DIR = "/var/run/chainloom/redis"
"""Where the Redis password and TLS files are mounted (one projected volume of Secrets)."""
LISTENER = "relayer-listener"
WORKER = "relayer-worker"
CONFIG = "relayer-config"


def config_map_name(owner: Owner) -> str:
    return f"{owner.name}-relayer"


def listener_name(owner: Owner) -> str:
    return f"{owner.name}-listener"


def worker_name(owner: Owner, chain: int, wallet: WalletSpec) -> str:
    return f"{owner.name}-worker-{chain_name(chain)}-{wallet.name}"


def relayer_settings(spec: RelayerPoolSpec) -> RelayerSettings:
    """The settings every pod of the pool loads (the Redis URL of a Secret is left out; the
    password and TLS files are paths of the pods' Secret volume)."""
    redis = redis_settings(spec.redis, REDIS_DIR, spec.redis.key_prefix)
    listener = spec.listener
    return RelayerSettings.model_validate(
        {
            "redis": redis,
            "spy_address": spec.spy_address,
            "spy_buffer": listener.spy_buffer,
            "spy_overflow": listener.spy_overflow,
            "rest": {"host": "0.0.0.0", **listener.rest.model_dump()},  # noqa: S104 (in a pod)
            "intake_threads": listener.intake_threads,
            "redeem_check": listener.redeem_check,
            "target_chains": [c.chain for c in spec.chains],
            "worker": spec.worker.model_dump(),
            **spec.validation.model_dump(),
        }
    )


def chains_document(spec: RelayerPoolSpec) -> dict[str, Any]:
    """Per-chain RPC endpoints, confirmations and contracts (``chains.yaml``, for the chain
    adapters; wallets appear by name only)."""
    return {
        "chains": [
            {
                "chain": c.chain,
                "name": chain_name(c.chain),
                "rpc_endpoint": c.rpc_endpoint,
                "confirmations": c.confirmations,
                "contracts": dict(c.contracts),
                "wallets": [w.name for w in c.wallets],
            }
            for c in spec.chains
        ]
    }


def config_map(owner: Owner, spec: RelayerPoolSpec) -> dict[str, Any]:
    settings = relayer_settings(spec)
    exclude = None if spec.redis.url is not None else {"redis": {"url"}}
    # The URL is plain here (the spec refuses one with a password); revealing it only stops
    # the model masking it.
    dumped = settings.model_dump(mode="json", exclude=exclude, context={REVEAL_SECRETS: True})
    return common.config_map(owner, config_map_name(owner), CONFIG, {
        "relayer.yaml": yaml.safe_dump(dumped, sort_keys=False),
        "chains.yaml": yaml.safe_dump(chains_document(spec), sort_keys=False),
    })  # fmt: skip


def _environment(spec: RelayerPoolSpec, otlp_endpoint: str | None, service_name: str,
                 owner: Owner) -> list[dict[str, Any]]:  # fmt: skip
    settings = {"CHAINLOOM_RELAYER_CONFIG": CONFIG_FILE}
    env = service_environment(settings, otlp_endpoint, service_name, owner, {})
    return env + url_variable(spec.redis, "CHAINLOOM_REDIS__URL")


def _volumes_and_mounts(
    owner: Owner, spec: RelayerPoolSpec
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ConfigMap, and the Redis Secrets when the pool has any."""
    volumes, mounts = [config_volume(config_map_name(owner))], [config_mount()]
    redis = redis_volume(spec.redis, "redis")
    if redis is not None:
        volumes.append(redis)
        mounts.append(read_only_mount("redis", REDIS_DIR))
    return volumes, mounts


def listener_deployment(
    owner: Owner, spec: RelayerPoolSpec, config_hash: str, otlp_endpoint: str | None = None
) -> dict[str, Any]:
    """The listener; with ``otlp_endpoint`` its pods export to it (``OTEL_*``)."""
    rest = spec.listener.rest
    pod_labels = labels(owner, LISTENER)
    volumes, mounts = _volumes_and_mounts(owner, spec)
    served: dict[str, Any] = {}
    if rest.enabled:
        served = {"port": ("http", rest.port), "readiness": http_probe("/readyz", "http"),
                  "liveness": http_probe("/healthz", "http", period=20)}  # fmt: skip
    container = chainloom_container(
        "listener",
        spec.image,
        ["relayer", "listen", "--config", CONFIG_FILE],
        pull_policy=spec.image_pull_policy,
        env=_environment(spec, otlp_endpoint, "chainloom-relayer-listener", owner),
        mounts=mounts,
        limits=resources(spec.listener.resources.cpu, spec.listener.resources.memory),
        **served,
    )
    return common.deployment(owner, listener_name(owner), pod_labels,
                             selector=pod_selector(pod_labels), replicas=spec.listener.replicas,
                             container=container, volumes=volumes, config_hash=config_hash,
                             where=spec.placement, min_ready_seconds=0)  # fmt: skip


def listener_service(owner: Owner, spec: RelayerPoolSpec) -> dict[str, Any]:
    pod_labels = labels(owner, LISTENER)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(owner, listener_name(owner), pod_labels),
        "spec": {
            "type": "ClusterIP",
            "selector": pod_selector(pod_labels),
            "ports": [{"name": "http", "port": spec.listener.rest.port, "targetPort": "http",
                       "protocol": "TCP"}],
        },
    }  # fmt: skip


WORKER_MIN_READY_SECONDS = 5
"""How long a worker's container must have run before its Deployment counts it available. A
worker serves no port to probe, so without this a worker that exits at start (a bad setting, a
missing adapter) would be "available" for the moment it ran, and the pool Ready."""


def worker_deployment(
    owner: Owner, spec: RelayerPoolSpec, chain: ChainSpec, wallet: WalletSpec, config_hash: str,
    *, otlp_endpoint: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One wallet's worker; with ``otlp_endpoint`` its pod exports to it (``OTEL_*``)."""
    pod_labels = labels(
        owner,
        WORKER,
        **{"chainloom.io/chain": str(chain.chain), "chainloom.io/wallet": wallet.name},
    )
    volumes, mounts = _volumes_and_mounts(owner, spec)
    container = chainloom_container(
        "worker",
        spec.image,
        ["relayer", "work", "--chain", str(chain.chain), "--wallet-file", WALLET_FILE,
         "--config", CONFIG_FILE],
        pull_policy=spec.image_pull_policy,
        env=_environment(spec, otlp_endpoint, "chainloom-relayer-worker", owner),
        mounts=[*mounts, read_only_mount("wallet", WALLET_DIR)],
        limits=resources(spec.worker_resources.cpu, spec.worker_resources.memory),
    )  # fmt: skip
    wallet_volume = secret_volume("wallet", wallet.secret_ref.name,
                                  [{"key": wallet.secret_ref.key, "path": "key"}])  # fmt: skip
    selector = pod_selector(pod_labels, "chainloom.io/chain", "chainloom.io/wallet")
    return common.deployment(owner, worker_name(owner, chain.chain, wallet), pod_labels,
                             selector=selector, replicas=1, container=container,
                             volumes=[*volumes, wallet_volume], config_hash=config_hash,
                             where=spec.placement, strategy="Recreate",
                             min_ready_seconds=WORKER_MIN_READY_SECONDS)  # fmt: skip


def network_policy(owner: Owner, spec: RelayerPoolSpec) -> dict[str, Any]:
    """Ingress to the pool's pods: only the listener's REST port (workers take none)."""
    ingress: list[dict[str, Any]] = []
    if spec.listener.rest.enabled:
        ingress.append(
            {
                "ports": [{"protocol": "TCP", "port": spec.listener.rest.port}],
            }
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(owner, f"{owner.name}-relayer", labels(owner, "relayer-network")),
        "spec": {
            "podSelector": {
                "matchLabels": owner.selector() | {"app.kubernetes.io/part-of": "chainloom"}
            },
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def render_relayer_pool(
    owner: Owner, spec: RelayerPoolSpec, *, otlp_endpoint: str | None = None
) -> list[dict[str, Any]]:
    """Every child of the pool, ConfigMap first (pods mount it); with ``otlp_endpoint`` (the
    operator's setting) the listener and workers export their telemetry there."""
    config = config_map(owner, spec)
    config_hash = content_hash(config["data"])
    children = [config, listener_deployment(owner, spec, config_hash, otlp_endpoint)]
    if spec.listener.rest.enabled:
        children.append(listener_service(owner, spec))
    for chain in spec.chains:
        for wallet in chain.wallets:
            children.append(
                worker_deployment(
                    owner, spec, chain, wallet, config_hash, otlp_endpoint=otlp_endpoint
                )
            )
    children.append(network_policy(owner, spec))
    return children


def secret_references(spec: RelayerPoolSpec) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of every Secret the pool's pods need."""
    found = redis_secret_references(spec.redis, "Redis")
    for chain in spec.chains:
        for wallet in chain.wallets:
            purpose = f"wallet {wallet.name} of chain {chain_name(chain.chain)}"
            found.append((wallet.secret_ref.name, wallet.secret_ref.key, purpose))
    return found
