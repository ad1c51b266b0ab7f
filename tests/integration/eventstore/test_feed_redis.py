"""The event feed over the stack's real Redis: ``chainloom events put`` in a process of its own
publishes, the API's stream (polling all but switched off) hears it and pushes the VAAs; an
unreachable Redis slows neither side."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from typing import Any

from pydantic import SecretStr

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.feed_redis import RedisVaaFeed
from chainloom.settings import BigtableSettings, RedisSettings
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from tests.integration.eventstore.test_events_api import running
from tests.integration.eventstore.test_events_api_stream import Listener, feed_order

KIT = DevGuardians()


def test_a_writer_in_another_process_wakes_the_stream(
    tables: BigtableTables, settings: BigtableSettings, redis_url: str
) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    feed = RedisVaaFeed(RedisSettings(url=SecretStr(redis_url), key_prefix=prefix))
    assert feed.channel == f"{prefix}:eventstore:vaas"
    vaas = list(generate_vaas(25, 5, KIT, Mix(duplicate=0, conflict=0)))
    # the stream polls the store only every 60 s: whatever arrives sooner came through Redis
    with running(tables, feed, stream_poll_interval=60) as base:
        listener = Listener(base).start()
        time.sleep(0.5)  # the feed's listener thread has subscribed
        env = os.environ | {
            "CHAINLOOM_API__FEED_REDIS__URL": redis_url,
            "CHAINLOOM_API__FEED_REDIS__KEY_PREFIX": prefix,
        }
        started = time.monotonic()
        put = subprocess.run(
            [sys.executable, "-m", "chainloom", "events", "--table", settings.table,
             "--index-table", settings.index_table, "--instance", settings.instance or "",
             "put", "--guardian-set", "dev", "-"],
            input="".join(raw.hex() + "\n" for raw in vaas),
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert put.returncode == 0, put.stderr
        received = listener.wait_for(len(vaas), seconds=30)
        assert time.monotonic() - started < 30
        assert received == feed_order(tables)
        assert len(received) == len(vaas)
        listener.close()
    feed.close()


def test_an_unreachable_redis_never_slows_the_writer(caplog: Any) -> None:
    feed = RedisVaaFeed(
        RedisSettings(url=SecretStr(f"redis://127.0.0.1:{free_port()}/0")), "nowhere"
    )
    started = time.monotonic()
    for _ in range(50):
        feed.publish(["00000000000000000001:2:" + "00" * 32 + ":0000000000000001"])
    assert time.monotonic() - started < 3  # one refused connection, then skipped for 10 s
    assert sum("cannot publish on Redis" in r.getMessage() for r in caplog.records) == 1
    feed.close()
