"""The job's summary as its container's termination message, for whoever runs the pod.

Kubernetes copies what a container wrote to its termination message file (``/dev/termination-log``
unless the pod says otherwise) into the pod's status when the container ends
(``containerStatuses[].state.terminated.message``). A job writing its summary there lets the
operator show the counts of a finished SparkApplication in the IngestPipeline's status without
reading logs or sharing a volume with the driver.

The kubelet keeps at most 4096 bytes of the message (and cuts longer ones mid-JSON), so the
message is a compact form of the summary made to fit: the job's name and its top-level counts
always, the per-chain (or per-emitter) maps of counts while they fit, a count of chains instead
when they do not. Lists of conflicts and refusals are left out: their counts are at the top.

Outside a pod the file does not exist and nothing is written; ``CHAINLOOM_TERMINATION_LOG``
names another file (tests, or a pod with a custom ``terminationMessagePath``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TERMINATION_LOG_ENV = "CHAINLOOM_TERMINATION_LOG"
"""Names the termination message file when it is not Kubernetes' default."""

DEFAULT_TERMINATION_LOG = "/dev/termination-log"
"""Kubernetes' default ``terminationMessagePath``."""

MESSAGE_LIMIT = 4096
"""Bytes of a termination message the kubelet keeps."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _counts_only(value: Mapping[str, Any]) -> dict[str, int]:
    return {key: item for key, item in value.items() if _count(item)}


def _encode(document: Mapping[str, Any]) -> str:
    return json.dumps(document, separators=(",", ":"))


def termination_message(summary: Mapping[str, Any], limit: int = MESSAGE_LIMIT) -> str:
    """A JSON form of ``summary`` (a job's ``as_dict()``) of at most ``limit`` bytes.

    Kept: ``job``, every top-level integer, and each top-level map of maps (``per_chain``) with
    only the integers of its entries while the whole still fits; a map that does not fit is
    replaced by its size (``per_chain`` -> ``per_chain_entries``). Should the top-level counts
    alone exceed the limit, the counts are kept in their order until the next one would not fit.
    """
    message: dict[str, Any] = {}
    if isinstance(summary.get("job"), str):
        message["job"] = summary["job"]
    message.update(_counts_only(summary))
    while len(_encode(message).encode()) > limit and len(message) > 1:
        message.popitem()
    nested = {
        key: value
        for key, value in summary.items()
        if isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values())
    }
    for key, entries in nested.items():
        compact = {name: _counts_only(entry) for name, entry in entries.items()}
        fuller = {**message, key: compact}
        if len(_encode(fuller).encode()) <= limit:
            message = fuller
            continue
        smaller = {**message, f"{key}_entries": len(entries)}
        if len(_encode(smaller).encode()) <= limit:
            message = smaller
    return _encode(message)


def termination_log_path() -> Path | None:
    """Where the message goes: ``$CHAINLOOM_TERMINATION_LOG``, else Kubernetes' default when
    it exists (inside a container), else nowhere (None)."""
    configured = os.environ.get(TERMINATION_LOG_ENV)
    if configured:
        return Path(configured)
    default = Path(DEFAULT_TERMINATION_LOG)
    return default if default.exists() else None


def write_termination_message(summary: Mapping[str, Any]) -> Path | None:
    """Write :func:`termination_message` of ``summary`` where :func:`termination_log_path`
    says; return that path (None: not in a container, nothing written). A file that cannot be
    written is skipped: the summary was printed already, and the job's result stands."""
    path = termination_log_path()
    if path is None:
        return None
    try:
        path.write_text(termination_message(summary))
    except OSError as error:
        logging.getLogger("chainloom_spark").warning(
            "the termination message was not written to %s: %s", path, error
        )
        return None
    return path
