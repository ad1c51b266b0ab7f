"""Google service-account key files for the tests: a real RSA key in the JSON layout Google
issues, with made-up names (nothing here can authenticate anywhere)."""

from __future__ import annotations

import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def service_account_key(**changes: object) -> dict[str, object]:
    """The fields of a key (``changes`` replace or, with None, remove some)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    fields: dict[str, object] = {
        "type": "service_account",
        "project_id": "chainloom-test",
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": "indexer@chainloom-test.iam.gserviceaccount.com",
        "client_id": "100000000000000000001",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    fields.update(changes)
    return {name: value for name, value in fields.items() if value is not None}


def write_service_account_key(path: Path, **changes: object) -> Path:
    """:func:`service_account_key` written to ``path``."""
    path.write_text(json.dumps(service_account_key(**changes)))
    return path
