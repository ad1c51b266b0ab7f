"""The stack's Redis runs with its append-only file; the fsync policy is chosen, and kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom_dev.stack._model import Running
from chainloom_dev.stack.components.redis import FSYNC_VARIABLE, fsync_policy
from chainloom_dev.stack.errors import StackError


def _ran_with(policy: str) -> Running:
    return Running("redis", "7.0", "127.0.0.1:6400", 1, "redis.log", extra={"appendfsync": policy})


def test_everysec_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FSYNC_VARIABLE, raising=False)
    assert fsync_policy(None) == "everysec"
    monkeypatch.setenv(FSYNC_VARIABLE, "always")
    assert fsync_policy(None) == "always"


def test_a_restart_keeps_the_policy_it_ran_with_unless_another_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FSYNC_VARIABLE, raising=False)
    assert fsync_policy(_ran_with("always")) == "always"
    monkeypatch.setenv(FSYNC_VARIABLE, "everysec")
    assert fsync_policy(_ran_with("always")) == "everysec"


def test_an_unknown_policy_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FSYNC_VARIABLE, "never")
    with pytest.raises(StackError, match=r"CHAINLOOM_REDIS_FSYNC='never'.*everysec, always"):
        fsync_policy(None)


def test_the_acl_file_keeps_default_open_and_holds_only_a_hash(tmp_path: Path) -> None:
    import hashlib

    from chainloom_dev.stack._pki import ensure_password
    from chainloom_dev.stack.components.redis import ACL_USER, write_acl

    password_file = ensure_password(tmp_path / "pw")
    assert password_file.stat().st_mode & 0o777 == 0o600
    assert ensure_password(password_file).read_text() == password_file.read_text()  # made once
    password = password_file.read_text().strip()
    acl = write_acl(tmp_path / "users.acl", password_file)
    lines = acl.read_text().splitlines()
    assert lines[0] == "user default on nopass ~* &* +@all"
    assert lines[1] == (
        f"user {ACL_USER} on #{hashlib.sha256(password.encode()).hexdigest()} ~* &* +@all"
    )
    assert password not in acl.read_text()
    assert acl.stat().st_mode & 0o777 == 0o600
