"""Service URLs as users write them: shown without their password, and checked for Redis.

Pure text work on ``urllib.parse``, so the settings models, the CLI's error boundary and log
messages mask a password the same way, even in a URL too malformed for a client to parse.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``, for messages and display.

    Works on the text of the authority, not on parsed ports, so a URL with a malformed port is
    still shown (masked) rather than raising.
    """
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


REDIS_SCHEMES = ("redis", "rediss")
"""URL schemes of a Redis server: plain TCP and TLS."""


def check_redis_url(url: str) -> None:
    """Raise ValueError (naming what is wrong, never the password) unless ``url`` is a Redis URL
    a client can connect with: ``redis://`` or ``rediss://``, a host, a port within 1..65535
    when given, and a database that is a number when given."""
    parts = urlsplit(url)
    shown = redact_url(url)
    if parts.scheme not in REDIS_SCHEMES:
        raise ValueError(f"{shown}: the scheme must be redis:// or rediss://")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{shown}: the port is not a number within 1..65535") from None
    if not parts.hostname:
        raise ValueError(f"{shown}: no host")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{shown}: the port is not a number within 1..65535")
    database = parts.path.removeprefix("/")
    if database and not (database.isascii() and database.isdigit()):
        raise ValueError(f"{shown}: the database must be a number (redis://host:port/0)")


HTTP_SCHEMES = ("http", "https")
"""URL schemes of an HTTP server (a rippled's JSON-RPC port): plain TCP and TLS."""


def check_server_url(url: str, schemes: tuple[str, ...] = HTTP_SCHEMES) -> None:
    """Raise ValueError (naming what is wrong, never the password) unless ``url`` has one of
    ``schemes`` (``http``/``https`` by default), a host and, when given, a port within
    1..65535."""
    parts = urlsplit(url)
    shown = redact_url(url)
    if parts.scheme not in schemes:
        named = " or ".join(f"{scheme}://" for scheme in schemes)
        raise ValueError(f"{shown}: the scheme must be {named}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{shown}: the port is not a number within 1..65535") from None
    if not parts.hostname:
        raise ValueError(f"{shown}: no host")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{shown}: the port is not a number within 1..65535")
