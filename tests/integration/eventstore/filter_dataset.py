"""The messages the filter index tests store, and what a full scan says about them.

A generated workload (:func:`chainloom_dev.sim.vaa_workload.generate_vaas`: transfers,
attestations, NFT transfers, other payloads on eight chains, repeats with other signature
subsets, many messages in the same second) plus hand-made transfers between two addresses
(an EVM one on Ethereum and BSC, a Solana one), observed with transaction ids and senders, so
every filter has several matches. :func:`scanned` computes each message's attributes straight
from the events table's cells, independently of the product's index code: the tests' expected
answers come from it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from chainloom.eventstore import schema
from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.schema import Q
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER, mainnet_emitters
from chainloom.wormhole.chains import base58_encode
from chainloom_dev.sim.dev_guardians import DevGuardians
from chainloom_dev.sim.vaa_workload import Mix, generate_vaas
from tests.unit.eventstore import builders

KIT = DevGuardians()
CHAINS = (2, 1, 4, 5, 6, 23, 24, 30)
EMITTERS = mainnet_emitters().with_dev_emitters(CHAINS)
T0 = 1_700_000_000
ALICE_HEX = "11" * 20
ALICE = builders.evm(ALICE_HEX)
ALICE_EIP55 = "0x1111111111111111111111111111111111111111"
BOB = bytes(range(1, 33))
BOB_BASE58 = base58_encode(BOB)
WETH = builders.evm("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2")
TX = "0x" + "cd" * 32


@dataclass(frozen=True)
class Input:
    """One VAA to store and what the source chain told about it."""

    raw: bytes
    tx_id: str | None = None
    sender: str | None = None


def inputs(count: int = 240) -> list[Input]:
    """The workload, then the hand-made transfers (some sharing a second with the workload)."""
    made = [Input(raw) for raw in generate_vaas(count, 5, KIT, Mix(conflict=0.0))]
    emitter = DEV_TOKEN_BRIDGE_EMITTER
    for number in range(6):
        # Ethereum -> Solana, payload 3 from ALICE to BOB (sender known from the payload)
        vaa = KIT.sign(
            emitter_chain=2,
            emitter_address=emitter,
            sequence=10_000 + number,
            payload=builders.transfer_with_payload(10**8, WETH, 2, BOB, 1, ALICE, b"x"),
            timestamp=T0 + number * 600,
        )
        made.append(Input(vaa.to_bytes(), TX if number % 2 == 0 else None))
        # BSC -> Ethereum, payload 1 observed on BSC with ALICE as the sender, ALICE receiving
        vaa = KIT.sign(
            emitter_chain=4,
            emitter_address=emitter,
            sequence=20_000 + number,
            payload=builders.transfer(5 * 10**7, WETH, 2, ALICE, 2),
            timestamp=T0 + number * 600,  # the same second as the one above
        )
        made.append(Input(vaa.to_bytes(), f"0x{number + 1:064x}", ALICE_EIP55))
    # Ethereum -> Ethereum from ALICE to ALICE: one message under both of her roles
    vaa = KIT.sign(
        emitter_chain=2,
        emitter_address=emitter,
        sequence=10**17,
        payload=builders.transfer_with_payload(7, WETH, 2, ALICE, 2, ALICE, b""),
        timestamp=T0 + 300,
    )
    made.append(Input(vaa.to_bytes(), TX))
    return made


@dataclass(frozen=True)
class Scanned:
    """A stored message's attributes, read from its cells."""

    id: str
    row_key: str
    timestamp: int
    source_chain: int
    emitter: str
    payload_type: int | None
    target_chain: int | None
    token: str | None
    sender: str | None
    recipient: str | None
    tx_hash: str | None


def _native(text: str | None) -> str | None:
    return None if text is None else (text.lower() if text.startswith("0x") else text)


def _text(columns: dict[str, bytes], qualifier: str) -> str | None:
    raw = columns.get(qualifier)
    return None if raw is None else raw.decode()


def scanned(tables: BigtableTables) -> list[Scanned]:
    """Every stored message (a full scan of the events table), by (time, row key)."""
    found = []
    for row_key, row in tables.stream_events("", ""):
        publication = row.get(schema.MESSAGE_PUBLICATION, {})
        if Q.TIMESTAMP not in publication:
            continue
        moment = dt.datetime.fromisoformat(publication[Q.TIMESTAMP].decode().replace("Z", "+00:00"))
        chain, emitter, sequence = row_key.split(":")
        transfer = row.get(schema.TOKEN_TRANSFER_PAYLOAD) or row.get(schema.NFT_TRANSFER_PAYLOAD)
        meta = row.get(schema.ASSET_META_PAYLOAD)
        payload_type = target = token = None
        if transfer:
            payload_type = int(transfer[Q.PAYLOAD_ID])
            target = int(transfer[Q.TARGET_CHAIN])
            token = f"{int(transfer[Q.ORIGIN_CHAIN])}/{transfer[Q.ORIGIN_ADDRESS].decode()}"
        elif meta:
            payload_type = int(meta[Q.PAYLOAD_ID])
            token = f"{int(meta[Q.TOKEN_CHAIN])}/{meta[Q.TOKEN_ADDRESS].decode()}"
        details = row.get(schema.CHAIN_DETAILS, {})
        found.append(
            Scanned(
                id=f"{chain}/{emitter}/{int(sequence)}",
                row_key=row_key,
                timestamp=int(moment.timestamp()),
                source_chain=int(chain),
                emitter=emitter,
                payload_type=payload_type,
                target_chain=target,
                token=token,
                sender=_native(_text(details, Q.SENDER_ADDRESS)),
                recipient=_native(_text(details, Q.RECEIVER_ADDRESS)),
                tx_hash=_text(publication, Q.INITIATING_TX_ID),
            )
        )
    return sorted(found, key=lambda m: (m.timestamp, m.row_key))


def index_cells(
    tables: BigtableTables, start: str = "", end: str = ""
) -> Iterator[tuple[bytes, str, bytes, bytes, int]]:
    """Every cell of the index table in ``[start, end)``, every version, with its timestamp."""
    from google.cloud.bigtable.data import ReadRowsQuery, RowRange

    query = ReadRowsQuery(row_ranges=[RowRange(start or None, end or None)])
    for row in tables.index.read_rows(query):
        for cell in row.cells:
            yield (row.row_key, cell.family, cell.qualifier, cell.value, cell.timestamp_micros)
