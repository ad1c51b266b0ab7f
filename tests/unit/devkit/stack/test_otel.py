"""The collector component's two configurations, as data (no build, no server)."""

from __future__ import annotations

import json
from pathlib import Path

from chainloom_dev.stack import manager, versions
from chainloom_dev.stack.components.otel import builder_config, collector_config, go_mod


def test_builder_config_names_the_otlp_receiver_and_the_file_exporter() -> None:
    config = json.loads(builder_config(Path("/tmp/out")))
    assert config["dist"]["output_path"] == "/tmp/out"
    receivers = [entry["gomod"] for entry in config["receivers"]]
    exporters = [entry["gomod"] for entry in config["exporters"]]
    assert receivers == [
        f"go.opentelemetry.io/collector/receiver/otlpreceiver {versions.OTEL_COLLECTOR}"
    ]
    assert any("/exporter/fileexporter " in entry for entry in exporters)
    assert any("/exporter/otlpexporter " in entry for entry in exporters)


def test_go_mod_requires_every_component_and_the_providers() -> None:
    text = go_mod()
    assert "fileexporter " + versions.OTEL_COLLECTOR in text
    assert f"confmap/provider/envprovider {versions.OTEL_COLLECTOR_STABLE}" in text


def test_collector_listens_on_loopback_only_and_writes_each_signal_to_a_file() -> None:
    config = json.loads(collector_config(4318, 4317, Path("/run/otel")))
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["http"]["endpoint"] == "127.0.0.1:4318"
    assert protocols["grpc"]["endpoint"] == "127.0.0.1:4317"
    for signal in ("traces", "metrics", "logs"):
        assert config["exporters"][f"file/{signal}"]["path"] == f"/run/otel/{signal}.jsonl"
        assert f"file/{signal}" in config["service"]["pipelines"][signal]["exporters"]
    # No port of its own for the collector's telemetry.
    assert config["service"]["telemetry"]["metrics"]["level"] == "none"


def test_full_brings_the_collector_and_only_otel_starts_it_alone() -> None:
    assert "otel" in manager.resolve(["redis"], full=True)
    assert "otel" not in manager.resolve(["redis"])
    assert manager.resolve(["otel"]) == ["otel"]
