"""Wormhole chain ids, their names, and how each chain writes an address.

Wormhole numbers chains itself (the EVM chain id of Ethereum is 1, its Wormhole id is 2), and
every VAA field that holds an address holds 32 bytes, left-padded. People and explorers read
native forms instead: a checksummed ``0x`` address on EVM chains, base58 on Solana, bech32 on
Cosmos chains. This module converts in both directions so the event store, the relayer and
the CLI all print the same thing. Obsolete ids stay: historical VAAs carry them.
"""

from __future__ import annotations

from chainloom import base58
from chainloom.wormhole.errors import UnknownChainError
from chainloom.wormhole.hashing import keccak256

__all__ = [
    "CHAINS",
    "EVM_CHAINS",
    "base58_decode",
    "base58_encode",
    "bech32_encode",
    "chain_id",
    "chain_name",
    "checksum_address",
    "native_address",
]

# wormhole-foundation/wormhole sdk/vaa/structs.go (the SDK's chain table, also the ChainID enum of
# proto/publicrpc/v1/publicrpc.proto); names are lower-case, one word.
CHAINS: dict[int, str] = {
    0: "unset",
    1: "solana",
    2: "ethereum",
    3: "terra",
    4: "bsc",
    5: "polygon",
    6: "avalanche",
    7: "oasis",
    8: "algorand",
    9: "aurora",
    10: "fantom",
    11: "karura",
    12: "acala",
    13: "klaytn",
    14: "celo",
    15: "near",
    16: "moonbeam",
    17: "neon",
    18: "terra2",
    19: "injective",
    20: "osmosis",
    21: "sui",
    22: "aptos",
    23: "arbitrum",
    24: "optimism",
    25: "gnosis",
    26: "pythnet",
    28: "xpla",
    29: "btc",
    30: "base",
    31: "filecoin",
    32: "sei",
    33: "rootstock",
    34: "scroll",
    35: "mantle",
    36: "blast",
    37: "xlayer",
    38: "linea",
    39: "berachain",
    40: "seievm",
    41: "eclipse",
    42: "bob",
    43: "snaxchain",
    44: "unichain",
    45: "worldchain",
    46: "ink",
    47: "hyperevm",
    48: "monad",
    49: "movement",
    50: "mezo",
    51: "fogo",
    52: "sonic",
    53: "converge",
    54: "codex",
    55: "plume",
    56: "aztec",
    57: "xrplevm",
    58: "plasma",
    59: "creditcoin",
    60: "stacks",
    61: "stellar",
    62: "ton",
    63: "moca",
    64: "megaeth",
    65: "dogecoin",
    66: "xrpl",
    67: "zerogravity",
    68: "tempo",
    69: "nexus",
    70: "tron",
    71: "arc",
    72: "robinhood",
    73: "hydration",
    3104: "wormchain",
    4000: "cosmoshub",
    4001: "evmos",
    4002: "kujira",
    4003: "neutron",
    4004: "celestia",
    4005: "stargaze",
    4006: "seda",
    4007: "dymension",
    4008: "provenance",
    4009: "noble",
    10002: "sepolia",
    10003: "arbitrum_sepolia",
    10004: "base_sepolia",
    10005: "optimism_sepolia",
    10006: "holesky",
    10007: "polygon_sepolia",
    10009: "monad_testnet",
    65000: "hypercore",
}

_IDS_BY_NAME = {name: chain for chain, name in CHAINS.items()}

# Chains whose native addresses are 20-byte Ethereum-style accounts.
EVM_CHAINS: frozenset[int] = frozenset(
    {2, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 16, 17, 23, 24, 25, 30, 33, 34, 35, 36, 37, 38, 39}
    | {40, 42, 43, 44, 45, 46, 47, 48, 50, 52, 55, 57, 58, 59, 63, 64}
    | {10002, 10003, 10004, 10005, 10006, 10007, 10009}
)
# Chains whose addresses are 32-byte ed25519 keys written in base58.
_BASE58_CHAINS = frozenset({1, 26, 41, 51})
# Cosmos chains: bech32 with this human-readable prefix.
_BECH32_PREFIXES: dict[int, str] = {
    3: "terra",
    18: "terra",
    19: "inj",
    20: "osmo",
    28: "xpla",
    32: "sei",
    3104: "wormhole",
    4000: "cosmos",
    4001: "evmos",
    4002: "kujira",
    4003: "neutron",
    4004: "celestia",
    4005: "stars",
    4006: "seda",
    4007: "dym",
    4008: "pb",
    4009: "noble",
}


def chain_name(chain_id: int) -> str:
    """The lower-case name of a Wormhole chain id; ``unknown-<id>`` for ids not in the table."""
    return CHAINS.get(chain_id, f"unknown-{chain_id}")


def chain_id(name: str) -> int:
    """The Wormhole chain id for a name (case-insensitive) or a decimal id given as text.

    Ids are ASCII digits only: ``int()`` would also read Arabic-Indic or fullwidth digits and
    surrounding whitespace, so ``"\u0662"`` or ``" 2"`` would be chain 2."""
    key = name.lower().replace("-", "_")
    if key in _IDS_BY_NAME:
        return _IDS_BY_NAME[key]
    if _ascii_decimal(key) and int(key) <= 0xFFFF:
        return int(key)
    if key.startswith("unknown_") and _ascii_decimal(key[8:]) and int(key[8:]) <= 0xFFFF:
        return int(key[8:])
    raise UnknownChainError(name)


def _ascii_decimal(text: str) -> bool:
    return text.isascii() and text.isdigit()


def checksum_address(address20: bytes) -> str:
    """The EIP-55 mixed-case ``0x`` form of a 20-byte address."""
    if len(address20) != 20:
        raise ValueError(f"an EVM address has 20 bytes, got {len(address20)}")
    lower = address20.hex()
    hashed = keccak256(lower.encode("ascii")).hex()
    return "0x" + "".join(
        ch.upper() if ch.isalpha() and int(hashed[i], 16) >= 8 else ch for i, ch in enumerate(lower)
    )


def base58_encode(data: bytes) -> str:
    """Bitcoin-alphabet base58, as Solana writes public keys."""
    return base58.encode(data, base58.BITCOIN_ALPHABET)


def base58_decode(text: str, *, length: int | None = None) -> bytes:
    """Bytes of a base58 string (optionally left-padded to ``length``)."""
    data = base58.decode(text, base58.BITCOIN_ALPHABET)
    if length is not None:
        if len(data) > length:
            raise ValueError(f"base58 value has {len(data)} bytes, more than {length}")
        data = data.rjust(length, b"\x00")
    return data


_BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values: list[int]) -> int:
    generator = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = ((checksum & 0x1FFFFFF) << 5) ^ value
        for bit in range(5):
            if (top >> bit) & 1:
                checksum ^= generator[bit]
    return checksum


def bech32_encode(prefix: str, data: bytes) -> str:
    """BIP-173 bech32 of ``data`` (8-bit bytes regrouped into 5-bit words)."""
    words: list[int] = []
    accumulator = 0
    bits = 0
    for byte in data:
        accumulator = (accumulator << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            words.append((accumulator >> bits) & 31)
    if bits:
        words.append((accumulator << (5 - bits)) & 31)
    expanded = [ord(ch) >> 5 for ch in prefix] + [0] + [ord(ch) & 31 for ch in prefix]
    polymod = _bech32_polymod([*expanded, *words, 0, 0, 0, 0, 0, 0]) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return prefix + "1" + "".join(_BECH32_CHARSET[w] for w in words + checksum)


def _cosmos_native(chain: int, address32: bytes) -> str:
    if address32[0] == 0x01 and chain in (3, 18):
        # Terra native denoms (uluna, uusd, ...) are written as 0x01 then the ASCII denom.
        denom = address32[1:].lstrip(b"\x00")
        if denom and all(0x21 <= b < 0x7F for b in denom):
            return denom.decode("ascii")
    if address32[:12] == bytes(12):
        return bech32_encode(_BECH32_PREFIXES[chain], address32[12:])
    return bech32_encode(_BECH32_PREFIXES[chain], address32)


def native_address(chain_id: int, address32: bytes) -> str:
    """The address as the chain itself writes it.

    EVM chains: EIP-55 ``0x`` form of the last 20 bytes (when the first 12 are zero).
    Solana-like chains: base58 of the 32 bytes. Cosmos chains: bech32 (Terra native denoms
    as their name). Every other chain, and EVM values that do not fit 20 bytes: ``0x`` and the
    64 lower-case hex digits.
    """
    if len(address32) != 32:
        raise ValueError(f"a Wormhole address has 32 bytes, got {len(address32)}")
    if chain_id in EVM_CHAINS and address32[:12] == bytes(12):
        return checksum_address(address32[12:])
    if chain_id in _BASE58_CHAINS:
        return base58_encode(address32)
    if chain_id in _BECH32_PREFIXES:
        return _cosmos_native(chain_id, address32)
    return "0x" + address32.hex()
