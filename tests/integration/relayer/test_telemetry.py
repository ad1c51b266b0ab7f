"""One transfer through ``relayer listen`` and ``relayer work`` processes, observed by the stack's
real OpenTelemetry Collector (``chainloom-dev stack up --only otel``).

The collector appends what it receives to JSON-lines files; the test reads them back: one trace
whose spans come from both processes, in order, carrying the message id; the queue and outcome
metrics with the right values; and no wallet key anywhere (spans, metric labels, log lines).
The collector's files are shared by every run, so this run's telemetry is told apart by a
resource attribute of its own (``OTEL_RESOURCE_ATTRIBUTES``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import StackForTests
from tests.integration.relayer.relay_support import GUARDIANS, first_line, transfer_vaa

CHAINLOOM = [sys.executable, "-m", "chainloom.cli"]
KEY = "5a1f0c3e9b2d4c7a8e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2e"
"""The worker's wallet key: must appear in no span, metric or log line."""
TARGET = 4
EMITTER_CHAIN = 6
RUN_ATTRIBUTE = "chainloom.test.run"


@pytest.fixture(scope="module")
def collector(local_stack: StackForTests) -> dict[str, str]:
    running = local_stack.require("otel")["otel"]
    return running.extra


def _otel_env(collector: dict[str, str], run: str) -> dict[str, str]:
    return {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector["endpoint"],
        "OTEL_RESOURCE_ATTRIBUTES": f"{RUN_ATTRIBUTE}={run}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
        "CHAINLOOM_TELEMETRY__LOG_FORMAT": "json",
    }


def _attributes(raw: list[dict[str, Any]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for entry in raw:
        value = entry["value"]
        values[entry["key"]] = next(iter(value.values())) if value else None
    return values


def _ours(path: Path, kind: str, run: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(resource attributes, scope entry) of every export of this run in a collector file."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get(f"resource{kind}", []):
            attributes = _attributes(resource["resource"].get("attributes", []))
            if attributes.get(RUN_ATTRIBUTE) == run:
                for scope in resource.get(f"scope{kind}", []):
                    yield attributes, scope


def _spans(path: Path, run: str) -> list[dict[str, Any]]:
    spans = []
    for resource, scope in _ours(path, "Spans", run):
        for span in scope["spans"]:
            spans.append(
                {
                    **span,
                    "service": resource["service.name"],
                    "attrs": _attributes(span.get("attributes", [])),
                }
            )
    return spans


def _points(path: Path, run: str) -> dict[str, list[dict[str, Any]]]:
    """Metric name -> its data points (the last export of each is last)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for _, scope in _ours(path, "Metrics", run):
        for metric in scope["metrics"]:
            data = next(
                value for key, value in metric.items() if key in ("sum", "gauge", "histogram")
            )
            for point in data["dataPoints"]:
                found.setdefault(metric["name"], []).append(
                    {**point, "attrs": _attributes(point.get("attributes", []))}
                )
    return found


def _value(point: dict[str, Any]) -> float:
    return float(point.get("asInt", point.get("asDouble", 0)))


def _wait(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_one_transfer_is_one_trace_across_listener_and_worker(
    collector: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex
    env = _otel_env(collector, run)
    sets = tmp_path / "guardian-sets.json"
    sets.write_text(json.dumps(GUARDIANS.sets().to_json()))
    config = tmp_path / "relayer.yaml"
    config.write_text(
        json.dumps(
            {
                "redis": {"url": redis_url},
                "guardian_sets": {"source": str(sets)},
                "known_emitters": [
                    {"chain": EMITTER_CHAIN, "address": GUARDIANS.token_bridge_emitter.hex()}
                ],
                "target_chains": [TARGET],
                "tokens": [{"chain": "*", "address": "*", "min_fee": 0}],
            }
        )
    )
    listener_log = tmp_path / "listener.log"
    with listener_log.open("wb") as out:
        listener = subprocess.Popen(
            [*CHAINLOOM, "relayer", "listen", "--config", str(config), "--no-spy",
             "--rest-host", "127.0.0.1", "--rest-port", "0"],
            stderr=out, env=env,
        )  # fmt: skip
    try:
        base = "http://" + first_line(listener_log, listener).split()[-1]
        vaa = transfer_vaa(sequence=7001, target_chain=TARGET, emitter_chain=EMITTER_CHAIN)
        body = json.dumps({"vaa": vaa.to_bytes().hex()}).encode()
        request = urllib.request.Request(f"{base}/v1/relay", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 202

        # The listener's /metrics: the SDK's Prometheus text, parsed by prometheus_client.
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
            exposition = response.read().decode()
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(exposition)
            for sample in family.samples
        }
        assert samples[("chainloom_listener_outcomes_total", (("status", "queued"),))] == 1
        depth = (("chain", str(TARGET)), ("table", "incoming"))
        assert samples[("chainloom_relayer_queue_depth", depth)] == 1

        wallet = tmp_path / "wallet"
        wallet.write_text(KEY + "\n")
        worker = subprocess.run(
            [*CHAINLOOM, "relayer", "work", "--chain", str(TARGET), "--wallet-file", str(wallet),
             "--redis-url", redis_url, "--adapter", "redis-sim",
             "--recheck", "0.05", "--idle-sleep", "0.02", "--stop-when-idle", "1.5"],
            capture_output=True, text=True, timeout=120, check=False, env=env,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stderr
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
            after = response.read().decode()
        assert 'chainloom_relayer_queue_depth{chain="4",table="incoming"} 0.0' in after
    finally:
        listener.send_signal(signal.SIGTERM)
        listener.wait(30)

    traces, metrics = Path(collector["traces_file"]), Path(collector["metrics_file"])
    expected = [
        ("chainloom-relayer-listener", "relayer.receive"),
        ("chainloom-relayer-listener", "relayer.validate"),
        ("chainloom-relayer-listener", "relayer.enqueue"),
        ("chainloom-relayer-worker", "relayer.attempt"),
        ("chainloom-relayer-worker", "relayer.redeemed_check"),
        ("chainloom-relayer-worker", "relayer.submit"),
        ("chainloom-relayer-worker", "relayer.record"),
        ("chainloom-relayer-worker", "relayer.confirm"),
        ("chainloom-relayer-worker", "relayer.record"),
    ]
    _wait(lambda: len(_spans(traces, run)) >= len(expected), "the spans of both processes")
    spans = sorted(_spans(traces, run), key=lambda span: int(span["startTimeUnixNano"]))
    assert [(span["service"], span["name"]) for span in spans] == expected
    assert len({span["traceId"] for span in spans}) == 1, "one trace for the transfer"
    by_name = {span["name"]: span for span in spans}
    receive, attempt = by_name["relayer.receive"], by_name["relayer.attempt"]
    assert "parentSpanId" not in receive or not receive["parentSpanId"]
    # The worker's spans continue the listener's trace, under the receipt.
    assert attempt["parentSpanId"] == receive["spanId"]
    message_id = vaa.message_id
    assert receive["attrs"]["chainloom.message_id"] == message_id
    assert attempt["attrs"]["chainloom.message_id"] == message_id
    assert receive["attrs"]["chainloom.outcome"] == "queued"
    assert int(receive["attrs"]["chainloom.target_chain"]) == TARGET
    outcomes = [
        span["attrs"].get("chainloom.outcome") for span in spans if span["name"] == "relayer.record"
    ]
    assert outcomes == ["pending_confirmation", "confirmed"]

    def completed() -> bool:
        points = _points(metrics, run)
        return bool(points.get("chainloom.relayer.completed")) and bool(
            points.get("chainloom.listener.outcomes")
        )

    _wait(completed, "the worker's and the listener's metrics")
    points = _points(metrics, run)
    done = points["chainloom.relayer.completed"][-1]
    assert (_value(done), done["attrs"]["chainloom.outcome"]) == (1, "confirmed")
    queued = [p for p in points["chainloom.listener.outcomes"] if p["attrs"]["status"] == "queued"]
    assert _value(queued[-1]) == 1
    assert points["chainloom.relayer.submit.duration"][-1]["count"] in ("1", 1)
    depths = [
        p for p in points["chainloom.relayer.queue.depth"] if p["attrs"]["table"] == "incoming"
    ]
    assert depths

    # No wallet key in any span, metric label or log line of this run.
    exported = [
        line for path in (traces, metrics) for line in path.read_text().splitlines() if run in line
    ]
    logs = listener_log.read_text() + worker.stderr
    for text in (*exported, logs):
        assert KEY not in text
        assert KEY.upper() not in text
    # telemetry.log_format=json: the worker logs one JSON object per line.
    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.startswith("{")]
    assert any("started" in line["message"] for line in lines)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
