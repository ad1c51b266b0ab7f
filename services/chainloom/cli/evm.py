"""``chainloom evm``: build the project's contracts and put them on an EVM chain.

``compile`` rebuilds ``contracts/artifacts.json`` with the solcjs the stack caches (``stack up
--only solc``); ``deploy`` installs guardian sets and a token bridge on a chain (the geth dev
chains of ``stack up --evm``) and funds the relayer's wallets. Heavy imports (web3) happen
inside the commands so ``chainloom evm --help`` stays fast.
"""

from __future__ import annotations

import json
from typing import Any

import click

from chainloom.cli.options import fail


@click.group()
def evm() -> None:
    """The project's Wormhole-style contracts on EVM chains (docs/evm.md)."""


def _emitter(text: str) -> tuple[int, bytes]:
    chain, _, address = text.partition(":")
    raw = address.strip().lower().removeprefix("0x")
    if not (chain.isascii() and chain.isdigit()) or len(raw) not in (40, 64):
        raise click.BadParameter(
            f"{text!r} is not CHAIN:ADDRESS (a Wormhole chain id and 20 or 32 bytes of hex)",
            param_hint="--emitter",
        )
    try:
        return int(chain), bytes.fromhex(raw.rjust(64, "0"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: the address is not hex", param_hint="--emitter"
        ) from None


@evm.command()
@click.option("--rpc", "rpc_url", required=True, help="JSON-RPC URL of the chain.")
@click.option(
    "--chain",
    "wormhole_chain",
    required=True,
    type=click.IntRange(1, 65535),
    help="The Wormhole chain id this EVM chain stands for (transfers to it name this id).",
)
@click.option(
    "--guardian-set",
    "guardians",
    default="dev",
    show_default=True,
    help="Guardian sets to install: dev (the test kit's 19), dev:N, devnet, mainnet or a file.",
)
@click.option(
    "--emitter",
    "emitters",
    multiple=True,
    help="CHAIN:ADDRESS of a token-bridge emitter to register (repeatable; default: the "
    "devnet token bridges, which the dev kit signs transfers from).",
)
@click.option(
    "--fund",
    "fund_addresses",
    multiple=True,
    help="Address of a relayer wallet to fund with --fund-eth from the deployer (repeatable).",
)
@click.option("--fund-eth", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option(
    "--deployer-key-file",
    type=click.Path(dir_okay=False),
    help="File holding the deployer's key (hex); default: the node's unlocked dev account.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the deployment as JSON.")
def deploy(  # noqa: PLR0917 (click passes every option)
    rpc_url: str,
    wormhole_chain: int,
    guardians: str,
    emitters: tuple[str, ...],
    fund_addresses: tuple[str, ...],
    fund_eth: int,
    deployer_key_file: str | None,
    as_json: bool,
) -> None:
    """Deploy ChainloomCore + ChainloomTokenBridge, install guardian sets, register emitters."""
    from chainloom.cli.common import load_guardian_sets
    from chainloom.evm import deploy as deployment
    from chainloom.relayer.errors import WalletError
    from chainloom.relayer.wallet import Wallet
    from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS
    from chainloom.wormhole.errors import WormholeError

    try:
        sets = load_guardian_sets(guardians)
    except (WormholeError, ValueError) as error:
        fail(f"--guardian-set: {error}")
    chosen = dict(_emitter(e) for e in emitters) if emitters else DEVNET_TOKEN_BRIDGE_EMITTERS
    key = None
    if deployer_key_file:
        try:
            key = Wallet.from_file(deployer_key_file).private_key_bytes()
        except WalletError as error:
            fail(f"--deployer-key-file: {error}")
    w3 = deployment.connect(rpc_url)
    sender = deployment.Sender(w3, key)
    result = deployment.deploy(
        sender, rpc_url=rpc_url, wormhole_chain=wormhole_chain, guardian_sets=sets, emitters=chosen
    )
    deployment.fund(sender, list(fund_addresses), fund_eth * 10**18)
    document: dict[str, Any] = {**result.to_json(), "funded": list(fund_addresses)}
    if as_json:
        click.echo(json.dumps(document, sort_keys=True))
        return
    click.echo(f"chain {wormhole_chain} (EVM chain id {result.evm_chain_id}) at {rpc_url}")
    click.echo(f"  core          {result.core}")
    click.echo(f"  token bridge  {result.token_bridge}")
    click.echo(f"  guardian sets {', '.join(str(i) for i in result.guardian_set_indices)}")
    for chain, address in result.emitters.items():
        click.echo(f"  emitter       {chain}: {address}")
    for address in fund_addresses:
        click.echo(f"  funded        {address} with {fund_eth} ETH")
