"""The Spark image variant: its own cache keys, kept apart from the plain image's clean-ups."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from chainloom_dev.stack.components import image, spark_image
from chainloom_spark.settings import KubernetesSettings


def test_the_spark_hash_follows_the_sources_and_differs_from_the_plain_one(
    checkout: Path,
) -> None:
    before = spark_image.SPARK_RECIPE.input_hash(checkout)
    assert before != image.PLAIN_RECIPE.input_hash(checkout)
    (checkout / "services" / "chainloom" / "__init__.py").write_text("x = 1\n")
    assert spark_image.SPARK_RECIPE.input_hash(checkout) != before


def test_cache_names_escape_the_plain_images_clean_up(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINLOOM_CACHE", str(tmp_path / "cache"))
    archive = spark_image.SPARK_RECIPE.archive(spark_image.SPARK_RECIPE.input_hash(checkout))
    dependencies = spark_image.SPARK_RECIPE.dependencies_dir(checkout)
    # image.py removes other chainloom-*.oci.tar archives and chainloom-dependencies-* trees.
    assert not fnmatch.fnmatch(archive.name, "chainloom-*.oci.tar")
    assert not fnmatch.fnmatch(dependencies.name, "chainloom-dependencies-*")
    assert spark_image.SPARK_RECIPE.base_dir() != image.PLAIN_RECIPE.base_dir()
    assert archive.parent == image.PLAIN_RECIPE.archive("0" * 64).parent


def test_the_image_runs_as_nobody_with_java_home_set() -> None:
    config = spark_image.SPARK_RECIPE.image_config("abc")
    assert f"JAVA_HOME={spark_image.JAVA_HOME}" in config.env
    assert config.user == "10001:10001"
    assert config.labels["io.chainloom.variant"] == "spark"
    # submit.py lies where a SparkApplication's default mainApplicationFile names it.
    default = KubernetesSettings().application_file
    assert default == f"local:///{spark_image.APPLICATION_FILE.as_posix()}"
