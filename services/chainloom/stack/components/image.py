"""The chainloom image for the local node, built without Docker or a registry.

The Dockerfile stays the recipe for users with Docker; here the same install is done by hand:
a Debian bookworm ``minbase`` root filesystem from the Debian archive (``debootstrap``, cached
once), the project's wheels and those of its runtime dependencies resolved and built on the
host (``pip wheel``; pip inside the root filesystem cannot reach the package index), installed
offline inside it, packed as an OCI archive and imported into the node's containerd as
``chainloom:dev``. Debian's Python is 3.11, so the wheels are resolved by a 3.11 interpreter.

Three caches, so that a source change costs about a minute: the Debian base (once), the base
with the dependencies installed (keyed by ``pyproject.toml``), and the archive itself, keyed by
a hash of its inputs (``pyproject.toml``, ``README.md`` and the source trees, plus this
recipe's version): an unchanged tree reuses it, ``chainloom stack image`` rebuilds it after a
change (only the chainloom wheel is built and installed then) and imports it again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from chainloom.stack._install import install_once, is_installed, locked
from chainloom.stack._model import Progress, Running
from chainloom.stack._oci import ImageConfig, write_archive
from chainloom.stack._paths import cache_dir
from chainloom.stack._process import run
from chainloom.stack.components._apt import ensure_command
from chainloom.stack.components.node import ctr, import_image
from chainloom.stack.errors import InstallError, MissingToolError, StackError

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

EXTRAS = "operator"
"""The project's extras installed in the image (the operator runs from it)."""

RECIPE = "2"
"""Bump when the steps below change, so cached images are rebuilt."""

USER_ID = 10001
"""The image's ``chainloom`` user and group: what the chart's and the operator's pods run as
(``runAsUser``). It must have a passwd entry: kopf names its peering identity with
``getpass.getuser()``, which fails for a uid the image does not know."""

_SOURCE_TREES = ("services", "operator", "spark-apps")
_SKIPPED = {"__pycache__", ".mypy_cache", ".pytest_cache"}


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


def input_hash(root: Path) -> str:
    """A hash of everything the image is built from."""
    digest = hashlib.sha256(f"recipe {RECIPE} {DEBIAN_SUITE} {EXTRAS}\n".encode())
    files = [root / "pyproject.toml", root / "README.md"]
    for tree in _SOURCE_TREES:
        for path in sorted((root / tree).rglob("*")):
            relative = path.relative_to(root)
            skipped = _SKIPPED.intersection(relative.parts) or path.suffix == ".pyc"
            if path.is_file() and not skipped and ".egg-info" not in relative.as_posix():
                files.append(path)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def base_rootfs_dir() -> Path:
    """Where the debootstrapped base root filesystem is cached."""
    key = hashlib.sha256(f"{DEBIAN_SUITE} {DEBIAN_MIRROR} {BASE_PACKAGES}".encode()).hexdigest()
    return cache_dir() / f"debian-{DEBIAN_SUITE}-python-{key[:8]}"


def image_archive(inputs: str) -> Path:
    """The cached OCI archive for the inputs hash ``inputs``."""
    return cache_dir() / "images" / f"chainloom-{inputs[:16]}.oci.tar"


def _build_base(progress: Progress) -> Path:
    target = base_rootfs_dir()
    if is_installed(target):
        return target
    debootstrap = ensure_command("debootstrap", "debootstrap", progress)

    def build(tmp: Path) -> None:
        progress.step(
            f"debootstrap --variant=minbase {DEBIAN_SUITE} + {', '.join(BASE_PACKAGES)} "
            "(first run only: about 3 minutes)"
        )
        result = run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                DEBIAN_SUITE,
                str(tmp / "rootfs"),
                DEBIAN_MIRROR,
            ],
            timeout=1800,
        )
        if result.returncode != 0:
            raise InstallError(
                "chainloom-image", "running debootstrap", result.stdout + result.stderr
            )
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


def dependencies_dir(root: Path) -> Path:
    """Where the base with the project's dependencies installed is cached: its key is
    ``pyproject.toml`` (the dependencies) and the base, so a source change reuses it."""
    key = hashlib.sha256(
        f"recipe {RECIPE} {EXTRAS} {base_rootfs_dir().name}\n".encode()
        + (root / "pyproject.toml").read_bytes()
    ).hexdigest()
    return cache_dir() / f"chainloom-dependencies-{key[:12]}"


def build_image(progress: Progress) -> tuple[Path, str]:
    """Build (or reuse) the image archive of the current source tree; return it and its hash."""
    root = source_root()
    ensure_generated(root)
    inputs = input_hash(root)
    archive = image_archive(inputs)
    if archive.exists():
        return archive, inputs
    dependencies = _build_dependencies(root, progress)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with locked("chainloom-image"):
        if archive.exists():
            return archive, inputs
        work = archive.parent / f".build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            _build_into(
                work, dependencies / "rootfs", root, archive, inputs=inputs, progress=progress
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for old in archive.parent.glob("chainloom-*.oci.tar"):
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


def _build_dependencies(root: Path, progress: Progress) -> Path:
    """The Debian base with every runtime dependency of chainloom installed (not chainloom)."""
    target = dependencies_dir(root)
    if is_installed(target):
        return target
    base = _build_base(progress)

    def build(tmp: Path) -> None:
        progress.step(
            f"resolving and building wheels of the dependencies (the {EXTRAS} extra included) "
            "with pip for Python 3.11"
        )
        pip_wheel(root, tmp / "wheels", f"{root}[{EXTRAS}]")
        progress.step("installing them offline into a copy of the Debian base")
        copy_tree(base / "rootfs", tmp / "rootfs")
        pip_install_offline(tmp / "rootfs", tmp / "wheels", f"chainloom[{EXTRAS}]")
        removed = run(
            [
                "chroot",
                str(tmp / "rootfs"),
                "python3",
                "-m",
                "pip",
                "uninstall",
                "--yes",
                "--quiet",
                "--break-system-packages",
                "chainloom",
            ]
        )
        if removed.returncode != 0:
            raise InstallError("chainloom-image", "uninstalling chainloom", removed.stderr)
        for documentation in ("usr/share/doc", "usr/share/man", "usr/share/info"):
            shutil.rmtree(tmp / "rootfs" / documentation, ignore_errors=True)
        shutil.rmtree(tmp / "wheels")

    for stale in cache_dir().glob("chainloom-dependencies-*"):
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    return install_once(target, build)


def _build_into(
    work: Path, dependencies: Path, root: Path, archive: Path, *, inputs: str, progress: Progress
) -> None:
    progress.step("building the chainloom wheel and installing it into the dependencies' copy")
    pip_wheel(root, work / "wheels", "--no-deps", str(root))
    rootfs = work / "rootfs"
    copy_tree(dependencies, rootfs)
    pip_install_offline(rootfs, work / "wheels", "--no-deps", "chainloom")
    add_user(rootfs)
    progress.step(f"packing the image as an OCI archive ({IMAGE})")
    partial = archive.with_name(f".{archive.name}.tmp-{os.getpid()}")
    write_archive(
        rootfs,
        partial,
        IMAGE_REFERENCE,
        ImageConfig(
            entrypoint=("chainloom",),
            env=(
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "PYTHONDONTWRITEBYTECODE=1",
                "PYTHONUNBUFFERED=1",
            ),
            user=f"{USER_ID}:{USER_ID}",
            labels={"io.chainloom.inputs": inputs},
        ),
    )
    partial.rename(archive)


def add_user(rootfs: Path) -> None:
    """The ``chainloom`` user and group (no login, home ``/tmp``: the root filesystem is
    read-only in the pods, ``/tmp`` an emptyDir)."""
    with (rootfs / "etc" / "passwd").open("a") as passwd:
        passwd.write(f"chainloom:x:{USER_ID}:{USER_ID}:chainloom:/tmp:/usr/sbin/nologin\n")
    with (rootfs / "etc" / "group").open("a") as group:
        group.write(f"chainloom:x:{USER_ID}:\n")


class ChainloomImage:
    """``chainloom:dev`` in the node's containerd (an installed artefact: pid 0)."""

    name = "chainloom-image"
    requires: tuple[str, ...] = ("containerd",)

    def __init__(self) -> None:
        self._built: tuple[Path, str] | None = None
        """What :meth:`install` built: :meth:`start` imports that, even if the tree has
        changed since (an edit during the build would otherwise start a second build)."""

    def install(self, progress: Progress) -> None:
        self._built = build_image(progress)

    def start(
        self,
        run_dir: Path,
        deps: dict[str, Running],
        progress: Progress,
        previous: Running | None,
    ) -> Running:
        del run_dir, previous
        archive, inputs = self._built or build_image(progress)
        self._built = None
        socket = deps["containerd"].extra["socket"]
        progress.step(f"importing {IMAGE} ({archive.stat().st_size >> 20} MiB) into containerd")
        import_image(Path(socket), archive)
        running = Running(
            self.name,
            "",
            IMAGE,
            0,
            "",
            extra={"socket": socket, "inputs": inputs, "archive": str(archive)},
        )
        return Running(self.name, self.check(running), IMAGE, 0, "", extra=running.extra)

    def check(self, running: Running) -> str:
        listed = ctr(Path(running.extra["socket"]), "images", "ls", "-q", timeout=30).split()
        if IMAGE_REFERENCE not in listed:
            raise RuntimeError(f"{IMAGE} is not in the node's containerd")
        inputs = running.extra["inputs"]
        current = input_hash(source_root())
        state = "" if current == inputs else ", source changed since: chainloom stack image"
        return f"inputs {inputs[:12]}{state}"
