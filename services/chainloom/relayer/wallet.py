"""A relayer wallet: a secp256k1 key read from a file (or a Kubernetes Secret mounted as one).

Why its own type: the key must never reach logs, errors, ``repr()``, status or Redis. A
:class:`Wallet` shows only its public address anywhere it is printed; the key is reachable
only through :meth:`Wallet.private_key_bytes`, which a chain adapter calls when it signs.
Workers are named ``<chain>:<address>`` (the design's "target chain + public key"), so one
wallet on one chain is exactly one worker and two workers never collide on a nonce.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from coincurve import PrivateKey

from chainloom.relayer.errors import WalletError
from chainloom.wormhole.hashing import keccak256

_HEX_KEY = re.compile(r"^(0x)?[0-9a-fA-F]{64}$")


class Wallet:
    """A private key and its EVM address. Prints as its address only."""

    __slots__ = ("_key", "address")

    def __init__(self, private_key: bytes) -> None:
        if len(private_key) != 32:
            raise WalletError(f"a private key is 32 bytes, got {len(private_key)}")
        try:
            public = PrivateKey(private_key).public_key.format(compressed=False)
        except Exception:  # coincurve raises ValueError or its own errors; never chain them
            raise WalletError("the private key is not a valid secp256k1 key") from None
        digest = keccak256(public[1:])
        self._key = private_key
        self.address: str = "0x" + digest[12:].hex()
        """The wallet's public EVM address (lower-case hex); safe to log and store."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Wallet:
        """Read a hex key (``0x`` optional, surrounding whitespace ignored) from ``path``."""
        file = Path(path)
        try:
            text = file.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            raise WalletError(f"wallet file {file} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise WalletError(f"wallet file {file} cannot be read ({type(exc).__name__})") from None
        if not _HEX_KEY.match(text):
            raise WalletError(
                f"wallet file {file} must hold one secp256k1 private key as 64 hex characters "
                f"(0x optional); it holds {len(text)} characters that do not match"
            )
        return cls(bytes.fromhex(text.removeprefix("0x")))

    def private_key_bytes(self) -> bytes:
        """The raw key, for a chain adapter that signs. Never log or store the result."""
        return self._key

    def __repr__(self) -> str:
        return f"Wallet(address={self.address})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Wallet cannot be pickled (it would copy the key)")
