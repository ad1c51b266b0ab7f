"""The stack's test certificate authority for the secured stores, and their passwords.

The TLS Redis port and the secured Cassandra present server certificates signed by a CA the
stack makes itself (``<run dir>/tls``): tests trust it through the settings' ``ca_file``, exactly
as a team trusts its own CA. Made once per run directory with the ``openssl`` command (as the
Kubernetes PKI is) and kept: a restarted server, and the clients configured with these paths,
find the same files. Nothing here is secret beyond the machine: it is a throw-away CA for
loopback servers, and the passwords are random per run directory, in files only the user reads.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from chainloom_dev.stack._install import locked
from chainloom_dev.stack._process import run
from chainloom_dev.stack.errors import MissingToolError, StackError

SERVER_NAMES = ("IP:127.0.0.1", "DNS:localhost")
"""Whom the server certificate names: the loopback address the stores listen on."""


@dataclass(frozen=True, slots=True)
class StorePki:
    """Where the test CA and the certificates signed by it are."""

    directory: Path
    """``<run dir>/tls``."""

    @property
    def ca_file(self) -> Path:
        """The CA certificate clients trust (PEM)."""
        return self.directory / "ca.crt"

    @property
    def server_cert(self) -> Path:
        """The servers' certificate (PEM), naming 127.0.0.1 and localhost."""
        return self.directory / "server.crt"

    @property
    def server_key(self) -> Path:
        """Its private key (PEM, unencrypted)."""
        return self.directory / "server.key"

    @property
    def server_keystore(self) -> Path:
        """Certificate and key as a PKCS #12 keystore (Cassandra)."""
        return self.directory / "server.p12"

    @property
    def keystore_password_file(self) -> Path:
        """The keystore's random password (Java wants one)."""
        return self.directory / "keystore.password"

    @property
    def client_cert(self) -> Path:
        """A client certificate signed by the CA (for mutual TLS)."""
        return self.directory / "client.crt"

    @property
    def client_key(self) -> Path:
        """Its private key."""
        return self.directory / "client.key"


def _openssl(args: list[str], cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise MissingToolError("openssl", "apt-get install -y openssl")
    result = run([openssl, *args], cwd=cwd)
    if result.returncode != 0:
        raise StackError(f"making the test CA: openssl {args[0]} failed: {result.stderr.strip()}")


def _signed(directory: Path, name: str, subject: str, extensions: str) -> list[list[str]]:
    (directory / f"{name}.cnf").write_text(f"[ext]\n{extensions}\n")
    return [
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
         f"{name}.csr", "-subj", subject],
        ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "3650", "-out", f"{name}.crt", "-extfile", f"{name}.cnf",
         "-extensions", "ext"],
    ]  # fmt: skip


def make_ca(directory: Path, common_name: str = "chainloom-stores-test-ca") -> Path:
    """A self-signed CA certificate (``ca.crt``) and key in ``directory``; its certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "3650", "-subj", f"/CN={common_name}"],
        directory,
    )  # fmt: skip
    return directory / "ca.crt"


def ensure_store_pki(run_dir: Path) -> StorePki:
    """The run directory's test CA, server and client certificates (made on first use)."""
    pki = StorePki(run_dir / "tls")
    with locked("store-pki-" + hashlib.sha256(str(run_dir).encode()).hexdigest()[:16]):
        if pki.server_keystore.exists():
            return pki
        directory = pki.directory
        make_ca(directory)
        server = "subjectAltName=" + ",".join(SERVER_NAMES) + "\nextendedKeyUsage=serverAuth"
        steps = [
            *_signed(directory, "server", "/CN=chainloom-store", server),
            *_signed(directory, "client", "/CN=chainloom-client", "extendedKeyUsage=clientAuth"),
            ["pkcs12", "-export", "-in", "server.crt", "-inkey", "server.key", "-name",
             "chainloom-store", "-out", "server.p12.tmp", "-passout",
             f"file:{ensure_password(pki.keystore_password_file)}"],
        ]  # fmt: skip
        for step in steps:
            _openssl(step, directory)
        for key in directory.glob("*.key"):
            key.chmod(0o600)
        (directory / "server.p12.tmp").rename(pki.server_keystore)
    return pki


def ensure_password(path: Path) -> Path:
    """A random password in ``path`` (mode 0600), made once; the path."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(24) + "\n")
    return path
