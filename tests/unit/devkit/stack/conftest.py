"""A minimal source checkout for the image recipes' hash and cache-name tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """``pyproject.toml``, ``README.md`` and the three source trees, one empty module."""
    root = tmp_path / "src"
    (root / "services" / "chainloom").mkdir(parents=True)
    (root / "services" / "chainloom" / "__init__.py").write_text("")
    for tree in ("operator", "spark-apps"):
        (root / tree).mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'chainloom'\n")
    (root / "README.md").write_text("readme\n")
    return root
