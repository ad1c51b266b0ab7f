"""An OpenTelemetry Collector that writes what it receives to files in the run directory.

Why a collector in the local stack: the services export traces and metrics over OTLP, and the
only honest test of that is a real receiver. The Go module proxy has no ready collector
distribution (``otelcorecol`` is not in the module), so the stack builds one with the
collector's own builder (``go.opentelemetry.io/collector/cmd/builder``): the OTLP receiver,
the batch processor, and the debug, file and OTLP exporters. The build is cached like every
other component (minutes cold, nothing warm).

The running collector listens on 127.0.0.1 only (OTLP/HTTP, the component's address, and
OTLP/gRPC), keeps its own telemetry off (no port of its own), and appends traces, metrics and
logs as OTLP JSON lines to ``<run dir>/otel/{traces,metrics,logs}.jsonl``: a test reads them
to see exactly what a service exported. It exports no ``OTEL_*`` variable through
``stack env``: telemetry is off unless a test or a person turns it on for a process.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import urllib.request
from pathlib import Path

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import choose_port, reuse_port, run, spawn, wait_until
from chainloom_dev.stack.components._go import go_binary
from chainloom_dev.stack.errors import InstallError

BINARY_NAME = "otelcol-chainloom"
"""Name of the built collector (the builder's ``dist.name``)."""

_CORE = "go.opentelemetry.io/collector"
_CONTRIB = "github.com/open-telemetry/opentelemetry-collector-contrib"
MODULES: dict[str, tuple[str, ...]] = {
    "receivers": (f"{_CORE}/receiver/otlpreceiver",),
    "processors": (f"{_CORE}/processor/batchprocessor",),
    "exporters": (
        f"{_CORE}/exporter/debugexporter",
        f"{_CORE}/exporter/otlpexporter",
        f"{_CONTRIB}/exporter/fileexporter",
    ),
}
"""The collector's components, all at :data:`chainloom_dev.stack.versions.OTEL_COLLECTOR`."""

SIGNALS = ("traces", "metrics", "logs")
"""What the collector receives and writes to a file each."""


def builder_config(output: Path) -> str:
    """The builder's configuration (JSON is YAML) for a collector built into ``output``."""
    version = versions.OTEL_COLLECTOR
    config: dict[str, object] = {
        "dist": {
            "name": BINARY_NAME,
            "description": "chainloom local stack OpenTelemetry Collector",
            "version": version.removeprefix("v"),
            "output_path": str(output),
        },
        **{
            kind: [{"gomod": f"{module} {version}"} for module in modules]
            for kind, modules in MODULES.items()
        },
    }
    return json.dumps(config, indent=2)


def go_mod() -> str:
    """The collector's ``go.mod``: its components and the configuration providers it loads."""
    requires = [
        f"{module} {versions.OTEL_COLLECTOR}" for modules in MODULES.values() for module in modules
    ]
    requires += [f"{_CORE}/{module} {versions.OTEL_COLLECTOR}" for module in ("otelcol", "service")]
    requires += [
        f"{_CORE}/confmap/provider/{provider}provider {versions.OTEL_COLLECTOR_STABLE}"
        for provider in ("env", "file", "http", "https", "yaml")
    ]
    lines = "".join(f"\t{line}\n" for line in requires)
    return f"module chainloom.local/otelcol\n\ngo 1.25\n\nrequire (\n{lines})\n"


def collector_config(http_port: int, grpc_port: int, out_dir: Path) -> str:
    """The running collector's configuration (JSON is YAML): OTLP in, files (and debug) out."""
    exporters: dict[str, object] = {"debug": {"verbosity": "basic"}}
    pipelines: dict[str, object] = {}
    for signal in SIGNALS:
        exporters[f"file/{signal}"] = {
            "path": str(out_dir / f"{signal}.jsonl"),
            "flush_interval": "200ms",
        }
        pipelines[signal] = {
            "receivers": ["otlp"],
            "processors": ["batch"],
            "exporters": [f"file/{signal}", "debug"],
        }
    config: dict[str, object] = {
        "receivers": {
            "otlp": {
                "protocols": {
                    "http": {"endpoint": f"127.0.0.1:{http_port}"},
                    "grpc": {"endpoint": f"127.0.0.1:{grpc_port}"},
                }
            }
        },
        # A short batch timeout: a test waits for its spans, not for the default 200 ms * n.
        "processors": {"batch": {"timeout": "200ms"}},
        "exporters": exporters,
        "service": {
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "warn"}},
            "pipelines": pipelines,
        },
    }
    return json.dumps(config, indent=2)


def _built_dir() -> Path:
    digest = hashlib.sha256(builder_config(Path("out")).encode()).hexdigest()[:12]
    return cache_dir() / f"otelcol-{versions.OTEL_COLLECTOR}-{digest}"


def collector_binary() -> Path:
    """Where the cached collector binary is (whether or not it is built yet)."""
    return _built_dir() / "bin" / BINARY_NAME


class OtelCollector:
    """OTLP receiver for the services' traces, metrics and logs, writing them to files."""

    name = "otel"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        if is_installed(_built_dir()):
            return
        go = go_binary()
        progress.step(
            f"building the OpenTelemetry Collector {versions.OTEL_COLLECTOR} with its builder "
            "(Go proxy; a few minutes the first time)"
        )

        def build(tmp: Path) -> None:
            env = {"GOBIN": str(tmp / "tools"), "CGO_ENABLED": "0"}
            builder = f"{_CORE}/cmd/builder@{versions.OTEL_COLLECTOR}"
            result = run([go, "install", builder], env=env, timeout=1800)
            if result.returncode != 0:
                raise InstallError(self.name, "go install builder", result.stdout + result.stderr)
            sources = tmp / "sources"
            config = tmp / "builder.yaml"
            config.write_text(builder_config(sources))
            # The builder only writes the sources: its own `go mod tidy` also resolves the
            # components' test imports, and one of those (the file exporter's) is refused by
            # the module proxy. `go build -mod=mod` resolves only what the binary imports.
            result = run(
                [
                    str(tmp / "tools" / "builder"),
                    *("--config", str(config), "--skip-get-modules", "--skip-compilation"),
                ],
                timeout=600,
            )
            if result.returncode != 0:
                raise InstallError(self.name, "builder --config", result.stdout + result.stderr)
            (sources / "go.mod").write_text(go_mod())
            binary = tmp / "bin" / BINARY_NAME
            result = run(
                [go, "build", "-mod=mod", "-trimpath", "-o", str(binary), "."],
                cwd=sources,
                env={"CGO_ENABLED": "0"},
                timeout=3600,
            )
            if result.returncode != 0:
                raise InstallError(self.name, "go build", result.stdout + result.stderr)
            shutil.rmtree(sources)
            shutil.rmtree(tmp / "tools")

        install_once(_built_dir(), build)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del deps
        http_port = choose_port(self.name, previous, "CHAINLOOM_OTEL_PORT")
        grpc_port = reuse_port(previous, "grpc_port")
        out_dir = run_dir / "otel"
        out_dir.mkdir(parents=True, exist_ok=True)
        config = out_dir / "collector.yaml"
        config.write_text(collector_config(http_port, grpc_port, out_dir))
        log = run_dir / "logs" / "otel.log"
        progress.step(f"starting the OpenTelemetry Collector on 127.0.0.1:{http_port} (OTLP/HTTP)")
        pid = spawn([str(collector_binary()), "--config", str(config)], log)
        address = f"127.0.0.1:{http_port}"
        running = Running(
            self.name,
            self._version(),
            address,
            pid,
            str(log),
            extra={
                "endpoint": f"http://{address}",
                "grpc_port": str(grpc_port),
                "out_dir": str(out_dir),
                **{f"{signal}_file": str(out_dir / f"{signal}.jsonl") for signal in SIGNALS},
            },
        )
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=30)
        return running

    def _version(self) -> str:
        # `components` prints the build info the builder embedded (dist.version).
        result = run([str(collector_binary()), "components"], timeout=30)
        for line in result.stdout.splitlines():
            key, _, value = line.strip().partition(":")
            if key == "version" and value.strip().strip('"'):
                return f"otelcol {value.strip().strip(chr(34))}"
        return "otelcol"

    def check(self, running: Running) -> str:
        # An empty OTLP/HTTP export: the receiver answers 200 only when its pipeline is up.
        request = urllib.request.Request(
            f"http://{running.address}/v1/traces",
            data=b'{"resourceSpans":[]}',
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=3) as response:  # noqa: S310 (loopback URL)
            if response.status != 200:
                raise RuntimeError(f"OTLP/HTTP export answered {response.status}")
        return running.version
