"""rippled's protocol definitions (fields, types, transaction, entry and result codes), loaded once.

The numbers of the XRPL binary format live in rippled's ``definitions.json``, which rippled
serves (``server_definitions``) and the client libraries ship. A hand-kept table drifts: every
amendment adds transaction types, ledger entry types and fields, and a table that lags names them
``Unknown(n)``. So the codec takes them from a copy of that file kept beside this module, as
data, and only the *reading* of the bytes stays ours (:mod:`.binary`, :mod:`.jsonform`).

The copy is the newest the registries serve (see :data:`DEFINITIONS_SOURCE`): npm's
``ripple-binary-codec`` and PyPI's ``xrpl-py`` ship the same file, the former first; the
installed xrpl-py (pinned below 5) ships an older one without the ConfidentialMPT and
Sponsorship transactions. ``docs/ledger-api.md`` says how to refresh it. It is parsed once on
first use and kept as immutable lookup tables keyed the way the codec needs them: a field by its
sortable key ``type_code << 16 | nth`` (see :func:`chainloom.ledger.xrpl.fields.key`) and by its
name, the enumerations by code and by name.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from chainloom.ledger.xrpl.errors import XrplDefinitionsError

DEFINITIONS_SOURCE = "ripple-binary-codec 2.11.0 (npm, 2026-09-12; the same file as xrpl-py 5.2.0)"
"""Where the kept ``definitions.json`` comes from (``src/enums/definitions.json`` there)."""

DEFINITIONS_FILE = "definitions.json"
"""The file's name in this package."""


@dataclass(frozen=True, slots=True)
class FieldDefinition:
    """One field of the binary format (an ``SField`` of rippled)."""

    name: str
    """The field's name in JSON (``Account``, ``TakerPays``, ...)."""
    type_name: str
    """The name of its serialized type (``AccountID``, ``Amount``, ``STObject``, ...)."""
    type_code: int
    """The type's code (the high nibble or second byte of the field header)."""
    nth: int
    """The field's number within its type."""
    is_vl_encoded: bool
    """Whether the value carries a variable-length prefix."""
    is_serialized: bool
    """Whether the field appears in binary at all (``Generic``, ``Invalid`` and the like do not)."""
    is_signing_field: bool
    """Whether it is part of the data that is signed (``TxnSignature`` and the like are not)."""

    @property
    def key(self) -> int:
        """The sortable key ``type_code << 16 | nth`` (sorting keys sorts canonical order)."""
        return self.type_code << 16 | self.nth


@dataclass(frozen=True, slots=True)
class Definitions:
    """The parsed ``definitions.json``: every table the codec looks names and codes up in."""

    types: Mapping[str, int]
    """Type name -> type code (including the negative and >= 10000 pseudo types)."""
    fields_by_key: Mapping[int, FieldDefinition]
    """Serialized fields by their sortable key."""
    fields_by_name: Mapping[str, FieldDefinition]
    """Every field (serialized or not) by name."""
    transaction_types: Mapping[int, str]
    """TransactionType code -> name."""
    ledger_entry_types: Mapping[int, str]
    """LedgerEntryType code -> name."""
    transaction_results: Mapping[int, str]
    """TransactionResult code -> name (``tes``, ``tec``, ``tef``, ``tel``, ``tem``, ``ter``)."""

    def field(self, name: str) -> FieldDefinition:
        """The field called ``name``; :class:`XrplDefinitionsError` when there is none."""
        try:
            return self.fields_by_name[name]
        except KeyError:
            raise XrplDefinitionsError(f"definitions.json has no field {name!r}") from None

    def code_of(self, table: Mapping[int, str], name: str) -> int:
        """The code of ``name`` in one of the enumeration tables."""
        for code, candidate in table.items():
            if candidate == name:
                return code
        raise XrplDefinitionsError(f"definitions.json has no enumeration value {name!r}")


def parse_definitions(document: Mapping[str, Any]) -> Definitions:
    """Build the tables from a parsed ``definitions.json`` (rippled's ``server_definitions``
    shape: ``TYPES``, ``FIELDS``, ``TRANSACTION_TYPES``, ``LEDGER_ENTRY_TYPES``,
    ``TRANSACTION_RESULTS``)."""
    try:
        types = {str(name): int(code) for name, code in document["TYPES"].items()}
        by_key: dict[int, FieldDefinition] = {}
        by_name: dict[str, FieldDefinition] = {}
        for name, info in document["FIELDS"]:
            type_name = str(info["type"])
            definition = FieldDefinition(
                name=str(name),
                type_name=type_name,
                type_code=types[type_name],
                nth=int(info["nth"]),
                is_vl_encoded=bool(info["isVLEncoded"]),
                is_serialized=bool(info["isSerialized"]),
                is_signing_field=bool(info["isSigningField"]),
            )
            by_name[definition.name] = definition
            if definition.is_serialized and 0 < definition.type_code < 256:
                by_key[definition.key] = definition
        tables = [
            {int(code): str(name) for name, code in document[section].items() if int(code) >= 0}
            for section in ("TRANSACTION_TYPES", "LEDGER_ENTRY_TYPES", "TRANSACTION_RESULTS")
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as bad:
        raise XrplDefinitionsError(f"definitions.json is not in rippled's shape: {bad!r}") from None
    return Definitions(
        types=MappingProxyType(types),
        fields_by_key=MappingProxyType(by_key),
        fields_by_name=MappingProxyType(by_name),
        transaction_types=MappingProxyType(tables[0]),
        ledger_entry_types=MappingProxyType(tables[1]),
        transaction_results=MappingProxyType(tables[2]),
    )


@functools.cache
def definitions() -> Definitions:
    """The kept definitions, read and parsed on the first call only."""
    try:
        text = importlib.resources.files(__package__).joinpath(DEFINITIONS_FILE).read_text("utf-8")
    except OSError as missing:
        raise XrplDefinitionsError(
            f"cannot read {DEFINITIONS_FILE} of {__package__} ({DEFINITIONS_SOURCE}): {missing}"
        ) from None
    return parse_definitions(json.loads(text))
