"""Pure cores of ``POST /api/v1/vaas/parse`` and the observations route: bytes or a row in,
the answer's model out (no store, no HTTP).

A parsed VAA is shown through the store's own cell codecs (:mod:`chainloom.eventstore.cells`)
and the same row-to-model function the stored VAAs use (:func:`shapes.vaa_doc`), so a VAA sent
to ``parse`` and the same VAA read back by id answer the same fields, except what only the store
knows (the source transaction, enrichment, conflicts).

Observations come from what the writer keeps per message: the ``VAAState:Signatures:{set}``
list (guardian index and signature, in index order) and the ``Signatures`` family (guardian
address -> signature); an address is the ``Signatures`` qualifier holding the same signature.
"""

from __future__ import annotations

import json

from chainloom.eventstore import cells, schema
from chainloom.eventstore import encoding as enc
from chainloom.eventstore.api import shapes, tool_models
from chainloom.eventstore.api.errors import BadParameterError
from chainloom.eventstore.keys import MessageKey
from chainloom.eventstore.planner import RowSnapshot
from chainloom.eventstore.schema import Q
from chainloom.wormhole import VAA, decode_payload, parse_vaa
from chainloom.wormhole.errors import WormholeError
from chainloom.wormhole.vaa import decode_vaa_text

FORMS = 'hex, base64, raw bytes (application/octet-stream) or JSON {"vaa": "<hex or base64>"}'
"""The body forms ``parse`` takes, named in its refusals."""


def _bad(reason: str) -> BadParameterError:
    return BadParameterError("body", reason)


def vaa_bytes(content_type: str | None, body: bytes) -> bytes:
    """The VAA bytes of a ``parse`` request body.

    Raw bytes when the content type is ``application/octet-stream`` or the body starts with the
    version byte 0x01 (hex text starts with a digit, base64 of a VAA with ``AQ``); a JSON object
    ``{"vaa": text}`` when the content type is JSON; otherwise the body is text, hex or base64.
    Raises BadParameterError (``body``) naming what is wrong."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if not body.strip():
        raise _bad(f"empty: send one VAA as {FORMS}")
    if media == "application/octet-stream" or body[:1] == b"\x01":
        return body
    if media == "application/json" or media.endswith("+json"):
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise _bad(f"not JSON ({error})") from None
        text = document.get("vaa") if isinstance(document, dict) else None
        if not isinstance(text, str):
            raise _bad('a JSON body must be an object with a "vaa" string (hex or base64)')
    else:
        try:
            text = body.decode("ascii")
        except UnicodeDecodeError:
            raise _bad(
                "neither hex nor base64 text, nor raw VAA bytes (which start with the version "
                "byte 0x01; or send them as application/octet-stream)"
            ) from None
    try:
        return decode_vaa_text(text)
    except WormholeError as error:
        raise _bad(str(error)) from None


def parse(raw: bytes) -> tuple[VAA, tool_models.ParsedVaaResponse]:
    """The VAA in ``raw`` and its answer. Raises BadParameterError (``body``) when ``raw`` is
    not a well-formed VAA (the core parser's reason and byte offset)."""
    try:
        vaa = parse_vaa(raw)
    except WormholeError as error:
        raise _bad(f"not a VAA: {error}") from None
    except ValueError as error:  # a field out of range for the VAA's own checks
        raise _bad(f"not a VAA: {error}") from None
    row: dict[str, dict[str, bytes]] = {}
    for cell in (
        *cells.publication_cells(vaa),
        *cells.payload_cells(vaa.timestamp, decode_payload(vaa)),
        cells.quorum_cell(vaa, raw),
    ):
        row.setdefault(cell.family, {})[cell.qualifier] = cell.value
    key = MessageKey(vaa.emitter_chain, vaa.emitter_address.hex(), vaa.sequence)
    signatures = [
        tool_models.SignatureDoc(guardian_index=s.guardian_index, signature=s.signature.hex())
        for s in vaa.signatures
    ]
    return vaa, tool_models.ParsedVaaResponse(data=shapes.vaa_doc(key, row), signatures=signatures)


def observations(key: MessageKey, families: RowSnapshot) -> tool_models.ObservationsResponse:
    """The signatures a stored row keeps, by guardian set then guardian index."""
    by_signature = {
        enc.decode_text(value).removeprefix("0x").lower(): address
        for address, value in families.get(schema.SIGNATURES, {}).items()
    }
    found: list[tool_models.ObservationDoc] = []
    state = families.get(schema.VAA_STATE, {})
    for qualifier in sorted(state, key=_set_number):
        set_index = _set_number(qualifier)
        if set_index < 0:
            continue
        for guardian_index, signature in enc.decode_signature_list(state[qualifier]):
            found.append(
                tool_models.ObservationDoc(
                    guardian_set_index=set_index,
                    guardian_index=guardian_index,
                    guardian_addr=by_signature.get(signature.hex()),
                    signature=signature.hex(),
                )
            )
    digest = families.get(schema.MESSAGE_PUBLICATION, {}).get(Q.DIGEST)
    return tool_models.ObservationsResponse(
        id=key.message_id,
        digest=None if digest is None else enc.decode_text(digest),
        data=found,
    )


def _set_number(qualifier: str) -> int:
    """The guardian set of a ``Signatures:{set}`` qualifier; -1 for any other."""
    number = qualifier.removeprefix(Q.SIGNATURES_PREFIX)
    return int(number) if qualifier.startswith(Q.SIGNATURES_PREFIX) and number.isdigit() else -1
