"""bench/operator.py ends with one line, not a traceback, when the API server refuses or is gone."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx2
from lightkube import ApiError
from lightkube.models.meta_v1 import Status

from bench.operator import api_error_line
from tests.conftest import REPO_ROOT

FULL_RANGE = "Internal error occurred: failed to allocate a serviceIP: range is full"


def test_an_api_error_is_the_servers_message_on_one_line() -> None:
    error = ApiError(status=Status(code=500, reason="InternalError",
                                   message=FULL_RANGE + "\n(retry later)"))  # fmt: skip
    assert api_error_line(error) == (
        f"bench/operator: the API server answered 500: {FULL_RANGE} (retry later)"
    )


def test_an_error_without_a_message_keeps_its_reason() -> None:
    error = ApiError(status=Status(code=403, reason="Forbidden"))
    assert api_error_line(error) == "bench/operator: the API server answered 403: Forbidden"


def test_a_transport_error_is_its_text() -> None:
    refused = httpx2.ConnectError("[Errno 111] Connection refused")
    assert api_error_line(refused) == "bench/operator: [Errno 111] Connection refused"


def _bench(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.operator", "--pools", "1"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def test_without_kubeconfig_one_line_and_exit_1() -> None:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    result = _bench(env)
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == 'bench/operator: set KUBECONFIG (eval "$(chainloom-dev stack env)")'
    )
