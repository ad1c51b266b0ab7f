"""A Bigtable BackendTable's Google credentials (``spec.google``) as parts of the pods that
open its tables: the API's, the streaming indexer's and the Spark driver's and executors'.

Workload Identity is a Kubernetes ServiceAccount the pods run as, bound on Google's side to a
Google service account; with ``gcp_service_account`` the operator renders that ServiceAccount
with the ``iam.gke.io/gcp-service-account`` annotation, else it names one that exists. A key is
a file of its Secret mounted read-only; the pods' ``bigtable.credentials_file`` and
``GOOGLE_APPLICATION_CREDENTIALS`` name the path, never the key itself, so nothing secret is
in a spec, a ConfigMap or an environment variable's value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainloom.settings import BigtableSettings
from chainloom_operator._render.common import (
    Owner,
    labels,
    metadata,
    read_only_mount,
    secret_volume,
)
from chainloom_operator.models import GoogleAccess

WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"
"""The ServiceAccount annotation naming the Google service account its pods act as (GKE)."""
KEY_DIR = "/var/run/secrets/chainloom/google"
"""Where the key's Secret is mounted."""
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
"""The variable Google's client libraries read a key file's path from."""
COMPONENT = "bigtable-identity"
"""``app.kubernetes.io/component`` of the rendered ServiceAccount."""


def service_account_name(table: str, access: GoogleAccess) -> str | None:
    """The ServiceAccount the pods of the BackendTable named ``table`` run as (None: the
    namespace's default, with a key)."""
    if access.service_account is not None:
        return access.service_account
    if access.gcp_service_account is not None:
        return f"{table}-bigtable"
    return None


def key_file(access: GoogleAccess) -> str | None:
    """The key's path inside the pods (None without a key)."""
    return None if access.key is None else f"{KEY_DIR}/{access.key.key}"


def pod_bigtable(settings: BigtableSettings, access: GoogleAccess | None) -> BigtableSettings:
    """The Bigtable settings the pods load: ``credentials_file`` is the mounted key, or null
    for Workload Identity (a path the spec gives names a file in the operator's own pod)."""
    if access is None:
        return settings
    return settings.model_copy(update={"credentials_file": key_file(access)})


@dataclass(frozen=True, slots=True)
class PodCredentials:
    """What a pod spec and its container gain from ``spec.google``."""

    service_account: str | None = None
    """``serviceAccountName`` (None: unchanged)."""
    volumes: list[dict[str, Any]] = field(default_factory=list)
    """Pod volumes: the key's Secret."""
    mounts: list[dict[str, Any]] = field(default_factory=list)
    """Container volume mounts: the key's directory, read-only."""
    env: list[dict[str, Any]] = field(default_factory=list)
    """Container variables: ``GOOGLE_APPLICATION_CREDENTIALS`` (a path)."""


def pod_credentials(table: str, access: GoogleAccess | None) -> PodCredentials:
    """The pod parts for the BackendTable named ``table`` (nothing without ``spec.google``)."""
    if access is None:
        return PodCredentials()
    path = key_file(access)
    if access.key is None or path is None:
        return PodCredentials(service_account=service_account_name(table, access))
    volume = secret_volume("google-key", access.key.name,
                           [{"key": access.key.key, "path": access.key.key}])  # fmt: skip
    return PodCredentials(
        volumes=[volume],
        mounts=[read_only_mount("google-key", KEY_DIR)],
        env=[{"name": CREDENTIALS_ENV, "value": path}],
    )


def with_pod_credentials(pod_spec: dict[str, Any], table: str, access: GoogleAccess | None
                         ) -> dict[str, Any]:  # fmt: skip
    """``pod_spec`` (a Deployment's template spec, one container) with the credentials."""
    parts = pod_credentials(table, access)
    if access is None:
        return pod_spec
    out = {**pod_spec, "volumes": [*pod_spec.get("volumes", ()), *parts.volumes]}
    if parts.service_account is not None:
        out["serviceAccountName"] = parts.service_account
    container = out["containers"][0]
    out["containers"] = [{**container,
                          "env": [*parts.env, *container.get("env", ())],
                          "volumeMounts": [*container.get("volumeMounts", ()), *parts.mounts]},
                         *out["containers"][1:]]  # fmt: skip
    return out


def spark_credentials(spec: dict[str, Any], table: str, access: GoogleAccess | None
                      ) -> dict[str, Any]:  # fmt: skip
    """A SparkApplication ``spec`` whose driver and executors run with the credentials: the
    ServiceAccount of both roles, or the key's Secret as files (``secrets``, which
    spark-submit mounts itself) and ``GOOGLE_APPLICATION_CREDENTIALS`` among ``envVars``."""
    if access is None:
        return spec
    out = dict(spec)
    name = service_account_name(table, access)
    path = key_file(access)
    for role in ("driver", "executor"):
        pod = dict(out.get(role, {}))
        if name is not None:
            pod["serviceAccount"] = name
        if access.key is not None and path is not None:
            pod["secrets"] = [
                *pod.get("secrets", ()),
                {"name": access.key.name, "path": KEY_DIR, "secretType": "Generic"},
            ]
            pod["envVars"] = {**pod.get("envVars", {}), CREDENTIALS_ENV: path}
        out[role] = pod
    return out


def service_account(owner: Owner, access: GoogleAccess | None) -> list[dict[str, Any]]:
    """The Workload Identity ServiceAccount the operator renders (with
    ``gcp_service_account``), else none."""
    if access is None or access.gcp_service_account is None:
        return []
    name = service_account_name(owner.name, access)
    assert name is not None
    account = metadata(owner, name, labels(owner, COMPONENT))
    account["annotations"] = {WORKLOAD_IDENTITY_ANNOTATION: access.gcp_service_account}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": account,
            "automountServiceAccountToken": False,
        }
    ]


def secret_references(access: GoogleAccess | None) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of the key's Secret, when there is one."""
    if access is None or access.key is None:
        return []
    return [(access.key.name, access.key.key, "Google service-account key")]
