"""The Cloud Bigtable emulator (``cbtemulator``).

The machine image ships it inside google-cloud-cli; where it does not, it is built once from
the Go module proxy (``cloud.google.com/go/bigtable/cmd/emulator``) into the cache.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import choose_port, run, spawn, wait_until
from chainloom_dev.stack.components._go import go_binary
from chainloom_dev.stack.errors import InstallError

_SHIPPED = Path("/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator")
HEALTH_PROJECT = "chainloom-health"
HEALTH_INSTANCE = "stack"


def _shipped_binary() -> Path | None:
    configured = os.environ.get("CHAINLOOM_CBTEMULATOR")
    for candidate in (Path(configured) if configured else None, _SHIPPED):
        if candidate is not None and candidate.exists():
            return candidate
    found = shutil.which("cbtemulator")
    return Path(found) if found else None


def _built_dir() -> Path:
    return cache_dir() / f"bigtable-emulator-{versions.BIGTABLE_EMULATOR}"


def _shipped_version() -> str:
    result = run(["dpkg-query", "-W", "-f=${Version}", "google-cloud-cli-bigtable-emulator"])
    if result.returncode == 0 and result.stdout.strip():
        return f"cbtemulator {result.stdout.strip().split('-')[0]}"
    return "cbtemulator (shipped)"


def emulator_binary() -> Path:
    """The emulator's executable (installed by ``chainloom-dev stack up``), for tests that run an
    emulator of their own to stop and restart it."""
    return BigtableEmulator()._binary()[0]


class BigtableEmulator:
    """The event store's database, in memory."""

    name = "bigtable"
    requires: tuple[str, ...] = ()

    def _binary(self) -> tuple[Path, str]:
        shipped = _shipped_binary()
        if shipped is not None:
            return shipped, _shipped_version()
        module = f"{versions.BIGTABLE_EMULATOR_MODULE} {versions.BIGTABLE_EMULATOR}"
        return _built_dir() / "bin" / "emulator", f"emulator from {module}"

    def install(self, progress: Progress) -> None:
        if _shipped_binary() is not None or is_installed(_built_dir()):
            return
        go = go_binary()
        progress.step(f"building the Bigtable emulator {versions.BIGTABLE_EMULATOR} (Go proxy)")

        def build(tmp: Path) -> None:
            package = f"{versions.BIGTABLE_EMULATOR_MODULE}/cmd/emulator"
            result = run(
                [go, "install", f"{package}@{versions.BIGTABLE_EMULATOR}"],
                env={"GOBIN": str(tmp / "bin"), "CGO_ENABLED": "0"},
                timeout=1800,
            )
            if result.returncode != 0:
                raise InstallError(self.name, "go install", result.stdout + result.stderr)

        install_once(_built_dir(), build)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        binary, version = self._binary()
        port = choose_port(self.name, previous, "CHAINLOOM_BIGTABLE_PORT")
        log = run_dir / "logs" / "bigtable.log"
        progress.step(f"starting the Bigtable emulator on 127.0.0.1:{port}")
        pid = spawn([str(binary), "-host", "127.0.0.1", "-port", str(port)], log)
        address = f"127.0.0.1:{port}"
        running = Running(
            self.name, version, address, pid, str(log), env={"BIGTABLE_EMULATOR_HOST": address}
        )
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=30)
        return running

    def check(self, running: Running) -> str:
        # The client library loads only for a health check: `chainloom-dev stack` starts without it.
        from google.cloud import bigtable  # noqa: PLC0415
        from google.cloud.bigtable import column_family  # noqa: PLC0415

        previous = os.environ.get("BIGTABLE_EMULATOR_HOST")
        os.environ["BIGTABLE_EMULATOR_HOST"] = running.address
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "Connecting to Bigtable emulator"
                client = bigtable.Client(project=HEALTH_PROJECT, admin=True)
                table = client.instance(HEALTH_INSTANCE).table(f"health-{os.getpid()}")
                table.create(column_families={"cf": column_family.MaxVersionsGCRule(1)})
                try:
                    row = table.direct_row(b"probe")
                    row.set_cell("cf", b"q", b"ok")
                    row.commit()
                    read = table.read_row(b"probe")
                    if read is None or read.cells["cf"][b"q"][0].value != b"ok":
                        raise RuntimeError("the emulator did not return what was written")
                finally:
                    table.delete()
                    client.close()
        finally:
            if previous is None:
                os.environ.pop("BIGTABLE_EMULATOR_HOST", None)
            else:
                os.environ["BIGTABLE_EMULATOR_HOST"] = previous
        return running.version
