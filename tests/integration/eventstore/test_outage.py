"""A Bigtable outage surfaces as a clear error; queued rows survive it and are written after.

The outage is real: the writer talks to the emulator through a TCP relay that the test closes
(connections refused, live connections cut) and reopens on the same port.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from collections.abc import Iterator

import pytest

from chainloom.eventstore.bigtable import BigtableTables
from chainloom.eventstore.errors import StoreUnavailableError
from chainloom.eventstore.queries import EventReader
from chainloom.eventstore.writer import EventWriter, WriterConfig
from chainloom.settings import BigtableSettings
from chainloom.testing.dev_guardians import DevGuardians
from chainloom.wormhole import DEV_TOKEN_BRIDGE_EMITTER

KIT = DevGuardians()


class Relay:
    """A TCP relay to ``target`` that can be switched off and on again on the same port."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            if self._listener is not None:
                # shutdown wakes the thread blocked in accept(); close alone would not
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def relay(bigtable_emulator: str) -> Iterator[Relay]:
    opened = Relay(bigtable_emulator)
    opened.start()
    yield opened
    opened.stop()


def _vaas(first: int, count: int) -> list[bytes]:
    return [
        KIT.sign(
            emitter_chain=2,
            emitter_address=DEV_TOKEN_BRIDGE_EMITTER,
            sequence=seq,
            payload=b"outage %d" % seq,
            timestamp=1_700_000_000 + seq,
        ).to_bytes()
        for seq in range(first, first + count)
    ]


def test_outage_raises_clearly_and_keeps_queued_rows(
    settings: BigtableSettings,
    tables: BigtableTables,
    relay: Relay,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", relay.address)
    through_relay = settings.model_copy(update={"operation_timeout": 1.0})
    config = WriterConfig(flush_rows=1000, max_attempts=3, backoff_initial=0.1, backoff_max=0.5)
    with BigtableTables(through_relay) as relayed:
        writer = EventWriter(relayed, KIT.sets(0), config=config)
        assert writer.put_many(_vaas(0, 5)).new == 5
        relay.stop()
        for raw in _vaas(5, 20):
            writer.submit(raw)
        with pytest.raises(
            StoreUnavailableError, match=r"after 3 attempts.*20 rows are still queued"
        ):
            writer.flush()
        assert writer.pending == 20
        reader = EventReader(tables)  # straight to the emulator
        assert len(reader.scan(2, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex())) == 5

        relay.start()
        retry = dataclasses.replace(config, max_attempts=8)
        writer.config = retry
        writer.flush()
        assert writer.pending == 0
        writer.close()
    assert writer.summary.new == 25
    stored = reader.scan(2, emitter=DEV_TOKEN_BRIDGE_EMITTER.hex())
    assert [m.key.sequence for m in stored] == list(range(25))
