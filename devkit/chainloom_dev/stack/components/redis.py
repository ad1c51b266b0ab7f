"""Redis: Debian's ``redis-server`` with its append-only file on, as the relayer needs it.

The relay tables live in Redis, and the listener answers 202 once a transfer is in Incoming: if
Redis forgot it, nothing else would remember it. So the stack runs Redis as production should:
the append-only file (AOF) on, in ``<run dir>/redis`` (kept when Redis is restarted in the same
run directory, on the same port), fsync'd once a second (``everysec``) unless
``CHAINLOOM_REDIS_FSYNC=always`` (``chainloom-dev stack up --redis-fsync always``) asks for an fsync
before every answer. What each policy guarantees is written down in ``docs/relayer.md``
("Durability").

Beside the plain port it serves TLS on a second port (``extra.tls_port``) with the server
certificate of the stack's test CA (:mod:`chainloom_dev.stack._pki`; client certificates of
that CA are checked when offered), and knows an ACL user ``chainloom`` whose random password
is in ``<run dir>/redis/chainloom.password`` (the ACL file holds only its SHA-256). The
``default`` user stays open, so plain clients of the shared stack see no change; the secured
store tests log in as ``chainloom`` over TLS.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._pki import ensure_password, ensure_store_pki
from chainloom_dev.stack._process import choose_port, reuse_port, spawn, wait_until
from chainloom_dev.stack.components._apt import ensure_command
from chainloom_dev.stack.errors import StackError

FSYNC_POLICIES = ("everysec", "always")
"""Redis's ``appendfsync`` values the stack offers (``no`` leaves it to the kernel: not offered)."""
DEFAULT_FSYNC = "everysec"
"""The policy when nothing else is asked for (Redis's own default, and what most run)."""
FSYNC_VARIABLE = "CHAINLOOM_REDIS_FSYNC"
"""Environment variable that chooses the policy (``stack up --redis-fsync`` sets it)."""
ACL_USER = "chainloom"
"""The ACL user with a password (the ``default`` user stays open for plain clients)."""


def write_acl(path: Path, password_file: Path) -> Path:
    """The ACL file: ``default`` open as before, :data:`ACL_USER` with the password's hash."""
    password = password_file.read_text().strip()
    digest = hashlib.sha256(password.encode()).hexdigest()
    path.write_text(
        f"user default on nopass ~* &* +@all\nuser {ACL_USER} on #{digest} ~* &* +@all\n"
    )
    path.chmod(0o600)
    return path


def fsync_policy(previous: Running | None) -> str:
    """``$CHAINLOOM_REDIS_FSYNC``, else the policy Redis last ran with here, else ``everysec``."""
    configured = os.environ.get(FSYNC_VARIABLE, "").strip()
    if not configured and previous is not None:
        configured = previous.extra.get("appendfsync", "")
    policy = configured or DEFAULT_FSYNC
    if policy not in FSYNC_POLICIES:
        raise StackError(
            f"{FSYNC_VARIABLE}={policy!r} is not an fsync policy; choose from: "
            + ", ".join(FSYNC_POLICIES)
        )
    return policy


class Redis:
    """The relayer's queue store."""

    name = "redis"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        ensure_command("redis-server", "redis-server", progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        binary = shutil.which("redis-server") or "redis-server"
        policy = fsync_policy(previous)
        port = choose_port(self.name, previous, "CHAINLOOM_REDIS_PORT")
        tls_port = reuse_port(previous, "tls_port")
        data = run_dir / "redis"
        data.mkdir(parents=True, exist_ok=True)
        pki = ensure_store_pki(run_dir)
        password_file = ensure_password(data / f"{ACL_USER}.password")
        acl = write_acl(data / "users.acl", password_file)
        log = run_dir / "logs" / "redis.log"
        progress.step(
            f"starting redis on 127.0.0.1:{port}, TLS on {tls_port} (AOF, appendfsync {policy})"
        )
        argv = [
            binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            policy,
            "--dir",
            str(data),
            "--databases",
            "64",
            "--protected-mode",
            "yes",
            "--aclfile",
            str(acl),
            "--tls-port",
            str(tls_port),
            "--tls-cert-file",
            str(pki.server_cert),
            "--tls-key-file",
            str(pki.server_key),
            "--tls-ca-cert-file",
            str(pki.ca_file),
            "--tls-auth-clients",
            "optional",
        ]
        pid = spawn(argv, log)
        url = f"redis://127.0.0.1:{port}/0"
        running = Running(
            self.name,
            "",
            f"127.0.0.1:{port}",
            pid,
            str(log),
            env={"CHAINLOOM_REDIS__URL": url},
            extra={
                "appendfsync": policy,
                "data": str(data),
                "tls_port": str(tls_port),
                "ca_file": str(pki.ca_file),
                "client_cert": str(pki.client_cert),
                "client_key": str(pki.client_key),
                "acl_user": ACL_USER,
                "password_file": str(password_file),
            },
        )
        # Redis refuses commands while it replays a large append-only file: the check waits.
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=60)
        return Running(
            self.name,
            self.check(running),
            running.address,
            pid,
            str(log),
            env=running.env,
            extra=running.extra,
        )

    def check(self, running: Running) -> str:
        # The client loads only for a health check: `chainloom-dev stack` starts without it.
        import redis as redis_client  # noqa: PLC0415

        host, port = running.address.rsplit(":", 1)
        client = redis_client.Redis(host=host, port=int(port), socket_timeout=2)
        try:
            client.set("chainloom:stack:health", b"ok", ex=10)
            if client.get("chainloom:stack:health") != b"ok":
                raise RuntimeError("redis did not return what was written")
            info: dict[str, object] = client.info("server")  # type: ignore[assignment]
        finally:
            client.close()
        if "tls_port" in running.extra:  # a Redis started before TLS was added has none
            self._check_tls(running)
        return str(info["redis_version"])

    @staticmethod
    def _check_tls(running: Running) -> None:
        """The TLS port answers the ACL user, with the server certificate of the test CA."""
        import redis as redis_client  # noqa: PLC0415

        extra = running.extra
        client = redis_client.Redis(
            host=running.address.rsplit(":", 1)[0],
            port=int(extra["tls_port"]),
            username=extra["acl_user"],
            password=Path(extra["password_file"]).read_text().strip(),
            ssl=True,
            ssl_ca_certs=extra["ca_file"],
            ssl_check_hostname=True,
            socket_timeout=2,
        )
        try:
            if client.ping() is not True:
                raise RuntimeError("redis did not answer PING on its TLS port")
        finally:
            client.close()
