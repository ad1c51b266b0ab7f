"""The recheck's paged listing: a listing error ends the pass, the items read so far count."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import pytest

from chainloom_operator import _handlers
from chainloom_operator._kube import Cluster


class _PagesThenError:
    """A cluster whose listing yields two pools, then fails (the API server went away)."""

    def list_custom(self, plural: str, namespaces: Any = ()) -> Iterator[dict[str, Any]]:
        assert plural == "relayerpools"
        yield {"metadata": {"name": "a"}}
        yield {"metadata": {"name": "b"}}
        raise ConnectionError("the API server went away")


def test_listed_keeps_what_was_read_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    cluster = cast(Cluster, _PagesThenError())
    with caplog.at_level(logging.WARNING, logger="chainloom.operator"):
        names = [b["metadata"]["name"] for b in _handlers._listed(cluster, "RelayerPool", ())]
    assert names == ["a", "b"]
    assert "cannot list RelayerPools: the API server went away" in caplog.text
