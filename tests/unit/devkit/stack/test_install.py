"""Install-once: complete installs are reused, interrupted ones leave nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom_dev.stack._install import install_once, is_installed


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINLOOM_CACHE", str(tmp_path / "cache"))


def test_builds_once_then_reuses(tmp_path: Path) -> None:
    calls: list[Path] = []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        (tmp / "bin").mkdir()
        (tmp / "bin" / "tool").write_text("v1")

    target = tmp_path / "cache" / "tool-v1"
    install_once(target, build)
    install_once(target, build)
    assert len(calls) == 1
    assert is_installed(target)
    assert (target / "bin" / "tool").read_text() == "v1"


def test_interrupted_build_leaves_no_half_install(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "tool-v2"
    target.parent.mkdir(parents=True, exist_ok=True)

    def failing(tmp: Path) -> None:
        (tmp / "partial").write_text("x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        install_once(target, failing)
    assert not target.exists()
    assert list(target.parent.glob(".tool-v2.tmp-*")) == []
