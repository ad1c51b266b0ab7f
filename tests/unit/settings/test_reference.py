"""docs/configuration.md carries the reference generated from the models, up to date."""

from __future__ import annotations

from pathlib import Path

from chainloom.settings.reference import BEGIN, END, render

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_reference_in_the_docs_is_current():
    text = DOC.read_text()
    generated = BEGIN + text.partition(BEGIN)[2].partition(END)[0] + END + "\n"
    assert generated == render(), (
        "docs/configuration.md is stale: run `python -m chainloom.settings.reference "
        "docs/configuration.md`"
    )


def test_every_field_has_a_description():
    for line in render().splitlines():
        if line.startswith("| `"):
            assert line.rstrip().rsplit("|", 2)[1].strip(), line
