"""Errors of the XRPL binary codec.

The codec is a sub-package of :mod:`chainloom.ledger`, so its errors hang under the ledger tree
(a malformed blob is malformed input to the backend)::

    chainloom.ledger.errors.LedgerInputError
    └── XrplBinaryError          a blob that is not canonical XRPL binary (names the byte offset)
        └── XrplMissingFieldError     a blob that parses but lacks a field the ETL needs
    chainloom.ledger.errors.LedgerConfigError
    └── XrplDefinitionsError     rippled's definitions.json is missing or not in its shape
"""

from __future__ import annotations

from chainloom.ledger.errors import LedgerConfigError, LedgerInputError


class XrplBinaryError(LedgerInputError):
    """A blob that does not parse as XRPL canonical binary; carries the byte offset."""

    def __init__(self, message: str, *, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (at byte {offset})")
        self.offset = offset


class XrplMissingFieldError(XrplBinaryError):
    """A transaction, metadata or ledger object lacks a field that is required here."""


class XrplDefinitionsError(LedgerConfigError):
    """The protocol definitions (xrpl-py's ``definitions.json``) cannot be read, or a name the
    codec needs is not in them."""
