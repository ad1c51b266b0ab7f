"""Reliability: 10,000 transfers plus 2,500 re-signed copies, through ``chainloom spy serve`` ->
``chainloom relayer listen`` (signature verification, validation, atomic dedupe) -> the relay
tables -> several ``chainloom relayer work`` PROCESSES that the test kills with SIGKILL at
random moments and restarts.

The spy replays the file losslessly (``--lossless``) at SPY_RATE: the real spy may drop VAAs,
and the listener's bounded buffer drops when it falls behind; recovering those is the
backfill's job (relayer-engine#21: "The spy can be unreliable and drop VAAs"), not the relay
queue's, so this test keeps the stream below the listener's pace.

The target chains are simulated in Redis (:class:`RedisLedgerAdapter`), so every worker process
and this test see the same chain. The chain refuses a second redemption of a transfer and counts
it, so "never submitted twice" is observed on the chain, not inferred from the relayer's logs.
Injected behaviour (deterministic rules): sequence % 97 == 0 always fails (must end in Failed),
~5 % of transfers fail their first attempt, sequence % 50 == 1 has its first submission rolled
back, ~2 % were redeemed by "another relayer" before we saw them.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from chainloom.relayer.model import RelayRequest, Table
from chainloom.relayer.tables import RelayTables
from chainloom.testing.sim_chains import RedisLedgerAdapter, SimChainRules
from chainloom.wormhole import VAA, TokenTransfer, decode_payload, parse_vaa
from tests.integration.relayer.relay_support import (
    GUARDIANS,
    dump_redis,
    request_for,
    transfer_vaa,
)

pytestmark = pytest.mark.slow

UNIQUE = 10_000
DUPLICATE_SHARE = 0.25
CHAINS = (2, 4)
WALLETS_PER_CHAIN = 2
RULES = SimChainRules(
    fail_modulo=97, transient_fail_percent=5, rollback_modulo=50, confirm_after=0.05
)
EMITTER_CHAIN = 6
SPY_RATE = 500
"""VAAs/s the spy streams: below the listener's verification rate, so that its bounded buffer
(which drops, as a real spy subscriber must) never fills."""
CHAINLOOM = [sys.executable, "-m", "chainloom.cli"]
LEASE_TTL = 2.0
DEADLINE = 170.0
MAX_KILLS = 25


@pytest.fixture(scope="module")
def stream() -> list[bytes]:
    """UNIQUE signed transfers to CHAINS plus re-signed copies (same digest, other signers)."""
    rng = random.Random(2026)
    vaas = []
    for sequence in range(UNIQUE):
        target = CHAINS[sequence % len(CHAINS)]
        vaas.append(
            transfer_vaa(sequence=sequence, target_chain=target, emitter_chain=EMITTER_CHAIN)
        )
    lines = [v.to_bytes() for v in vaas]
    for original in rng.sample(vaas, int(UNIQUE * DUPLICATE_SHARE)):
        signers = sorted(rng.sample(range(GUARDIANS.count), GUARDIANS.quorum))
        lines.append(GUARDIANS.resign(original, signers=signers).to_bytes())
    rng.shuffle(lines)
    return lines


def _key(index: int) -> str:
    return f"{0x1000 + index:064x}"


@dataclass
class Fleet:
    """Worker processes, killed and restarted on purpose."""

    redis_url: str
    directory: Path
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    wallet_of_slot: dict[int, int] = field(default_factory=dict)
    next_wallet: int = 0
    kills: int = 0
    replaced: int = 0
    unexpected_exits: list[str] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def chain_of(self, slot: int) -> int:
        return CHAINS[slot % len(CHAINS)]

    def start(self, slot: int, *, new_wallet: bool = False) -> None:
        if new_wallet or slot not in self.wallet_of_slot:
            self.wallet_of_slot[slot] = self.next_wallet
            self.next_wallet += 1
        wallet = self.wallet_of_slot[slot]
        wallet_file = self.directory / f"wallet-{wallet}"
        wallet_file.write_text(_key(wallet) + "\n")
        log = self.directory / f"worker-{slot}-{len(self.logs)}.log"
        self.logs.append(log)
        command = [
            sys.executable, "-m", "chainloom.cli", "relayer", "work",
            "--chain", str(self.chain_of(slot)),
            "--wallet-file", str(wallet_file),
            "--redis-url", self.redis_url,
            "--adapter", "redis-sim",
            "--max-retries", "2", "--base-delay", "0.05", "--max-delay", "0.2",
            "--lease-ttl", str(LEASE_TTL), "--batch", "32", "--idle-sleep", "0.02",
            "--recheck", "0.05", "--reap-every", "0.5",
        ]  # fmt: skip
        with log.open("wb") as out:
            self.processes[slot] = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def check(self) -> None:
        for slot, process in list(self.processes.items()):
            if process.poll() is not None:
                self.unexpected_exits.append(f"slot {slot} exited {process.returncode}")
                self.start(slot)

    def kill(self, slot: int) -> None:
        process = self.processes[slot]
        process.send_signal(signal.SIGKILL)
        process.wait()
        self.kills += 1

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class Ingest:
    """``chainloom spy serve`` streaming the VAA file into ``chainloom relayer listen``."""

    directory: Path
    spy: subprocess.Popen[bytes]
    listener: subprocess.Popen[bytes] | None = None
    stopped: bool = False

    @classmethod
    def start(cls, directory: Path, redis_url: str, stream: list[bytes]) -> Ingest:
        source = directory / "vaas.txt"
        source.write_text("\n".join(raw.hex() for raw in stream) + "\n")
        with (directory / "spy.log").open("wb") as log:
            spy = subprocess.Popen(
                [*CHAINLOOM, "spy", "serve", "--listen", "127.0.0.1:0", "--file", str(source),
                 "--wait-for-subscribers", "1", "--lossless", "--exit-when-done",
                 "--rate", str(SPY_RATE)],
                stderr=log,
            )  # fmt: skip
        ingest = cls(directory, spy)
        address = _first_line(directory / "spy.log", spy).split()[-1]
        sets = directory / "guardian-sets.json"
        sets.write_text(json.dumps(GUARDIANS.sets().to_json()))
        config = directory / "relayer.yaml"
        config.write_text(
            json.dumps(
                {
                    "redis": {"url": redis_url},
                    "spy_address": address,
                    "guardian_sets": {"source": str(sets)},
                    "known_emitters": [
                        {"chain": EMITTER_CHAIN, "address": GUARDIANS.token_bridge_emitter.hex()}
                    ],
                    "target_chains": list(CHAINS),
                    "tokens": [{"chain": "*", "address": "*", "min_fee": 0}],
                }
            )
        )
        with (directory / "listener.log").open("wb") as log:
            ingest.listener = subprocess.Popen(
                [*CHAINLOOM, "relayer", "listen", "--config", str(config), "--no-rest"],
                stderr=log,
            )  # fmt: skip
        return ingest

    def alive(self) -> None:
        assert self.listener is not None
        if not self.stopped and self.listener.poll() is not None:
            log = (self.directory / "listener.log").read_text(errors="replace")
            raise AssertionError(f"the listener died: {log[-2000:]}")

    def stop(self) -> None:
        self.stopped = True
        for process in (self.spy, self.listener):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _first_line(path: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace")
        if "\n" in text:
            return text.splitlines()[0]
        assert process.poll() is None, text
        time.sleep(0.05)
    raise AssertionError(f"no output from {path.name} within 60 s")


def test_no_transfer_is_lost_or_submitted_twice_while_workers_are_killed(
    redis_url, stream, tmp_path
):
    client = redis.Redis.from_url(redis_url)
    tables = RelayTables(client)
    unique: dict[str, RelayRequest] = {}
    for raw in stream:
        vaa = parse_vaa(raw)
        unique.setdefault(
            vaa.digest_hex, request_for(vaa, target_chain=0 + CHAINS[vaa.sequence % 2])
        )
    assert len(unique) == UNIQUE
    rng = random.Random(7)
    scooped = {d for d in unique if rng.random() < 0.02}
    for chain in CHAINS:
        chain_scooped = tuple(d for d in scooped if unique[d].target_chain == chain)
        RedisLedgerAdapter.install(client, chain, _with(RULES, chain_scooped))

    fleet = Fleet(redis_url, tmp_path)
    slots = range(len(CHAINS) * WALLETS_PER_CHAIN)
    for slot in slots:
        fleet.start(slot)
    started = time.monotonic()
    ingest = Ingest.start(tmp_path, redis_url, stream)

    def busy() -> bool:
        ingest.alive()
        depths = tables.depths()
        live = (Table.INCOMING, Table.IN_WORK, Table.PENDING_CONFIRMATION)
        known = sum(sum(per_chain.values()) for per_chain in depths.values())
        return known < UNIQUE or any(sum(depths[t].values()) for t in live)

    try:
        # Chaos: while there is work, SIGKILL a random worker every 0.3-1 s (MAX_KILLS times at
        # most); restart it at once, after a pause, or (one time in three) with a new wallet so
        # that its In-Work can only come back through another worker's reaper.
        while busy() and fleet.kills < MAX_KILLS and time.monotonic() - started < DEADLINE:
            time.sleep(rng.uniform(0.3, 1.0))
            fleet.check()
            slot = rng.choice(list(slots))
            fleet.kill(slot)
            if rng.random() < 0.3:
                time.sleep(rng.uniform(0.0, 0.5))
            replace = rng.random() < 1 / 3
            fleet.replaced += replace
            fleet.start(slot, new_wallet=replace)
        while busy() and time.monotonic() - started < DEADLINE:
            fleet.check()
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    finally:
        ingest.stop()
        fleet.stop_all()

    listener_log = (tmp_path / "listener.log").read_text(errors="replace")[-1500:]
    assert not busy(), f"work left after {DEADLINE}s: {tables.depths()}\n{listener_log}"
    assert fleet.kills >= 10
    assert fleet.replaced >= 2
    print(
        f"\n{UNIQUE} unique transfers, {len(stream)} VAAs, {fleet.kills} SIGKILLs "
        f"({fleet.replaced} replaced by new wallets) in {elapsed:.1f}s"
    )

    # --- audit against the simulated chains -------------------------------------------------
    depths = tables.depths()
    for table in (Table.INCOMING, Table.IN_WORK, Table.PENDING_CONFIRMATION):
        assert sum(depths[table].values()) == 0, depths
    always_failing = {d for d, r in unique.items() if RULES.always_fails(r.sequence)}
    failed = {r.digest: r for r in tables.failed(limit=UNIQUE)}
    assert set(failed) == always_failing - scooped
    assert all("always fails" in (r.last_error or "") for r in failed.values())
    assert all(r.retries == 3 for r in failed.values())

    total_rollbacks = 0
    for chain in CHAINS:
        ledger = RedisLedgerAdapter(client, chain)
        assert ledger.duplicate_attempts() == 0  # nobody ever tried to redeem twice
        counts = ledger.submission_counts()
        rolled_back = ledger.rolled_back()
        submissions = ledger.submissions()
        redeemed = ledger.redeemed()
        log = tables.completed_log(chain)
        for digest, request in unique.items():
            if request.target_chain != chain:
                continue
            if digest in scooped:
                assert digest not in counts, "a scooped transfer was submitted"
                assert log[digest]["outcome"] == "already_redeemed"
            elif digest in always_failing:
                assert digest not in counts
                assert digest not in log
            else:
                mine = [s for s in submissions.values() if s.digest == digest]
                live = [s for s in mine if s.submission_id not in rolled_back]
                assert len(mine) == counts[digest]
                assert len(live) == 1, f"{digest}: {len(live)} live submissions"
                assert redeemed[digest] == live[0].submission_id
                assert log[digest]["outcome"] in ("confirmed", "already_redeemed")
        total_rollbacks += len(rolled_back)
        assert not [s for s in submissions.values() if unique[s.digest].target_chain != chain]

    assert total_rollbacks > 50  # the rollback rule really exercised the requeue path

    # --- no wallet key anywhere: Redis or the workers' logs -----------------------------------
    keys = [_key(i) for i in range(fleet.next_wallet)]
    everything = dump_redis(client)
    for key in keys:
        assert key.encode() not in everything
        assert bytes.fromhex(key) not in everything
    for log_file in fleet.logs:
        text = log_file.read_text(errors="replace")
        for key in keys:
            assert key not in text
    assert not [e for e in fleet.unexpected_exits if "exited 1" in e], fleet.unexpected_exits


def _target(vaa: VAA) -> int:
    transfer = decode_payload(vaa)
    assert isinstance(transfer, TokenTransfer)
    return transfer.to_chain


def _with(rules: SimChainRules, scooped: tuple[str, ...]) -> SimChainRules:
    from dataclasses import replace

    return replace(rules, pre_redeemed=scooped)
