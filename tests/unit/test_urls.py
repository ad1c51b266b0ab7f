"""Service URLs: passwords masked even in malformed URLs; Redis URLs checked before use."""

from __future__ import annotations

import pytest

from chainloom.urls import check_redis_url, redact_url


def test_redact_url():
    assert redact_url("redis://:pw@host:6379/0") == "redis://:***@host:6379/0"
    assert redact_url("redis://host:6379/0") == "redis://host:6379/0"
    assert redact_url("redis://u:pw@host:notaport/0") == "redis://u:***@host:notaport/0"
    assert redact_url("redis://u:pw@host:99999/0") == "redis://u:***@host:99999/0"
    assert redact_url("redis://user@host/0") == "redis://user@host/0"


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://:pw@cache.example:6380/15",
        "redis://localhost",
        "redis://h/",
    ],
)
def test_usable_redis_urls_pass(url: str):
    check_redis_url(url)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis://:pw@127.0.0.1:notaport/0", "port"),
        ("redis://:pw@127.0.0.1:99999/0", "port"),
        ("redis://127.0.0.1:0/0", "port"),
        ("http://127.0.0.1:6379/0", "scheme"),
        ("127.0.0.1:6379", "scheme"),
        ("redis://127.0.0.1:6379/zz", "database"),
        ("redis://127.0.0.1:6379/\u0662", "database"),
        ("redis:///0", "host"),
    ],
)
def test_unusable_redis_urls_are_refused_without_their_password(url: str, problem: str):
    with pytest.raises(ValueError, match=problem) as raised:
        check_redis_url(url)
    assert "pw" not in str(raised.value)
