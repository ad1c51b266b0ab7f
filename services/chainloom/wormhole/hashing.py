"""Keccak-256, the one hash Wormhole uses (digests and Ethereum-style guardian addresses).

Keccak-256 is not SHA3-256 (the padding differs), so :mod:`hashlib` cannot be used. The
C extension from ``safe-pysha3`` costs well under a microsecond per call; pycryptodome's
wrapper costs several, which matters when every VAA is hashed twice and every recovered
public key once. pycryptodome stays as the fallback where the extension is not installed.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["double_keccak256", "keccak256"]

keccak256: Callable[[bytes], bytes]

try:
    from sha3 import keccak_256 as _keccak_256  # type: ignore[import-untyped,import-not-found,unused-ignore]

    def keccak256(data: bytes) -> bytes:
        """The Keccak-256 hash of ``data`` (32 bytes)."""
        return _keccak_256(data).digest()  # type: ignore[no-any-return]

except ImportError:  # pragma: no cover - exercised only without safe-pysha3
    from Crypto.Hash import keccak as _pycryptodome_keccak

    def keccak256(data: bytes) -> bytes:
        """The Keccak-256 hash of ``data`` (32 bytes)."""
        return _pycryptodome_keccak.new(digest_bits=256, data=data).digest()


def double_keccak256(data: bytes) -> bytes:
    """``keccak256(keccak256(data))``: the VAA signing digest of a body."""
    return keccak256(keccak256(data))
