"""A TCP relay the failover test puts in front of geth as a "primary endpoint" it can kill, and
the Bigtable test puts in front of the emulator to see what the client's requests carry.

Each accepted connection is piped both ways to the target by two threads. :meth:`TcpRelay.kill`
closes the listening socket and every open connection at once, as a node that dies does: the
next request to it is refused, one in flight is reset.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpRelay:
    """Forwards ``127.0.0.1:<port>`` to ``target`` (``host:port``) until killed."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.connections = 0
        """Connections accepted so far."""
        self.sent = bytearray()
        """Every byte the clients sent to the target (what a request carried on the wire)."""
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._killed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """The relay as an HTTP JSON-RPC URL."""
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """Stop accepting and drop every connection."""
        with self._lock:
            self._killed = True
            doomed = list(self._open)
            self._open.clear()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
        self._listener.close()
        for sock in doomed:  # their reading threads see the end and close them
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # killed
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._killed:
                    client.close()
                    upstream.close()
                    return
                self.connections += 1
                self._open.update((client, upstream))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, record: bool = False) -> None:
        try:
            while chunk := source.recv(65536):
                if record:
                    with self._lock:
                        self.sent += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
            source.close()  # each socket is closed by the one thread reading it
