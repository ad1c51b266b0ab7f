"""The node's images, built without Docker or a registry: one recipe type, one set of steps.

The Dockerfile stays the recipe for users with Docker; here the same install is done by hand:
a Debian bookworm ``minbase`` root filesystem from the Debian archive (``debootstrap``, cached
once), the project's wheels and those of its runtime dependencies resolved and built on the
host (``pip wheel``; pip inside the root filesystem cannot reach the package index), installed
offline inside it, packed as an OCI archive and imported into the node's containerd. Debian's
Python is 3.11, so the wheels are resolved by a 3.11 interpreter.

An :class:`ImageRecipe` says what differs between images (name, extra Debian packages, pip
extras, cache names, environment, files placed); the steps below are written once for all of
them. :data:`PLAIN_RECIPE` is ``chainloom:dev``, what ``stack up --node`` imports; the Spark
variant (:mod:`chainloom_dev.stack.components.spark_image`) is a second recipe.

Three caches per recipe, so that a source change costs about a minute: the Debian base (once),
the base with the dependencies installed (keyed by ``pyproject.toml``), and the archive itself,
keyed by a hash of its inputs (``pyproject.toml``, ``README.md`` and the source trees, plus the
recipe's version): an unchanged tree reuses it, ``chainloom-dev stack image`` rebuilds it after a
change (only the chainloom wheel is built and installed then) and imports it again. The cache
keys are spelled exactly as they were when each recipe was first written, so existing caches
stay valid.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chainloom_dev.stack._install import install_once, is_installed, locked
from chainloom_dev.stack._model import Progress, Running
from chainloom_dev.stack._oci import ImageConfig, write_archive
from chainloom_dev.stack._paths import cache_dir
from chainloom_dev.stack._process import run
from chainloom_dev.stack.components._apt import ensure_command
from chainloom_dev.stack.components.node import ctr, import_image
from chainloom_dev.stack.errors import InstallError, MissingToolError, StackError

IMAGE = "chainloom:dev"
"""What pod specs name (with ``imagePullPolicy: Never`` or ``IfNotPresent``)."""

IMAGE_REFERENCE = "docker.io/library/chainloom:dev"
"""The same name as containerd stores it (the kubelet normalises ``chainloom:dev`` to this)."""

DEBIAN_SUITE = "bookworm"
"""The Debian release of the base (its Python, 3.11, decides which wheels are resolved)."""

DEBIAN_MIRROR = "http://deb.debian.org/debian"
"""Where ``debootstrap`` fetches the base packages."""

BASE_PACKAGES = ("python3", "python3-pip", "libstdc++6")
"""Added to ``minbase``: the interpreter, pip for the offline install, the C++ runtime that
manylinux wheels (grpcio) link against."""

RECIPE = "2"
"""Bump when the steps below change, so cached images are rebuilt."""

USER_ID = 10001
"""The image's ``chainloom`` user and group: what the chart's and the operator's pods run as
(``runAsUser``). It must have a passwd entry: kopf names its peering identity with
``getpass.getuser()``, which fails for a uid the image does not know."""

_SOURCE_TREES = ("services", "operator", "spark-apps")
_SKIPPED = {"__pycache__", ".mypy_cache", ".pytest_cache", "build"}
"""Left out of the hash: caches, and the ``build/`` folders setuptools leaves in a tree it built."""


@dataclass(frozen=True)
class ImageRecipe:
    """What makes one node image differ from another; :func:`build_image` does the rest."""

    name: str
    """The stack component (``chainloom-image``): also its lock's name and its errors' subject."""

    image: str
    """What pod specs name (``chainloom:dev``)."""

    reference: str
    """The same name as containerd stores it (``docker.io/library/chainloom:dev``)."""

    version: str
    """The recipe's version as its cache keys spell it (``recipe 2``): bump the number when the
    steps change, so cached images are rebuilt."""

    extras: str
    """The project's extras installed in the image (``operator``)."""

    base_cache: str
    """The base's cache folder is ``debian-<suite>-<base_cache>-<key>``."""

    dependencies_cache: str
    """The dependencies' cache folders are ``<dependencies_cache>-<key>``; other folders with
    this prefix are removed as stale, so no two recipes may share it."""

    archive_cache: str
    """The archives are ``images/<archive_cache>-<hash>.oci.tar``; others with this prefix are
    removed as stale, so no two recipes may share it."""

    rebuild_command: str
    """What ``stack status`` tells a user to run when the source changed since the build."""

    extra_packages: tuple[str, ...] = ()
    """Debian packages added to :data:`BASE_PACKAGES` in the base."""

    base_minutes: int = 3
    """About how long the first ``debootstrap`` takes, as the progress line says (it may take
    ten times that before it is given up)."""

    check_base: Callable[[Path], None] | None = None
    """Called with a fresh base's root filesystem: raises :class:`InstallError` when an extra
    package left out what the image needs."""

    env: tuple[str, ...] = ()
    """``NAME=value`` entries the image sets besides ``PATH`` and Python's two."""

    variant: str = ""
    """The image's ``io.chainloom.variant`` label ('' for none)."""

    files: tuple[tuple[str, Path], ...] = ()
    """Files of the checkout placed in the image: (path in the checkout, path in the image
    relative to its root)."""

    layered_on: ImageRecipe | None = None
    """The recipe whose input hash stands for the sources in this one's (the Spark image's
    hash is the plain one's plus its own recipe); ``None``: the source files are hashed."""

    reimport: bool = True
    """Import the archive on every start; ``False``: only when containerd lacks its manifest
    digest (a gigabyte is not imported twice)."""

    entrypoint: tuple[str, ...] = ("chainloom",)
    """What a container of the image runs when its pod names no ``command``."""

    dev_kit: bool = False
    """Also install the dev kit (``chainloom-dev``, from ``devkit/``), whose entry points give
    pods the simulated chains (``worker.adapter: redis-sim``) that node tests relay to. Only a
    development image has it: the Dockerfile's image is the product alone."""

    def base_packages(self) -> tuple[str, ...]:
        """Everything ``debootstrap`` adds to ``minbase``."""
        return (*BASE_PACKAGES, *self.extra_packages)

    def input_hash(self, root: Path) -> str:
        """A hash of everything the image is built from."""
        if self.layered_on is not None:
            header = f"{self.version} {self.extra_packages} {self.extras}\n"
            sources = self.layered_on.input_hash(root)
            return hashlib.sha256(header.encode() + sources.encode()).hexdigest()
        digest = hashlib.sha256(f"{self.version} {DEBIAN_SUITE} {self.extras}\n".encode())
        trees = (*_SOURCE_TREES, *(("devkit",) if self.dev_kit else ()))
        for path in _source_files(root, trees):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() if path.exists() else b"")
        return digest.hexdigest()

    def base_dir(self) -> Path:
        """Where the debootstrapped base root filesystem is cached."""
        packages = self.base_packages()
        key = hashlib.sha256(f"{DEBIAN_SUITE} {DEBIAN_MIRROR} {packages}".encode()).hexdigest()
        return cache_dir() / f"debian-{DEBIAN_SUITE}-{self.base_cache}-{key[:8]}"

    def dependencies_dir(self, root: Path) -> Path:
        """Where the base with the project's dependencies installed is cached: its key is
        ``pyproject.toml`` (the dependencies), the recipe and the base, so a source change
        reuses it."""
        key = hashlib.sha256(
            f"{self.version} {self.extras} {self.base_dir().name}\n".encode()
            + (root / "pyproject.toml").read_bytes()
        ).hexdigest()
        return cache_dir() / f"{self.dependencies_cache}-{key[:12]}"

    def archive(self, inputs: str) -> Path:
        """The cached OCI archive for the inputs hash ``inputs``."""
        return cache_dir() / "images" / f"{self.archive_cache}-{inputs[:16]}.oci.tar"

    def image_config(self, inputs: str) -> ImageConfig:
        """What the image runs (its :attr:`entrypoint`), as the ``chainloom`` user, labelled
        with its inputs."""
        labels = {"io.chainloom.inputs": inputs}
        if self.variant:
            labels["io.chainloom.variant"] = self.variant
        return ImageConfig(
            entrypoint=self.entrypoint,
            env=(
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                *self.env,
                "PYTHONDONTWRITEBYTECODE=1",
                "PYTHONUNBUFFERED=1",
            ),
            user=f"{USER_ID}:{USER_ID}",
            labels=labels,
        )


PLAIN_RECIPE = ImageRecipe(
    name="chainloom-image",
    image=IMAGE,
    reference=IMAGE_REFERENCE,
    version=f"recipe {RECIPE}",
    extras="operator",
    base_cache="python",
    dependencies_cache="chainloom-dependencies",
    archive_cache="chainloom",
    rebuild_command="chainloom-dev stack image",
    dev_kit=True,
)
"""``chainloom:dev``: the operator's extras and the dev kit (the operator runs from it; relayer
workers on the node relay to the dev kit's simulated chains)."""


def source_root() -> Path:
    """The checkout the running ``chainloom`` was imported from (the image's source)."""
    import chainloom  # noqa: PLC0415 - the package itself, to find its checkout

    root = Path(chainloom.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").exists():
        raise StackError(
            f"the chainloom image is built from a source checkout; {root} has no pyproject.toml "
            "(install chainloom with pip install -e from a clone)"
        )
    return root


def _source_files(root: Path, trees: tuple[str, ...]) -> list[Path]:
    """``pyproject.toml``, ``README.md`` and the source trees' files, byte code and caches left
    out, in a stable order."""
    files = [root / "pyproject.toml", root / "README.md"]
    for tree in trees:
        for path in sorted((root / tree).rglob("*")):
            relative = path.relative_to(root)
            skipped = _SKIPPED.intersection(relative.parts) or path.suffix == ".pyc"
            if path.is_file() and not skipped and ".egg-info" not in relative.as_posix():
                files.append(path)
    return files


def _build_base(recipe: ImageRecipe, progress: Progress) -> Path:
    target = recipe.base_dir()
    if is_installed(target):
        return target
    debootstrap = ensure_command("debootstrap", "debootstrap", progress)
    packages = recipe.base_packages()

    def build(tmp: Path) -> None:
        progress.step(
            f"debootstrap --variant=minbase {DEBIAN_SUITE} + {', '.join(packages)} "
            f"(first run only: about {recipe.base_minutes} minutes)"
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
            timeout=recipe.base_minutes * 600,
        )
        if result.returncode != 0:
            raise InstallError(recipe.name, "running debootstrap", result.stdout + result.stderr)
        if recipe.check_base is not None:
            recipe.check_base(tmp / "rootfs")
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (tmp / "rootfs" / leftover).glob("*"):
                if entry.is_file():
                    entry.unlink()

    return install_once(target, build)


def _wheel_python() -> str:
    """The Python that resolves the wheels: Debian bookworm's own 3.11 where the host has it
    with pip (its environment markers are exactly the image's: redis needs ``async-timeout``
    below 3.11.3, say), else this interpreter if it is a 3.11."""
    debian = Path("/usr/bin/python3.11")
    if debian.exists() and run([str(debian), "-m", "pip", "--version"]).returncode == 0:
        return str(debian)
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    raise MissingToolError("python3.11 with pip", "apt-get install -y python3.11 python3-pip")


def ensure_generated(root: Path) -> None:
    """The gRPC modules are generated, not committed: generate them before packing the tree."""
    if not (root / "services" / "chainloom" / "rpc" / "generated" / ".stamp").exists():
        result = run([sys.executable, "-m", "chainloom.rpc.build"], cwd=root, timeout=300)
        if result.returncode != 0:
            raise InstallError(
                "chainloom-image", "generating the gRPC modules", result.stdout + result.stderr
            )


def build_image(recipe: ImageRecipe, progress: Progress) -> tuple[Path, str]:
    """Build (or reuse) ``recipe``'s image archive of the current source tree; return it and
    its inputs hash."""
    root = source_root()
    ensure_generated(root)
    inputs = recipe.input_hash(root)
    archive = recipe.archive(inputs)
    if archive.exists():
        return archive, inputs
    dependencies = _build_dependencies(recipe, root, progress)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with locked(recipe.name):
        if archive.exists():
            return archive, inputs
        work = archive.parent / f".{recipe.archive_cache}-build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            base = dependencies / "rootfs"
            _build_into(recipe, work, base, root, archive, inputs=inputs, progress=progress)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for old in archive.parent.glob(f"{recipe.archive_cache}-*.oci.tar"):
            if old != archive:
                old.unlink()
    return archive, inputs


def pip_wheel(root: Path, into: Path, *more: str) -> None:
    result = run(
        [_wheel_python(), "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(into), *more],
        cwd=root,
        timeout=1800,
    )
    if result.returncode != 0:
        raise InstallError("chainloom-image", "running pip wheel", result.stdout + result.stderr)


def pip_install_offline(rootfs: Path, wheels: Path, *requirements: str) -> None:
    """Install ``requirements`` from ``wheels`` with the root filesystem's own pip (chroot)."""
    inside = rootfs / "opt" / "chainloom-wheels"
    shutil.copytree(wheels, inside)
    try:
        installed = run(
            [
                "chroot",
                str(rootfs),
                "python3",
                "-m",
                "pip",
                "install",
                "--no-index",
                "--find-links",
                "/opt/chainloom-wheels",
                "--break-system-packages",
                "--root-user-action=ignore",
                "--no-cache-dir",
                "--quiet",
                *requirements,
            ],
            timeout=1800,
        )
    finally:
        shutil.rmtree(inside, ignore_errors=True)
    if installed.returncode != 0:
        raise InstallError(
            "chainloom-image", "installing the wheels", installed.stdout + installed.stderr
        )


def copy_tree(source: Path, target: Path) -> None:
    copied = run(["cp", "-a", str(source), str(target)], timeout=600)
    if copied.returncode != 0:
        raise InstallError("chainloom-image", f"copying {source}", copied.stderr)


def _build_dependencies(recipe: ImageRecipe, root: Path, progress: Progress) -> Path:
    """The recipe's Debian base with every runtime dependency of chainloom installed (not
    chainloom itself)."""
    target = recipe.dependencies_dir(root)
    if is_installed(target):
        return target
    base = _build_base(recipe, progress)

    def build(tmp: Path) -> None:
        rootfs = tmp / "rootfs"
        progress.step(
            f"resolving and building wheels of chainloom[{recipe.extras}]'s dependencies "
            "with pip for Python 3.11"
        )
        pip_wheel(root, tmp / "wheels", f"{root}[{recipe.extras}]")
        progress.step(f"installing them offline into a copy of the Debian base ({base.name})")
        copy_tree(base / "rootfs", rootfs)
        pip_install_offline(rootfs, tmp / "wheels", f"chainloom[{recipe.extras}]")
        removed = run(
            [
                *("chroot", str(rootfs), "python3", "-m", "pip", "uninstall"),
                *("--yes", "--quiet", "--break-system-packages", "chainloom"),
            ],
            timeout=600,
        )
        if removed.returncode != 0:
            raise InstallError(
                recipe.name, "uninstalling chainloom", removed.stdout + removed.stderr
            )
        for documentation in ("usr/share/doc", "usr/share/man", "usr/share/info"):
            shutil.rmtree(rootfs / documentation, ignore_errors=True)
        shutil.rmtree(tmp / "wheels")

    for stale in cache_dir().glob(f"{recipe.dependencies_cache}-*"):
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    return install_once(target, build)


def _build_into(
    recipe: ImageRecipe,
    work: Path,
    dependencies_rootfs: Path,
    root: Path,
    archive: Path,
    *,
    inputs: str,
    progress: Progress,
) -> None:
    progress.step("building the chainloom wheel and installing it into the dependencies' copy")
    pip_wheel(root, work / "wheels", "--no-deps", str(root))
    rootfs = work / "rootfs"
    copy_tree(dependencies_rootfs, rootfs)
    pip_install_offline(rootfs, work / "wheels", "--no-deps", "chainloom")
    if recipe.dev_kit:
        # Built from a clean copy: setuptools would reuse (and pack) a stale devkit/build/.
        devkit = work / "devkit"
        unbuilt = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
        shutil.copytree(root / "devkit", devkit, ignore=unbuilt)
        pip_wheel(root, work / "dev-wheels", "--no-deps", str(devkit))
        pip_install_offline(rootfs, work / "dev-wheels", "--no-deps", "chainloom-dev")
    add_user(rootfs)
    for source, placed in recipe.files:
        (rootfs / placed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / source, rootfs / placed)
    progress.step(f"packing the image as an OCI archive ({recipe.image})")
    partial = archive.with_name(f".{archive.name}.tmp-{os.getpid()}")
    write_archive(rootfs, partial, recipe.reference, recipe.image_config(inputs))
    partial.rename(archive)


def add_user(rootfs: Path) -> None:
    """The ``chainloom`` user and group (no login, home ``/tmp``: the root filesystem is
    read-only in the pods, ``/tmp`` an emptyDir)."""
    with (rootfs / "etc" / "passwd").open("a") as passwd:
        passwd.write(f"chainloom:x:{USER_ID}:{USER_ID}:chainloom:/tmp:/usr/sbin/nologin\n")
    with (rootfs / "etc" / "group").open("a") as group:
        group.write(f"chainloom:x:{USER_ID}:\n")


def archive_digest(archive: Path) -> str:
    """The manifest digest an OCI archive's ``index.json`` names (what ``ctr images ls``
    shows for the imported image)."""
    with tarfile.open(archive) as packed:
        member = packed.extractfile("index.json")
        if member is None:
            raise StackError(f"{archive} has no index.json")
        index = json.loads(member.read())
    return str(index["manifests"][0]["digest"])


def import_if_changed(socket: Path, archive: Path, reference: str) -> bool:
    """Import ``archive`` into the containerd at ``socket`` unless the image ``reference`` it
    holds is there already (same manifest digest). True if imported."""
    digest = archive_digest(archive)
    for line in ctr(socket, "images", "ls", timeout=60).splitlines()[1:]:
        fields = line.split()
        if fields[:1] == [reference] and digest in fields:
            return False
    import_image(socket, archive)
    return True


class NodeImage:
    """A recipe's image in the node's containerd (an installed artefact: pid 0)."""

    requires: tuple[str, ...] = ("containerd",)

    def __init__(self, recipe: ImageRecipe) -> None:
        self.recipe = recipe
        """What this image is built from."""
        self.name = recipe.name
        self._built: tuple[Path, str] | None = None
        """What :meth:`install` built: :meth:`start` imports that, even if the tree has
        changed since (an edit during the build would otherwise start a second build)."""

    def install(self, progress: Progress) -> None:
        self._built = build_image(self.recipe, progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del run_dir, previous
        recipe = self.recipe
        archive, inputs = self._built or build_image(recipe, progress)
        self._built = None
        socket = deps["containerd"].extra["socket"]
        size = archive.stat().st_size >> 20
        if recipe.reimport:
            progress.step(f"importing {recipe.image} ({size} MiB) into containerd")
            import_image(Path(socket), archive)
        else:
            progress.step(f"importing {recipe.image} ({size} MiB) into containerd, if it changed")
            import_if_changed(Path(socket), archive, recipe.reference)
        extra = {"socket": socket, "inputs": inputs, "archive": str(archive)}
        running = Running(self.name, "", recipe.image, 0, "", extra=extra)
        return Running(self.name, self.check(running), recipe.image, 0, "", extra=extra)

    def check(self, running: Running) -> str:
        listed = ctr(Path(running.extra["socket"]), "images", "ls", "-q", timeout=30).split()
        if self.recipe.reference not in listed:
            raise RuntimeError(f"{self.recipe.image} is not in the node's containerd")
        inputs = running.extra["inputs"]
        current = self.recipe.input_hash(source_root())
        state = (
            "" if current == inputs else f", source changed since: {self.recipe.rebuild_command}"
        )
        return f"inputs {inputs[:12]}{state}"
