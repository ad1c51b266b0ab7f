"""docs/eventstore.md documents every qualifier's encoding and every family's GC rule."""

from __future__ import annotations

from pathlib import Path

from chainloom.eventstore.encoding import CODECS
from chainloom.eventstore.schema import EVENT_FAMILIES

DOC = Path(__file__).resolve().parents[3] / "docs" / "eventstore.md"


def _rows() -> list[list[str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    return rows


def test_every_qualifier_has_a_documented_encoding() -> None:
    documented = {(row[0], row[1]) for row in _rows() if len(row) >= 3}
    for family, qualifier in CODECS:
        # patterned qualifiers (``Signatures:{GuardianSetIndex}``) match by their fixed part
        fixed = qualifier.split("{")[0]
        assert (family, qualifier) in documented or any(
            f == family and "{" in qualifier and "{" in q and q.startswith(fixed)
            for f, q in documented
        ), f"{family}:{qualifier} is not in {DOC.name}"


def test_documented_gc_rules_match_the_schema() -> None:
    documented = {row[0]: row[1] for row in _rows() if len(row) == 3}
    for spec in EVENT_FAMILIES:
        assert documented[spec.name] == f"max_versions={spec.max_versions}"
