"""The REST endpoint over real HTTP, against the real Redis: every status code tells the truth."""

from __future__ import annotations

import asyncio
import base64
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from chainloom.relayer.config import RelayerSettings, RestSettings
from chainloom.relayer.intake import Intake
from chainloom.relayer.listener import Listener
from chainloom.relayer.tables import RelayTables
from chainloom.relayer.validation import Validator
from chainloom.wormhole import parse_vaa
from tests.ingest_support import (
    GUARDIANS,
    MIN_FEE,
    TARGET_CHAIN,
    dev_policy,
    flip_signature_byte,
    signed_transfer,
)
from tests.integration.relayer.relay_support import private_redis

LIMIT = 4096


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 60))


@asynccontextmanager
async def serving(intake: Intake) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    listener = Listener(
        intake, rest=RestSettings(host="127.0.0.1", port=0, max_request_bytes=LIMIT)
    )
    await listener.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield session, f"http://127.0.0.1:{listener.port}"
    finally:
        await listener.stop()


async def post_vaa(session: aiohttp.ClientSession, base: str, text: str) -> tuple[int, Any]:
    async with session.post(f"{base}/v1/relay", json={"vaa": text}) as response:
        return response.status, await response.json()


@pytest.fixture
def intake(redis_url: str):
    client = redis.Redis.from_url(redis_url)
    yield Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client))
    client.close()


def test_queued_then_known_then_rejected(intake):
    vaa = signed_transfer(1)

    async def scenario() -> None:
        async with serving(intake) as (session, base):
            status, body = await post_vaa(session, base, base64.b64encode(vaa.to_bytes()).decode())
            assert status == 202
            assert body == {
                "status": "queued",
                "digest": vaa.digest_hex,
                "message_id": vaa.message_id,
                "table": "incoming",
            }

            copy = GUARDIANS.resign(vaa, signers=list(range(3, 19)))
            status, body = await post_vaa(session, base, "0x" + copy.to_bytes().hex())
            assert status == 200
            assert body["status"] == "known"
            assert body["table"] == "incoming"
            assert body["rule"] == "not_queued"
            assert body["digest"] == vaa.digest_hex

            wrong_target = signed_transfer(2, to_chain=5).to_bytes().hex()
            status, body = await post_vaa(session, base, wrong_target)
            assert status == 422
            assert body["status"] == "rejected"
            assert body["rule"] == "target_chain"
            assert body["reason"] == "target chain 5 (polygon) is not supported"

            cheap = signed_transfer(3, fee=MIN_FEE - 1).to_bytes().hex()
            status, body = await post_vaa(session, base, cheap)
            assert (status, body["rule"]) == (422, "fee")

            tampered = flip_signature_byte(signed_transfer(4).to_bytes()).hex()
            status, body = await post_vaa(session, base, tampered)
            assert status == 422
            assert body["rule"] == "signatures"
            assert body["reason"].startswith("signatures not verified: ")

    run(scenario)
    assert RelayTables(intake.tables.client).locate(vaa.digest_hex) is not None


def test_malformed_requests_get_400(intake):
    async def scenario() -> None:
        async with serving(intake) as (session, base):
            async with session.post(f"{base}/v1/relay", data=b"{not json") as response:
                assert response.status == 400
                assert (await response.json())["reason"].startswith("body is not JSON")
            async with session.post(f"{base}/v1/relay", json={"bytes": "00"}) as response:
                assert response.status == 400
                assert "must be a JSON object" in (await response.json())["reason"]
            async with session.post(f"{base}/v1/relay", json=["vaa"]) as response:
                assert response.status == 400
            status, body = await post_vaa(session, base, "not-base64-or-hex!")
            assert status == 400
            assert body["reason"].startswith("vaa is not hex or base64")
            status, body = await post_vaa(session, base, "0x0100")
            assert status == 400
            assert body["rule"] == "parses"
            assert body["reason"].startswith("not a signed VAA: truncated")

    run(scenario)


def test_requests_over_the_limit_get_413(intake):
    async def scenario() -> None:
        async with serving(intake) as (session, base):
            big = signed_transfer(1, payload_id=3, extra=bytes(3000)).to_bytes().hex()
            status, body = await post_vaa(session, base, big)
            assert status == 413
            assert body == {"status": "too_large", "reason": f"request body exceeds {LIMIT} bytes"}
            # Without a Content-Length (chunked), the limit still holds.

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(10):
                    yield b" " * 1000

            async with session.post(f"{base}/v1/relay", data=chunks()) as response:
                assert response.status == 413
            path = base64.urlsafe_b64encode(bytes(LIMIT)).decode()
            async with session.get(f"{base}/relayvaa/{path}") as response:
                assert response.status == 413

    run(scenario)


def test_the_reference_get_route_tells_the_truth_too(intake):
    # Pick a VAA whose standard base64 holds '/' or '+', the characters that make paths fragile.
    vaa = next(
        v
        for v in (signed_transfer(i) for i in range(50))
        if {"/", "+"} & set(base64.b64encode(v.to_bytes()).decode())
    )
    text = base64.b64encode(vaa.to_bytes()).decode()

    async def scenario() -> None:
        async with serving(intake) as (session, base):
            quoted = urllib.parse.quote(text, safe="")
            async with session.get(f"{base}/relayvaa/{quoted}") as response:
                assert response.status == 202
                assert (await response.json())["digest"] == vaa.digest_hex
            url = f"{base}/relayvaa/{base64.urlsafe_b64encode(vaa.to_bytes()).decode()}"
            async with session.get(url) as response:
                assert response.status == 200
                assert (await response.json())["table"] == "incoming"
            rejected = base64.b64encode(signed_transfer(99, to_chain=6).to_bytes()).decode()
            async with session.get(f"{base}/relayvaa/{urllib.parse.quote(rejected, safe='')}") as r:
                assert r.status == 422
            async with session.get(f"{base}/") as response:
                assert "GET /relayvaa/<vaaInBase64>" in await response.json()

    run(scenario)


def test_health_readiness_and_stats(intake):
    async def scenario() -> None:
        async with serving(intake) as (session, base):
            async with session.get(f"{base}/healthz") as response:
                assert (response.status, await response.json()) == (200, {"status": "ok"})
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200
                ready = await response.json()
            assert ready["redis"] == "ok"
            assert ready["redis_persistence"]["aof"] in ("on", "off")
            await post_vaa(session, base, signed_transfer(1).to_bytes().hex())
            await post_vaa(session, base, signed_transfer(1).to_bytes().hex())
            await post_vaa(session, base, signed_transfer(2, to_chain=5).to_bytes().hex())
            async with session.get(f"{base}/v1/stats") as response:
                stats = await response.json()
            assert stats["intake"]["by_status"] == {"queued": 1, "known": 1, "rejected": 1}
            assert stats["rules"]["target_chain"] == {"passed": 2, "rejected": 1}
            async with session.get(f"{base}/metrics") as response:
                assert response.status == 200
                assert response.content_type == "text/plain"
                exposition = await response.text()
            samples = {
                (sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(exposition)
                for sample in family.samples
            }
            outcomes = "chainloom_listener_outcomes_total"
            assert samples[(outcomes, (("status", "queued"),))] == 1
            assert samples[(outcomes, (("status", "known"),))] == 1
            assert samples[("chainloom_listener_source_total", (("source", "rest"),))] == 3
            rule = (("result", "rejected"), ("rule", "target_chain"))
            assert samples[("chainloom_listener_rule_total", rule)] == 1
            # The queue depth comes from Redis: the one queued transfer waits in Incoming.
            depth = (("chain", str(TARGET_CHAIN)), ("table", "incoming"))
            assert samples[("chainloom_relayer_queue_depth", depth)] == 1
            assert "# TYPE chainloom_listener_rule_total counter" in exposition

    run(scenario)


@pytest.mark.parametrize(
    ("appendonly", "appendfsync", "expected"),
    [
        (True, "always", {"aof": "on", "appendfsync": "always"}),
        (True, "everysec", {"aof": "on", "appendfsync": "everysec"}),
        (False, "everysec", {"aof": "off", "appendfsync": "everysec"}),
    ],
)
def test_readiness_reports_redis_persistence(tmp_path, appendonly, appendfsync, expected):
    with private_redis(tmp_path, appendonly=appendonly, appendfsync=appendfsync) as url:
        client = redis.Redis.from_url(url)
        intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(client))

        async def scenario() -> None:
            async with serving(intake) as (session, base), session.get(f"{base}/readyz") as answer:
                assert answer.status == 200
                body = await answer.json()
            assert body["redis"] == "ok"
            assert body["redis_persistence"] == expected

        try:
            run(scenario)
        finally:
            client.close()


def test_readiness_fails_while_redis_is_unreachable():
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    intake = Intake(Validator(dev_policy(), GUARDIANS.sets()), RelayTables(dead))

    async def scenario() -> None:
        async with serving(intake) as (session, base):
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                body = await response.json()
                assert body["status"] == "not ready"
                assert body["redis"].startswith("unreachable")
            status, body = await post_vaa(session, base, signed_transfer(1).to_bytes().hex())
            assert status == 503
            assert body["status"] == "unavailable"

    run(scenario)


def test_a_real_mainnet_transfer_is_accepted_and_a_tampered_copy_rejected(redis_url, vaa_vectors):
    vector = next(
        v
        for v in vaa_vectors
        if v["expected"]["category"] == "token_transfer"
        and v["expected"]["verified_against"].startswith("mainnet")
        and int(v["expected"]["token_bridge"]["fee"]) > 0
    )
    raw = bytes.fromhex(vector["hex"])
    transfer = vector["expected"]["token_bridge"]
    config = RelayerSettings.model_validate(
        {
            "redis": {"url": redis_url},
            "guardian_sets": {"source": "mainnet"},
            "known_emitters": ["mainnet"],
            "target_chains": [transfer["to_chain"]],
            "tokens": [
                {
                    "chain": transfer["token_chain"],
                    "address": transfer["token_address"],
                    "min_fee": int(transfer["fee"]),
                }
            ],
        }
    )
    timestamp = parse_vaa(raw).timestamp  # guardian set 1 expired long ago: judge it as of then
    validator = Validator(
        config.validation_policy(), config.guardian_sets.load(), clock=lambda: timestamp
    )
    client = redis.Redis.from_url(config.redis.url.get_secret_value())
    intake = Intake(validator, RelayTables(client, config.redis.key_prefix))

    async def scenario() -> None:
        async with serving(intake) as (session, base):
            tampered = flip_signature_byte(raw, signature_number=5, byte=20)
            status, body = await post_vaa(session, base, base64.b64encode(tampered).decode())
            assert status == 422
            assert body["rule"] == "signatures"
            assert body["reason"].startswith("signatures not verified: signature 5")

            status, body = await post_vaa(session, base, base64.b64encode(raw).decode())
            assert status == 202
            assert body["digest"] == vector["expected"]["digest"]
            assert body["message_id"] == vector["expected"]["message_id"]

    try:
        run(scenario)
        stored = RelayTables(client).get(vector["expected"]["digest"])
        assert stored is not None
        assert stored.vaa == raw
        assert stored.target_chain == transfer["to_chain"] != TARGET_CHAIN
    finally:
        client.close()
