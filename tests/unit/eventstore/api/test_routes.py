"""Routing: templates bind whole segments; 404 and 405 say why."""

from __future__ import annotations

import pytest

from chainloom.eventstore.api.errors import MethodNotAllowedError, NotFoundError
from chainloom.eventstore.api.routes import ROUTES, match


def test_each_template_matches_its_own_paths() -> None:
    route, bound = match("GET", "/api/v1/vaas/2/0xab/7")
    assert (route.name, bound) == ("get_vaa", {"chain": "2", "emitter": "0xab", "seq": "7"})
    assert match("GET", "/api/v1/vaas/ethereum/ab")[0].name == "list_emitter_vaas"
    assert match("HEAD", "/api/v1/vaas/2/")[0].name == "list_chain_vaas"
    route, bound = match("GET", "/api/v1/transactions/0xAB%2Fcd")
    assert (route.name, bound) == ("get_transaction", {"tx_id": "0xAB/cd"})
    assert match("GET", "/api/v1/stats/daily")[0].name == "daily_stats"
    assert match("GET", "/api/v1/gaps")[0].name == "gaps"
    assert match("GET", "/openapi.json")[0].name == "openapi"


@pytest.mark.parametrize(
    "path", ["/", "/api/v1/vaas", "/api/v1/vaas/2/ab/7/8", "/api/v1/vaas//ab", "/api/v2/gaps"]
)
def test_unknown_paths_are_404(path: str) -> None:
    with pytest.raises(NotFoundError, match="no route"):
        match("GET", path)


def test_other_methods_are_405_with_the_allowed_ones() -> None:
    with pytest.raises(MethodNotAllowedError) as caught:
        match("POST", "/api/v1/gaps")
    assert caught.value.allowed == ("GET", "HEAD")
    assert caught.value.status == 405


def test_route_names_and_paths_are_unique() -> None:
    assert len({r.name for r in ROUTES}) == len(ROUTES)
    assert len({r.path for r in ROUTES}) == len(ROUTES)
