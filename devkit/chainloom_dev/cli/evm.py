"""``chainloom-dev evm compile``: rebuild the project's contract artifacts
(``services/chainloom/evm/contracts/artifacts.json``) with the solcjs the stack caches; a
generator, run by ``make generate`` with its ``--check`` in CI."""

from __future__ import annotations

import click


@click.group()
def evm() -> None:
    """The project's contracts: build their artifacts."""


@evm.command()
@click.option("--check", is_flag=True, help="Only compare with the committed artifacts (exit 1).")
def compile(check: bool) -> None:
    """Compile the Solidity sources with solcjs into contracts/artifacts.json."""
    from chainloom.evm.compile import compile_contracts, contracts_dir, render
    from chainloom_dev.stack._model import SilentProgress
    from chainloom_dev.stack.components.evm import install_solc

    solcjs = install_solc(SilentProgress())
    built = render(compile_contracts(solcjs))
    path = contracts_dir() / "artifacts.json"
    current = path.read_text() if path.exists() else ""
    if check:
        if built != current:
            click.echo(
                f"{path} differs from a fresh build: run 'chainloom-dev evm compile'", err=True
            )
            raise SystemExit(1)
        click.echo(f"{path} is up to date")
        return
    path.write_text(built)
    click.echo(f"wrote {path}")
