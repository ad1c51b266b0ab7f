"""The committed contract artifacts are what solcjs builds from the committed sources."""

from __future__ import annotations

from pathlib import Path

from chainloom.evm.compile import CONTRACTS, compile_contracts, contracts_dir, render
from chainloom_dev.stack import versions


def test_committed_artifacts_match_a_fresh_build(solcjs: Path) -> None:
    committed = (contracts_dir() / "artifacts.json").read_text()
    built = compile_contracts(solcjs)
    assert built["compiler"].startswith(f"solcjs {versions.SOLC}+")
    assert sorted(built["contracts"]) == sorted(CONTRACTS)
    assert render(built) == committed, "contracts changed: run 'chainloom-dev evm compile'"


def test_a_changed_source_is_noticed(solcjs: Path, tmp_path: Path) -> None:
    for source in contracts_dir().glob("*.sol"):
        text = source.read_text()
        if source.name == "ChainloomCore.sol":
            text = text.replace("(size * 2) / 3 + 1", "(size * 2) / 3")
        (tmp_path / source.name).write_text(text)
    changed = render(compile_contracts(solcjs, tmp_path))
    assert changed != (contracts_dir() / "artifacts.json").read_text()
