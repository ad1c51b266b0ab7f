"""Errors of the Wormhole core.

Everything the codec, the payload decoders, the guardian-set registry and the chain registry
refuse is one of these, so a caller (the spy listener, the event store, the CLI) can catch
:class:`WormholeError` and still say exactly what was wrong and where::

    WormholeError
    ├── VAAParseError               the bytes are not a well-formed signed VAA
    │   ├── TruncatedVAAError       the input ends inside a field (carries the byte offset)
    │   ├── UnsupportedVersionError the first byte is not 1
    │   ├── SignatureOrderError     guardian indices are not strictly ascending
    │   └── VAAEncodingError        text input is neither hex nor base64
    ├── PayloadParseError           a known payload type with a malformed layout
    ├── GuardianSetError
    │   ├── UnknownGuardianSetError the registry has no set with that index
    │   ├── GuardianSetFileError    a guardian-set file cannot be read or is malformed
    │   └── GuardianSetUpgradeError an upgrade VAA does not chain onto the set before it
    ├── UnknownChainError           a chain name that is not in the registry
    └── MessageKeyError             not CHAIN/EMITTER/SEQ, a sequence range or a row key
"""

from __future__ import annotations

from chainloom.errors import ChainloomError


class WormholeError(ChainloomError):
    """Base class of the Wormhole core's errors."""


class VAAParseError(WormholeError):
    """The input is not a well-formed signed VAA.

    ``offset`` is the byte offset where the problem was found (None when it is not about a
    position, e.g. bad text encoding).
    """

    def __init__(self, message: str, *, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class TruncatedVAAError(VAAParseError):
    """The input ends inside a field."""

    def __init__(self, field: str, *, offset: int, needed: int, length: int) -> None:
        super().__init__(
            f"truncated at byte {length}: {field} needs bytes {offset}..{offset + needed - 1}",
            offset=length,
        )
        self.field = field


class UnsupportedVersionError(VAAParseError):
    """The version byte is not the supported version 1."""

    def __init__(self, version: int) -> None:
        super().__init__(f"unsupported version {version} (only version 1 exists)", offset=0)
        self.version = version


class SignatureOrderError(VAAParseError):
    """Guardian indices in the signature list are not strictly ascending."""

    def __init__(self, position: int, previous: int, index: int, *, offset: int) -> None:
        super().__init__(
            f"index out of order: signature {position} has guardian index {index} after "
            f"{previous} (indices must be strictly ascending)",
            offset=offset,
        )
        self.position = position


class VAAEncodingError(VAAParseError):
    """Text input that is neither hex (with or without 0x) nor base64."""


class PayloadParseError(WormholeError):
    """A payload of a known type whose layout is wrong (length, lengths inside, values)."""

    def __init__(self, kind: str, message: str, *, offset: int | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.offset = offset


class GuardianSetError(WormholeError):
    """Base class of guardian-set registry errors."""


class UnknownGuardianSetError(GuardianSetError):
    """No guardian set with this index is known."""

    def __init__(self, index: int, known: list[int]) -> None:
        known_text = ", ".join(str(i) for i in known) or "none"
        super().__init__(f"unknown guardian set {index} (known: {known_text})")
        self.index = index


class GuardianSetFileError(GuardianSetError):
    """A guardian-set file is missing, not JSON, or has a malformed entry."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"guardian set file {path}: {problem}")
        self.path = path


class GuardianSetUpgradeError(GuardianSetError):
    """A guardian-set upgrade VAA that does not verify or does not follow the previous set."""

    def __init__(self, position: int, problem: str) -> None:
        super().__init__(f"upgrade VAA {position}: {problem}")
        self.position = position


class UnknownChainError(WormholeError):
    """A chain name (or id text) that the registry does not know."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown chain {name!r} (use a Wormhole chain name or a numeric id)")
        self.name = name


class MessageKeyError(WormholeError, ValueError):
    """A message id (``CHAIN/EMITTER/SEQUENCE``), a sequence range or a row key could not be
    parsed; the message names the text and the reason."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"{text!r} is not a message id: {reason}")
        self.text = text
        self.reason = reason
