"""Opening Redis from :class:`~chainloom.settings.RedisSettings`: the one way a client is made.

The relayer's services and CLI, the operator and the two pub/sub feeds (the events API's VAA
stream, the ledger API's subscriptions) all build their client here, so an ACL user, a
password kept in a file (a mounted Secret) and TLS (``rediss://`` with a CA bundle and an
optional client certificate) reach every connection alike. The TLS and password files are read
and checked before any connection is tried, so a wrong path is a
:class:`~chainloom.credentials.CredentialsError` naming the setting (exit 2), not an outage.

:func:`refusal` tells an answer that refused us (credentials, a certificate, a handshake in the
wrong protocol) from an outage: the first is a setting to fix, the second something to wait out.
"""

from __future__ import annotations

import ssl
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    ConnectionError,
    ResponseError,
    TimeoutError,
)

from chainloom.credentials import client_context, read_password
from chainloom.settings.parts import RedisSettings

SETTING = "redis"
"""Where the settings live in a service's model, for messages."""


def connect_options(settings: RedisSettings, setting: str = SETTING) -> dict[str, Any]:
    """The keyword arguments of ``redis.Redis.from_url`` beyond the URL: user, password and
    TLS (files read and checked now)."""
    options: dict[str, Any] = {
        "socket_connect_timeout": settings.connect_timeout,
        "socket_timeout": settings.timeout,
    }
    if settings.username is not None:
        options["username"] = settings.username
    if settings.password_file is not None:
        options["password"] = read_password(settings.password_file, f"{setting}.password_file")
    if settings.uses_tls:
        tls = settings.tls
        client_context(tls, f"{setting}.tls")  # the files are usable, or a CredentialsError
        options.update(
            ssl_cert_reqs="required",
            ssl_ca_certs=tls.ca_file,
            ssl_certfile=tls.cert_file,
            ssl_keyfile=tls.key_file,
            ssl_check_hostname=tls.check_hostname,
            ssl_min_version=ssl.TLSVersion.TLSv1_2,
        )
    return options


def redis_client(settings: RedisSettings, setting: str = SETTING, **extra: Any) -> redis.Redis:
    """A client for the configured Redis (no connection is made yet); ``extra`` adds client
    options such as timeouts."""
    options = {**connect_options(settings, setting), **extra}
    return redis.Redis.from_url(settings.url.get_secret_value(), **options)


def async_redis_client(
    settings: RedisSettings, setting: str = SETTING, **extra: Any
) -> aioredis.Redis:
    """:func:`redis_client` for an event loop (``redis.asyncio``), with the same options."""
    options = {**connect_options(settings, setting), **extra}
    client: aioredis.Redis = aioredis.Redis.from_url(settings.url.get_secret_value(), **options)
    return client


def refusal(error: BaseException) -> str | None:
    """Why Redis refused us, when ``error`` is a refusal rather than an outage; else None."""
    message = _first_line(error)
    if isinstance(error, AuthenticationError | AuthorizationError) or (
        isinstance(error, ResponseError) and message.startswith(("NOAUTH", "WRONGPASS"))
    ):
        return f"the credentials were refused ({message})"
    if isinstance(error, ResponseError) and message.startswith("NOPERM"):
        return f"the user may not do this ({message})"
    return _tls_refusal(error)


def first_contact_refusal(error: BaseException, tls: bool) -> str | None:
    """:func:`refusal`, and what the first exchange on a new connection tells besides: a plain
    client whose connection is dropped at once was most likely talking to a TLS port, and a
    TLS client left without a handshake answer to a plain one. (Later in a connection's life
    the same errors are outages: a server restarting, a network failing.)"""
    refused = refusal(error)
    if refused is not None:
        return refused
    if isinstance(error, TimeoutError) and tls:
        return "no answer to the TLS handshake (a plain port? use redis://)"
    if isinstance(error, ConnectionError) and not tls:
        text = str(error)
        if "reset by peer" in text or "closed by server" in text:
            return "it closed the connection at once (a TLS port? use rediss://)"
    return None


def _tls_refusal(error: BaseException) -> str | None:
    for cause in _chain(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            reason = getattr(cause, "verify_message", None) or cause.strerror or cause
            return f"its TLS certificate was not accepted: {reason}"
        if isinstance(cause, ssl.SSLError):
            if "WRONG_VERSION_NUMBER" in str(cause):
                return "TLS was refused (the port speaks plain text: use redis://)"
            return f"the TLS handshake failed: {cause.reason or cause}"
    return None


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]
