"""Missing tools are named together with the command that installs them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chainloom_dev.stack.components import _apt, _go, cassandra
from chainloom_dev.stack.errors import MissingToolError


def test_missing_go_names_the_toolchain_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_go, "FALLBACK_GO", tmp_path / "no-go")
    with pytest.raises(MissingToolError) as raised:
        _go.go_binary()
    assert raised.value.tool == "go"
    assert "apt-get install -y golang-go" in str(raised.value)


def test_missing_java_names_jdk17(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CHAINLOOM_JAVA", raising=False)
    monkeypatch.setattr(cassandra, "JAVA_CANDIDATES", (str(tmp_path / "java"),))
    with pytest.raises(MissingToolError, match="openjdk-17-jre-headless"):
        cassandra.java17()


def test_missing_apt_says_which_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda name: None if name in ("apt-get", "no-such-server") else real_which(name),
    )
    with pytest.raises(MissingToolError, match="apt-get install -y no-such-package"):
        _apt.ensure_command("no-such-server", "no-such-package", _Quiet())


class _Quiet:
    def step(self, message: str) -> None:
        del message
