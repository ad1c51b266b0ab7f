"""The role each replica of a following ledger ETL reports on its ``/status``, for the status.

An adapter like :mod:`chainloom_operator._queues`: it reads, over HTTP, what the pods say and
nothing else; a pod that does not answer within a second has no role (it may be starting).
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

ROLE_TIMEOUT = 1.0
"""Seconds one pod's answer may take (it is only for the status)."""


def pod_roles(addresses: Mapping[str, str], port: int) -> dict[str, str | None]:
    """``pod name -> role`` (``writer``/``standby``; None: no answer) of the pods at
    ``addresses`` (name -> pod IP)."""
    roles: dict[str, str | None] = {}
    with httpx2.Client(timeout=ROLE_TIMEOUT) as client:
        for name, address in addresses.items():
            try:
                answer = client.get(f"http://{address}:{port}/status")
                answer.raise_for_status()
                role = answer.json().get("role")
            except (httpx2.HTTPError, ValueError, AttributeError):
                role = None
            roles[name] = role if isinstance(role, str) else None
    return roles
