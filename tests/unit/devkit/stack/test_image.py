"""The image recipes' cache keys, pinned: a changed key rebuilds every cached image and base.

The values were computed by the two separate builders these recipes replaced; caches built then
(``debian-bookworm-python-*``, ``chainloom-dependencies-*``, ``images/chainloom-*.oci.tar`` and
the Spark ones) must still be found. A deliberate change bumps a recipe's version and this pin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainloom_dev.stack.components.image import PLAIN_RECIPE, ImageRecipe
from chainloom_dev.stack.components.spark_image import SPARK_RECIPE


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINLOOM_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("recipe", "inputs", "base", "dependencies", "archive"),
    [
        (
            PLAIN_RECIPE,
            "6b8f0a350acd77585f560756c5b4ef20d9cf69072a8a3ecf63a674506fe08012",
            "debian-bookworm-python-e8c854b5",
            "chainloom-dependencies-b2b9f04d3d92",
            "chainloom-6b8f0a350acd7758.oci.tar",
        ),
        (
            SPARK_RECIPE,
            "d024951028dca364fa125a36f15340a7119a4d675e6345e3060dc1306af8dd35",
            "debian-bookworm-python-java-6aff8f3d",
            "spark-dependencies-7869a0aad5ac",
            "spark-d024951028dca364.oci.tar",
        ),
    ],
    ids=["plain", "spark"],
)
def test_the_cache_keys_are_unchanged(
    checkout: Path, recipe: ImageRecipe, inputs: str, base: str, dependencies: str, archive: str
) -> None:
    assert recipe.input_hash(checkout) == inputs
    assert recipe.base_dir().name == base
    assert recipe.dependencies_dir(checkout).name == dependencies
    assert recipe.archive(inputs).name == archive


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
