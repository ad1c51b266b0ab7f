"""Helpers of the operator's cluster tests: install the CRDs, run kubectl, wait for a state.

The CRDs are cluster-scoped and identical for every test, so a session applies them once
(server-side, so a second run or another worktree applying the same files changes nothing).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from chainloom.stack.components.kubernetes import k8s_dir
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
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
            "crd/ingestpipelines.chainloom.io", "crd/relayerpools.chainloom.io",
            "crd/backendtables.chainloom.io")  # fmt: skip


@pytest.fixture(scope="session")
def chainloom_crds(kubeconfig: str) -> str:
    """The kubeconfig, with the chainloom CRDs installed on its API server."""
    install_crds(kubeconfig)
    return kubeconfig
