"""The guardian spy's subscription protocol: its gRPC method and its emitter filters.

Why a module of its own: the relayer's spy client and the harness's spy server
(:mod:`chainloom_dev.sim.spy_server`) must agree on the method path and on how a filter names
an emitter, and product code must not import the harness. Both import these from here. The
messages themselves are the generated ``spy.v1`` protobuf classes.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainloom.rpc.generated.spy.v1 import spy_pb2
from chainloom.spy.errors import SpyError

__all__ = ["METHOD_NAME", "METHOD_PATH", "SERVICE_NAME", "EmitterKey"]

SERVICE_NAME = "spy.v1.SpyRPCService"
"""The gRPC service (package + service of ``spy.proto``)."""
METHOD_NAME = "SubscribeSignedVAA"
"""The server-streaming method that delivers signed VAAs."""
METHOD_PATH = f"/{SERVICE_NAME}/{METHOD_NAME}"
"""The full method path a client calls."""


@dataclass(frozen=True, slots=True)
class EmitterKey:
    """One emitter, as a spy filter names it."""

    chain: int
    """Wormhole chain id (0..65535)."""
    address: bytes
    """The 32-byte emitter address."""

    def __post_init__(self) -> None:
        if not 0 <= self.chain <= 0xFFFF:
            raise SpyError(f"emitter chain id {self.chain} is outside 0..65535")
        if len(self.address) != 32:
            raise SpyError(f"emitter address must be 32 bytes, got {len(self.address)}")

    @classmethod
    def parse(cls, chain: int, address_hex: str) -> EmitterKey:
        """Parse a filter's address the way the real spy does: strip ``0x``, left-pad to 32."""
        text = address_hex.strip().lower().removeprefix("0x")
        if len(text) > 64:
            raise SpyError(f"emitter address {address_hex!r} is longer than 32 bytes")
        try:
            raw = bytes.fromhex(text.rjust(64, "0"))
        except ValueError:
            raise SpyError(f"emitter address {address_hex!r} is not hex") from None
        return cls(chain, raw)

    @classmethod
    def from_text(cls, text: str) -> EmitterKey:
        """``"<chain>:<hex address>"``, the form the CLI takes."""
        chain_text, sep, address = text.partition(":")
        chain_text = chain_text.strip()
        if not sep or not (chain_text.isascii() and chain_text.isdigit()):
            raise SpyError(f"emitter filter {text!r} is not <chain id>:<hex address>")
        return cls.parse(int(chain_text), address)

    def to_proto(self) -> spy_pb2.FilterEntry:
        """The filter entry a subscription request carries."""
        return spy_pb2.FilterEntry(
            emitter_filter=spy_pb2.EmitterFilter(
                chain_id=self.chain,  # type: ignore[arg-type]  # open enum: any uint16
                emitter_address=self.address.hex(),
            )
        )
