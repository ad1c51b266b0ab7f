"""A Bigtable BackendTable's reconcile (``_backends.ensure``) on the real emulator, with the
spec's credentials file and app profile: a usable key creates the tables (the emulator takes
no credentials, the key is checked all the same), a bad one is a SpecError naming the file,
never a value from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom_operator import _backends
from chainloom_operator.errors import SpecError
from chainloom_operator.models import BackendTableSpec
from tests.google_key_support import write_service_account_key


def _spec(table: str, key: Path) -> BackendTableSpec:
    return BackendTableSpec.model_validate({
        "backend": "bigtable",
        "bigtable": {"table": table, "app_profile": "operator", "credentials_file": str(key)},
    })  # fmt: skip


def test_a_usable_key_creates_the_tables(bigtable_table_name: str, tmp_path: Path) -> None:
    key = write_service_account_key(tmp_path / "key.json")
    outcome = _backends.ensure(_spec(bigtable_table_name, key))
    assert set(outcome.created) == {bigtable_table_name, f"{bigtable_table_name}-index"}
    _backends.drop(_spec(bigtable_table_name, key))


def test_a_bad_key_is_a_spec_error_naming_the_file(
    bigtable_table_name: str, tmp_path: Path
) -> None:
    key = write_service_account_key(tmp_path / "key.json", client_email=None)
    with pytest.raises(SpecError) as caught:
        _backends.ensure(_spec(bigtable_table_name, key))
    message = str(caught.value)
    problem = "not a service-account key (no client_email)"
    assert message == f"bigtable.credentials_file {key}: {problem}"
    assert "PRIVATE KEY" not in message
