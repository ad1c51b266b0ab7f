"""The distribution's shape: importable packages, no shadowing of the standard library."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib

from tests.conftest import REPO_ROOT

EXTRA_ONLY = {
    "operator": {"kopf", "aiohttp", "lightkube"},
    "spark": {"pyspark", "pyarrow", "pandas"},
}
"""Packages the library does not import, by the extra that installs them."""


def _project() -> dict[str, object]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _names(requirements: object) -> set[str]:
    assert isinstance(requirements, list)
    return {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0] for requirement in requirements}


def test_stdlib_operator_is_not_shadowed_from_the_repository_root() -> None:
    # Run from the repository root, where a folder named `operator/` sits on sys.path[0].
    code = "import operator, chainloom_operator; print(operator.itemgetter(1)([5, 7]))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7"


def test_the_three_packages_import() -> None:
    import chainloom
    import chainloom_operator
    import chainloom_spark

    assert chainloom.__file__ is not None
    assert "services" in chainloom.__file__
    assert "operator" in str(chainloom_operator.__file__)
    assert "spark-apps" in str(chainloom_spark.__file__)


def test_console_command_lists_every_subcommand_group() -> None:
    from click.testing import CliRunner

    from chainloom.cli import main
    from chainloom.cli._main import SUBCOMMANDS

    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in SUBCOMMANDS:
        assert name in result.output
        sub = CliRunner().invoke(main, [name, "--help"])
        assert sub.exit_code == 0, sub.output


def test_parts_the_library_does_not_import_are_extras() -> None:
    project = _project()
    runtime = _names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    for extra, packages in EXTRA_ONLY.items():
        assert _names(extras[extra]) == packages, extra
        assert not packages & runtime, f"{packages & runtime} are runtime dependencies"
    # The tests use lightkube (tests/conftest.py, tests/cluster/): dev pulls it in.
    assert "chainloom[operator]" in extras["dev"]
    # Never the official client: kopf imports it whenever it is installed (~50 MB per operator).
    everywhere = runtime.union(*(_names(packages) for packages in extras.values()))
    assert "kubernetes" not in everywhere


def test_the_library_imports_no_package_of_an_extra() -> None:
    modules = {"kopf", "aiohttp", "lightkube", "pyspark", "pyarrow", "pandas"}
    found = []
    for path in (REPO_ROOT / "services" / "chainloom").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [f"{path}: {n}" for n in names if n.split(".")[0] in modules]
    assert found == [], "move the package from its extra to the dependencies, or the import out"


def test_the_wheel_holds_only_the_product(tmp_path) -> None:
    """A wheel built from pyproject.toml has the three product packages and nothing of the dev
    kit (the local stack, the simulators, ``chainloom-dev``)."""
    import zipfile

    # A copy of what the wheel is built from: setuptools reuses a checkout's build/ directory,
    # and one left from before the dev kit moved out would put the old files back.
    source = tmp_path / "source"
    for name in ("pyproject.toml", "README.md"):
        source.mkdir(exist_ok=True)
        shutil.copy(REPO_ROOT / name, source / name)
    for tree in ("services", "operator", "spark-apps"):
        shutil.copytree(REPO_ROOT / tree, source / tree,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
         "--wheel-dir", str(tmp_path), str(source)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("chainloom-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names if not name.startswith("chainloom-")}
    assert tops == {"chainloom", "chainloom_operator", "chainloom_spark"}
    dev_kit = ("chainloom_dev", "chainloom/stack/", "chainloom/testing/")
    assert not [name for name in names if name.startswith(dev_kit)]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    declared = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "chainloom-dev" not in declared
    assert "chainloom = chainloom.cli:main" in declared
