"""The recheck's paged listing: a listing error ends the pass, the items read so far count;
the login handler: kopf's own logins, whatever is installed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import kopf
import pytest

from chainloom_operator._handlers import shared, startup
from chainloom_operator._kube import Cluster


class _PagesThenError:
    """A cluster whose listing yields two pools, then fails (the API server went away)."""

    def list_custom(self, plural: str, namespaces: Any = ()) -> Iterator[dict[str, Any]]:
        assert plural == "relayerpools"
        yield {"metadata": {"name": "a"}}
        yield {"metadata": {"name": "b"}}
        raise ConnectionError("the API server went away")


def test_listed_keeps_what_was_read_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    cluster = cast(Cluster, _PagesThenError())
    with caplog.at_level(logging.WARNING, logger="chainloom.operator"):
        names = [b["metadata"]["name"] for b in shared.listed(cluster, "RelayerPool", ())]
    assert names == ["a", "b"]
    assert "cannot list RelayerPools: the API server went away" in caplog.text


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t0k3n}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
"""


def test_login_reads_the_kubeconfig_of_the_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))  # as ``--kubeconfig`` does, after kopf's import
    login: Any = startup.login  # kopf's decorator types it for kopf's own callers
    info = login(settings=kopf.OperatorSettings(), logger=logging.getLogger("t"))
    assert isinstance(info, kopf.ConnectionInfo)
    assert (info.server, info.token, info.default_namespace) == (
        "https://127.0.0.1:6443",
        "t0k3n",
        "team-a",
    )
