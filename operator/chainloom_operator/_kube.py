"""The Kubernetes API as the operator uses it: server-side apply, children by label, status.

A thin adapter over lightkube's public API (generic resources for any kind, its ``apply``-style
patch, paged lists), so the handlers read as a sequence of steps. Every write is a server-side
apply under one field manager (:data:`FIELD_MANAGER`): the operator owns exactly the fields it
renders, a user's or another controller's fields are left alone, and applying the same
manifest twice changes nothing.

Two reads need more than lightkube's ``Client`` offers (it has no request of a bare path and
sends no Accept header of the caller's), so they go through the plain httpx2 client lightkube
builds for the same configuration (``lightkube.config.client_adapter.Client``, what its own
``Client`` is made on): the API server's discovery (``/api/v1``, ``/apis/GROUP/VERSION``: which
kinds are served, and their plurals), and a Secret's metadata only (the
``PartialObjectMetadata`` Accept header), so the operator checks that a Secret exists without
ever reading a key.

lightkube and not the official client: kopf imports the official client whenever it is
installed (about 45 MB of the operator's memory, docs/operator.md "Scale"); without it, kopf
logs in with its own handlers (``_handlers.startup.login``).
"""

from __future__ import annotations

import datetime
import fnmatch
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx2
from lightkube import ALL_NS, ApiError, Client, KubeConfig
from lightkube.config import client_adapter
from lightkube.generic_resource import (
    GenericNamespacedResource,
    create_namespaced_resource,
    get_generic_resource,
)
from lightkube.types import PatchType

from chainloom_operator._render.common import MANAGED_BY, Owner, child_key
from chainloom_operator.errors import MissingCrdError, MissingSecretError
from chainloom_operator.models import GROUP, VERSION

FIELD_MANAGER = MANAGED_BY
"""The server-side apply field manager of everything the operator writes."""
PARTIAL_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
"""Accept header that asks for an object's metadata only (Secrets are checked, never read)."""
INSTALL_HINTS = {
    "sparkoperator.k8s.io/v1beta2": (
        "install the Kubeflow spark-operator (helm repo add spark-operator "
        "https://kubeflow.github.io/spark-operator && helm install spark-operator "
        "spark-operator/spark-operator --namespace spark-operator --create-namespace), or at "
        "least its CRDs: kubectl apply --server-side -f https://raw.githubusercontent.com/"
        "kubeflow/spark-operator/v2.5.2/charts/spark-operator-chart/crds/"
        "sparkoperator.k8s.io_sparkapplications.yaml (and _scheduledsparkapplications.yaml)"
    ),
}
"""What to install when the API server does not know a rendered kind, by apiVersion."""
CHILD_KINDS = (
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
    ("sparkoperator.k8s.io/v1beta2", "ScheduledSparkApplication"),
)
"""Every kind the operator renders (children are looked for among these)."""
LIST_PAGE = 100
"""Custom resources read per list request by :meth:`Cluster.list_custom`."""
REQUEST_TIMEOUT = 30.0
"""Seconds an API request may take (lightkube's default is 10)."""

Resource = type[GenericNamespacedResource]
_resources_lock = threading.Lock()


def api_client(kubeconfig: str | None = None) -> Client:
    """A client for the cluster: ``kubeconfig`` when given, else in-cluster in a pod, else
    ``$KUBECONFIG`` or ``~/.kube/config``."""
    config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    return Client(config, field_manager=FIELD_MANAGER, timeout=httpx2.Timeout(REQUEST_TIMEOUT))


def namespaced_resource(api_version: str, kind: str, plural: str) -> Resource:
    """lightkube's generic resource for a namespaced kind (one class per kind and process:
    lightkube registers them globally)."""
    with _resources_lock:
        found: Resource | None = get_generic_resource(api_version, kind)
        if found is not None:
            return found
        group, _, version = api_version.rpartition("/")
        return create_namespaced_resource(group, version, kind, plural)


def _is_pattern(namespace: str) -> bool:
    return any(c in namespace for c in "*?[!")


class Cluster:
    """The operations the handlers need, on one lightkube client (safe to share between the
    handler threads)."""

    def __init__(self, api: Client) -> None:
        self.api = api
        self.http = client_adapter.Client(
            api.config, client_adapter.ConnectionParams(timeout=httpx2.Timeout(REQUEST_TIMEOUT))
        )
        """Plain HTTP to the same API server, for discovery and metadata-only reads."""
        self._served: dict[str, dict[str, str]] = {}

    def close(self) -> None:
        """Close both clients' connections."""
        self.api.close()
        self.http.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _discover(self, api_version: str) -> dict[str, str]:
        """Kind -> plural of the namespaced kinds the API server serves under ``api_version``
        (its discovery document; kept once found, asked again while a kind is missing)."""
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        response = self.http.get(path)
        if response.status_code == httpx2.codes.NOT_FOUND:
            return {}
        response.raise_for_status()
        kinds = {r["kind"]: r["name"] for r in response.json()["resources"]
                 if "/" not in r["name"] and r["namespaced"]}  # fmt: skip
        self._served[api_version] = kinds
        return kinds

    def _plural(self, api_version: str, kind: str) -> str | None:
        known = self._served.get(api_version)
        if known is None or kind not in known:
            known = self._discover(api_version)
        return known.get(kind)

    def _resource(self, api_version: str, kind: str) -> Resource:
        plural = self._plural(api_version, kind)
        if plural is None:
            hint = INSTALL_HINTS.get(api_version, "install the CRD that defines it")
            raise MissingCrdError(kind, api_version, hint)
        return namespaced_resource(api_version, kind, plural)

    def _custom(self, plural: str) -> Resource:
        """A chainloom custom resource by its plural."""
        api_version = f"{GROUP}/{VERSION}"
        kinds = self._served.get(api_version)
        if kinds is None or plural not in kinds.values():
            kinds = self._discover(api_version)
        kind = next((k for k, p in kinds.items() if p == plural), None)
        if kind is None:
            raise MissingCrdError(plural, api_version,
                                  "install the chainloom CRDs (crds/, or the chart)")  # fmt: skip
        return namespaced_resource(api_version, kind, plural)

    def served(self, api_version: str, kind: str) -> bool:
        """The API server knows ``kind``."""
        return self._plural(api_version, kind) is not None

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply ``manifest`` (forcing ownership of the fields it sets)."""
        api_version, kind, name = child_key(manifest)
        applied = self.api.patch(
            self._resource(api_version, kind), name, manifest,
            namespace=manifest["metadata"].get("namespace"),
            patch_type=PatchType.APPLY, field_manager=FIELD_MANAGER, force=True,
        )  # fmt: skip
        return dict(applied)

    def delete(self, manifest: dict[str, Any]) -> None:
        """Delete a child (gone already is fine)."""
        api_version, kind, name = child_key(manifest)
        try:
            self.api.delete(self._resource(api_version, kind), name,
                            namespace=manifest["metadata"]["namespace"])  # fmt: skip
        except ApiError as error:
            if error.status.code != httpx2.codes.NOT_FOUND:
                raise

    def children(self, owner: Owner, kinds: Iterable[tuple[str, str]] = CHILD_KINDS
                 ) -> list[dict[str, Any]]:  # fmt: skip
        """The owner's children of ``kinds`` (found by its labels and its uid)."""
        found: list[dict[str, Any]] = []
        for api_version, kind in kinds:
            if not self.served(api_version, kind):
                continue
            listed = self.api.list(self._resource(api_version, kind), namespace=owner.namespace,
                                   labels=dict(owner.selector()))  # fmt: skip
            for child in listed:
                item = dict(child)
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                references = item["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == owner.uid for r in references):
                    found.append(item)
        return found

    def check_secrets(self, namespace: str, references: Iterable[tuple[str, str, str]]) -> None:
        """Raise MissingSecretError for the first referenced Secret that does not exist.

        Asks for the Secret's metadata only: the operator never reads a key's value.
        """
        for name, _key, purpose in references:
            response = self.http.get(f"/api/v1/namespaces/{namespace}/secrets/{name}",
                                     headers={"Accept": PARTIAL_METADATA})  # fmt: skip
            if response.status_code == httpx2.codes.NOT_FOUND:
                raise MissingSecretError(namespace, name, purpose)
            response.raise_for_status()

    def _get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.api.get(resource, name, namespace=namespace))
        except ApiError as error:
            if error.status.code == httpx2.codes.NOT_FOUND:
                return None
            raise

    def get_custom(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A chainloom custom resource, or None when it does not exist."""
        return self._get(self._custom(plural), namespace, name)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Any namespaced object (a scheduled run's SparkApplication), or None when it is gone."""
        return self._get(self._resource(api_version, kind), namespace, name)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A pod as the API server returns it (camelCase keys), or None when it is gone."""
        return self.get("v1", "Pod", namespace, name)

    def pods(self, namespace: str, selector: Mapping[str, str]) -> list[dict[str, Any]]:
        """The pods in ``namespace`` carrying every label of ``selector`` (camelCase keys)."""
        listed = self.api.list(self._resource("v1", "Pod"), namespace=namespace,
                               labels=dict(selector))  # fmt: skip
        return [dict(pod) for pod in listed]

    def list_custom(self, plural: str, namespaces: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
        """The chainloom resources of ``plural`` in ``namespaces`` (none given: the cluster).

        Read :data:`LIST_PAGE` objects at a time (the API server's ``limit``/``continue``),
        so a pass over a thousand pools never holds them all at once. Namespace patterns
        (``team-*``) are matched against the names, which needs the cluster-wide list (the
        chart's ClusterRole grants it when no namespaces are set).
        """
        resource = self._custom(plural)
        names = list(namespaces)
        if names and not any(_is_pattern(n) for n in names):
            for namespace in names:
                yield from self._pages(resource, namespace)
            return
        for item in self._pages(resource, ALL_NS):
            if not names or any(
                fnmatch.fnmatchcase(item["metadata"]["namespace"], n) for n in names
            ):
                yield item

    def _pages(self, resource: Resource, namespace: str) -> Iterator[dict[str, Any]]:
        for item in self.api.list(resource, namespace=namespace, chunk_size=LIST_PAGE):
            yield dict(item)

    def post_event(self, involved: Mapping[str, Any], reason: str, message: str,
                   kind: str = "Warning") -> None:  # fmt: skip
        """Post a core/v1 Event about ``involved`` (a resource as the API server returned it).

        kopf posts the events of its handlers; this is for the ones a status refresh finds
        (outside kopf's handler context: a child's event, a deadline passing).
        """
        meta = involved["metadata"]
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": involved.get("apiVersion", ""),
                               "kind": involved.get("kind", ""), "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta.get("uid", "")},
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": MANAGED_BY},
            "reportingComponent": MANAGED_BY,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }  # fmt: skip
        response = self.http.post(f"/api/v1/namespaces/{meta['namespace']}/events", json=event)
        response.raise_for_status()

    def patch_status(self, plural: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Merge ``status`` into the resource's status subresource (gone already is fine)."""
        try:
            self.api.patch(self._custom(plural).Status, name, {"status": status},
                           namespace=namespace, patch_type=PatchType.MERGE)  # fmt: skip
        except ApiError as error:
            if error.status.code != httpx2.codes.NOT_FOUND:
                raise


# ------------------------------------------------------------------ what pods say

ROLE_TIMEOUT = 1.0
"""Seconds one pod's ``/status`` answer may take (it is only for the status)."""


def pod_roles(addresses: Mapping[str, str], port: int) -> dict[str, str | None]:
    """``pod name -> role`` (``writer``/``standby``; None: no answer) of the pods at
    ``addresses`` (name -> pod IP)."""
    roles: dict[str, str | None] = {}
    with httpx2.Client(timeout=ROLE_TIMEOUT) as client:
        for name, address in addresses.items():
            try:
                answer = client.get(f"http://{address}:{port}/status")
                answer.raise_for_status()
                role = answer.json().get("role")
            except (httpx2.HTTPError, ValueError, AttributeError):
                role = None
            roles[name] = role if isinstance(role, str) else None
    return roles
