"""The stack manager's pure parts: names, groups and start order."""

from __future__ import annotations

import pytest

from chainloom_dev.stack import manager
from chainloom_dev.stack._model import Running
from chainloom_dev.stack.errors import UnknownComponentError


def test_groups_expand_in_start_order_with_dependencies() -> None:
    assert manager.resolve(["kube-apiserver"]) == ["etcd", "kube-apiserver"]
    assert manager.resolve(["kubernetes"]) == ["kubectl", "helm", "etcd", "kube-apiserver"]
    full = manager.resolve(["redis"], full=True)
    assert full[0] == "redis"
    assert full[-3:] == ["kube-controller-manager", "kube-scheduler", "kwok"]
    assert full.index("etcd") < full.index("kube-apiserver") < full.index("kwok")


def test_kwok_pulls_in_the_whole_control_plane() -> None:
    assert manager.resolve(["kwok"]) == [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    ]


def test_unknown_component_names_the_choices() -> None:
    with pytest.raises(UnknownComponentError, match=r"'postgres'.*redis"):
        manager.resolve(["redis", "postgres"])


def test_the_node_brings_the_controllers_and_the_api_server() -> None:
    order = manager.resolve([], node=True)
    assert order[-7:] == [
        "containerd",
        "cluster-dns",
        "kubelet",
        "kube-proxy",
        "apiserver-relay",
        "spark-operator",
        "chainloom-image",
    ]
    for needed in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert order.index(needed) < order.index("kubelet")
    assert "kwok" not in order  # KWOK is for the scale test, not for running pods


def test_stopping_the_node_group_leaves_the_control_plane() -> None:
    recorded = {name: Running(name, "", "", 0, "") for name in manager.resolve(["node"], full=True)}
    chosen = manager.resolve_running(["node"], recorded)
    assert chosen == [
        "containerd",
        "cluster-dns",
        "kubelet",
        "kube-proxy",
        "apiserver-relay",
        "spark-operator",
        "chainloom-image",
    ]
    everything_kubernetes = manager.resolve_running(["kubernetes"], recorded)
    assert "kubelet" in everything_kubernetes
    assert "kwok" in everything_kubernetes
