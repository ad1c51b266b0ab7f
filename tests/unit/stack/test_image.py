"""The image recipes' cache keys, pinned: a changed key rebuilds every cached image and base.

The values were computed by the two separate builders these recipes replaced; caches built then
(``debian-bookworm-python-*``, ``chainloom-dependencies-*``, ``images/chainloom-*.oci.tar`` and
the Spark ones) must still be found. A deliberate change bumps a recipe's version and this pin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom.stack.components.image import PLAIN_RECIPE
from chainloom.stack.components.spark_image import SPARK_RECIPE


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINLOOM_CACHE", str(tmp_path / "cache"))


def test_the_plain_images_keys_are_unchanged(checkout: Path) -> None:
    inputs = PLAIN_RECIPE.input_hash(checkout)
    assert inputs == "6b8f0a350acd77585f560756c5b4ef20d9cf69072a8a3ecf63a674506fe08012"
    assert PLAIN_RECIPE.base_dir().name == "debian-bookworm-python-e8c854b5"
    assert PLAIN_RECIPE.dependencies_dir(checkout).name == "chainloom-dependencies-b2b9f04d3d92"
    assert PLAIN_RECIPE.archive(inputs).name == "chainloom-6b8f0a350acd7758.oci.tar"


def test_the_spark_images_keys_are_unchanged(checkout: Path) -> None:
    inputs = SPARK_RECIPE.input_hash(checkout)
    assert inputs == "d024951028dca364fa125a36f15340a7119a4d675e6345e3060dc1306af8dd35"
    assert SPARK_RECIPE.base_dir().name == "debian-bookworm-python-java-6aff8f3d"
    assert SPARK_RECIPE.dependencies_dir(checkout).name == "spark-dependencies-7869a0aad5ac"
    assert SPARK_RECIPE.archive(inputs).name == "spark-d024951028dca364.oci.tar"


def test_the_plain_image_runs_chainloom_without_a_variant_label() -> None:
    config = PLAIN_RECIPE.image_config("abc")
    assert config.entrypoint == ("chainloom",)
    assert config.env == (
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONUNBUFFERED=1",
    )
    assert config.user == "10001:10001"
    assert config.labels == {"io.chainloom.inputs": "abc"}
