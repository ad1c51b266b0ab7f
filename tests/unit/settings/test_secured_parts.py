"""Credentials, TLS and replication settings of the stores (pure validation)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chainloom.ledger.cassandra_schema import replication_map, schema_statements
from chainloom.relayer.config import RelayerSettings
from chainloom.settings import CassandraSettings, RedisSettings, SettingsError, load_settings
from chainloom.settings.parts import CassandraTlsSettings, TlsSettings


def test_cassandra_defaults_are_plain_and_simple() -> None:
    settings = CassandraSettings()
    assert settings.username is None
    assert settings.password_file is None
    assert not settings.tls.enabled
    assert settings.tls.check_hostname
    assert settings.replication() == {"class": "SimpleStrategy", "replication_factor": "3"}


def test_network_topology_replication_per_datacenter() -> None:
    settings = CassandraSettings(
        replication_strategy="NetworkTopologyStrategy",
        datacenter_replication={"eu-west": 3, "us_east": 2},
        local_datacenter="eu-west",
    )
    assert settings.replication() == {
        "class": "NetworkTopologyStrategy",
        "eu-west": "3",
        "us_east": "2",
    }
    (keyspace, *_) = schema_statements("ks", settings.replication())
    assert "{'class': 'NetworkTopologyStrategy', 'eu-west': '3', 'us_east': '2'}" in keyspace


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"username": "chainloom"}, "username and password_file go together"),
        ({"password_file": "/p"}, "username and password_file go together"),
        ({"replication_strategy": "NetworkTopologyStrategy"}, "needs datacenter_replication"),
        ({"datacenter_replication": {"dc1": 3}}, "is for NetworkTopologyStrategy"),
        (
            {
                "replication_strategy": "NetworkTopologyStrategy",
                "datacenter_replication": {"dc1": 0},
            },
            "0 replicas",
        ),
        (
            {
                "replication_strategy": "NetworkTopologyStrategy",
                "datacenter_replication": {"dc'1": 3},
            },
            "is not a datacenter name",
        ),
        ({"tls": {"ca_file": "/ca.pem"}}, "tls.enabled is false"),
        ({"tls": {"enabled": True, "key_file": "/k.pem"}}, "key_file is given without cert_file"),
    ],
)
def test_cassandra_refuses_inconsistent_settings(values: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        CassandraSettings.model_validate(values)


def test_replication_map_is_cql() -> None:
    assert replication_map({"class": "SimpleStrategy", "replication_factor": "1"}) == (
        "{'class': 'SimpleStrategy', 'replication_factor': '1'}"
    )


def test_redis_tls_and_credentials() -> None:
    settings = RedisSettings.model_validate(
        {
            "url": "rediss://127.0.0.1:6380/0",
            "username": "relayer",
            "password_file": "/run/secrets/redis",
            "tls": {"ca_file": "/ca.pem"},
        }
    )
    assert settings.uses_tls
    assert settings.tls == TlsSettings(ca_file="/ca.pem")
    assert not RedisSettings().uses_tls


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"url": "redis://u:pw@h:1/0", "password_file": "/p"}, "both in url and as password_file"),
        ({"url": "redis://u@h:1/0", "username": "v"}, "both in url and as username"),
    ],
)
def test_redis_refuses_two_sources(values: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        RedisSettings.model_validate(values)


def test_a_refused_section_is_reported_without_its_password() -> None:
    flags = {"redis.url": "redis://u:s3cret@h:1/0", "redis.password_file": "/p"}
    with pytest.raises(SettingsError, match="both in url and as password_file") as caught:
        load_settings(RelayerSettings, flags=flags)
    assert "s3cret" not in str(caught.value)


def test_a_password_never_appears_in_a_dump() -> None:
    settings = RedisSettings(url="rediss://u:s3cret@h:1/0")  # type: ignore[arg-type]
    assert "s3cret" not in str(settings.model_dump(mode="json"))
    assert CassandraTlsSettings().enabled is False
