"""Credentials of a secured store, read from files when a connection is opened.

Passwords, keys and certificates reach chainloom as files (a Kubernetes Secret mounted into the
pod, a file an operator wrote): the settings hold only their paths, so a password never sits in
a spec, a command line, an environment dump or a log. This module reads them, for the Cassandra
session, the Redis client and the Bigtable clients (a service-account key) alike, and builds the
client's TLS context. Every problem is a
:class:`CredentialsError` naming the setting and the path, never the content.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

from chainloom.errors import ChainloomError
from chainloom.settings.parts import TlsSettings

MAX_PASSWORD_BYTES = 4096
"""A password file longer than this is refused (a wrong path, not a password)."""
MAX_KEY_BYTES = 64 * 1024
"""A service-account key file longer than this is refused (a key is about 2.3 kB)."""
SERVICE_ACCOUNT_FIELDS = ("client_email", "private_key", "token_uri")
"""What a Google service-account key must hold besides ``"type": "service_account"``."""


class CredentialsError(ChainloomError):
    """A password file or a TLS file named by the settings cannot be used (CLI exit 2)."""


def _read_bounded(path: str, setting: str, limit: int) -> bytes:
    """The bytes of ``path``, refused (naming ``setting`` and the file) when unreadable or
    longer than ``limit``."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as error:
        raise CredentialsError(f"{setting} {path}: {error.strerror or error}") from None
    if len(raw) > limit:
        raise CredentialsError(f"{setting} {path}: longer than {limit} bytes")
    return raw


def read_password(path: str, setting: str) -> str:
    """The password in ``path`` (one trailing newline dropped, as ``echo`` and editors add)."""
    raw = _read_bounded(path, setting, MAX_PASSWORD_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CredentialsError(f"{setting} {path}: not UTF-8 text") from None
    text = text.removesuffix("\n").removesuffix("\r")
    if not text:
        raise CredentialsError(f"{setting} {path}: the file is empty")
    return text


def read_service_account_key(path: str, setting: str) -> dict[str, Any]:
    """The fields of the Google service-account key in ``path`` (a JSON object with
    ``"type": "service_account"`` and :data:`SERVICE_ACCOUNT_FIELDS`); the message of a bad
    file names it and what is wrong, never a value from it."""
    raw = _read_bounded(path, setting, MAX_KEY_BYTES)
    try:
        info = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CredentialsError(f"{setting} {path}: not JSON") from None
    if not isinstance(info, dict) or info.get("type") != "service_account":
        raise CredentialsError(
            f'{setting} {path}: not a service-account key (no "type": "service_account")'
        )
    missing = [name for name in SERVICE_ACCOUNT_FIELDS if not isinstance(info.get(name), str)]
    if missing:
        raise CredentialsError(
            f"{setting} {path}: not a service-account key (no {', '.join(missing)})"
        )
    return info


def client_context(tls: TlsSettings, setting: str) -> ssl.SSLContext:
    """A client TLS context: TLS 1.2 or newer, the server's certificate verified against
    ``ca_file`` (or the system's roots), its host name checked unless turned off, and the
    client certificate loaded when one is configured."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.ca_file is not None:
        try:
            context.load_verify_locations(cafile=tls.ca_file)
        except (OSError, ssl.SSLError) as error:
            raise CredentialsError(f"{setting}.ca_file {tls.ca_file}: {_reason(error)}") from None
    if tls.cert_file is not None:
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file)
        except (OSError, ssl.SSLError) as error:
            files = tls.cert_file if tls.key_file is None else f"{tls.cert_file}, {tls.key_file}"
            raise CredentialsError(
                f"{setting}.cert_file/key_file {files}: {_reason(error)}"
            ) from None
    context.check_hostname = tls.check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _reason(error: OSError | ssl.SSLError) -> str:
    if isinstance(error, ssl.SSLError):
        return f"not a usable PEM certificate or key ({error.reason or error})"
    return str(error.strerror or error)


def is_certificate_failure(error: BaseException) -> bool:
    """Whether ``error`` is the server's certificate refused: untrusted, expired, or naming
    another host."""
    return isinstance(error, ssl.SSLCertVerificationError)


def is_tls_failure(error: BaseException) -> bool:
    """Whether ``error`` is a failed TLS handshake of any kind (certificate, protocol)."""
    return isinstance(error, ssl.SSLError)
