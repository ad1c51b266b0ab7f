"""The Spark variant of the node's chainloom image: ``chainloom-spark:dev`` for SparkApplications.

A SparkApplication's driver and executors need what ``chainloom:dev`` leaves out to stay small:
a Java runtime and pyspark (the ``[spark]`` extra). This variant is built the same way, without
Docker or a registry, from its own caches beside the plain image's:

1. A Debian base with Debian's ``openjdk-17-jre-headless`` added by ``debootstrap --include``
   (the plain base's packages plus Java; cached once).
2. That base with the wheels of ``chainloom[operator,spark]`` installed offline (pyspark's
   wheel is built from its sdist once by pip and then served from pip's cache), chainloom
   itself uninstalled again: cached by ``pyproject.toml``.
3. Per source tree: the chainloom wheel installed into a copy of that, ``submit.py`` placed
   where the SparkApplication's ``mainApplicationFile`` names it, packed and imported like the
   plain image. Cached by the plain image's input hash plus this recipe.

It is built only when asked for (``chainloom stack image --spark``, or the Spark node test),
never by ``stack up --node``: about a gigabyte that most runs do not need. The cache names
(``debian-*-java-*``, ``spark-dependencies-*``, ``images/spark-*``) stay clear of the plain
image's clean-up globs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path

from chainloom.stack._install import install_once, is_installed, locked
from chainloom.stack._model import Progress, Running
from chainloom.stack._oci import ImageConfig, write_archive
from chainloom.stack._paths import cache_dir
from chainloom.stack._process import run
from chainloom.stack.components._apt import ensure_command
from chainloom.stack.components.image import (
    BASE_PACKAGES,
    DEBIAN_MIRROR,
    DEBIAN_SUITE,
    USER_ID,
    add_user,
    copy_tree,
    ensure_generated,
    input_hash,
    pip_install_offline,
    pip_wheel,
    source_root,
)
from chainloom.stack.components.node import ctr, import_image
from chainloom.stack.errors import InstallError, StackError

SPARK_IMAGE = "chainloom-spark:dev"
"""What the node's SparkApplications and Spark pods name (``imagePullPolicy: Never``)."""

SPARK_IMAGE_REFERENCE = "docker.io/library/chainloom-spark:dev"
"""The same name as containerd stores it."""

JAVA_PACKAGES = ("openjdk-17-jre-headless",)
"""Debian's Java runtime for Spark (Spark 4 runs on Java 17 or 21; bookworm ships 17)."""

JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
"""Where Debian installs that runtime."""

SPARK_EXTRAS = "operator,spark"
"""The project's extras installed in the Spark image."""

APPLICATION_FILE = Path("opt/chainloom/spark-apps/chainloom_spark/submit.py")
"""Where ``submit.py`` lies in the image (relative to its root): the default
``kubernetes.application_file`` (``local:///opt/chainloom/...``), as in the Dockerfile's image."""

SPARK_RECIPE = "1"
"""Bump when the steps below change, so cached Spark images are rebuilt."""


def spark_input_hash(root: Path) -> str:
    """A hash of everything the Spark image is built from (the plain image's inputs too)."""
    recipe = f"spark recipe {SPARK_RECIPE} {JAVA_PACKAGES} {SPARK_EXTRAS}\n"
    return hashlib.sha256(recipe.encode() + input_hash(root).encode()).hexdigest()


def spark_base_dir() -> Path:
    """Where the debootstrapped base with Java is cached."""
    packages = (*BASE_PACKAGES, *JAVA_PACKAGES)
    key = hashlib.sha256(f"{DEBIAN_SUITE} {DEBIAN_MIRROR} {packages}".encode()).hexdigest()
    return cache_dir() / f"debian-{DEBIAN_SUITE}-python-java-{key[:8]}"


def spark_dependencies_dir(root: Path) -> Path:
    """Where the Java base with the dependencies installed is cached (keyed by
    ``pyproject.toml``, the recipe and the base)."""
    key = hashlib.sha256(
        f"spark recipe {SPARK_RECIPE} {SPARK_EXTRAS} {spark_base_dir().name}\n".encode()
        + (root / "pyproject.toml").read_bytes()
    ).hexdigest()
    return cache_dir() / f"spark-dependencies-{key[:12]}"


def spark_image_archive(inputs: str) -> Path:
    """The cached OCI archive of the Spark image for the inputs hash ``inputs``."""
    return cache_dir() / "images" / f"spark-{inputs[:16]}.oci.tar"


def _build_spark_base(progress: Progress) -> Path:
    target = spark_base_dir()
    if is_installed(target):
        return target
    debootstrap = ensure_command("debootstrap", "debootstrap", progress)
    packages = (*BASE_PACKAGES, *JAVA_PACKAGES)

    def build(tmp: Path) -> None:
        progress.step(
            f"debootstrap --variant=minbase {DEBIAN_SUITE} + {', '.join(packages)} "
            "(first run only: about 4 minutes)"
        )
        result = run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(packages)}",
                DEBIAN_SUITE,
                str(tmp / "rootfs"),
                DEBIAN_MIRROR,
            ],
            timeout=2400,
        )
        if result.returncode != 0:
            raise InstallError(
                "chainloom-spark-image", "running debootstrap", result.stdout + result.stderr
            )
        if not (tmp / "rootfs" / JAVA_HOME.lstrip("/") / "bin" / "java").exists():
            raise InstallError(
                "chainloom-spark-image", "installing Java", f"no java under {JAVA_HOME}"
            )
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (tmp / "rootfs" / leftover).glob("*"):
                if entry.is_file():
                    entry.unlink()

    return install_once(target, build)


def _chroot_pip(rootfs: Path, *args: str) -> None:
    result = run(["chroot", str(rootfs), "python3", "-m", "pip", *args], timeout=600)
    if result.returncode != 0:
        raise InstallError(
            "chainloom-spark-image", f"pip {args[0]} in the image", result.stdout + result.stderr
        )


def _build_spark_dependencies(root: Path, progress: Progress) -> Path:
    """The Java base with every runtime dependency of chainloom[operator,spark] installed."""
    target = spark_dependencies_dir(root)
    if is_installed(target):
        return target
    base = _build_spark_base(progress)

    def build(tmp: Path) -> None:
        progress.step(
            f"resolving and building wheels of chainloom[{SPARK_EXTRAS}]'s dependencies "
            "(pyspark included) with pip for Python 3.11"
        )
        pip_wheel(root, tmp / "wheels", f"{root}[{SPARK_EXTRAS}]")
        progress.step("installing them offline into a copy of the Debian base with Java")
        copy_tree(base / "rootfs", tmp / "rootfs")
        pip_install_offline(tmp / "rootfs", tmp / "wheels", f"chainloom[{SPARK_EXTRAS}]")
        _chroot_pip(
            tmp / "rootfs", "uninstall", "--yes", "--quiet", "--break-system-packages", "chainloom"
        )
        for documentation in ("usr/share/doc", "usr/share/man", "usr/share/info"):
            shutil.rmtree(tmp / "rootfs" / documentation, ignore_errors=True)
        shutil.rmtree(tmp / "wheels")

    for stale in cache_dir().glob("spark-dependencies-*"):
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    return install_once(target, build)


def build_spark_image(progress: Progress) -> tuple[Path, str]:
    """Build (or reuse) the Spark image archive of the current source tree; return it and its
    inputs hash."""
    root = source_root()
    ensure_generated(root)
    inputs = spark_input_hash(root)
    archive = spark_image_archive(inputs)
    if archive.exists():
        return archive, inputs
    dependencies = _build_spark_dependencies(root, progress)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with locked("chainloom-spark-image"):
        if archive.exists():
            return archive, inputs
        work = archive.parent / f".spark-build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            progress.step("building the chainloom wheel and installing it into the Spark base")
            pip_wheel(root, work / "wheels", "--no-deps", str(root))
            rootfs = work / "rootfs"
            copy_tree(dependencies / "rootfs", rootfs)
            pip_install_offline(rootfs, work / "wheels", "--no-deps", "chainloom")
            add_user(rootfs)
            application = rootfs / APPLICATION_FILE
            application.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / "spark-apps" / "chainloom_spark" / "submit.py", application)
            progress.step(f"packing the image as an OCI archive ({SPARK_IMAGE})")
            partial = archive.with_name(f".{archive.name}.tmp-{os.getpid()}")
            write_archive(rootfs, partial, SPARK_IMAGE_REFERENCE, spark_image_config(inputs))
            partial.rename(archive)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for old in archive.parent.glob("spark-*.oci.tar"):
            if old != archive:
                old.unlink()
    return archive, inputs


def spark_image_config(inputs: str) -> ImageConfig:
    """The plain image's configuration plus Java's home (``spark-submit`` looks for it)."""
    return ImageConfig(
        entrypoint=("chainloom",),
        env=(
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            f"JAVA_HOME={JAVA_HOME}",
            "PYTHONDONTWRITEBYTECODE=1",
            "PYTHONUNBUFFERED=1",
        ),
        user=f"{USER_ID}:{USER_ID}",
        labels={"io.chainloom.inputs": inputs, "io.chainloom.variant": "spark"},
    )


def archive_digest(archive: Path) -> str:
    """The manifest digest an OCI archive's ``index.json`` names (what ``ctr images ls``
    shows for the imported image)."""
    with tarfile.open(archive) as packed:
        member = packed.extractfile("index.json")
        if member is None:
            raise StackError(f"{archive} has no index.json")
        index = json.loads(member.read())
    return str(index["manifests"][0]["digest"])


def import_if_changed(socket: Path, archive: Path) -> bool:
    """Import ``archive`` into the containerd at ``socket`` unless the Spark image it holds is
    there already (same manifest digest): a gigabyte is not imported twice. True if imported."""
    digest = archive_digest(archive)
    for line in ctr(socket, "images", "ls", timeout=60).splitlines()[1:]:
        fields = line.split()
        if fields[:1] == [SPARK_IMAGE_REFERENCE] and digest in fields:
            return False
    import_image(socket, archive)
    return True


class ChainloomSparkImage:
    """``chainloom-spark:dev`` in the node's containerd (an artefact: pid 0). In no group:
    ``chainloom stack image --spark`` or ``stack up --only chainloom-spark-image`` builds it."""

    name = "chainloom-spark-image"
    requires: tuple[str, ...] = ("containerd",)

    def __init__(self) -> None:
        self._built: tuple[Path, str] | None = None
        """What :meth:`install` built, imported by :meth:`start`."""

    def install(self, progress: Progress) -> None:
        self._built = build_spark_image(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del run_dir, previous
        archive, inputs = self._built or build_spark_image(progress)
        self._built = None
        socket = deps["containerd"].extra["socket"]
        size = archive.stat().st_size >> 20
        progress.step(f"importing {SPARK_IMAGE} ({size} MiB) into containerd, if it changed")
        import_if_changed(Path(socket), archive)
        extra = {"socket": socket, "inputs": inputs, "archive": str(archive)}
        running = Running(self.name, "", SPARK_IMAGE, 0, "", extra=extra)
        return Running(self.name, self.check(running), SPARK_IMAGE, 0, "", extra=extra)

    def check(self, running: Running) -> str:
        listed = ctr(Path(running.extra["socket"]), "images", "ls", "-q", timeout=30).split()
        if SPARK_IMAGE_REFERENCE not in listed:
            raise RuntimeError(f"{SPARK_IMAGE} is not in the node's containerd")
        inputs = running.extra["inputs"]
        current = spark_input_hash(source_root())
        state = "" if current == inputs else ", source changed since: chainloom stack image --spark"
        return f"inputs {inputs[:12]}{state}"
