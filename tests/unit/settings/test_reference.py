"""docs/configuration.md carries the reference generated from the models, up to date."""

from __future__ import annotations

from pathlib import Path

from chainloom.settings.reference import BEGIN, END, main, render

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


def test_check_reports_a_stale_copy_and_writes_nothing(tmp_path: Path, capsys):
    copy = tmp_path / "configuration.md"
    copy.write_text(DOC.read_text())
    assert main(["--check", str(copy)]) == 0
    stale = DOC.read_text().replace("Seconds between looks for overdue gaps.", "Old words.")
    copy.write_text(stale)
    assert main(["--check", str(copy)]) == 1
    assert copy.read_text() == stale
    assert f"{copy}: stale" in capsys.readouterr().out
    assert main([str(copy)]) == 0
    assert copy.read_text() == DOC.read_text()


def test_a_section_that_may_be_null_has_its_row_and_its_fields_rows():
    rows = [line.split(" | ")[:3] for line in render().splitlines() if line.startswith("| `feed.")]
    assert rows[0] == ["| `feed.redis`", "`null`", "`CHAINLOOM_FEED__REDIS`"]
    assert ["| `feed.redis.tls.ca_file`", "`null`", "`CHAINLOOM_FEED__REDIS__TLS__CA_FILE`"] in rows
    assert ["| `feed.redis.username`", "`null`", "`CHAINLOOM_FEED__REDIS__USERNAME`"] in rows
