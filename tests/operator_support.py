"""Helpers of the operator's cluster tests: install the CRDs, run kubectl, wait for a state.

The CRDs are cluster-scoped and identical for every test, so a session applies them once
(server-side, so a second run or another worktree applying the same files changes nothing).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chainloom_dev.net import free_port
from chainloom_dev.stack.components.kubernetes import k8s_dir
from chainloom_dev.stack.components.spark_operator import CRD_NAMES, crds_dir
from tests.conftest import REPO_ROOT

T = TypeVar("T")


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run kubectl against the stack's API server (fails the test on a non-zero exit)."""
    result = subprocess.run(
        [str(k8s_dir() / "bin" / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def kubectl_json(kubeconfig: str, *args: str) -> Any:
    return json.loads(kubectl(kubeconfig, *args, "-o", "json").stdout)


def wait_for(probe: Callable[[], T | None], timeout: float = 60.0, every: float = 0.5,
             what: str = "condition") -> T:  # fmt: skip
    """Poll ``probe`` until it returns something other than None/False; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def install_crds(kubeconfig: str) -> None:
    """Apply crds/ and wait until the API server serves the three kinds."""
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts",
            "--field-manager=chainloom-tests", "-f", str(REPO_ROOT / "crds"))  # fmt: skip
    wait_established(kubeconfig, "ingestpipelines.chainloom.io", "relayerpools.chainloom.io",
                     "backendtables.chainloom.io")  # fmt: skip


def wait_established(kubeconfig: str, *names: str) -> None:
    """Wait until the API server serves each CRD of ``names``."""

    def established() -> bool:
        for name in names:
            found = kubectl_json(kubeconfig, "get", "crd", name)
            conditions = (found.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_for(established, what=f"CRDs {', '.join(names)} established")


@pytest.fixture(scope="session")
def chainloom_crds(kubeconfig: str) -> str:
    """The kubeconfig, with the chainloom CRDs installed on its API server."""
    install_crds(kubeconfig)
    return kubeconfig


# --------------------------------------------------------------------------------------------
# The operator as a process, the spark-operator's CRDs


def install_crds_with_spark(kubeconfig: str) -> None:
    """:func:`install_crds`, and the spark-operator's CRDs beside them, established."""
    install_crds(kubeconfig)
    kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts",
            "--field-manager=chainloom-tests", "-f", str(spark_operator_crds()))  # fmt: skip
    wait_established(kubeconfig, "sparkapplications.sparkoperator.k8s.io")


def spark_operator_crds() -> Path:
    """The spark-operator's published CRDs (its chart's ``crds/``) at the version the stack
    runs (``chainloom_dev.stack.versions.SPARK_OPERATOR``), fetched once from the Go module
    proxy."""
    return crds_dir()


@pytest.fixture(scope="session")
def spark_crds(chainloom_crds: str) -> str:
    """The kubeconfig, with the spark-operator's CRDs installed too (no controller)."""
    directory = spark_operator_crds()
    kubectl(chainloom_crds, "apply", "--server-side", "--force-conflicts",
            "--field-manager=chainloom-tests", "-f", str(directory))  # fmt: skip
    wait_established(chainloom_crds, *CRD_NAMES)
    return chainloom_crds


@dataclass
class OperatorProcess:
    """``chainloom operator run`` in a subprocess, watching one namespace."""

    process: subprocess.Popen[bytes]
    log: Path
    liveness: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_operator(kubeconfig: str, namespace: str, log: Path, *extra: str,
                   env: dict[str, str] | None = None) -> OperatorProcess:  # fmt: skip
    """Start the operator for ``namespace`` and wait until its liveness endpoint answers."""
    port = free_port()
    liveness = f"http://127.0.0.1:{port}/healthz"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    environment |= {"KUBECONFIG": kubeconfig, "CHAINLOOM_BACKOFF__INITIAL": "0.5",
                    "CHAINLOOM_BACKOFF__MAXIMUM": "2", "CHAINLOOM_RETRIES": "100",
                    **(env or {})}  # fmt: skip
    with log.open("ab") as handle:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "chainloom", "operator", "run", "--namespace", namespace,
             "--liveness", liveness, "--recheck-interval", "2", *extra],
            stdout=handle, stderr=subprocess.STDOUT, env=environment,
        )  # fmt: skip
    running = OperatorProcess(process, log, liveness)

    def answers() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the operator exited {process.returncode}:\n{running.output()[-3000:]}")
        try:
            with urllib.request.urlopen(liveness, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    wait_for(answers, timeout=90, what="the operator's liveness endpoint")
    return running
