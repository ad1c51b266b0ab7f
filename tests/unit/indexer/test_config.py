"""IndexerSettings: registered, loaded from all four sources, bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.indexer.config import IndexerSettings
from chainloom.indexer.service import bounds, spy_client
from chainloom.settings import SettingsError, load_settings
from chainloom.settings.registry import model_named


def test_the_model_is_registered_as_indexer() -> None:
    assert model_named("indexer", services_only=True) is IndexerSettings


def test_file_environment_and_flags_in_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "indexer.yaml"
    config.write_text(
        "spy:\n  address: spy.example:7073\n"
        "  emitters: [{chain: ethereum, address: '0x3ee18b2214aff97000d974cf647e7c347e8fa585'}]\n"
        "batch: {rows: 50}\n"
    )
    monkeypatch.setenv("CHAINLOOM_BATCH__LATENCY", "0.5")
    monkeypatch.setenv("CHAINLOOM_BUFFER", "300")
    settings = load_settings(IndexerSettings, config_file=config, flags={"buffer": 400})
    assert settings.spy.address == "spy.example:7073"
    assert settings.spy.emitters[0].chain == 2
    assert settings.batch.rows == 50
    assert settings.batch.latency == 0.5
    assert settings.buffer == 400
    pipeline_bounds = bounds(settings)
    assert (pipeline_bounds.batch_rows, pipeline_bounds.buffer) == (50, 400)
    client = spy_client(settings)
    assert client.address == "spy.example:7073"
    assert client.filters[0].chain == 2


def test_a_bad_value_is_one_line_naming_source_and_field(tmp_path: Path) -> None:
    config = tmp_path / "indexer.yaml"
    config.write_text("batch: {rows: 0}\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(IndexerSettings, config_file=config)
    assert str(caught.value).startswith(f"{config}: batch.rows:")


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(SettingsError, match=r"spy\.filters: unknown key"):
        load_settings(IndexerSettings, flags={"spy.filters": []})
