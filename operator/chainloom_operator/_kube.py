"""The Kubernetes API as the operator uses it: server-side apply, children by label, status.

A thin adapter over the official client's public API (the dynamic client for any kind, the
typed clients for Secrets and status), so the handlers read as a sequence of steps. Every
write is a server-side apply under one field manager (:data:`FIELD_MANAGER`): the operator
owns exactly the fields it renders, a user's or another controller's fields are left alone,
and applying the same manifest twice changes nothing.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterable, Iterator
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

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
        "kubeflow/spark-operator/v2.5.0/charts/spark-operator-chart/crds/"
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


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """A client for the cluster: in-cluster in a pod, else ``kubeconfig`` or the current one."""
    try:
        config.load_incluster_config()
        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config(config_file=kubeconfig)


def _is_pattern(namespace: str) -> bool:
    return any(c in namespace for c in "*?[!")


class Cluster:
    """The operations the handlers need, on one API client."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.dynamic = DynamicClient(api)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    def _resource(self, api_version: str, kind: str) -> Any:
        try:
            return self.dynamic.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            hint = INSTALL_HINTS.get(api_version, "install the CRD that defines it")
            raise MissingCrdError(kind, api_version, hint) from None

    def served(self, api_version: str, kind: str) -> bool:
        """The API server knows ``kind``."""
        try:
            self._resource(api_version, kind)
        except MissingCrdError:
            return False
        return True

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply ``manifest`` (forcing ownership of the fields it sets)."""
        api_version, kind, name = child_key(manifest)
        resource = self._resource(api_version, kind)
        applied = resource.server_side_apply(
            body=manifest,
            name=name,
            namespace=manifest["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )
        result: dict[str, Any] = applied.to_dict()
        return result

    def delete(self, manifest: dict[str, Any]) -> None:
        """Delete a child (gone already is fine)."""
        api_version, kind, name = child_key(manifest)
        with contextlib.suppress(NotFoundError):
            self._resource(api_version, kind).delete(
                name=name, namespace=manifest["metadata"]["namespace"]
            )

    def children(self, owner: Owner, kinds: Iterable[tuple[str, str]] = CHILD_KINDS
                 ) -> list[dict[str, Any]]:  # fmt: skip
        """The owner's children of ``kinds`` (found by its labels and its uid)."""
        selector = ",".join(f"{k}={v}" for k, v in owner.selector().items())
        found: list[dict[str, Any]] = []
        for api_version, kind in kinds:
            if not self.served(api_version, kind):
                continue
            listed = self._resource(api_version, kind).get(
                namespace=owner.namespace, label_selector=selector
            )
            for item in listed.to_dict().get("items", []):
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
        resource = self._resource("v1", "Secret")
        for name, _key, purpose in references:
            try:
                resource.get(name=name, namespace=namespace,
                             header_params={"Accept": PARTIAL_METADATA})  # fmt: skip
            except NotFoundError:
                raise MissingSecretError(namespace, name, purpose) from None

    def get_custom(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A chainloom custom resource, or None when it does not exist."""
        try:
            found: dict[str, Any] = self.custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Any namespaced object (a scheduled run's SparkApplication), or None when it is gone."""
        try:
            found: dict[str, Any] = (
                self._resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
            )
        except NotFoundError:
            return None
        return found

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A pod as the API server returns it (camelCase keys), or None when it is gone."""
        try:
            found: dict[str, Any] = (
                self._resource("v1", "Pod").get(name=name, namespace=namespace).to_dict()
            )
        except NotFoundError:
            return None
        return found

    def list_custom(self, plural: str, namespaces: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
        """The chainloom resources of ``plural`` in ``namespaces`` (none given: the cluster).

        Read :data:`LIST_PAGE` objects at a time (the API server's ``limit``/``continue``),
        so a pass over a thousand pools never holds them all at once. Namespace patterns
        (``team-*``) are matched against the names, which needs the cluster-wide list (the
        chart's ClusterRole grants it when no namespaces are set).
        """
        names = list(namespaces)
        if names and not any(_is_pattern(n) for n in names):
            for namespace in names:
                yield from self._pages(plural, namespace)
            return
        for item in self._pages(plural, None):
            if not names or any(
                fnmatch.fnmatchcase(item["metadata"]["namespace"], n) for n in names
            ):
                yield item

    def _pages(self, plural: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            paging: dict[str, Any] = {"limit": LIST_PAGE}
            if token:
                paging["_continue"] = token
            if namespace is None:
                listed = self.custom.list_cluster_custom_object(GROUP, VERSION, plural, **paging)
            else:
                listed = self.custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, **paging
                )
            yield from listed.get("items", [])
            token = (listed.get("metadata") or {}).get("continue")
            if not token:
                return

    def patch_status(self, plural: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Merge ``status`` into the resource's status subresource (gone already is fine)."""
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, {"status": status}
            )
        except ApiException as error:
            if error.status != 404:
                raise
