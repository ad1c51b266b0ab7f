"""The node's pure parts: host-wide names from the run directory, and its configuration."""

from __future__ import annotations

import json
from pathlib import Path

from chainloom_dev.stack.components import image, node


def test_host_wide_names_derive_from_the_run_directory(tmp_path: Path) -> None:
    first, second = node.layout(tmp_path / "a"), node.layout(tmp_path / "b")
    assert first.bridge != second.bridge
    assert first.network != second.network
    assert len(first.bridge) <= 15  # IFNAMSIZ - 1
    assert node.layout(tmp_path / "a") == first
    assert first.socket.is_relative_to(tmp_path / "a")


def test_containerd_config_has_what_this_machine_needs(tmp_path: Path) -> None:
    text = node.containerd_config(node.layout(tmp_path))
    assert "restrict_oom_score_adj = true" in text
    assert "SystemdCgroup = false" in text
    assert 'snapshotter = "overlayfs"' in text
    assert f'sandbox_image = "{node.PAUSE_IMAGE}"' in text
    assert f'bin_dir = "{node.CNI_BIN_DIR}"' in text
    assert str(tmp_path) in text.split("[grpc]")[1].split("\n")[1]


def test_cni_is_a_bridge_without_masquerade_on_the_chosen_subnet(tmp_path: Path) -> None:
    layout = node.layout(tmp_path)
    config = json.loads(node.cni_config(layout, "10.88.7.0/24"))
    (bridge,) = config["plugins"]
    assert bridge["bridge"] == layout.bridge
    assert (bridge["isGateway"], bridge["hairpinMode"], bridge["ipMasq"]) == (True, True, False)
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.88.7.0/24", "gateway": "10.88.7.1"}]]
    assert bridge["ipam"]["dataDir"].startswith(str(tmp_path))


def test_kubelet_config_keeps_local_images_and_allows_cgroup_v1(tmp_path: Path) -> None:
    config = json.loads(node.kubelet_config(node.layout(tmp_path), 10250, 10248, dns=None))
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["failCgroupV1"] is False
    assert config["failSwapOn"] is False
    assert (config["address"], config["readOnlyPort"]) == ("127.0.0.1", 0)
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["podLogsDir"].startswith(str(tmp_path))
    assert "clusterDNS" not in config


def test_image_hash_follows_the_source_tree(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "README.md").write_text("x\n")
    source = tmp_path / "services" / "pkg"
    source.mkdir(parents=True)
    (source / "mod.py").write_text("A = 1\n")
    before = image.PLAIN_RECIPE.input_hash(tmp_path)
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert image.PLAIN_RECIPE.input_hash(tmp_path) == before  # byte code is not an input
    (source / "mod.py").write_text("A = 2\n")
    assert image.PLAIN_RECIPE.input_hash(tmp_path) != before
