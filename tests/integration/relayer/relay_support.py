"""Signed token-transfer VAAs and relay requests for the relay-table and worker tests.

VAAs are signed by :class:`chainloom.wormhole.DevGuardians` (the dev kit), from its dev
token-bridge emitter, with a token-bridge payload 1 built here field by field (Wormhole
whitepaper 0003): the tests choose the target chain and sequence of every transfer.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chainloom.relayer._redis import sync
from chainloom.relayer.model import RelayRequest
from chainloom.wormhole import VAA
from chainloom_dev.net import free_port
from chainloom_dev.sim.dev_guardians import DevGuardians

GUARDIANS = DevGuardians()


def transfer_payload(*, target_chain: int, amount: int = 10**8, fee: int = 0) -> bytes:
    """Token-bridge payload 1 (133 bytes): amount, token, token chain, to, to chain, fee."""
    return (
        b"\x01"
        + amount.to_bytes(32, "big")
        + bytes(12)
        + bytes.fromhex("a0b86991c6218b36c1d19d4a2e9eb0ce3606eb48")
        + (2).to_bytes(2, "big")
        + bytes(12)
        + bytes.fromhex("00000000000000000000000000000000000000aa")
        + target_chain.to_bytes(2, "big")
        + fee.to_bytes(32, "big")
    )


def transfer_vaa(*, sequence: int, target_chain: int = 2, emitter_chain: int = 6) -> VAA:
    """A signed token transfer from the dev token bridge on ``emitter_chain``."""
    return GUARDIANS.sign(
        emitter_chain=emitter_chain,
        emitter_address=GUARDIANS.token_bridge_emitter,
        sequence=sequence,
        payload=transfer_payload(target_chain=target_chain),
    )


def request_for(vaa: VAA, *, target_chain: int = 2, now: float | None = None) -> RelayRequest:
    """The relay request the listener would enqueue for ``vaa``."""
    return RelayRequest(
        digest=vaa.digest_hex,
        vaa=vaa.to_bytes(),
        target_chain=target_chain,
        emitter_chain=vaa.emitter_chain,
        sequence=vaa.sequence,
        enqueued_at=time.time() if now is None else now,
    )


def requests(count: int, *, target_chain: int = 2, start: int = 0) -> list[RelayRequest]:
    """``count`` distinct transfer requests to ``target_chain``."""
    return [
        request_for(
            transfer_vaa(sequence=start + i, target_chain=target_chain), target_chain=target_chain
        )
        for i in range(count)
    ]


def dump_redis(client: redis.Redis) -> bytes:
    """Every key, field, member and value of the database, concatenated (to search for secrets)."""
    out: list[bytes] = []
    for key in client.scan_iter("*", count=1000):
        out.append(key)
        kind = sync(client.type(key)).decode()
        if kind == "string":
            out.append(sync(client.get(key)) or b"")
        elif kind == "hash":
            for field, value in sync(client.hgetall(key)).items():
                out += [field, value]
        elif kind == "zset":
            out += sync(client.zrange(key, 0, -1))
        elif kind == "set":
            out += list(sync(client.smembers(key)))
        else:
            raise AssertionError(f"unexpected key type {kind} for {key!r}")
    return b"\n".join(out)


@contextlib.contextmanager
def private_redis(directory: Path, *, appendonly: bool, appendfsync: str) -> Iterator[str]:
    """A redis-server of this test's own on a free loopback port, with the given persistence.

    For tests that need a persistence setting the stack's Redis does not have: the stack's
    server is shared, so its configuration is not changed under other tests' feet.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
         "--save", "", "--appendonly", "yes" if appendonly else "no",
         "--appendfsync", appendfsync],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert server.poll() is None, f"redis-server exited with {server.returncode}"
                assert time.monotonic() < deadline, "redis-server did not answer in 20 s"
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


def first_line(path: Path, process: subprocess.Popen[bytes]) -> str:
    """The first line a started server wrote to its log (its address), waiting up to 60 s;
    fails the test if the process exits first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace")
        if "\n" in text:
            return text.splitlines()[0]
        assert process.poll() is None, text
        time.sleep(0.05)
    raise AssertionError(f"no output from {path.name} within 60 s")
