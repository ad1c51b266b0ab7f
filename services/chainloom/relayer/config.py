"""The listener's configuration: a typed model read from a YAML/JSON file or the environment.

Why typed: the reference relayer parsed ``SUPPORTED_TOKENS`` with ``eval`` and failed late (or
never) on a typo. Here every field is checked when the file is loaded, and an error names the
field and what was expected, so a bad deployment stops at start-up with one clear line.

A file (``--config`` or ``$CHAINLOOM_RELAYER_CONFIG``) is YAML (JSON is YAML too)::

    redis_url: redis://127.0.0.1:6379/0
    spy_address: 127.0.0.1:7073          # null: no spy, REST only
    spy_buffer: 10000                    # VAAs held between the stream and the intake
    spy_overflow: block                  # when full: block (push back) or drop (and count)
    rest: {host: 0.0.0.0, port: 4201, max_request_bytes: 65536,
           header_timeout: 20, body_timeout: 20}   # seconds; see chainloom.relayer.rest
    guardian_sets: mainnet               # mainnet | devnet | path of a guardian-set file
    payload3: false                      # also relay payload-3 transfers (with a payload)
    known_emitters: [mainnet, {chain: 2, address: "0x..."}]
    target_chains: [ethereum, 4]
    tokens:
      - {chain: 1, address: "069b8857feab8184fb687f634618c035dac439dc1aeb3b5598a0f00000000001",
         min_fee: 0}
      - {chain: ethereum, address: "*", min_fee: 1000}   # any asset native to Ethereum
      - {chain: "*", address: "*", min_fee: 5000}        # anything else (devnets, load tests)

Environment variables override single fields (values are JSON or plain text, never code):
``CHAINLOOM_RELAYER_REDIS_URL``, ``..._SPY_ADDRESS``, ``..._SPY_BUFFER``,
``..._SPY_OVERFLOW``, ``..._REST_HOST``, ``..._REST_PORT``,
``..._MAX_REQUEST_BYTES``, ``..._REST_HEADER_TIMEOUT``, ``..._REST_BODY_TIMEOUT``,
``..._GUARDIAN_SETS``, ``..._PAYLOAD3``, ``..._KNOWN_EMITTERS``,
``..._TARGET_CHAINS``, ``..._TOKENS``, ``..._KEY_PREFIX``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainloom.relayer.errors import ConfigError

if TYPE_CHECKING:
    from chainloom.relayer.validation import ValidationPolicy
    from chainloom.wormhole import GuardianSets

ENV_PREFIX = "CHAINLOOM_RELAYER_"
CONFIG_ENV = "CHAINLOOM_RELAYER_CONFIG"
DEFAULT_KEY_PREFIX = "chainloom:relay:v1"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
EMITTER_PRESETS = ("mainnet", "devnet")
GUARDIAN_SET_PRESETS = ("mainnet", "devnet")


@dataclass(frozen=True, slots=True)
class TokenRule:
    """One origin asset (or a wildcard of them) the relayer accepts, and the fee it must carry."""

    chain: int | None
    """Chain id where the token is native (the transfer's ``token_chain``); None: ``"*"``."""
    address: bytes | None
    """The token's 32-byte origin address (EVM addresses left-padded); None: ``"*"``."""
    min_fee: int
    """Smallest acceptable relayer fee, in the transfer's normalized units (8 decimals max)."""


@dataclass(frozen=True, slots=True)
class RestConfig:
    """The REST listener."""

    host: str = "127.0.0.1"
    """Interface to bind."""
    port: int = 4201
    """TCP port (the reference's samples used 4201)."""
    max_request_bytes: int = 64 * 1024
    """Largest request body accepted; larger ones get 413."""
    header_timeout: float = 20.0
    """Seconds a client has to send a complete request head (from connecting, or from its
    previous answer on a kept-alive connection); then the connection is closed."""
    body_timeout: float = 20.0
    """Seconds a client has to send a whole request body once its head arrived; then 408."""


_DEFAULT_REST = RestConfig()


@dataclass(frozen=True, slots=True)
class RelayerConfig:
    """Everything ``chainloom relayer listen`` needs, validated."""

    redis_url: str = DEFAULT_REDIS_URL
    """Redis holding the relay tables."""
    key_prefix: str = DEFAULT_KEY_PREFIX
    """Versioned key prefix of the tables."""
    spy_address: str | None = None
    """``host:port`` of a guardian spy (or ``chainloom spy serve``); None: REST only."""
    spy_buffer: int = 10_000
    """VAAs the spy client holds between the stream and the intake."""
    spy_overflow: str = "block"
    """When that buffer is full: ``block`` (push back on the stream) or ``drop`` (and count)."""
    rest: RestConfig = field(default_factory=RestConfig)
    """The REST listener."""
    guardian_sets: str = "mainnet"
    """``mainnet``, ``devnet`` or the path of a guardian-set file."""
    payload3: bool = False
    """Also relay token-bridge payload 3 (transfer with payload)."""
    known_emitters: tuple[tuple[int, bytes], ...] = ()
    """Token-bridge emitters ``(chain, 32-byte address)`` whose transfers are relayed."""
    target_chains: frozenset[int] = frozenset()
    """Chains this relayer redeems on."""
    tokens: tuple[TokenRule, ...] = ()
    """Origin assets accepted, with their minimum fee."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "config") -> RelayerConfig:
        """Validate a parsed file (or a dict); ConfigError names the first bad field."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the top level must be a mapping")
        known = {
            "redis_url", "key_prefix", "spy_address", "spy_buffer", "spy_overflow", "rest",
            "guardian_sets", "payload3", "known_emitters", "target_chains", "tokens",
        }  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {', '.join(unknown)}")
        rest_data = data.get("rest") or {}
        if not isinstance(rest_data, Mapping):
            raise ConfigError(f"{source}: field 'rest' must be a mapping")
        rest_fields = {"host", "port", "max_request_bytes", "header_timeout", "body_timeout"}
        unknown = sorted(set(rest_data) - rest_fields)
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) rest.{', rest.'.join(unknown)}")
        rest = RestConfig(
            host=_string(rest_data, "host", _DEFAULT_REST.host, source, "rest."),
            port=_integer(
                rest_data, "port", default=_DEFAULT_REST.port, source=source, at="rest.", low=0,
                high=65535,
            ),
            max_request_bytes=_integer(
                rest_data, "max_request_bytes", default=_DEFAULT_REST.max_request_bytes,
                source=source, at="rest.", low=1, high=64 * 1024 * 1024,
            ),
            header_timeout=_seconds(rest_data, "header_timeout", _DEFAULT_REST.header_timeout,
                                    source, "rest."),
            body_timeout=_seconds(rest_data, "body_timeout", _DEFAULT_REST.body_timeout,
                                  source, "rest."),
        )  # fmt: skip
        spy_address = data.get("spy_address")
        if spy_address is not None and (not isinstance(spy_address, str) or ":" not in spy_address):
            raise ConfigError(f"{source}: field 'spy_address' must be host:port or null")
        guardian_sets = _string(data, "guardian_sets", "mainnet", source)
        if guardian_sets not in GUARDIAN_SET_PRESETS and not Path(guardian_sets).is_file():
            raise ConfigError(
                f"{source}: field 'guardian_sets' must be mainnet, devnet or an existing file, "
                f"got {guardian_sets!r}"
            )
        spy_overflow = data.get("spy_overflow", "block")
        if spy_overflow not in ("block", "drop"):
            raise ConfigError(f"{source}: field 'spy_overflow' must be block or drop")
        payload3 = data.get("payload3", False)
        if not isinstance(payload3, bool):
            raise ConfigError(f"{source}: field 'payload3' must be true or false")
        return cls(
            redis_url=_string(data, "redis_url", DEFAULT_REDIS_URL, source),
            key_prefix=_string(data, "key_prefix", DEFAULT_KEY_PREFIX, source),
            spy_address=spy_address,
            spy_buffer=_integer(
                data, "spy_buffer", default=10_000, source=source, at="", low=1, high=10_000_000
            ),
            spy_overflow=spy_overflow,
            rest=rest,
            guardian_sets=guardian_sets,
            payload3=payload3,
            known_emitters=_emitters(data.get("known_emitters", []), source),
            target_chains=frozenset(
                _chain(value, f"target_chains[{i}]", source)
                for i, value in enumerate(_list(data, "target_chains", source))
            ),
            tokens=tuple(
                _token(value, i, source) for i, value in enumerate(_list(data, "tokens", source))
            ),
        )

    @classmethod
    def load(
        cls, path: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> RelayerConfig:
        """Read a file (``path`` or ``$CHAINLOOM_RELAYER_CONFIG``), then environment overrides."""
        env = os.environ if environ is None else environ
        data: dict[str, Any] = {}
        source = "environment"
        chosen = path or env.get(CONFIG_ENV)
        if chosen:
            data = dict(read_config_file(Path(chosen)))
            source = str(chosen)
        data = apply_environment(data, env)
        return cls.from_mapping(data, source=source)

    def validation_policy(self) -> ValidationPolicy:
        """The pure validation rules' view of this configuration."""
        from chainloom.relayer.validation import ValidationPolicy

        return ValidationPolicy(
            known_emitters=frozenset(self.known_emitters),
            target_chains=self.target_chains,
            min_fees={
                (t.chain, t.address): t.min_fee
                for t in self.tokens
                if t.chain is not None and t.address is not None
            },
            chain_min_fees={
                t.chain: t.min_fee for t in self.tokens if t.chain is not None and t.address is None
            },
            any_asset_min_fee=next((t.min_fee for t in self.tokens if t.chain is None), None),
            allow_payload3=self.payload3,
        )

    def load_guardian_sets(self) -> GuardianSets:
        """The guardian-set registry named by ``guardian_sets``."""
        from chainloom.wormhole import GuardianSets
        from chainloom.wormhole.errors import WormholeError

        if self.guardian_sets == "mainnet":
            return GuardianSets.mainnet()
        if self.guardian_sets == "devnet":
            return GuardianSets.devnet()
        try:
            return GuardianSets.from_file(self.guardian_sets)
        except WormholeError as error:
            raise ConfigError(f"guardian_sets: {error}") from None


def read_config_file(path: Path) -> Mapping[str, Any]:
    """Parse a YAML or JSON configuration file (safe loader: data only, never code)."""
    import yaml

    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"cannot read relayer config {path}: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML/JSON: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


_ENV_FIELDS = {
    "REDIS_URL": ("redis_url", "text"),
    "KEY_PREFIX": ("key_prefix", "text"),
    "SPY_ADDRESS": ("spy_address", "text"),
    "SPY_BUFFER": ("spy_buffer", "int"),
    "SPY_OVERFLOW": ("spy_overflow", "text"),
    "GUARDIAN_SETS": ("guardian_sets", "text"),
    "PAYLOAD3": ("payload3", "bool"),
    "KNOWN_EMITTERS": ("known_emitters", "list"),
    "TARGET_CHAINS": ("target_chains", "list"),
    "TOKENS": ("tokens", "json"),
    "REST_HOST": ("rest.host", "text"),
    "REST_PORT": ("rest.port", "int"),
    "MAX_REQUEST_BYTES": ("rest.max_request_bytes", "int"),
    "REST_HEADER_TIMEOUT": ("rest.header_timeout", "json"),
    "REST_BODY_TIMEOUT": ("rest.body_timeout", "json"),
}


def apply_environment(data: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """``data`` with every ``CHAINLOOM_RELAYER_*`` variable applied on top."""
    merged: dict[str, Any] = dict(data)
    merged["rest"] = dict(merged.get("rest") or {})
    for suffix, (name, kind) in _ENV_FIELDS.items():
        variable = ENV_PREFIX + suffix
        if variable not in environ:
            continue
        raw = environ[variable].strip()
        value: Any
        if kind == "text":
            value = None if raw.lower() in ("", "none", "null") else raw
        elif kind == "bool":
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ConfigError(f"{variable} must be true or false, got {raw!r}")
            value = raw.lower() in ("1", "true", "yes")
        elif kind == "int":
            if not raw.isdigit():
                raise ConfigError(f"{variable} must be an integer, got {raw!r}")
            value = int(raw)
        elif kind == "list" and not raw.startswith("["):
            value = [_int_if_digits(item.strip()) for item in raw.split(",") if item.strip()]
        else:
            try:
                value = json.loads(raw)
            except ValueError as error:
                raise ConfigError(f"{variable} is not valid JSON: {error}") from None
        if name.startswith("rest."):
            merged["rest"][name.removeprefix("rest.")] = value
        else:
            merged[name] = value
    return merged


def _int_if_digits(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def _string(data: Mapping[str, Any], name: str, default: str, source: str, at: str = "") -> str:
    value = data.get(name, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{source}: field '{at}{name}' must be a non-empty string")
    return value


def _integer(
    data: Mapping[str, Any], name: str, *, default: int, source: str, at: str, low: int, high: int
) -> int:
    value = data.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(
            f"{source}: field '{at}{name}' must be an integer in {low}..{high}, got {value!r}"
        )
    return value


def _seconds(data: Mapping[str, Any], name: str, default: float, source: str, at: str) -> float:
    value = data.get(name, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 3600:
        raise ConfigError(
            f"{source}: field '{at}{name}' must be a number of seconds in (0, 3600], got {value!r}"
        )
    return float(value)


def _list(data: Mapping[str, Any], name: str, source: str) -> list[Any]:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise ConfigError(f"{source}: field '{name}' must be a list")
    return value


def _chain(value: Any, where: str, source: str) -> int:
    from chainloom.wormhole import chain_id
    from chainloom.wormhole.errors import WormholeError

    if isinstance(value, bool):
        raise ConfigError(f"{source}: {where} must be a chain id or name, got {value!r}")
    if isinstance(value, int):
        if not 0 < value <= 0xFFFF:
            raise ConfigError(f"{source}: {where} chain id {value} is outside 1..65535")
        return value
    if isinstance(value, str):
        try:
            return chain_id(value)
        except WormholeError:
            raise ConfigError(f"{source}: {where} names an unknown chain {value!r}") from None
    raise ConfigError(f"{source}: {where} must be a chain id or name, got {value!r}")


def _address32(value: Any, where: str, source: str) -> bytes:
    if isinstance(value, int) and not isinstance(value, bool):
        raise ConfigError(
            f"{source}: {where} must be a quoted hex string (YAML reads an unquoted 0x... as a "
            "number)"
        )
    if not isinstance(value, str):
        raise ConfigError(f"{source}: {where} must be a hex string")
    text = value.strip().lower().removeprefix("0x")
    if len(text) not in (40, 64):
        raise ConfigError(
            f"{source}: {where} must be 20 or 32 bytes of hex, got {len(text)} hex digits"
        )
    try:
        return bytes.fromhex(text.rjust(64, "0"))
    except ValueError:
        raise ConfigError(f"{source}: {where} is not hex: {value!r}") from None


def _emitters(value: Any, source: str) -> tuple[tuple[int, bytes], ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{source}: field 'known_emitters' must be a list")
    found: dict[tuple[int, bytes], None] = {}
    for i, item in enumerate(value):
        where = f"known_emitters[{i}]"
        if isinstance(item, str):
            for key in _emitter_preset(item, where, source):
                found[key] = None
            continue
        if not isinstance(item, Mapping) or set(item) != {"chain", "address"}:
            raise ConfigError(
                f"{source}: {where} must be a preset ({', '.join(EMITTER_PRESETS)}) "
                "or {chain, address}"
            )
        key = (
            _chain(item["chain"], where + ".chain", source),
            _address32(item["address"], where + ".address", source),
        )
        found[key] = None
    return tuple(found)


def _emitter_preset(name: str, where: str, source: str) -> list[tuple[int, bytes]]:
    from chainloom import wormhole

    if name == "mainnet":
        return list(wormhole.TOKEN_BRIDGE_EMITTERS.items())
    if name == "devnet":
        return list(wormhole.DEVNET_TOKEN_BRIDGE_EMITTERS.items())
    raise ConfigError(
        f"{source}: {where} names an unknown emitter preset {name!r} "
        f"(known: {', '.join(EMITTER_PRESETS)})"
    )


def _token(value: Any, index: int, source: str) -> TokenRule:
    where = f"tokens[{index}]"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: {where} must be a mapping {{chain, address, min_fee}}")
    unknown = sorted(set(value) - {"chain", "address", "min_fee"})
    if unknown or "chain" not in value or "address" not in value:
        raise ConfigError(
            f"{source}: {where} must have chain and address (and optionally min_fee)"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )
    min_fee = value.get("min_fee", 0)
    if not isinstance(min_fee, int) or isinstance(min_fee, bool) or min_fee < 0:
        raise ConfigError(f"{source}: {where}.min_fee must be a non-negative integer")
    chain = None if value["chain"] == "*" else _chain(value["chain"], where + ".chain", source)
    address = (
        None
        if value["address"] == "*"
        else _address32(value["address"], where + ".address", source)
    )
    if chain is None and address is not None:
        raise ConfigError(f'{source}: {where}: chain "*" needs address "*" too')
    return TokenRule(chain=chain, address=address, min_fee=min_fee)
