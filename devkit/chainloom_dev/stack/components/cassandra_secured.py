"""A second Cassandra node with logins and client encryption on, for the secured-store tests.

Production Cassandra asks for a password and speaks TLS; the shared ``cassandra`` node does
neither, and other sessions' tests use it as it is. So the secured one is a component of its
own, started only when asked for (``stack up --only cassandra-secured``; the tests start it in a
private run directory through a fixture): the same installed jars, its own data directory and
ports, a smaller heap (``CHAINLOOM_CASSANDRA_SECURED_HEAP``, 512M), and

* ``PasswordAuthenticator``: a ``chainloom`` role (superuser, so it can create keyspaces) whose
  random password is in ``<run dir>/cassandra-secured/chainloom.password`` (mode 0600), made
  through the default ``cassandra`` superuser on the first start;
* ``client_encryption_options`` on and not optional: TLS only, with the server certificate of
  the stack's test CA (:mod:`chainloom_dev.stack._pki`), which names 127.0.0.1 and localhost.

``stack env`` exports nothing for it (clients of the shared node must not be redirected); its
record's ``extra`` holds what a client needs: the CA, the role and the password file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chainloom_dev.stack import versions
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._pki import ensure_password, ensure_store_pki
from chainloom_dev.stack._process import choose_port, reuse_port, spawn, wait_until
from chainloom_dev.stack.components.cassandra import Cassandra, daemon_argv, node_yaml

ROLE = "chainloom"
"""The role tests log in as."""

DEFAULT_HEAP = "512M"
"""Heap of the secured node (``CHAINLOOM_CASSANDRA_SECURED_HEAP``): its tests write little."""

_SECURITY = """authenticator: PasswordAuthenticator
authorizer: CassandraAuthorizer
role_manager: CassandraRoleManager
client_encryption_options:
  enabled: true
  optional: false
  keystore: {keystore}
  keystore_password: {keystore_password}
  store_type: PKCS12
  require_client_auth: false
"""


class CassandraSecured:
    """Cassandra with PasswordAuthenticator and TLS-only client connections."""

    name = "cassandra-secured"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        Cassandra().install(progress)  # the same jars

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        pki = ensure_store_pki(run_dir)
        native_port = choose_port(self.name, previous, "CHAINLOOM_CASSANDRA_SECURED_PORT")
        storage_port = reuse_port(previous, "storage_port")
        jmx_port = reuse_port(previous, "jmx_port")
        home = run_dir / self.name
        if previous is None:
            shutil.rmtree(home, ignore_errors=True)
        conf = home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        security = _SECURITY.format(
            keystore=pki.server_keystore,
            keystore_password=pki.keystore_password_file.read_text().strip(),
        )
        (conf / "cassandra.yaml").write_text(node_yaml(storage_port, native_port, home) + security)
        heap = os.environ.get("CHAINLOOM_CASSANDRA_SECURED_HEAP", DEFAULT_HEAP)
        argv = daemon_argv(conf, home, heap, jmx_port)
        # The default superuser exists at once, not after Cassandra's usual 10 s delay.
        argv.insert(-3, "-Dcassandra.superuser_setup_delay_ms=0")
        log = run_dir / "logs" / f"{self.name}.log"
        progress.step(
            f"starting Cassandra {versions.CASSANDRA} with logins and TLS on "
            f"127.0.0.1:{native_port} (heap {heap})"
        )
        pid = spawn(argv, log)
        password_file = ensure_password(home / f"{ROLE}.password")
        extra = {
            "storage_port": str(storage_port),
            "jmx_port": str(jmx_port),
            "ca_file": str(pki.ca_file),
            "username": ROLE,
            "password_file": str(password_file),
        }
        address = f"127.0.0.1:{native_port}"
        running = Running(self.name, "", address, pid, str(log), extra=extra)
        timeout = float(os.environ.get("CHAINLOOM_CASSANDRA_TIMEOUT", "180"))
        wait_until(
            self.name,
            lambda: self._create_role(running),
            pid=pid,
            log=log,
            timeout=timeout,
            interval=1.0,
        )
        return Running(self.name, self.check(running), address, pid, str(log), extra=extra)

    def _create_role(self, running: Running) -> bool:
        """Log in as the default superuser and make the test role (idempotent)."""
        password = Path(running.extra["password_file"]).read_text().strip()
        with _session(running, "cassandra", "cassandra") as session:
            session.execute(
                f"CREATE ROLE IF NOT EXISTS {ROLE} WITH PASSWORD = %s "
                "AND LOGIN = true AND SUPERUSER = true",
                (password,),
            )
        return True

    def check(self, running: Running) -> str:
        password = Path(running.extra["password_file"]).read_text().strip()
        with _session(running, running.extra["username"], password) as session:
            row = session.execute("SELECT release_version FROM system.local").one()
            return str(row.release_version)


@contextlib.contextmanager
def _session(running: Running, user: str, password: str) -> Iterator[Any]:
    """A TLS session to the secured node as ``user`` (the driver loads only when used)."""
    import ssl  # noqa: PLC0415

    from cassandra.auth import PlainTextAuthProvider  # noqa: PLC0415
    from cassandra.cluster import Cluster  # noqa: PLC0415
    from cassandra.policies import DCAwareRoundRobinPolicy  # noqa: PLC0415

    context = ssl.create_default_context(cafile=running.extra["ca_file"])
    host, port = running.address.rsplit(":", 1)
    cluster = Cluster(
        [host],
        port=int(port),
        protocol_version=5,
        connect_timeout=3,
        load_balancing_policy=DCAwareRoundRobinPolicy(local_dc="datacenter1"),
        auth_provider=PlainTextAuthProvider(username=user, password=password),
        ssl_context=context,
    )
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()
