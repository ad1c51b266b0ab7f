"""Each stack component is the real server: its own version, and a real round trip."""

from __future__ import annotations

import pytest

from chainloom_dev.stack import manager, versions
from tests.conftest import StackForTests


def test_redis_is_a_real_redis_server(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        info: dict[str, object] = client.info("server")  # type: ignore[assignment]
        assert int(str(info["redis_version"]).split(".")[0]) >= 6
        client.rpush("q", b"a", b"b")
        assert client.lmove("q", "r", "LEFT", "RIGHT") == b"a"
        assert client.lrange("r", 0, -1) == [b"a"]
    finally:
        client.close()


def test_bigtable_emulator_round_trip(bigtable_emulator: str, bigtable_table_name: str) -> None:
    from google.cloud import bigtable
    from google.cloud.bigtable import column_family

    client = bigtable.Client(project="p", admin=True)
    table = client.instance("i").table(bigtable_table_name)
    table.create(column_families={"cf": column_family.MaxVersionsGCRule(2)})
    rows = []
    for i in range(50):
        row = table.direct_row(f"k{i:03d}".encode())
        row.set_cell("cf", b"q", str(i).encode())
        rows.append(row)
    assert all(status.code == 0 for status in table.mutate_rows(rows))
    read = list(table.read_rows(start_key=b"k010", end_key=b"k020"))
    assert [r.row_key for r in read] == [f"k{i:03d}".encode() for i in range(10, 20)]
    assert table.name.endswith(bigtable_table_name)
    table.delete()
    client.close()


def test_cassandra_is_release_5(
    cassandra_address: tuple[str, int], cassandra_keyspace: str
) -> None:
    from cassandra.cluster import Cluster

    host, port = cassandra_address
    cluster = Cluster([host], port=port, protocol_version=5)
    session = cluster.connect(cassandra_keyspace)
    try:
        release = session.execute("SELECT release_version FROM system.local").one()
        assert release.release_version == versions.CASSANDRA
        session.execute("CREATE TABLE kv (k text PRIMARY KEY, v int)")
        session.execute("INSERT INTO kv (k, v) VALUES ('a', 1) IF NOT EXISTS")
        applied = session.execute("INSERT INTO kv (k, v) VALUES ('a', 2) IF NOT EXISTS").one()
        assert applied.applied is False  # a real Paxos compare-and-set
        assert session.execute("SELECT v FROM kv WHERE k = 'a'").one().v == 1
    finally:
        cluster.shutdown()


def test_status_reports_every_started_component_healthy(local_stack: StackForTests) -> None:
    local_stack.require("redis", "bigtable")
    rows = {row.name: row for row in manager.status(["redis", "bigtable"])}
    assert rows["redis"].healthy, rows["redis"].detail
    assert rows["bigtable"].healthy, rows["bigtable"].detail
    assert rows["redis"].pid > 0


def test_environment_points_clients_at_the_stack(local_stack: StackForTests) -> None:
    running = local_stack.require("redis", "bigtable")
    env = manager.environment()
    assert env["BIGTABLE_EMULATOR_HOST"] == running["bigtable"].address
    assert env["CHAINLOOM_REDIS__URL"].startswith(f"redis://{running['redis'].address}")


@pytest.mark.parametrize("name", ["redis", "bigtable"])
def test_a_stopped_component_is_reported_unhealthy(name: str) -> None:
    # A status row for a recorded pid that is gone must not claim health.
    from dataclasses import replace

    from chainloom_dev.stack._model import Running

    fake = Running(name, "x", "127.0.0.1:1", 2**22 + 12345, "")
    assert not manager._is_up(fake)
    assert replace(fake, pid=0).pid == 0


def test_otel_collector_takes_otlp_and_writes_it_to_its_file(local_stack: StackForTests) -> None:
    import json
    import time
    import urllib.request
    import uuid
    from pathlib import Path

    running = local_stack.require("otel")["otel"]
    assert running.version.startswith("otelcol 0.165")
    assert running.address.startswith("127.0.0.1:")
    assert not any(key.startswith("OTEL_") for key in running.env)  # telemetry stays opt-in
    trace_id = uuid.uuid4().hex
    now = time.time_ns()
    span = {
        "traceId": trace_id,
        "spanId": uuid.uuid4().hex[:16],
        "name": "probe",
        "kind": 1,
        "startTimeUnixNano": str(now),
        "endTimeUnixNano": str(now + 1000),
    }
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}
    request = urllib.request.Request(
        f"{running.extra['endpoint']}/v1/traces",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    traces = Path(running.extra["traces_file"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if traces.exists() and trace_id in traces.read_text():
            return
        time.sleep(0.2)
    raise AssertionError(f"span {trace_id} never reached {traces}")
