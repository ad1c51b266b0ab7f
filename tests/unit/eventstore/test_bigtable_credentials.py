"""The credentials every Bigtable client is built with (bigtable.google_credentials): a key
file's are parsed (a bad one is bad input naming the file), none means Application Default
Credentials, and the emulator gets none however the key is set."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.oauth2 import service_account

from chainloom.credentials import CredentialsError
from chainloom.eventstore.bigtable import BIGTABLE_SCOPE, EMULATOR_ENV, google_credentials
from chainloom.settings import BigtableSettings
from tests.google_key_support import write_service_account_key


@pytest.fixture(autouse=True)
def _no_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def test_no_key_file_means_application_default_credentials() -> None:
    assert google_credentials(BigtableSettings(project="p", instance="i")) is None


def test_key_file_gives_that_service_account(tmp_path: Path) -> None:
    path = write_service_account_key(tmp_path / "key.json")
    settings = BigtableSettings(project="p", instance="i", credentials_file=str(path))
    credentials = google_credentials(settings)
    assert isinstance(credentials, service_account.Credentials)
    assert credentials.service_account_email == "indexer@chainloom-test.iam.gserviceaccount.com"
    assert BIGTABLE_SCOPE in (credentials.scopes or ())


def test_key_whose_private_key_is_not_pem_is_refused(tmp_path: Path) -> None:
    path = write_service_account_key(tmp_path / "key.json", private_key="not a key")
    settings = BigtableSettings(project="p", instance="i", credentials_file=str(path))
    with pytest.raises(CredentialsError, match=r"credentials_file .*key.json: .*private_key"):
        google_credentials(settings)


def test_emulator_gets_no_credentials_but_the_key_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EMULATOR_ENV, "127.0.0.1:1")
    good = write_service_account_key(tmp_path / "key.json")
    assert google_credentials(BigtableSettings(credentials_file=str(good))) is None
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(CredentialsError, match=r"bad\.json: not a service-account key"):
        google_credentials(BigtableSettings(credentials_file=str(tmp_path / "bad.json")))


@pytest.mark.parametrize("profile", ["", "has space", "x" * 51])
def test_app_profile_names_are_checked(profile: str) -> None:
    with pytest.raises(ValueError, match="app_profile"):
        BigtableSettings(app_profile=profile)
