"""Settings parts that name Wormhole chains and emitters: a chain by id or name, a 20- or
32-byte address, one emitter. The relayer, the indexer and the operator's resources all take
them, so they sit here, below every service's settings."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from chainloom.settings.parts import Part
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS, TOKEN_BRIDGE_EMITTERS, chain_id
from chainloom.wormhole.errors import WormholeError

EMITTER_PRESETS: dict[str, dict[int, bytes]] = {
    "mainnet": TOKEN_BRIDGE_EMITTERS,
    "devnet": DEVNET_TOKEN_BRIDGE_EMITTERS,
}
"""Named sets of token-bridge emitters ``known_emitters`` may list."""


def _chain(value: Any) -> Any:
    """A chain name or id as the id; anything else is left for the type check to refuse."""
    if isinstance(value, str) and value != "*":
        try:
            return chain_id(value)
        except WormholeError:
            raise ValueError(f"unknown chain {value!r}") from None
    return value


def _address32(value: Any) -> Any:
    """A 20- or 32-byte hex address as 64 lower-case hex digits ("*" passes through)."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError("must be a quoted hex string (YAML reads an unquoted 0x... as a number)")
    if not isinstance(value, str) or value == "*":
        return value
    text = value.strip().lower().removeprefix("0x")
    if len(text) not in (40, 64):
        raise ValueError(f"must be 20 or 32 bytes of hex, got {len(text)} hex digits")
    try:
        bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"is not hex: {value!r}") from None
    return text.rjust(64, "0")


ChainId = Annotated[
    int, Field(ge=1, le=0xFFFF), BeforeValidator(_chain, json_schema_input_type=int | str)
]
"""A Wormhole chain, given by id (1..65535) or name (``ethereum``)."""
Address32 = Annotated[
    str, Field(pattern=r"^[0-9a-f]{64}$"), BeforeValidator(_address32, json_schema_input_type=str)
]
"""A 32-byte address as hex (a 20-byte EVM address is left-padded; ``0x`` optional)."""


class EmitterSettings(Part):
    """One token-bridge emitter whose transfers are relayed."""

    chain: ChainId = Field(description="The emitter's chain (id or name).")
    address: Address32 = Field(description="The emitter's address (20 or 32 bytes of hex).")
