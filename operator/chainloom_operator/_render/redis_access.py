"""A Redis a pod reaches (:class:`~chainloom_operator.models.RedisAccess`) as parts of the pod:
the settings naming its files, the projected volume of its Secrets, the URL's variable.

Shared by the relayer's pods (the relay tables) and by a BackendTable's feed (the ledger ETL,
the indexer and the APIs). Nothing secret enters a ConfigMap: a URL with a password comes from
its Secret as one variable (``secretKeyRef``), the password and the TLS files are files of one
projected volume (mode 0440) whose paths the settings name.
"""

from __future__ import annotations

from typing import Any

from chainloom_operator._render.common import SECRET_FILE_MODE
from chainloom_operator.models import RedisAccess


def redis_files(ref: RedisAccess, directory: str) -> dict[str, str]:
    """The Redis settings that name mounted files (``password_file``, ``tls.*``), by field."""
    files: dict[str, str] = {}
    if ref.password_ref is not None:
        files["password_file"] = f"{directory}/password"
    if ref.tls is not None and ref.tls.ca_ref is not None:
        files["ca_file"] = f"{directory}/ca.crt"
    if ref.tls is not None and ref.tls.client_secret is not None:
        files["cert_file"] = f"{directory}/tls.crt"
        files["key_file"] = f"{directory}/tls.key"
    return files


def redis_settings(ref: RedisAccess, directory: str, key_prefix: str) -> dict[str, Any]:
    """The ``RedisSettings`` document the pods load (without the URL of a Secret: its variable
    gives it)."""
    redis: dict[str, Any] = {"key_prefix": key_prefix}
    if ref.url is not None:
        redis["url"] = ref.url
    if ref.username is not None:
        redis["username"] = ref.username
    files = redis_files(ref, directory)
    if "password_file" in files:
        redis["password_file"] = files["password_file"]
    if ref.tls is not None:
        tls_files = {k: v for k, v in files.items() if k != "password_file"}
        redis["tls"] = {"check_hostname": ref.tls.check_hostname, **tls_files}
    return redis


def url_variable(ref: RedisAccess, name: str) -> list[dict[str, Any]]:
    """The variable ``name`` holding the URL from its Secret (none with a plain URL)."""
    if ref.secret_ref is None:
        return []
    key_ref = {"name": ref.secret_ref.name, "key": ref.secret_ref.key}
    return [{"name": name, "valueFrom": {"secretKeyRef": key_ref}}]


def redis_volume(ref: RedisAccess, name: str) -> dict[str, Any] | None:
    """The password and TLS files, from their Secrets, as the volume ``name`` (None when there
    are none)."""
    sources: list[dict[str, Any]] = []
    if ref.password_ref is not None:
        items = [{"key": ref.password_ref.key, "path": "password"}]
        sources.append({"secret": {"name": ref.password_ref.name, "items": items}})
    if ref.tls is not None and ref.tls.ca_ref is not None:
        items = [{"key": ref.tls.ca_ref.key, "path": "ca.crt"}]
        sources.append({"secret": {"name": ref.tls.ca_ref.name, "items": items}})
    if ref.tls is not None and ref.tls.client_secret is not None:
        items = [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
        sources.append({"secret": {"name": ref.tls.client_secret, "items": items}})
    if not sources:
        return None
    return {"name": name, "projected": {"sources": sources, "defaultMode": SECRET_FILE_MODE}}


def redis_secret_references(ref: RedisAccess, what: str) -> list[tuple[str, str, str]]:
    """``(secret, key, purpose)`` of the Secrets of ``ref`` (``what``: "Redis", "feed Redis")."""
    found = []
    if ref.secret_ref is not None:
        found.append((ref.secret_ref.name, ref.secret_ref.key, f"{what} URL"))
    if ref.password_ref is not None:
        found.append((ref.password_ref.name, ref.password_ref.key, f"{what} password"))
    tls = ref.tls
    if tls is not None and tls.ca_ref is not None:
        found.append((tls.ca_ref.name, tls.ca_ref.key, f"{what} CA bundle"))
    if tls is not None and tls.client_secret is not None:
        for key in ("tls.crt", "tls.key"):
            found.append((tls.client_secret, key, f"{what} client certificate"))
    return found
