"""``chainloom-dev vaa generate``: realistic signed VAAs from the dev kit's guardians, for
tests, benches and demos (``chainloom vaa decode --verify --guardian-set dev:N`` checks them)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

import click


@click.group()
def vaa() -> None:
    """Signed Wormhole VAAs for tests and demos."""


def _write_lines(lines: Iterable[str], output: TextIO) -> int:
    written = 0
    for line in lines:
        output.write(line + "\n")
        written += 1
    return written


@vaa.command()
@click.option("--count", type=click.IntRange(min=0), required=True, help="VAAs to write.")
@click.option(
    "--seed", type=int, required=True, help="Seed of the workload (same seed, same VAAs)."
)
@click.option(
    "--guardians",
    type=click.IntRange(1, 255),
    default=19,
    show_default=True,
    help="Size of the dev guardian set that signs.",
)
@click.option(
    "--mix",
    default=None,
    metavar="KIND=W,...",
    help="Weights of token_transfer, transfer_with_payload, asset_meta, nft_transfer, other, "
    "and the rates duplicate=R, conflict=R (default: a mainnet-like mix).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["hex", "base64"]),
    default="hex",
    show_default=True,
)
@click.option(
    "--guardian-set-index", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True
)
def generate(
    *,
    count: int,
    seed: int,
    guardians: int,
    mix: str | None,
    output_format: str,
    guardian_set_index: int,
) -> None:
    """Write COUNT realistic signed VAAs, one per line (verify them with --guardian-set dev:N)."""
    import base64

    from chainloom_dev.sim.dev_guardians import DevGuardians
    from chainloom_dev.sim.vaa_workload import DEFAULT_MIX, Mix, generate_vaas

    try:
        chosen = Mix.parse(mix) if mix else DEFAULT_MIX
    except ValueError as error:
        click.echo(f"error: --mix {mix}: {error}", err=True)
        sys.exit(2)
    kit = DevGuardians(count=guardians)
    stream = generate_vaas(count, seed, kit, chosen, guardian_set_index=guardian_set_index)
    if output_format == "hex":
        lines = (v.hex() for v in stream)
    else:
        lines = (base64.b64encode(v).decode("ascii") for v in stream)
    _write_lines(lines, sys.stdout)
    sys.stdout.flush()
