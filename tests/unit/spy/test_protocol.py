"""The spy's emitter filter as the client sends it and the harness's server reads it."""

from __future__ import annotations

import pytest

from chainloom.spy.errors import SpyError
from chainloom.spy.protocol import METHOD_PATH, EmitterKey

ADDRESS = bytes.fromhex("3ee18b2214aff97000d974cf647e7c347e8fa585").rjust(32, b"\x00")


def test_the_method_path_is_the_real_spys():
    assert METHOD_PATH == "/spy.v1.SpyRPCService/SubscribeSignedVAA"


@pytest.mark.parametrize(
    "text",
    [
        "0x3ee18b2214aff97000d974cf647e7c347e8fa585",
        "3EE18B2214AFF97000D974CF647E7C347E8FA585",
        " 0x" + ADDRESS.hex() + " ",
    ],
)
def test_addresses_are_parsed_like_the_real_spy(text):
    assert EmitterKey.parse(2, text) == EmitterKey(2, ADDRESS)


def test_cli_form_and_proto_round_trip():
    key = EmitterKey.from_text("2:0x3ee18b2214aff97000d974cf647e7c347e8fa585")
    assert key == EmitterKey(2, ADDRESS)
    entry = key.to_proto()
    assert entry.WhichOneof("filter") == "emitter_filter"
    assert (
        EmitterKey.parse(int(entry.emitter_filter.chain_id), entry.emitter_filter.emitter_address)
        == key
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: EmitterKey(70000, ADDRESS), "outside 0..65535"),
        (lambda: EmitterKey(2, b"short"), "must be 32 bytes"),
        (lambda: EmitterKey.parse(2, "ab" * 33), "longer than 32 bytes"),
        (lambda: EmitterKey.parse(2, "0xnothex"), "is not hex"),
        (lambda: EmitterKey.from_text("ethereum:0xab"), "is not <chain id>:<hex address>"),
        (lambda: EmitterKey.from_text("0xab"), "is not <chain id>:<hex address>"),
    ],
)
def test_bad_filters_are_refused_with_the_reason(build, message):
    with pytest.raises(SpyError, match=message):
        build()
