"""The stream's pure parts: a client's bounded queue, cursors, and the weak ETag match."""

from __future__ import annotations

from chainloom.eventstore.api.conventions import etag, matches
from chainloom.eventstore.api.stream import StreamClient, StreamEvent
from chainloom.eventstore.feed import FeedEntry, cursor_at, feed_cursor, is_cursor

ROW = "2:" + "ab" * 32 + ":0000000000000007"


def _event(n: int) -> StreamEvent:
    return StreamEvent(feed_cursor(n, ROW), 2, "ab" * 32, b"frame %d" % n)


def test_a_live_client_over_its_bound_is_dropped_with_the_reason() -> None:
    client = StreamClient(None, None, limit=3, live=True)
    for n in range(3):
        client.offer(_event(n))
    assert len(client.queue) == 3
    client.offer(_event(3))
    assert client.dropped == "too slow: 3 events were waiting to be sent"
    assert not client.queue
    client.offer(_event(4))
    assert not client.queue


def test_a_catching_up_client_over_its_bound_reads_on_from_the_store() -> None:
    client = StreamClient(None, None, limit=2)
    for n in range(3):
        client.offer(_event(n))
    assert client.overflowed
    assert client.dropped is None
    assert not client.queue


def test_filters() -> None:
    client = StreamClient(2, "ab" * 32, limit=5)
    assert client.matches(2, "ab" * 32)
    assert not client.matches(4, "ab" * 32)
    assert not client.matches(2, "cd" * 32)
    assert StreamClient(None, None, limit=1).matches(30, "00" * 32)


def test_cursors_sort_in_write_order_and_name_their_row() -> None:
    cursor = feed_cursor(1_795_796_580_718_206, ROW)
    assert is_cursor(cursor)
    assert FeedEntry(cursor).row_key == ROW
    assert FeedEntry(cursor).index_key == "feed:" + cursor
    assert FeedEntry(cursor).cell_micros == 1_795_796_580_718_000
    assert cursor_at(1_795_796_580_718_206) < cursor < feed_cursor(1_795_796_580_718_207, ROW)
    for bad in ("", "12", cursor + "x", "feed:" + cursor, cursor.replace("ab", "AB", 1)):
        assert not is_cursor(bad)


def test_if_none_match_is_a_weak_comparison() -> None:
    tag = etag(b"{}")
    assert tag.startswith('W/"')
    assert matches(tag, tag)
    assert matches(tag.removeprefix("W/"), tag)
    assert matches(f'"other", {tag}', tag)
    assert matches("*", tag)
    assert not matches('W/"other"', tag)
    assert not matches(None, tag)
    assert etag(b"{}") != etag(b"[]")
