"""``chainloom vaa``: decode, verify and generate Wormhole VAAs.

Scripts depend on ``decode``'s output (one JSON object per input, keys fixed by the issue) and
on its exit status: 2 when any input was malformed, each bad input named on stderr in one line,
the good inputs still printed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TextIO

import click

from chainloom.cli.common import each_input, load_guardian_sets, preview


@click.group()
def vaa() -> None:
    """Decode, verify and generate Wormhole VAAs."""


@vaa.command()
@click.option("--verify", is_flag=True, help="Recover the signers and check quorum.")
@click.option(
    "--guardian-set",
    "guardian_set",
    default="mainnet",
    show_default=True,
    metavar="mainnet|devnet|dev[:N]|PATH",
    help="Guardian sets to verify against (dev = the test kit's N guardians, default 19).",
)
@click.option(
    "--now",
    type=int,
    default=None,
    help="Unix time for the guardian-set expiry rule (default: no expiry check).",
)
@click.option("--pretty", is_flag=True, help="Indent the JSON.")
@click.argument("inputs", nargs=-1)
def decode(
    verify: bool, guardian_set: str, now: int | None, pretty: bool, inputs: tuple[str, ...]
) -> None:
    """Decode VAAs given as hex (with or without 0x) or base64.

    With no INPUT, or INPUT '-', reads one VAA per line from stdin. Prints one JSON object
    per input. Exits 2 if any input was malformed (after processing all of them).
    """
    from chainloom.wormhole import (
        SignatureCache,
        all_known_emitters,
        decode_payload,
        parse_vaa_text,
        verify_vaa,
    )
    from chainloom.wormhole.errors import WormholeError
    from chainloom.wormhole.render import vaa_to_json

    sets = None
    given = click.get_current_context().get_parameter_source("guardian_set")
    # An explicit --guardian-set is checked even without --verify: a bad path is bad input.
    if verify or given is not click.core.ParameterSource.DEFAULT:
        try:
            sets = load_guardian_sets(guardian_set)
        except (WormholeError, ValueError) as error:
            click.echo(f"error: --guardian-set {guardian_set}: {error}", err=True)
            sys.exit(2)
    emitters = all_known_emitters()
    cache = SignatureCache()
    failed = False
    out = sys.stdout
    for label, text in each_input(inputs, sys.stdin):
        try:
            parsed = parse_vaa_text(text)
        except WormholeError as error:
            failed = True
            click.echo(f"error: {label} ({preview(text)}): {error}", err=True)
            continue
        verification = verify_vaa(parsed, sets, now=now, cache=cache) if verify and sets else None
        view = vaa_to_json(parsed, decode_payload(parsed, emitters=emitters), verification)
        out.write(json.dumps(view, indent=2 if pretty else None, ensure_ascii=False) + "\n")
    out.flush()
    if failed:
        sys.exit(2)


def _write_lines(lines: Iterable[str], output: TextIO) -> int:
    written = 0
    for line in lines:
        output.write(line + "\n")
        written += 1
    return written


@vaa.command("guardian-set")
@click.option(
    "--source",
    default="mainnet",
    show_default=True,
    metavar="mainnet|devnet|dev[:N]|PATH",
    help="Which guardian sets to print.",
)
def guardian_set_command(source: str) -> None:
    """Print guardian sets as JSON (the format --guardian-set PATH reads)."""
    from chainloom.wormhole.errors import WormholeError

    try:
        sets = load_guardian_sets(source)
    except (WormholeError, ValueError) as error:
        click.echo(f"error: --source {source}: {error}", err=True)
        sys.exit(2)
    click.echo(json.dumps(sets.to_json(), indent=2))
