"""Fixtures of the indexer's integration tests: fresh tables on the real emulator, a spy served
by ``chainloom-dev spy serve`` (the harness's gRPC spy server) on loopback, and the indexer itself,
in-process or as a ``chainloom indexer run`` process."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from chainloom.eventstore.bigtable import BigtableTables, ensure_schema
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.settings import BigtableSettings
from chainloom.wormhole import SignatureCache, all_known_emitters
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import generate_vaas

KIT = DevGuardians()
CHAINLOOM = str(Path(sys.executable).with_name("chainloom"))
CHAINLOOM_DEV = str(Path(sys.executable).with_name("chainloom-dev"))


@functools.cache
def _signed(count: int, seed: int) -> tuple[bytes, ...]:
    return tuple(generate_vaas(count, seed, KIT))


def workload(count: int, seed: int) -> list[bytes]:
    """``count`` VAAs of the mainnet-like mix (re-signed duplicates and conflicts included),
    signed once per test session (signing 5,000 takes 5-10 s on the shared machine)."""
    return list(_signed(count, seed))


def contents(settings: BigtableSettings) -> tuple[dict[str, Any], list[Any]]:
    """Everything in the events and index tables (latest cell of every column), the indexer's
    own gap-state rows (``gaps:``, bookkeeping a plain writer has no part in) and the event
    feed's rows (``feed:``, keyed by their write time) left out."""
    with BigtableTables(settings) as tables:
        index = [
            row for row in tables.scan_index("", "~") if not row[0].startswith(("gaps:", "feed:"))
        ]
        return dict(tables.scan_events([("", "~")])), index


def write_directly(settings: BigtableSettings, raws: list[bytes], rows: int = 200) -> None:
    """The same VAAs through the event writer alone, configured as the indexer configures it."""
    with BigtableTables(settings) as tables:
        writer = EventWriter(
            tables,
            KIT.sets(0),
            emitters=all_known_emitters(),
            config=WriterConfig(flush_rows=rows),
            signature_cache=SignatureCache(),
        )
        summary = writer.put_many(raws)
        assert summary.refused == 0


@dataclass
class Store:
    """A fresh pair of tables and its twin for the reference run."""

    settings: BigtableSettings
    reference: BigtableSettings
    emulator: str


@pytest.fixture
def store(bigtable_table_name: str, bigtable_emulator: str) -> Store:
    settings = BigtableSettings(project="chainloom", instance="test", table=bigtable_table_name)
    twin = bigtable_table_name + "-ref"
    reference = settings.model_copy(update={"table": twin, "index_table": twin + "-index"})
    ensure_schema(settings)
    ensure_schema(reference)
    return Store(settings, reference, bigtable_emulator)


@pytest.fixture
def guardian_file(tmp_path: Path) -> Path:
    path = tmp_path / "dev-guardians.json"
    path.write_text(json.dumps(KIT.sets(0).to_json()))
    return path


@dataclass
class SpyProcess:
    """``chainloom-dev spy serve`` replaying a file with guardian copies, losslessly."""

    port: int
    process: subprocess.Popen[bytes]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


def serve_spy(
    source: Path, port: int, *, copies: int = 19, rate: float = 0.0, wait_for: int = 1
) -> SpyProcess:
    process = subprocess.Popen(
        [CHAINLOOM_DEV, "spy", "serve", "--listen", f"127.0.0.1:{port}", "--file", str(source),
         "--copies", str(copies), "--rate", str(rate), "--lossless", "--buffer", "4096",
         "--wait-for-subscribers", str(wait_for)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return SpyProcess(port, process)


def write_vaa_file(path: Path, raws: list[bytes]) -> Path:
    path.write_text("".join(raw.hex() + "\n" for raw in raws))
    return path


@dataclass
class IndexerProcess:
    """``chainloom indexer run`` as a real process, with its probes on a known port."""

    config: Path
    probe_port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    runs: list[Path] = field(default_factory=list)

    def start(self) -> None:
        self.log = self.config.with_name(f"indexer-{len(self.runs)}.log")
        self.runs.append(self.log)
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                [CHAINLOOM, "indexer", "run", "--config", str(self.config)],
                stdout=output, stderr=subprocess.STDOUT, env=self.env,
            )  # fmt: skip

    def get(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.probe_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metric(self, name: str) -> float | None:
        try:
            _, text = self.get("/metrics")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def wait_for_metric(self, name: str, at_least: float, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"indexer exited {self.process.returncode}: {self.output()}")
            value = self.metric(name)
            if value is not None and value >= at_least:
                return
            time.sleep(0.1)
        raise AssertionError(f"{name} did not reach {at_least}: {self.metric(name)}")

    def wait(self, timeout: float = 60) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture
def indexer_process(tmp_path: Path, guardian_file: Path) -> Iterator[Any]:
    """A factory: ``indexer_process(settings_dict)`` -> an unstarted IndexerProcess."""
    made: list[IndexerProcess] = []

    def make(settings: dict[str, Any], env: dict[str, str] | None = None) -> IndexerProcess:
        port = free_port()
        document = {
            "guardian_sets": {"source": str(guardian_file)},
            "probes": {"host": "127.0.0.1", "port": port},
            **settings,
        }
        config = tmp_path / f"indexer-{len(made)}.yaml"
        config.write_text(yaml.safe_dump(document))
        environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
        environment.update(env or {})
        process = IndexerProcess(config, port, environment, config.with_suffix(".log"))
        made.append(process)
        return process

    yield make
    for process in made:
        with contextlib.suppress(Exception):
            process.close()
