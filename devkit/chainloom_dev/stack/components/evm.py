"""Two geth dev chains for the relayer to redeem on, and the Solidity compiler for its contracts.

Why geth in ``--dev`` mode: it is a real EVM with real JSON-RPC, nonces, gas, reverts, receipts
and (through ``debug_setHead``) reorgs, yet it starts in seconds and mines a block per
transaction. Each instance stands for one Wormhole target chain and gets its own EVM chain id:
``--dev`` alone always runs chain 1337, so the stack writes geth's own dev genesis
(``geth --dev dumpgenesis``) with another ``chainId`` into the instance's data directory
(``geth init``) before the first start. ``$CHAINLOOM_GETH_PERIOD`` (``stack up
--evm-block-period``) mines a block every N seconds instead of per transaction, for finality
tests. geth is built once from the Go module proxy into the cache (a cold build takes ~20
minutes on a loaded machine), so the chains are not in the default or ``--full`` stack:
``chainloom-dev stack up --evm`` (or ``--only geth``) brings them up.

solcjs (npm ``solc``) is installed into the cache as a tool: ``chainloom-dev evm compile`` and the
test that checks the committed contract artifacts run it.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chainloom_dev.stack import versions
from chainloom_dev.stack._install import install_once, is_installed
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import choose_port, reuse_port, run, spawn, wait_until
from chainloom_dev.stack.components._go import go_binary
from chainloom_dev.stack.components._tool import InstalledTool
from chainloom_dev.stack.errors import InstallError, MissingToolError, StackError

PERIOD_VARIABLE = "CHAINLOOM_GETH_PERIOD"
"""Seconds between blocks (0 or unset: a block per transaction); ``stack up --evm-block-period``."""

DEV_ACCOUNT = "0x71562b71999873DB5b286dF957af199Ec94617F7"
"""geth's well-known ``--dev`` account (unlocked by the node, funded in the genesis)."""

_DEV_BALANCE = 10**30
"""Wei the dev account starts with (it funds the relayer's wallets and deployers)."""

_GAS_LIMIT = 60_000_000
"""Block gas limit of the dev chains (room for many redemptions per block)."""


@dataclass(frozen=True, slots=True)
class EvmChain:
    """One dev chain: the Wormhole chain it stands for and its own EVM chain id."""

    wormhole_chain: int
    """The Wormhole chain id transfers name as their target (2 = Ethereum, 4 = BSC)."""
    evm_chain_id: int
    """The EIP-155 chain id of this dev chain (signed transactions carry it)."""

    @property
    def component(self) -> str:
        """The stack component name (``geth-2``)."""
        return f"geth-{self.wormhole_chain}"

    @property
    def rpc_variable(self) -> str:
        """The environment variable ``stack env`` exports its RPC URL in."""
        return f"CHAINLOOM_EVM_RPC_{self.wormhole_chain}"


CHAINS: tuple[EvmChain, ...] = (EvmChain(2, 1_337_002), EvmChain(4, 1_337_004))
"""The two dev chains the stack runs."""


def geth_dir() -> Path:
    """Where the pinned geth is cached."""
    return cache_dir() / f"geth-{versions.GETH}"


def geth_built() -> bool:
    """Whether the pinned geth is cached (starting the chains then takes seconds, no build)."""
    return is_installed(geth_dir())


def solc_dir() -> Path:
    """Where the pinned solcjs is cached."""
    return cache_dir() / f"solc-{versions.SOLC}"


def solcjs_path() -> Path:
    """The solcjs entry point inside the cache (after :func:`install_solc`)."""
    return solc_dir() / "node_modules" / ".bin" / "solcjs"


def install_geth(progress: Progress) -> Path:
    """Build geth once (``go install``; ~20 minutes cold) and return its binary."""
    if not is_installed(geth_dir()):
        go = go_binary()
        progress.step(f"building geth {versions.GETH} from the Go module proxy (~20 min cold)")

        def build(tmp: Path) -> None:
            package = f"github.com/ethereum/go-ethereum/cmd/geth@{versions.GETH}"
            result = run(
                [go, "install", "-trimpath", package],
                cwd=tmp,
                env={"GOBIN": str(tmp / "bin")},
                timeout=3600,
            )
            if result.returncode != 0:
                raise InstallError("geth", f"go install {package}", result.stdout + result.stderr)

        install_once(geth_dir(), build)
    return geth_dir() / "bin" / "geth"


def install_solc(progress: Progress) -> Path:
    """Install solcjs once from npm (``solc@<version>``) and return its entry point."""
    if not is_installed(solc_dir()):
        npm = shutil.which("npm")
        if npm is None:
            raise MissingToolError("npm", "apt-get install -y npm")
        progress.step(f"installing solcjs {versions.SOLC} from npm")

        def build(tmp: Path) -> None:
            result = run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(tmp),
                 f"solc@{versions.SOLC}"],
                timeout=600,
            )  # fmt: skip
            if result.returncode != 0:
                raise InstallError("solc", "npm install", result.stdout + result.stderr)

        install_once(solc_dir(), build)
    return solcjs_path()


def rpc_call(url: str, method: str, params: list[Any] | None = None, timeout: float = 3.0) -> Any:
    """One JSON-RPC call (the stack's health checks need no web3)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []})
    if not url.startswith(("http://", "https://")):
        raise StackError(f"{url} is not an http(s) URL")
    request = urllib.request.Request(  # noqa: S310 (checked above)
        url, data=body.encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        answer = json.loads(response.read())
    if "error" in answer:
        raise StackError(f"{method} at {url}: {answer['error']}")
    return answer["result"]


def block_period(previous: Running | None) -> int:
    """``$CHAINLOOM_GETH_PERIOD``, else the period this chain last ran with, else 0."""
    configured = os.environ.get(PERIOD_VARIABLE, "").strip()
    if not configured and previous is not None:
        configured = previous.extra.get("period", "")
    if not configured:
        return 0
    if not configured.isdigit():
        raise StackError(f"{PERIOD_VARIABLE}={configured!r} is not a whole number of seconds")
    return int(configured)


def _write_genesis(binary: Path, chain: EvmChain, path: Path) -> None:
    """geth's own dev genesis, with this chain's id and the dev account funded."""
    result = run([str(binary), "--dev", "dumpgenesis"], timeout=60)
    if result.returncode != 0:
        raise StackError(f"geth --dev dumpgenesis failed: {result.stderr.strip()[-500:]}")
    genesis = json.loads(result.stdout)
    genesis["config"]["chainId"] = chain.evm_chain_id
    genesis["gasLimit"] = hex(_GAS_LIMIT)
    genesis["alloc"][DEV_ACCOUNT.lower().removeprefix("0x")] = {"balance": hex(_DEV_BALANCE)}
    path.write_text(json.dumps(genesis))


class Geth:
    """One geth ``--dev`` chain standing for the Wormhole chain ``chain.wormhole_chain``."""

    requires: tuple[str, ...] = ()

    def __init__(self, chain: EvmChain) -> None:
        self.chain = chain
        self.name = chain.component

    def install(self, progress: Progress) -> None:
        install_geth(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del deps
        binary = geth_dir() / "bin" / "geth"
        period = block_period(previous)
        port = choose_port(self.name, previous, f"CHAINLOOM_GETH_{self.chain.wormhole_chain}_PORT")
        auth_port = reuse_port(previous, "authrpc_port")
        data = run_dir / self.name
        if previous is None and data.exists():
            shutil.rmtree(data)  # a fresh start (not a restart): a fresh chain
        if not (data / "geth" / "chaindata").exists():
            data.mkdir(parents=True, exist_ok=True)
            genesis = data / "genesis.json"
            _write_genesis(binary, self.chain, genesis)
            result = run([str(binary), "init", "--datadir", str(data), str(genesis)], timeout=120)
            if result.returncode != 0:
                raise StackError(f"geth init failed: {result.stderr.strip()[-500:]}")
        log = run_dir / "logs" / f"{self.name}.log"
        progress.step(
            f"starting geth (chain {self.chain.wormhole_chain}, EVM chain id "
            f"{self.chain.evm_chain_id}) on 127.0.0.1:{port}"
            + (f", a block every {period} s" if period else ", a block per transaction")
        )
        argv = [
            str(binary), "--dev", "--dev.period", str(period), "--datadir", str(data),
            "--cache", "128", "--http", "--http.addr", "127.0.0.1", "--http.port", str(port),
            "--http.api", "eth,net,web3,debug,txpool", "--authrpc.addr", "127.0.0.1",
            "--authrpc.port", str(auth_port), "--ipcdisable", "--nodiscover", "--maxpeers", "0",
            "--port", "0", "--verbosity", "2",
        ]  # fmt: skip
        pid = spawn(argv, log)
        url = f"http://127.0.0.1:{port}"
        running = Running(
            self.name,
            "",
            url,
            pid,
            str(log),
            env={self.chain.rpc_variable: url},
            extra={
                "period": str(period),
                "authrpc_port": str(auth_port),
                "evm_chain_id": str(self.chain.evm_chain_id),
                "wormhole_chain": str(self.chain.wormhole_chain),
                "data": str(data),
            },
        )
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=120)
        return Running(
            self.name,
            self.check(running),
            url,
            pid,
            str(log),
            env=running.env,
            extra=running.extra,
        )

    def check(self, running: Running) -> str:
        chain_id = int(rpc_call(running.address, "eth_chainId"), 16)
        if chain_id != self.chain.evm_chain_id:
            raise StackError(
                f"{running.address} runs EVM chain {chain_id}, not {self.chain.evm_chain_id}"
            )
        rpc_call(running.address, "eth_blockNumber")
        client = str(rpc_call(running.address, "web3_clientVersion"))
        version = client.split("/")[1] if "/" in client else client
        return f"geth {version.removesuffix('-stable')} (EVM chain {chain_id})"


class Solc(InstalledTool):
    """solcjs, the Solidity compiler the project's contracts are built with (a tool)."""

    name = "solc"

    def _binary(self) -> Path:
        return solcjs_path()

    def install(self, progress: Progress) -> None:
        install_solc(progress)

    def check(self, running: Running) -> str:
        output = run([running.address, "--version"], timeout=60).stdout.strip()
        return f"solcjs {output.split('+')[0]}" if output else "unknown"
