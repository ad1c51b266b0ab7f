"""Compile the contracts with solcjs (npm ``solc``) into the committed artifacts.

Why a standard-JSON build with fixed settings: the artifacts are committed and a test
recompiles them, so the build must be reproducible byte for byte (same compiler, optimizer
settings, EVM version and no metadata hash that depends on the machine's paths). solcjs is
installed into the stack's cache (``chainloom-dev stack up --only solc``); this module is given
its path and never installs anything.
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from chainloom.evm.errors import ArtifactError, CompileError

CONTRACTS = ("ChainloomCore", "ChainloomTokenBridge", "ChainloomWrappedToken")
"""The contracts whose ABI and bytecode are committed."""

EVM_VERSION = "cancun"
"""Target EVM: every dev chain and test EVM the project uses runs Cancun or later."""

SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    "evmVersion": EVM_VERSION,
    "metadata": {"bytecodeHash": "none"},
    "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}},
}
"""solc settings of the committed build (no metadata hash: the bytecode depends on source only)."""


def contracts_dir() -> Path:
    """The folder holding the Solidity sources and ``artifacts.json``."""
    return Path(str(resources.files("chainloom.evm").joinpath("contracts")))


def sources(directory: Path | None = None) -> dict[str, str]:
    """The Solidity sources by file name, sorted."""
    folder = directory or contracts_dir()
    return {path.name: path.read_text() for path in sorted(folder.glob("*.sol"))}


def compile_contracts(solcjs: Path, directory: Path | None = None) -> dict[str, Any]:
    """Run solcjs on the sources; return the artifacts document (what ``artifacts.json`` holds)."""
    request = {
        "language": "Solidity",
        "sources": {name: {"content": text} for name, text in sources(directory).items()},
        "settings": SETTINGS,
    }
    try:
        version = subprocess.run(
            [str(solcjs), "--version"], capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
        result = subprocess.run(
            [str(solcjs), "--standard-json"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise CompileError(f"cannot run {solcjs}: {error}") from None
    try:
        output = json.loads(result.stdout[result.stdout.index("{") :])
    except ValueError:
        raise CompileError(
            f"solcjs gave no JSON: {(result.stdout + result.stderr)[-500:]}"
        ) from None
    errors = [e for e in output.get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise CompileError("; ".join(e.get("formattedMessage", e["message"]) for e in errors))
    built: dict[str, Any] = {}
    for file_name, contracts in sorted(output["contracts"].items()):
        for name, contract in sorted(contracts.items()):
            if name in CONTRACTS:
                built[name] = {
                    "source": file_name,
                    "abi": contract["abi"],
                    "bytecode": "0x" + contract["evm"]["bytecode"]["object"],
                }
    return {"compiler": f"solcjs {version}", "settings": SETTINGS, "contracts": built}


def render(artifacts: dict[str, Any]) -> str:
    """The artifacts as the committed file's text (stable key order, one trailing newline)."""
    return json.dumps(artifacts, indent=1, sort_keys=True) + "\n"


def load_artifacts() -> dict[str, Any]:
    """The committed artifacts (raises :class:`ArtifactError` if absent or unreadable)."""
    path = contracts_dir() / "artifacts.json"
    try:
        document: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ArtifactError(f"{path}: {error}; run 'chainloom-dev evm compile'") from None
    return document


def contract(name: str) -> tuple[list[dict[str, Any]], str]:
    """ABI and creation bytecode of one committed contract."""
    entry = load_artifacts()["contracts"].get(name)
    if entry is None:
        raise ArtifactError(f"no artifact for {name}; run 'chainloom-dev evm compile'")
    return entry["abi"], entry["bytecode"]
