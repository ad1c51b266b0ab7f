"""Response models of the observations, parse and stream routes (pure, like ``models``).

Kept apart from :mod:`chainloom.eventstore.api.models` so the list and lookup answers and these
grow independently; they share its base (camelCase on the wire, unknown fields refused, every
key present) and its :class:`~chainloom.eventstore.api.models.VaaDoc`.
"""

from __future__ import annotations

from pydantic import Field

from chainloom.eventstore.api.models import ApiModel, VaaDoc


class ObservationDoc(ApiModel):
    """One guardian's signature over the VAA's digest, as the store keeps it."""

    guardian_set_index: int = Field(ge=0, description="The guardian set the signature is for.")
    guardian_index: int = Field(ge=0, le=255, description="The signer's index in that set.")
    guardian_addr: str | None = Field(
        description="The signer's address (EIP-55 0x form); null when the store kept the "
        "signature in the list only."
    )
    signature: str = Field(description="The 65-byte r||s||v signature, 130 hex characters.")


class ObservationsResponse(ApiModel):
    """``GET /api/v1/observations/{chain}/{emitter}/{seq}``: the signatures stored for a VAA."""

    id: str = Field(description="CHAIN/EMITTER/SEQUENCE, Wormhole's message id.")
    digest: str | None = Field(description="The body's digest the guardians signed, 64 hex.")
    data: list[ObservationDoc] = Field(
        description="By guardian set, then guardian index; empty before any signature is stored."
    )


class SignatureDoc(ApiModel):
    """One signature of a parsed VAA, as it is in the bytes."""

    guardian_index: int = Field(ge=0, le=255, description="The signer's index in its set.")
    signature: str = Field(description="The 65-byte r||s||v signature, 130 hex characters.")


class ParsedVaaResponse(ApiModel):
    """``POST /api/v1/vaas/parse``: the VAA sent, decoded (nothing is read or stored)."""

    data: VaaDoc = Field(
        description="The VAA in the API's VAA shape: `vaa` is the bytes sent (base64), "
        "`txHash`, `tokenTransferDetails` and `chainDetails` are null (they come from the "
        "store), `isDuplicated` false. Signatures are not verified."
    )
    signatures: list[SignatureDoc] = Field(description="The signatures in the VAA, in order.")


class StreamEventDoc(ApiModel):
    """The data of one ``vaa`` event of ``GET /api/v1/vaas/stream`` (Server-Sent Events)."""

    cursor: str = Field(
        description="This event's position (also its SSE id): pass it as `after` (or "
        "Last-Event-ID) to resume after it."
    )
    data: VaaDoc = Field(description="The VAA that was stored, as GET by id answers it.")


class StreamCloseDoc(ApiModel):
    """The data of the ``close`` event that ends a stream the server drops."""

    reason: str = Field(
        description="Why: the client was too slow (more than api.stream_buffer events waiting), "
        "the server is stopping, or the store could not be read. Reconnect with the last event "
        "id to resume."
    )
