"""The recent-digest set: copies found, memory bounded, the oldest forgotten first."""

from __future__ import annotations

import pytest

from chainloom.indexer.dedupe import DIGEST_BYTES, RecentDigests, vaa_digest


def test_a_digest_is_remembered_once() -> None:
    recent = RecentDigests(10)
    digest = vaa_digest(b"vaa")
    assert recent.add(digest)
    assert not recent.add(digest)
    assert digest in recent
    assert len(digest) == DIGEST_BYTES


def test_different_bytes_give_different_digests() -> None:
    assert vaa_digest(b"vaa-1") != vaa_digest(b"vaa-2")


def test_the_set_never_grows_past_its_capacity_and_forgets_the_oldest() -> None:
    recent = RecentDigests(3)
    digests = [vaa_digest(bytes([n])) for n in range(5)]
    for digest in digests:
        recent.add(digest)
    assert len(recent) == 3
    assert digests[0] not in recent
    assert digests[1] not in recent
    assert all(d in recent for d in digests[2:])
    assert recent.add(digests[0])  # forgotten: taken again


def test_forget_lets_the_next_copy_through() -> None:
    recent = RecentDigests(3)
    digest = vaa_digest(b"x")
    recent.add(digest)
    recent.forget(digest)
    assert recent.add(digest)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RecentDigests(0)
