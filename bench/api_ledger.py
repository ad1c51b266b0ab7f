"""The ledger API's history reads against the bare backend reads they make
(``python bench/api.py --part ledger``, before :mod:`bench.api_newest`).

* ``ledger_data``: every client walks the newest ledger's whole state page by page (limit 256,
  JSON and binary separately), starting over at the end (bare: ``fetch_ledger_page``);
* ``account_tx``: the 20 newest transactions of one of the accounts with history (round robin),
  decoded (JSON) and as blobs (binary) (bare: ``fetch_account_transactions``).

The checked ratio is ``chainloom ledger api`` over HTTP against :mod:`bench.bare_http` over HTTP
(the same reads behind the same web stack, alternated rounds, the best of each); the API over
HTTP against the bare reads made by threads of this process is printed beside it, for reference:
that one is mostly the cost of HTTP on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bench.api import against_bare_http, bare_answer, direct_run, http_run, report

PAGE = 256
"""Objects per ``ledger_data`` page."""
TXS = 20
"""Transactions per ``account_tx`` page."""


def ledger_reads(
    args: argparse.Namespace,
    url: str,
    bare_url: str,
    backend: Any,
    last: int,
    accounts: list[bytes],
) -> None:
    """Run the four workloads; two lines each (against the bare server, against this process)."""
    import orjson

    from chainloom.ledger.xrpl.address import encode_account

    addresses = [encode_account(account) for account in accounts]

    def turn(number: int, state: dict[str, Any]) -> int:
        index: int = state.get("i", number) + args.clients
        state["i"] = index
        return index

    def bare_page_body(number: int, state: dict[str, Any]) -> bytes:
        del number
        previous = state.get("last")
        cursor = None if previous is None else previous["cursor"]
        return orjson.dumps({"ledger": last, "limit": PAGE, "cursor": cursor})

    def page_direct(number: int, state: dict[str, Any]) -> None:
        del number
        state["cursor"] = backend.fetch_ledger_page(state.get("cursor"), last, PAGE).cursor

    def bare_tx_body(number: int, state: dict[str, Any]) -> bytes:
        account = accounts[turn(number, state) % len(accounts)]
        return orjson.dumps({"account": account.hex(), "limit": TXS})

    def tx_direct(number: int, state: dict[str, Any]) -> None:
        account = accounts[turn(number, state) % len(accounts)]
        backend.fetch_account_transactions(account, TXS, False)

    for binary_form in (False, True):
        name = f"ledger_data{' binary' if binary_form else ''}"

        def page_body(number: int, state: dict[str, Any], binary_form: bool = binary_form) -> bytes:
            del number
            params: dict[str, Any] = {"ledger_index": last, "limit": PAGE, "binary": binary_form}
            previous = state.get("last")
            if previous is not None and "marker" in previous:
                params["marker"] = previous["marker"]
            return orjson.dumps({"method": "ledger_data", "params": [params]})

        _workload(args, name, url, page_body, f"{bare_url}ledger_data", bare_page_body,
                  page_direct)  # fmt: skip

    for binary_form in (False, True):
        name = f"account_tx{' binary' if binary_form else ''}"

        def tx_body(number: int, state: dict[str, Any], binary_form: bool = binary_form) -> bytes:
            account = addresses[turn(number, state) % len(addresses)]
            params = {"account": account, "limit": TXS, "binary": binary_form}
            return orjson.dumps({"method": "account_tx", "params": [params]})

        _workload(args, name, url, tx_body, f"{bare_url}account_tx", bare_tx_body, tx_direct)


def _workload(
    args: argparse.Namespace,
    name: str,
    url: str,
    body: Any,
    bare_url: str,
    bare_body: Any,
    direct: Any,
) -> None:
    def api() -> list[float]:
        return asyncio.run(http_run(url, args.clients, args.seconds, body))

    def bare() -> list[float]:
        return asyncio.run(http_run(bare_url, args.clients, args.seconds, bare_body, bare_answer))

    http = against_bare_http(name, args, api, bare, goal=0.5)
    in_process = direct_run(args.clients, args.seconds, direct)
    report(name, args.seconds, http, in_process, goal=None, label="HTTP api",
           against="in-process bare")  # fmt: skip
