"""The relayer's settings: typed, validated, errors naming the field; env over the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from chainloom.relayer.config import RelayerSettings
from chainloom.settings import SettingsError, load_settings
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS, TOKEN_BRIDGE_EMITTERS

USDC = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"


def full_mapping() -> dict[str, object]:
    return {
        "redis": {"url": "redis://redis:6379/3"},
        "spy_address": "spy:7073",
        "spy_buffer": 500,
        "spy_overflow": "drop",
        "rest": {"host": "0.0.0.0", "port": 4300, "max_request_bytes": 2048},
        "guardian_sets": {"source": "devnet"},
        "payload3": True,
        "known_emitters": ["mainnet", {"chain": "ethereum", "address": "0x" + "11" * 20}],
        "target_chains": ["ethereum", 4],
        "tokens": [
            {"chain": 2, "address": USDC, "min_fee": 250},
            {"chain": 1, "address": "ab" * 32},
        ],
    }


def write(tmp_path: Path, data: object, name: str = "relayer.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_full_mapping_is_typed_and_normalised():
    config = RelayerSettings.model_validate(full_mapping())

    assert config.redis.url.get_secret_value() == "redis://redis:6379/3"
    assert config.spy_address == "spy:7073"
    assert (config.spy_buffer, config.spy_overflow) == (500, "drop")
    assert (config.rest.host, config.rest.port, config.rest.max_request_bytes) == (
        "0.0.0.0",
        4300,
        2048,
    )
    assert config.guardian_sets.source == "devnet"
    assert config.payload3 is True
    assert config.target_chains == (2, 4)
    extra = (2, bytes(12) + b"\x11" * 20)
    assert set(config.emitter_keys()) == set(TOKEN_BRIDGE_EMITTERS.items()) | {extra}
    usdc = bytes(12) + bytes.fromhex(USDC[2:])
    assert config.tokens[0].address == usdc.hex()
    assert config.tokens[0].min_fee == 250
    assert config.tokens[1].min_fee == 0

    policy = config.validation_policy()
    assert policy.min_fees == {(2, usdc): 250, (1, b"\xab" * 32): 0}
    assert policy.allow_payload3 is True
    assert policy.target_chains == frozenset({2, 4})
    assert extra in policy.known_emitters


def test_defaults_accept_nothing_until_configured():
    config = RelayerSettings()

    assert config.spy_address is None
    assert (config.spy_buffer, config.spy_overflow) == (10_000, "block")
    assert config.rest.port == 4201
    assert config.guardian_sets.source == "mainnet"
    assert config.payload3 is False
    assert config.redis.url.get_secret_value() == "redis://127.0.0.1:6379/0"
    assert config.redis.key_prefix == "chainloom:relay:v1"
    policy = config.validation_policy()
    assert not policy.known_emitters
    assert not policy.target_chains
    assert not policy.min_fees


def test_devnet_emitter_preset():
    config = RelayerSettings.model_validate({"known_emitters": ["devnet"]})
    assert set(config.emitter_keys()) == set(DEVNET_TOKEN_BRIDGE_EMITTERS.items())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "blue"}, "colour: unknown key"),
        ({"rest": {"port": 70000}}, "rest.port: Input should be less than or equal to 65535"),
        ({"rest": {"port": "eighty"}}, "rest.port: Input should be a valid integer"),
        ({"rest": {"tls": True}}, "rest.tls: unknown key"),
        ({"rest": {"max_request_bytes": 0}}, "rest.max_request_bytes: "),
        ({"spy_address": "no-port"}, "spy_address: String should match pattern"),
        ({"guardian_sets": {"source": "/does/not/exist.json"}}, "must be mainnet, devnet"),
        ({"payload3": "maybe"}, "payload3: Input should be a valid boolean"),
        ({"spy_overflow": "queue"}, "spy_overflow: Input should be 'block' or 'drop'"),
        ({"spy_buffer": 0}, "spy_buffer: Input should be greater than or equal to 1"),
        ({"rest": {"header_timeout": 0}}, "rest.header_timeout: Input should be greater than 0"),
        ({"rest": {"body_timeout": "5s"}}, "rest.body_timeout: Input should be a valid number"),
        (
            {"target_chains": ["atlantis"]},
            "target_chains[0]: Value error, unknown chain 'atlantis'",
        ),
        ({"target_chains": [70000]}, "target_chains[0]: Input should be less than or equal to"),
        ({"target_chains": "ethereum"}, "target_chains: Input should be a valid tuple"),
        ({"known_emitters": ["testnet"]}, "known_emitters[0]: Input should be 'mainnet' or"),
        ({"known_emitters": [{"chain": 2}]}, "known_emitters[0].address: Field required"),
        ({"known_emitters": [{"chain": 2, "address": "zz" * 32}]}, "known_emitters[0].address"),
        ({"tokens": [{"chain": 2, "address": "0x1234"}]}, "must be 20 or 32 bytes of hex"),
        ({"tokens": [{"chain": 2, "address": USDC, "min_fee": -1}]}, "tokens[0].min_fee"),
        ({"tokens": [{"chain": 2, "address": USDC, "fee": 1}]}, "tokens[0].fee: unknown key"),
        ({"tokens": [{"address": USDC}]}, "tokens[0].chain: Field required"),
        ({"redis": {"key_prefix": ""}}, "redis.key_prefix: "),
        ({"redis_url": "redis://x:1/0"}, "redis_url: unknown key"),
    ],
)
def test_bad_fields_are_named_with_the_file(tmp_path: Path, change, message):
    path = write(tmp_path, full_mapping() | change)
    with pytest.raises(SettingsError) as caught:
        load_settings(RelayerSettings, config_file=path)
    assert f"{path}: " in str(caught.value)
    assert message in str(caught.value)


def test_yaml_and_json_files_load_the_same(tmp_path: Path, monkeypatch):
    as_yaml = write(tmp_path, full_mapping())
    as_json = tmp_path / "relayer.json"
    as_json.write_text(json.dumps(full_mapping()))

    assert load_settings(RelayerSettings, config_file=as_yaml) == load_settings(
        RelayerSettings, config_file=as_json
    )
    monkeypatch.setenv("CHAINLOOM_RELAYER_CONFIG", str(as_yaml))
    assert load_settings(RelayerSettings).rest.port == 4300


def test_file_errors_are_clear(tmp_path: Path):
    with pytest.raises(SettingsError, match=r"missing\.yaml: cannot read"):
        load_settings(RelayerSettings, config_file=tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("tokens: [unclosed\n")
    with pytest.raises(SettingsError, match=r"broken\.yaml: not valid YAML"):
        load_settings(RelayerSettings, config_file=broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(SettingsError, match="top level must be a mapping"):
        load_settings(RelayerSettings, config_file=listing)


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch):
    path = write(tmp_path, full_mapping())
    for name, value in {
        "CHAINLOOM_REST__PORT": "5000",
        "CHAINLOOM_SPY_ADDRESS": "null",
        "CHAINLOOM_TARGET_CHAINS": '["bsc", 5]',
        "CHAINLOOM_PAYLOAD3": "false",
        "CHAINLOOM_TOKENS": json.dumps([{"chain": 2, "address": USDC, "min_fee": 7}]),
        "CHAINLOOM_KNOWN_EMITTERS": '["devnet"]',
    }.items():
        monkeypatch.setenv(name, value)
    config = load_settings(RelayerSettings, config_file=path)

    assert config.rest.port == 5000
    assert config.rest.host == "0.0.0.0"  # untouched fields keep the file's value
    assert config.spy_address is None
    assert config.target_chains == (4, 5)
    assert config.payload3 is False
    assert [t.min_fee for t in config.tokens] == [7]
    assert set(config.emitter_keys()) == set(DEVNET_TOKEN_BRIDGE_EMITTERS.items())


def test_environment_values_are_never_evaluated(monkeypatch):
    # The reference parsed SUPPORTED_TOKENS with eval(); here code is just a bad value.
    monkeypatch.setenv("CHAINLOOM_TOKENS", "__import__('os').getcwd()")
    with pytest.raises(SettingsError, match="CHAINLOOM_TOKENS: not valid JSON"):
        load_settings(RelayerSettings)


def test_token_wildcards_become_chain_wide_and_catch_all_minimums():
    config = RelayerSettings.model_validate(
        {
            "tokens": [
                {"chain": 2, "address": USDC, "min_fee": 5},
                {"chain": "ethereum", "address": "*", "min_fee": 50},
                {"chain": "*", "address": "*", "min_fee": 500},
            ]
        }
    )
    policy = config.validation_policy()
    usdc = bytes(12) + bytes.fromhex(USDC[2:])
    assert policy.min_fee(2, usdc) == 5
    assert policy.min_fee(2, b"\x01" * 32) == 50
    assert policy.min_fee(6, b"\x01" * 32) == 500
    assert RelayerSettings().validation_policy().min_fee(2, usdc) is None
    with pytest.raises(ValueError, match=r'chain "\*" needs address "\*" too'):
        RelayerSettings.model_validate({"tokens": [{"chain": "*", "address": USDC}]})


def test_an_unquoted_yaml_hex_address_is_explained(tmp_path: Path):
    path = tmp_path / "relayer.yaml"
    path.write_text("tokens: [{chain: 2, address: 0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48}]\n")
    with pytest.raises(SettingsError, match=r"tokens\[0\]\.address: .*must be a quoted hex string"):
        load_settings(RelayerSettings, config_file=path)


def test_rest_timeouts_default_to_20_seconds_and_come_from_the_file_or_environment(monkeypatch):
    assert RelayerSettings().rest.header_timeout == 20.0
    assert RelayerSettings().rest.body_timeout == 20.0
    config = RelayerSettings.model_validate({"rest": {"header_timeout": 5, "body_timeout": 2.5}})
    assert (config.rest.header_timeout, config.rest.body_timeout) == (5.0, 2.5)
    monkeypatch.setenv("CHAINLOOM_REST__HEADER_TIMEOUT", "1.5")
    assert load_settings(RelayerSettings).rest.header_timeout == 1.5
