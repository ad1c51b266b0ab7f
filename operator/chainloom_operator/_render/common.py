"""What every child object carries: owner reference, labels, security context; and the pieces
every Deployment of the operator's is built from (settings ConfigMap, its volume, Secret volumes,
probes, the ``chainloom`` container, the pod template).

Owner references make the garbage collector delete the children with their resource; the
labels let the operator find its children (and prune those a spec change left behind) without
keeping any state of its own. The shared pieces keep the API, relayer, indexer and ledger ETL
pods alike: settings from a read-only ConfigMap, secrets as files of read-only volumes, the
same security context and environment order.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chainloom_operator.models import API_VERSION, Placement, PodPlacement, SecretMount

MANAGED_BY = "chainloom-operator"
"""``app.kubernetes.io/managed-by`` of every child; also the server-side apply field manager."""
OWNER_KIND_LABEL = "chainloom.io/owner-kind"
"""Label naming the kind of a child's owner."""
OWNER_NAME_LABEL = "chainloom.io/owner-name"
"""Label naming a child's owner (with the kind, the selector of the owner's children)."""
CONFIG_HASH_ANNOTATION = "chainloom.io/config-hash"
"""Pod-template annotation: changes with the rendered configuration, so pods roll."""
RUN_AS_USER = 10001
"""The non-root user (and group) of every container (the image's ``chainloom`` user)."""
CONFIG_DIR = "/etc/chainloom"
"""Where every pod mounts its settings ConfigMap (the ``config`` volume)."""
SECRET_FILE_MODE = 0o440
"""Mode of the files of a mounted Secret (owner and group read them, nobody else)."""
SELECTOR_KEYS = ("app.kubernetes.io/instance", "app.kubernetes.io/component")
"""The labels a Deployment's selector takes from its pod labels (and more where it needs)."""

PodFinish = Callable[[dict[str, Any]], dict[str, Any]]
"""A pod spec's last touch: what ``spec.google`` or ``spec.feed`` adds (volumes, variables)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """The custom resource a set of children belongs to."""

    kind: str
    """IngestPipeline, RelayerPool or BackendTable."""
    name: str
    """metadata.name."""
    namespace: str
    """metadata.namespace (children live in the same namespace)."""
    uid: str
    """metadata.uid (the owner reference points at this incarnation)."""
    generation: int = 0
    """metadata.generation of the spec being rendered."""

    def selector(self) -> dict[str, str]:
        """Labels shared by all of this owner's children."""
        return {OWNER_KIND_LABEL: self.kind, OWNER_NAME_LABEL: self.name}


def owner_reference(owner: Owner) -> dict[str, Any]:
    """The controller owner reference of a child of ``owner``."""
    return {
        "apiVersion": API_VERSION,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def labels(owner: Owner, component: str, **extra: str) -> dict[str, str]:
    """The labels of a child: the recommended app.kubernetes.io set plus the owner's."""
    return {
        "app.kubernetes.io/name": "chainloom",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "chainloom",
        "app.kubernetes.io/managed-by": MANAGED_BY,
        **owner.selector(),
        **extra,
    }


def metadata(owner: Owner, name: str, child_labels: dict[str, str]) -> dict[str, Any]:
    """``metadata`` of a child named ``name``."""
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": dict(child_labels),
        "ownerReferences": [owner_reference(owner)],
    }


def content_hash(data: Any) -> str:
    """A short, stable hash of JSON-able ``data`` (config-hash annotations)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pod_security() -> dict[str, Any]:
    """The pod-level security context (non-root, runtime-default seccomp)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security() -> dict[str, Any]:
    """The container security context (the restricted Pod Security Standard)."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def placement(where: Placement) -> dict[str, Any]:
    """The pod-spec fields of a :class:`Placement` (none when it says nothing); a
    :class:`PodPlacement`'s affinity as Kubernetes' object, copied as written."""
    fields: dict[str, Any] = {}
    if where.node_selector:
        fields["nodeSelector"] = dict(where.node_selector)
    if where.tolerations:
        fields["tolerations"] = [
            {
                name: value
                for name, value in (
                    ("key", t.key), ("operator", t.operator), ("value", t.value),
                    ("effect", t.effect),
                )
                if value
            }
            for t in where.tolerations
        ]  # fmt: skip
    if isinstance(where, PodPlacement) and where.affinity is not None:
        affinity = where.affinity.kubernetes()
        if affinity:
            fields["affinity"] = copy.deepcopy(affinity)
    return fields


def telemetry_environment(
    otlp_endpoint: str | None, service_name: str, owner: Owner
) -> list[dict[str, Any]]:
    """The standard ``OTEL_*`` variables of a pod that exports to ``otlp_endpoint`` (none
    when it is None: telemetry stays off in the pod). The resource names the owner, so pods
    of two pools are told apart in the collector."""
    if otlp_endpoint is None:
        return []
    where = f"k8s.namespace.name={owner.namespace},chainloom.owner={owner.kind}/{owner.name}"
    return [
        {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": otlp_endpoint},
        {"name": "OTEL_SERVICE_NAME", "value": service_name},
        {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": where},
    ]


def resources(cpu: str, memory: str) -> dict[str, Any]:
    """Requests, with the memory request as the limit (no CPU limit: no throttling)."""
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}


def child_key(manifest: dict[str, Any]) -> tuple[str, str, str]:
    """``(apiVersion, kind, name)`` of a manifest: what identifies a child in a namespace."""
    return manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"]


def stale_children(
    rendered: list[dict[str, Any]], observed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Observed children (found by the owner's labels) that the rendering no longer contains."""
    wanted = {child_key(m) for m in rendered}
    return [m for m in observed if child_key(m) not in wanted]


def config_map(owner: Owner, name: str, component: str, data: dict[str, str]) -> dict[str, Any]:
    """The ConfigMap ``name`` holding ``data`` (settings files), labelled ``component``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(owner, name, labels(owner, component)),
        "data": data,
    }


def config_volume(config_map_name: str) -> dict[str, Any]:
    """The ``config`` volume: the settings ConfigMap."""
    return {"name": "config", "configMap": {"name": config_map_name}}


def read_only_mount(volume: str, path: str) -> dict[str, Any]:
    """A container's read-only mount of ``volume`` at ``path``."""
    return {"name": volume, "mountPath": path, "readOnly": True}


def config_mount() -> dict[str, Any]:
    """The mount of the ``config`` volume at :data:`CONFIG_DIR`."""
    return read_only_mount("config", CONFIG_DIR)


def secret_volume(
    volume: str, secret: str, items: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """A volume of the Secret ``secret`` (only ``items``, ``{key, path}``, when given)."""
    source: dict[str, Any] = {"secretName": secret, "defaultMode": SECRET_FILE_MODE}
    if items is not None:
        source["items"] = items
    return {"name": volume, "secret": source}


def secret_mount_pieces(
    secret_mounts: tuple[SecretMount, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The container mounts and pod volumes of a spec's ``secret_mounts`` (``secret-<i>``)."""
    mounts = [read_only_mount(f"secret-{i}", m.mount_path) for i, m in enumerate(secret_mounts)]
    volumes = [secret_volume(f"secret-{i}", m.secret) for i, m in enumerate(secret_mounts)]
    return mounts, volumes


def http_probe(
    path: str, port: str, *, period: int | None = None, timeout: int | None = None,
    failures: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A probe GETting ``path`` on the named ``port``; timings left out keep Kubernetes'."""
    probe: dict[str, Any] = {"httpGet": {"path": path, "port": port}}
    for field, value in (("periodSeconds", period), ("timeoutSeconds", timeout),
                         ("failureThreshold", failures)):  # fmt: skip
        if value is not None:
            probe[field] = value
    return probe


def service_environment(
    settings: dict[str, str], otlp_endpoint: str | None, service_name: str, owner: Owner,
    own: Mapping[str, str],
) -> list[dict[str, Any]]:  # fmt: skip
    """A pod's environment: ``settings`` (the settings file's variable), the ``OTEL_*``
    variables, then the spec's ``own`` variables, sorted, which win over the ``OTEL_*`` ones."""
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in settings.items()]
    env += [v for v in telemetry_environment(otlp_endpoint, service_name, owner)
            if v["name"] not in own]  # fmt: skip
    env += [{"name": k, "value": v} for k, v in sorted(own.items())]
    return env


def pod_selector(pod_labels: Mapping[str, str], *more: str) -> dict[str, str]:
    """The matchLabels of a Deployment: :data:`SELECTOR_KEYS` and ``more`` of ``pod_labels``."""
    return {key: pod_labels[key] for key in (*SELECTOR_KEYS, *more)}


def chainloom_container(
    name: str, image: str, args: list[str], *, pull_policy: str | None,
    env: list[dict[str, Any]], mounts: list[dict[str, Any]], limits: dict[str, Any],
    port: tuple[str, int] | None = None, readiness: dict[str, Any] | None = None,
    liveness: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A container running ``chainloom ARGS`` under the restricted security context, with its
    named TCP ``port`` and probes when it serves any (``limits``: :func:`resources`)."""
    container: dict[str, Any] = {"name": name, "image": image}
    if pull_policy is not None:
        container["imagePullPolicy"] = pull_policy
    container |= {"command": ["chainloom"], "args": args, "env": env}
    if port is not None:
        container["ports"] = [{"name": port[0], "containerPort": port[1], "protocol": "TCP"}]
    if readiness is not None:
        container["readinessProbe"] = readiness
    if liveness is not None:
        container["livenessProbe"] = liveness
    return container | {"volumeMounts": mounts, "securityContext": container_security(),
                        "resources": limits}  # fmt: skip


def deployment(
    owner: Owner, name: str, pod_labels: dict[str, str], *, selector: dict[str, str],
    replicas: int, container: dict[str, Any], volumes: list[dict[str, Any]], config_hash: str,
    where: Placement, strategy: str | None = None, min_ready_seconds: int | None = None,
    grace_seconds: int | None = None, finish_pod: PodFinish | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The Deployment ``name`` of one container's pods: no service account token, the pod
    security context, ``where`` it may run, and the config hash that rolls them on a change
    (``strategy``: its type; the others left out keep Kubernetes' defaults; ``finish_pod``
    adds what a spec's credentials or feed bring to the pod spec)."""
    pod: dict[str, Any] = {"automountServiceAccountToken": False}
    if grace_seconds is not None:
        pod["terminationGracePeriodSeconds"] = grace_seconds
    pod |= {"securityContext": pod_security(), "containers": [container], "volumes": volumes,
            **placement(where)}  # fmt: skip
    if finish_pod is not None:
        pod = finish_pod(pod)
    spec: dict[str, Any] = {"replicas": replicas}
    if min_ready_seconds is not None:
        spec["minReadySeconds"] = min_ready_seconds
    if strategy is not None:
        spec["strategy"] = {"type": strategy}
    spec |= {
        "selector": {"matchLabels": selector},
        "template": {
            "metadata": {
                "labels": dict(pod_labels),
                "annotations": {CONFIG_HASH_ANNOTATION: config_hash},
            },
            "spec": pod,
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(owner, name, pod_labels),
        "spec": spec,
    }


def config_and_pods(
    owner: Owner, name: str, component: str, files: dict[str, str], container: dict[str, Any], *,
    replicas: int, where: Placement, more_volumes: list[dict[str, Any]] | None = None,
    strategy: str | None = None, grace_seconds: int | None = None,
    finish_pod: PodFinish | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The ConfigMap ``name`` of the settings ``files`` and the Deployment ``name`` of
    ``container``'s pods (labelled ``component``), which mount it as ``config`` (beside
    ``more_volumes``) and roll when it changes: ConfigMap first, the pods mount it."""
    config = config_map(owner, name, f"{component}-config", files)
    pod_labels = labels(owner, component)
    pods = deployment(owner, name, pod_labels, selector=pod_selector(pod_labels),
                      replicas=replicas, container=container,
                      volumes=[config_volume(name), *(more_volumes or [])],
                      config_hash=content_hash(files), where=where, strategy=strategy,
                      grace_seconds=grace_seconds, finish_pod=finish_pod)  # fmt: skip
    return [config, pods]
