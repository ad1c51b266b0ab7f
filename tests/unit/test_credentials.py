"""Password files, service-account keys and client TLS contexts (chainloom.credentials), on
files made here."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from chainloom.credentials import (
    CredentialsError,
    client_context,
    read_password,
    read_service_account_key,
)
from chainloom.settings.parts import TlsSettings
from tests.google_key_support import write_service_account_key


def test_password_drops_one_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "password"
    path.write_text("p@ss word\n")
    assert read_password(str(path), "redis.password_file") == "p@ss word"
    path.write_text("two\n\n")
    assert read_password(str(path), "redis.password_file") == "two\n"


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "the file is empty"), (b"\xff\xfe", "not UTF-8 text"), (b"x" * 5000, "longer than")],
)
def test_unusable_password_files(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "password"
    path.write_bytes(content)
    with pytest.raises(CredentialsError, match=problem) as caught:
        read_password(str(path), "database.cassandra.password_file")
    assert str(caught.value).startswith(f"database.cassandra.password_file {path}: ")


def test_missing_password_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=r"redis.password_file .*: No such file"):
        read_password(str(tmp_path / "absent"), "redis.password_file")


def _self_signed(directory: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "1",
            "-subj",
            "/CN=unit",
        ],
        cwd=directory,
        check=True,
        capture_output=True,
    )
    return directory / "cert.pem", directory / "key.pem"


def test_client_context_verifies_and_loads_a_client_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    context = client_context(
        TlsSettings(ca_file=str(cert), cert_file=str(cert), key_file=str(key)), "redis.tls"
    )
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2
    unchecked = client_context(TlsSettings(ca_file=str(cert), check_hostname=False), "redis.tls")
    assert not unchecked.check_hostname
    assert unchecked.verify_mode is ssl.CERT_REQUIRED


def test_unusable_tls_files_name_the_setting(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(CredentialsError, match=r"^database.cassandra.tls.ca_file .*junk.pem: "):
        client_context(TlsSettings(ca_file=str(junk)), "database.cassandra.tls")
    with pytest.raises(CredentialsError, match=r"^redis.tls.cert_file/key_file .*junk.pem: not"):
        client_context(TlsSettings(cert_file=str(junk)), "redis.tls")
    with pytest.raises(CredentialsError, match="No such file"):
        client_context(TlsSettings(ca_file=str(tmp_path / "absent.pem")), "redis.tls")


def test_service_account_key_fields_are_read(tmp_path: Path) -> None:
    path = write_service_account_key(tmp_path / "key.json")
    info = read_service_account_key(str(path), "bigtable.credentials_file")
    assert info["client_email"] == "indexer@chainloom-test.iam.gserviceaccount.com"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", 'no "type": "service_account"'),
        (json.dumps({"type": "authorized_user"}).encode(), 'no "type": "service_account"'),
        (b"{" + b" " * 70000 + b"}", "longer than"),
    ],
)
def test_unusable_service_account_keys(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "key.json"
    path.write_bytes(content)
    with pytest.raises(CredentialsError, match=problem) as caught:
        read_service_account_key(str(path), "bigtable.credentials_file")
    assert str(caught.value).startswith(f"bigtable.credentials_file {path}: ")


def test_key_without_its_fields_names_them_but_no_value(tmp_path: Path) -> None:
    path = write_service_account_key(tmp_path / "key.json", private_key=None, token_uri=None)
    with pytest.raises(CredentialsError, match="no private_key, token_uri") as caught:
        read_service_account_key(str(path), "bigtable.credentials_file")
    assert "indexer@" not in str(caught.value)


def test_missing_key_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=r"bigtable.credentials_file .*: No such file"):
        read_service_account_key(str(tmp_path / "absent.json"), "bigtable.credentials_file")
