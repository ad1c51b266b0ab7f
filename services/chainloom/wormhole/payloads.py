"""Typed decoders for the payloads chainloom indexes and relays.

Layouts from wormhole-foundation/wormhole: whitepapers 0002 (governance), 0003 (token bridge)
and 0006 (NFT bridge), ``sdk/vaa/payloads.go``, ``ethereum/contracts/bridge/Bridge.sol`` and
``ethereum/contracts/nft/NFTBridge.sol``.

A payload id alone does not say what a payload is: id 1 is a token transfer from a token
bridge and an NFT transfer from an NFT bridge, and one address (``5a58505a...3fde``) is the
Polygon token bridge *and* the BSC NFT bridge. So :func:`decode_payload` classifies by the
(emitter chain, emitter address) pair first, using the known-emitter tables, and only falls
back to the payload's shape for emitters it does not know (devnet fixtures, new chains).

Decoding never raises for payloads it cannot classify or that are malformed: those come back
as :class:`RawPayload` with the reason, so a store can keep every VAA. The strict decoders
(:func:`decode_token_bridge_payload` and friends) raise :class:`PayloadParseError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainloom.wormhole.emitters import (
    GOVERNANCE_CHAIN,
    GOVERNANCE_EMITTER,
    KnownEmitters,
    mainnet_emitters,
)
from chainloom.wormhole.errors import PayloadParseError

if TYPE_CHECKING:
    from chainloom.wormhole.vaa import VAA

__all__ = [
    "AssetMeta",
    "ContractUpgrade",
    "GovernanceMessage",
    "GuardianSetUpgrade",
    "NftTransfer",
    "Payload",
    "RawPayload",
    "RegisterChain",
    "TokenTransfer",
    "TokenTransferWithPayload",
    "decode_governance_payload",
    "decode_nft_bridge_payload",
    "decode_padded_string",
    "decode_payload",
    "decode_token_bridge_payload",
    "denormalize_amount",
    "encode_guardian_set_upgrade",
    "encode_payload",
    "format_amount",
    "normalize_amount",
]

MAX_NFT_URI_LENGTH = 200


@dataclass(frozen=True, slots=True)
class TokenTransfer:
    """Token bridge payload 1: a transfer any relayer may complete (133 bytes)."""

    amount: int
    """Amount in normalised units (at most 8 decimals; see :func:`normalize_amount`)."""
    token_address: bytes
    """The token's address on its origin chain, 32 bytes."""
    token_chain: int
    """Wormhole id of the chain where the token is native."""
    to: bytes
    """Recipient, 32 bytes."""
    to_chain: int
    """Wormhole id of the target chain."""
    fee: int
    """Relayer fee in the same normalised units as ``amount``."""

    payload_id = 1
    kind = "token_transfer"


@dataclass(frozen=True, slots=True)
class TokenTransferWithPayload:
    """Token bridge payload 3: a transfer only ``to`` may redeem, with an extra payload."""

    amount: int
    """Amount in normalised units."""
    token_address: bytes
    """The token's address on its origin chain, 32 bytes."""
    token_chain: int
    """Wormhole id of the chain where the token is native."""
    to: bytes
    """Recipient contract, 32 bytes (the only party that may redeem)."""
    to_chain: int
    """Wormhole id of the target chain."""
    from_address: bytes
    """Sender on the source chain, 32 bytes."""
    payload: bytes
    """The application payload carried with the transfer."""

    payload_id = 3
    kind = "token_transfer_with_payload"


@dataclass(frozen=True, slots=True)
class AssetMeta:
    """Token bridge payload 2: a token attestation (100 bytes)."""

    token_address: bytes
    """The token's address on its origin chain, 32 bytes."""
    token_chain: int
    """Wormhole id of the chain where the token is native."""
    decimals: int
    """The token's native decimals (not capped at 8)."""
    symbol: str
    """Symbol, NUL padding removed (see :func:`decode_padded_string`)."""
    name: str
    """Name, NUL padding removed."""
    symbol_raw: bytes
    """The 32 symbol bytes as sent."""
    name_raw: bytes
    """The 32 name bytes as sent."""

    payload_id = 2
    kind = "asset_meta"


@dataclass(frozen=True, slots=True)
class NftTransfer:
    """NFT bridge payload 1 (166 + URI length bytes)."""

    token_address: bytes
    """Origin address; ``0x0101..01`` for Solana-native NFTs (the mint is in ``token_id``)."""
    token_chain: int
    """Wormhole id of the chain where the NFT is native."""
    symbol: str
    """Collection symbol, NUL padding removed."""
    name: str
    """Collection name, NUL padding removed."""
    token_id: int
    """Token id (u256); for Solana-native NFTs the SPL mint as a big-endian number."""
    uri: str
    """Token URI with NUL padding removed (Solana pads URIs to 200 bytes)."""
    to: bytes
    """Recipient, 32 bytes."""
    to_chain: int
    """Wormhole id of the target chain."""
    symbol_raw: bytes
    """The 32 symbol bytes as sent."""
    name_raw: bytes
    """The 32 name bytes as sent."""
    uri_raw: bytes
    """The URI bytes as sent (including any padding)."""

    payload_id = 1
    kind = "nft_transfer"


@dataclass(frozen=True, slots=True)
class GuardianSetUpgrade:
    """Core governance action 2: replaces the guardian set."""

    target_chain: int
    """Chain the action applies to (0 = every chain)."""
    new_guardian_set_index: int
    """Index of the new set; must be the current index plus one."""
    new_guardian_keys: tuple[bytes, ...]
    """The new guardians' 20-byte addresses, in slot order."""

    module = "Core"
    action = 2
    kind = "guardian_set_upgrade"


@dataclass(frozen=True, slots=True)
class RegisterChain:
    """TokenBridge or NFTBridge governance action 1: trust an emitter on another chain."""

    module: str
    """``TokenBridge`` or ``NFTBridge``."""
    target_chain: int
    """Chain the action applies to (0 = every chain)."""
    emitter_chain: int
    """Chain of the bridge being registered."""
    emitter_address: bytes
    """That bridge's emitter address, 32 bytes."""

    action = 1
    kind = "register_chain"


@dataclass(frozen=True, slots=True)
class ContractUpgrade:
    """Core action 1, or TokenBridge/NFTBridge action 2: point a chain at new contract code."""

    module: str
    """``Core``, ``TokenBridge`` or ``NFTBridge``."""
    target_chain: int
    """The chain whose contract is upgraded."""
    new_contract: bytes
    """Address of the new implementation, 32 bytes."""

    kind = "contract_upgrade"


@dataclass(frozen=True, slots=True)
class GovernanceMessage:
    """Any other governance message: the envelope decoded, the action body kept as bytes."""

    module: str
    """Module name (``Core``, ``TokenBridge``, ``WormholeRelayer``, ...)."""
    action: int
    """Action number within the module."""
    target_chain: int
    """Chain the action applies to (0 = every chain)."""
    body: bytes
    """The action-specific bytes after the envelope."""

    kind = "governance"


@dataclass(frozen=True, slots=True)
class RawPayload:
    """A payload that is not decoded: unknown application, or malformed (see ``error``)."""

    data: bytes
    """The payload bytes."""
    error: str | None = None
    """Why a recognised payload type failed to decode; None when simply not recognised."""

    kind = "raw"

    @property
    def payload_id(self) -> int | None:
        """The first byte, the id most applications put first (None for an empty payload)."""
        return self.data[0] if self.data else None


Payload = (
    TokenTransfer
    | TokenTransferWithPayload
    | AssetMeta
    | NftTransfer
    | GuardianSetUpgrade
    | RegisterChain
    | ContractUpgrade
    | GovernanceMessage
    | RawPayload
)

# ---------------------------------------------------------------------------------------------
# Helpers


def _u256(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 32], "big")


def _u16(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 2], "big")


def decode_padded_string(raw: bytes) -> str:
    """Text of a fixed-width string field (symbol, name, URI).

    Senders pad on the right (EVM, Solana) and some fixtures on the left, so NULs are removed
    on both sides. EVM truncates at 32 bytes and may cut a UTF-8 sequence in half; invalid
    bytes become U+FFFD and a trailing broken sequence is dropped.
    """
    text = raw.strip(b"\x00").decode("utf-8", errors="replace")
    return text.rstrip("\ufffd")


def normalize_amount(amount: int, decimals: int) -> int:
    """The bridge's 8-decimal form of a native amount (``Bridge.sol normalizeAmount``)."""
    if decimals > 8:
        return amount // int(10 ** (decimals - 8))
    return amount


def denormalize_amount(amount: int, decimals: int) -> int:
    """The native amount for a normalised one on a chain where the token has ``decimals``."""
    if decimals > 8:
        return amount * int(10 ** (decimals - 8))
    return amount


def format_amount(amount: int, decimals: int) -> str:
    """A normalised amount in whole tokens with exactly ``min(decimals, 8)`` fraction digits.

    ``40006106`` with 6 decimals is ``40.006106``; an amount below one token keeps its leading
    zero (``0.00000100``), unlike the reference ``event_database``, which wrote ``.00000100``.
    Exact for any uint256 amount (integer arithmetic, no rounding).
    """
    places = min(decimals, 8)
    if places <= 0:
        return str(amount)
    whole, fraction = divmod(amount, 10**places)
    return f"{whole}.{fraction:0{places}d}"


def _need(kind: str, payload: bytes, length: int, *, exact: bool) -> None:
    if len(payload) < length:
        raise PayloadParseError(
            kind, f"truncated at byte {len(payload)} (needs {length} bytes)", offset=len(payload)
        )
    if exact and len(payload) > length:
        raise PayloadParseError(
            kind, f"{len(payload) - length} trailing bytes after byte {length}", offset=length
        )


# ---------------------------------------------------------------------------------------------
# Token bridge


def decode_token_bridge_payload(
    payload: bytes,
) -> TokenTransfer | TokenTransferWithPayload | AssetMeta:
    """Decode a token bridge payload (ids 1, 2, 3); raises :class:`PayloadParseError`."""
    if not payload:
        raise PayloadParseError("token bridge", "empty payload", offset=0)
    payload_id = payload[0]
    if payload_id == 1:
        _need("token transfer", payload, 133, exact=True)
        return TokenTransfer(
            amount=_u256(payload, 1),
            token_address=payload[33:65],
            token_chain=_u16(payload, 65),
            to=payload[67:99],
            to_chain=_u16(payload, 99),
            fee=_u256(payload, 101),
        )
    if payload_id == 3:
        _need("token transfer with payload", payload, 133, exact=False)
        return TokenTransferWithPayload(
            amount=_u256(payload, 1),
            token_address=payload[33:65],
            token_chain=_u16(payload, 65),
            to=payload[67:99],
            to_chain=_u16(payload, 99),
            from_address=payload[101:133],
            payload=payload[133:],
        )
    if payload_id == 2:
        _need("asset meta", payload, 100, exact=True)
        symbol_raw = payload[36:68]
        name_raw = payload[68:100]
        return AssetMeta(
            token_address=payload[1:33],
            token_chain=_u16(payload, 33),
            decimals=payload[35],
            symbol=decode_padded_string(symbol_raw),
            name=decode_padded_string(name_raw),
            symbol_raw=symbol_raw,
            name_raw=name_raw,
        )
    raise PayloadParseError("token bridge", f"unsupported payload type {payload_id}", offset=0)


# ---------------------------------------------------------------------------------------------
# NFT bridge


def decode_nft_bridge_payload(payload: bytes) -> NftTransfer:
    """Decode an NFT bridge transfer (id 1); raises :class:`PayloadParseError`."""
    kind = "nft transfer"
    if not payload:
        raise PayloadParseError(kind, "empty payload", offset=0)
    if payload[0] != 1:
        raise PayloadParseError("nft bridge", f"unsupported payload type {payload[0]}", offset=0)
    _need(kind, payload, 132, exact=False)
    uri_length = payload[131]
    if uri_length > MAX_NFT_URI_LENGTH:
        raise PayloadParseError(
            kind, f"uri length {uri_length} exceeds {MAX_NFT_URI_LENGTH}", offset=131
        )
    _need(kind, payload, 166 + uri_length, exact=True)
    symbol_raw = payload[35:67]
    name_raw = payload[67:99]
    uri_raw = payload[132 : 132 + uri_length]
    after_uri = 132 + uri_length
    return NftTransfer(
        token_address=payload[1:33],
        token_chain=_u16(payload, 33),
        symbol=decode_padded_string(symbol_raw),
        name=decode_padded_string(name_raw),
        token_id=_u256(payload, 99),
        uri=decode_padded_string(uri_raw),
        to=payload[after_uri : after_uri + 32],
        to_chain=_u16(payload, after_uri + 32),
        symbol_raw=symbol_raw,
        name_raw=name_raw,
        uri_raw=uri_raw,
    )


# ---------------------------------------------------------------------------------------------
# Governance

_MODULES = ("Core", "TokenBridge", "NFTBridge", "WormholeRelayer", "GlobalAccountant")


def _module_name(raw: bytes) -> str:
    return raw.lstrip(b"\x00").decode("ascii", errors="replace")


def decode_governance_payload(
    payload: bytes,
) -> GuardianSetUpgrade | RegisterChain | ContractUpgrade | GovernanceMessage:
    """Decode a governance payload (module[32], action u8, chain u16, body).

    Raises :class:`PayloadParseError` when the envelope is short, the module field is not
    left-padded printable ASCII, or a known action has the wrong length.
    """
    _need("governance", payload, 35, exact=False)
    module_raw = payload[:32]
    stripped = module_raw.lstrip(b"\x00")
    if not stripped or not all(0x20 < b < 0x7F for b in stripped):
        raise PayloadParseError("governance", "module is not left-padded ASCII", offset=0)
    module = _module_name(module_raw)
    action = payload[32]
    target_chain = _u16(payload, 33)
    body = payload[35:]
    if module == "Core" and action == 2:
        if len(body) < 5:
            raise PayloadParseError(
                "guardian set upgrade", f"truncated at byte {len(payload)}", offset=len(payload)
            )
        count = body[4]
        _need("guardian set upgrade", payload, 35 + 5 + 20 * count, exact=True)
        keys = tuple(body[5 + 20 * i : 25 + 20 * i] for i in range(count))
        return GuardianSetUpgrade(
            target_chain=target_chain,
            new_guardian_set_index=int.from_bytes(body[:4], "big"),
            new_guardian_keys=keys,
        )
    if module in ("TokenBridge", "NFTBridge") and action == 1:
        _need("register chain", payload, 35 + 34, exact=True)
        return RegisterChain(
            module=module,
            target_chain=target_chain,
            emitter_chain=_u16(body, 0),
            emitter_address=body[2:34],
        )
    if (module == "Core" and action == 1) or (
        module in ("TokenBridge", "NFTBridge") and action == 2
    ):
        _need("contract upgrade", payload, 35 + 32, exact=True)
        return ContractUpgrade(module=module, target_chain=target_chain, new_contract=body[:32])
    return GovernanceMessage(module=module, action=action, target_chain=target_chain, body=body)


# ---------------------------------------------------------------------------------------------
# Classification


def _by_shape(payload: bytes) -> Payload:  # noqa: PLR0911 - one return per layout
    """Best effort for unknown emitters: accept only an exact fit of a known layout."""
    if not payload:
        return RawPayload(payload)
    payload_id = payload[0]
    if (payload_id == 1 and len(payload) == 133) or (payload_id == 2 and len(payload) == 100):
        return decode_token_bridge_payload(payload)
    if payload_id == 1 and len(payload) >= 166 and len(payload) == 166 + payload[131]:
        return decode_nft_bridge_payload(payload)
    if payload_id == 3 and len(payload) >= 133:
        return decode_token_bridge_payload(payload)
    if len(payload) >= 35:
        try:
            message = decode_governance_payload(payload)
        except PayloadParseError:
            return RawPayload(payload)
        if _module_name(payload[:32]) in _MODULES:
            return message
    return RawPayload(payload)


def decode_payload(vaa: VAA, *, emitters: KnownEmitters | None = None) -> Payload:
    """Decode a VAA's payload into a typed dataclass; never raises.

    ``emitters`` are the token and NFT bridge emitters to trust for classification (the
    mainnet tables when omitted; add devnet or test emitters with
    :meth:`KnownEmitters.with_extra`). Governance is recognised by the governance emitter
    (chain 1, address ``00..04``). A known emitter whose payload does not decode gives a
    :class:`RawPayload` with ``error`` set.
    """
    known = emitters if emitters is not None else mainnet_emitters()
    payload = vaa.payload
    key = (vaa.emitter_chain, vaa.emitter_address)
    try:
        if key in known.token_bridge:
            return decode_token_bridge_payload(payload)
        if key in known.nft_bridge:
            return decode_nft_bridge_payload(payload)
        if vaa.emitter_chain == GOVERNANCE_CHAIN and vaa.emitter_address == GOVERNANCE_EMITTER:
            try:
                return decode_governance_payload(payload)
            except PayloadParseError:
                # Fixtures reuse the governance emitter for other payloads; try their shape.
                return _by_shape(payload)
        return _by_shape(payload)
    except PayloadParseError as error:
        return RawPayload(payload, error=str(error))


# ---------------------------------------------------------------------------------------------
# Encoding (for the dev kit, the workload generator and round-trip tests)


def _module_field(module: str) -> bytes:
    return module.encode("ascii").rjust(32, b"\x00")


def encode_payload(payload: Payload) -> bytes:  # noqa: PLR0911 - one return per layout
    """The wire bytes of a typed payload (the inverse of the decoders).

    Strings are written from their ``*_raw`` bytes, so a decoded payload encodes back to the
    exact bytes it came from.
    """
    if isinstance(payload, TokenTransfer):
        return (
            b"\x01"
            + payload.amount.to_bytes(32, "big")
            + payload.token_address
            + payload.token_chain.to_bytes(2, "big")
            + payload.to
            + payload.to_chain.to_bytes(2, "big")
            + payload.fee.to_bytes(32, "big")
        )
    if isinstance(payload, TokenTransferWithPayload):
        return (
            b"\x03"
            + payload.amount.to_bytes(32, "big")
            + payload.token_address
            + payload.token_chain.to_bytes(2, "big")
            + payload.to
            + payload.to_chain.to_bytes(2, "big")
            + payload.from_address
            + payload.payload
        )
    if isinstance(payload, AssetMeta):
        return (
            b"\x02"
            + payload.token_address
            + payload.token_chain.to_bytes(2, "big")
            + bytes((payload.decimals,))
            + payload.symbol_raw
            + payload.name_raw
        )
    if isinstance(payload, NftTransfer):
        return (
            b"\x01"
            + payload.token_address
            + payload.token_chain.to_bytes(2, "big")
            + payload.symbol_raw
            + payload.name_raw
            + payload.token_id.to_bytes(32, "big")
            + bytes((len(payload.uri_raw),))
            + payload.uri_raw
            + payload.to
            + payload.to_chain.to_bytes(2, "big")
        )
    if isinstance(payload, GuardianSetUpgrade):
        return encode_guardian_set_upgrade(
            payload.new_guardian_set_index,
            payload.new_guardian_keys,
            target_chain=payload.target_chain,
        )
    if isinstance(payload, RegisterChain):
        return (
            _module_field(payload.module)
            + bytes((RegisterChain.action,))
            + payload.target_chain.to_bytes(2, "big")
            + payload.emitter_chain.to_bytes(2, "big")
            + payload.emitter_address
        )
    if isinstance(payload, ContractUpgrade):
        action = 1 if payload.module == "Core" else 2
        return (
            _module_field(payload.module)
            + bytes((action,))
            + payload.target_chain.to_bytes(2, "big")
            + payload.new_contract
        )
    if isinstance(payload, GovernanceMessage):
        return (
            _module_field(payload.module)
            + bytes((payload.action,))
            + payload.target_chain.to_bytes(2, "big")
            + payload.body
        )
    return payload.data


def encode_guardian_set_upgrade(
    new_index: int, addresses: tuple[bytes, ...] | list[bytes], *, target_chain: int = 0
) -> bytes:
    """A Core GuardianSetUpgrade governance payload."""
    return (
        _module_field("Core")
        + bytes((GuardianSetUpgrade.action,))
        + target_chain.to_bytes(2, "big")
        + new_index.to_bytes(4, "big")
        + bytes((len(addresses),))
        + b"".join(addresses)
    )
