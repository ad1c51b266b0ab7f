"""The listener's configuration: typed, validated, errors naming the field; env overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainloom.relayer.config import RelayerConfig, apply_environment
from chainloom.relayer.errors import ConfigError
from chainloom.wormhole import DEVNET_TOKEN_BRIDGE_EMITTERS, TOKEN_BRIDGE_EMITTERS

USDC = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"


def full_mapping() -> dict[str, object]:
    return {
        "redis_url": "redis://redis:6379/3",
        "spy_address": "spy:7073",
        "spy_buffer": 500,
        "spy_overflow": "drop",
        "rest": {"host": "0.0.0.0", "port": 4300, "max_request_bytes": 2048},
        "guardian_sets": "devnet",
        "payload3": True,
        "known_emitters": ["mainnet", {"chain": "ethereum", "address": "0x" + "11" * 20}],
        "target_chains": ["ethereum", 4],
        "tokens": [
            {"chain": 2, "address": USDC, "min_fee": 250},
            {"chain": 1, "address": "ab" * 32},
        ],
    }


def test_a_full_mapping_is_typed_and_normalised():
    config = RelayerConfig.from_mapping(full_mapping())

    assert config.redis_url == "redis://redis:6379/3"
    assert config.spy_address == "spy:7073"
    assert (config.spy_buffer, config.spy_overflow) == (500, "drop")
    assert (config.rest.host, config.rest.port, config.rest.max_request_bytes) == (
        "0.0.0.0",
        4300,
        2048,
    )
    assert config.guardian_sets == "devnet"
    assert config.payload3 is True
    assert config.target_chains == frozenset({2, 4})
    extra = (2, bytes(12) + b"\x11" * 20)
    assert set(config.known_emitters) == set(TOKEN_BRIDGE_EMITTERS.items()) | {extra}
    usdc = bytes(12) + bytes.fromhex(USDC[2:])
    assert config.tokens[0].address == usdc
    assert config.tokens[0].min_fee == 250
    assert config.tokens[1].min_fee == 0

    policy = config.validation_policy()
    assert policy.min_fees == {(2, usdc): 250, (1, b"\xab" * 32): 0}
    assert policy.allow_payload3 is True
    assert policy.target_chains == frozenset({2, 4})
    assert extra in policy.known_emitters


def test_defaults_accept_nothing_until_configured():
    config = RelayerConfig.from_mapping({})

    assert config.spy_address is None
    assert (config.spy_buffer, config.spy_overflow) == (10_000, "block")
    assert config.rest.port == 4201
    assert config.guardian_sets == "mainnet"
    assert config.payload3 is False
    policy = config.validation_policy()
    assert not policy.known_emitters
    assert not policy.target_chains
    assert not policy.min_fees


def test_devnet_emitter_preset():
    config = RelayerConfig.from_mapping({"known_emitters": "devnet"})
    assert set(config.known_emitters) == set(DEVNET_TOKEN_BRIDGE_EMITTERS.items())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "blue"}, "unknown field(s) colour"),
        ({"rest": {"port": 70000}}, "'rest.port' must be an integer in 0..65535"),
        ({"rest": {"port": "80"}}, "'rest.port' must be an integer"),
        ({"rest": {"tls": True}}, "unknown field(s) rest.tls"),
        ({"rest": {"max_request_bytes": 0}}, "'rest.max_request_bytes'"),
        ({"rest": {"header_timeout": 0}}, "'rest.header_timeout' must be a number of seconds"),
        ({"rest": {"body_timeout": "5s"}}, "'rest.body_timeout' must be a number of seconds"),
        ({"spy_address": "no-port"}, "'spy_address' must be host:port"),
        ({"guardian_sets": "/does/not/exist.json"}, "'guardian_sets' must be mainnet, devnet"),
        ({"payload3": "yes"}, "'payload3' must be true or false"),
        ({"spy_overflow": "queue"}, "'spy_overflow' must be block or drop"),
        ({"spy_buffer": 0}, "'spy_buffer' must be an integer in 1..10000000"),
        ({"target_chains": ["atlantis"]}, "target_chains[0] names an unknown chain 'atlantis'"),
        ({"target_chains": [70000]}, "target_chains[0] chain id 70000 is outside 1..65535"),
        ({"target_chains": "ethereum"}, "'target_chains' must be a list"),
        ({"known_emitters": ["testnet"]}, "known_emitters[0] names an unknown emitter preset"),
        ({"known_emitters": [{"chain": 2}]}, "known_emitters[0] must be a preset"),
        (
            {"known_emitters": [{"chain": 2, "address": "zz" * 32}]},
            "known_emitters[0].address is not hex",
        ),
        (
            {"tokens": [{"chain": 2, "address": "0x1234"}]},
            "tokens[0].address must be 20 or 32 bytes",
        ),
        ({"tokens": [{"chain": 2, "address": USDC, "min_fee": -1}]}, "tokens[0].min_fee"),
        ({"tokens": [{"chain": 2, "address": USDC, "fee": 1}]}, "unknown: fee"),
        ({"tokens": [{"address": USDC}]}, "tokens[0] must have chain and address"),
        ({"redis_url": ""}, "'redis_url' must be a non-empty string"),
    ],
)
def test_bad_fields_are_named(change, message):
    data = full_mapping() | change
    with pytest.raises(ConfigError) as caught:
        RelayerConfig.from_mapping(data, source="relayer.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("relayer.yaml")


def test_yaml_and_json_files_load_the_same(tmp_path: Path):
    import yaml

    as_yaml = tmp_path / "relayer.yaml"
    as_yaml.write_text(yaml.safe_dump(full_mapping()))
    as_json = tmp_path / "relayer.json"
    as_json.write_text(json.dumps(full_mapping()))

    assert RelayerConfig.load(as_yaml, {}) == RelayerConfig.load(as_json, {})
    assert RelayerConfig.load(None, {"CHAINLOOM_RELAYER_CONFIG": str(as_yaml)}).rest.port == 4300


def test_file_errors_are_clear(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"cannot read relayer config .*missing.yaml"):
        RelayerConfig.load(tmp_path / "missing.yaml", {})
    broken = tmp_path / "broken.yaml"
    broken.write_text("tokens: [unclosed\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml is not valid YAML/JSON"):
        RelayerConfig.load(broken, {})
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        RelayerConfig.load(listing, {})


def test_environment_overrides_the_file(tmp_path: Path):
    path = tmp_path / "relayer.json"
    path.write_text(json.dumps(full_mapping()))
    environ = {
        "CHAINLOOM_RELAYER_REST_PORT": "5000",
        "CHAINLOOM_RELAYER_SPY_ADDRESS": "none",
        "CHAINLOOM_RELAYER_TARGET_CHAINS": "bsc, 5",
        "CHAINLOOM_RELAYER_PAYLOAD3": "false",
        "CHAINLOOM_RELAYER_TOKENS": json.dumps([{"chain": 2, "address": USDC, "min_fee": 7}]),
        "CHAINLOOM_RELAYER_KNOWN_EMITTERS": "devnet",
    }
    config = RelayerConfig.load(path, environ)

    assert config.rest.port == 5000
    assert config.rest.host == "0.0.0.0"  # untouched fields keep the file's value
    assert config.spy_address is None
    assert config.target_chains == frozenset({4, 5})
    assert config.payload3 is False
    assert [t.min_fee for t in config.tokens] == [7]
    assert set(config.known_emitters) == set(DEVNET_TOKEN_BRIDGE_EMITTERS.items())


def test_environment_alone_is_enough():
    config = RelayerConfig.load(
        None,
        {
            "CHAINLOOM_RELAYER_REDIS_URL": "redis://elsewhere:6380/0",
            "CHAINLOOM_RELAYER_TARGET_CHAINS": "[2, 4]",
        },
    )
    assert config.redis_url == "redis://elsewhere:6380/0"
    assert config.target_chains == frozenset({2, 4})


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CHAINLOOM_RELAYER_REST_PORT", "eighty", "CHAINLOOM_RELAYER_REST_PORT must be an integer"),
        ("CHAINLOOM_RELAYER_PAYLOAD3", "maybe", "CHAINLOOM_RELAYER_PAYLOAD3 must be true or false"),
        ("CHAINLOOM_RELAYER_TOKENS", "[{chain: 2}", "CHAINLOOM_RELAYER_TOKENS is not valid JSON"),
    ],
)
def test_bad_environment_values_are_named(variable, value, message):
    with pytest.raises(ConfigError, match=message):
        apply_environment({}, {variable: value})


def test_environment_values_are_never_evaluated():
    # The reference parsed SUPPORTED_TOKENS with eval(); here code is just a bad value.
    with pytest.raises(ConfigError, match="not valid JSON"):
        apply_environment({}, {"CHAINLOOM_RELAYER_TOKENS": "__import__('os').getcwd()"})


def test_token_wildcards_become_chain_wide_and_catch_all_minimums():
    config = RelayerConfig.from_mapping(
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
    assert RelayerConfig.from_mapping({}).validation_policy().min_fee(2, usdc) is None
    with pytest.raises(ConfigError, match=r'tokens\[0\]: chain "\*" needs address "\*" too'):
        RelayerConfig.from_mapping({"tokens": [{"chain": "*", "address": USDC}]})


def test_an_unquoted_yaml_hex_address_is_explained(tmp_path: Path):
    path = tmp_path / "relayer.yaml"
    path.write_text("tokens: [{chain: 2, address: 0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48}]\n")
    with pytest.raises(ConfigError, match=r"tokens\[0\]\.address must be a quoted hex string"):
        RelayerConfig.load(path, {})


def test_rest_timeouts_default_to_20_seconds_and_come_from_the_file_or_environment():
    assert RelayerConfig.from_mapping({}).rest.header_timeout == 20.0
    assert RelayerConfig.from_mapping({}).rest.body_timeout == 20.0
    config = RelayerConfig.from_mapping({"rest": {"header_timeout": 5, "body_timeout": 2.5}})
    assert (config.rest.header_timeout, config.rest.body_timeout) == (5.0, 2.5)
    environ = {"CHAINLOOM_RELAYER_REST_HEADER_TIMEOUT": "1.5"}
    assert RelayerConfig.load(None, environ).rest.header_timeout == 1.5
