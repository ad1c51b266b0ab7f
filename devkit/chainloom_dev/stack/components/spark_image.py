"""The Spark variant of the node's chainloom image: ``chainloom-spark:dev`` for SparkApplications.

A SparkApplication's driver and executors need what ``chainloom:dev`` leaves out to stay small:
a Java runtime and pyspark (the ``[spark]`` extra). This variant is a second
:class:`~chainloom_dev.stack.components.image.ImageRecipe`, built by the same steps from its own
caches beside the plain image's:

1. A Debian base with Debian's ``openjdk-17-jre-headless`` added by ``debootstrap --include``
   (the plain base's packages plus Java; cached once, checked to hold Java).
2. That base with the wheels of ``chainloom[operator,spark]`` installed offline (pyspark's
   wheel is built from its sdist once by pip and then served from pip's cache), chainloom
   itself uninstalled again: cached by ``pyproject.toml``.
3. Per source tree: the chainloom wheel installed into a copy of that, ``submit.py`` placed
   where the SparkApplication's ``mainApplicationFile`` names it, packed with ``JAVA_HOME`` set
   and Spark's Kubernetes entry point (:data:`ENTRYPOINT`), imported only when containerd lacks
   it (a gigabyte). Cached by the plain image's input hash plus this recipe.

It is built only when asked for (``chainloom-dev stack image --spark``, or the Spark node test),
never by ``stack up --node``: about a gigabyte that most runs do not need. The cache names
(``debian-*-java-*``, ``spark-dependencies-*``, ``images/spark-*``) stay clear of the plain
image's clean-up globs.
"""

from __future__ import annotations

from pathlib import Path

from chainloom_dev.stack.components.image import PLAIN_RECIPE, ImageRecipe
from chainloom_dev.stack.errors import InstallError

SPARK_IMAGE = "chainloom-spark:dev"
"""What the node's SparkApplications and Spark pods name (``imagePullPolicy: Never``)."""

SPARK_IMAGE_REFERENCE = "docker.io/library/chainloom-spark:dev"
"""The same name as containerd stores it."""

JAVA_PACKAGES = ("openjdk-17-jre-headless",)
"""Debian's Java runtime for Spark (Spark 4 runs on Java 17 or 21; bookworm ships 17)."""

JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
"""Where Debian installs that runtime."""

APPLICATION_FILE = Path("opt/chainloom/spark-apps/chainloom_spark/submit.py")
"""Where ``submit.py`` lies in the image (relative to its root): the default
``kubernetes.application_file`` (``local:///opt/chainloom/...``), as in the Dockerfile's image."""

ENTRYPOINT = ("python3", "-m", "chainloom_spark.pod_entrypoint")
"""Spark's Kubernetes contract (``driver ...`` / ``executor``), anything else to ``chainloom``
(:mod:`chainloom_spark.pod_entrypoint`): what the spark-operator's driver and executor pods run."""

SPARK_RECIPE_VERSION = "1"
"""Bump when the steps change, so cached Spark images are rebuilt."""


def check_java(rootfs: Path) -> None:
    """The base must hold Java where :data:`JAVA_HOME` says (``spark-submit`` looks there)."""
    if not (rootfs / JAVA_HOME.lstrip("/") / "bin" / "java").exists():
        raise InstallError("chainloom-spark-image", "installing Java", f"no java under {JAVA_HOME}")


SPARK_RECIPE = ImageRecipe(
    name="chainloom-spark-image",
    image=SPARK_IMAGE,
    reference=SPARK_IMAGE_REFERENCE,
    version=f"spark recipe {SPARK_RECIPE_VERSION}",
    extras="operator,spark",
    base_cache="python-java",
    dependencies_cache="spark-dependencies",
    archive_cache="spark",
    rebuild_command="chainloom-dev stack image --spark",
    extra_packages=JAVA_PACKAGES,
    base_minutes=4,
    check_base=check_java,
    env=(f"JAVA_HOME={JAVA_HOME}",),
    variant="spark",
    files=(("spark-apps/chainloom_spark/submit.py", APPLICATION_FILE),),
    layered_on=PLAIN_RECIPE,
    reimport=False,
    entrypoint=ENTRYPOINT,
)
"""``chainloom-spark:dev``: the plain image plus Java, pyspark and ``submit.py``. In no stack
group: ``chainloom-dev stack image --spark`` or ``stack up --only chainloom-spark-image``
builds it."""
