"""Every measured figure in README.md and docs/*.md is in the JSON of the run that produced it.

The rules are tests/support/figures.py's: a ``<!-- figures: FILE KEYS -->`` comment before a
table or paragraph names the JSON kept from the command that measured it (the e2e tier's
``docs/e2e-figures.json``, ``docs/chaos.json``, ``docs/soak.json``, ...), and every number in
that block must be a value there, at the precision shown. Counts of corpus files carry
``<!-- files: GLOB class=... -->`` and are counted. docs/benchmarks.md is generated from
docs/benchmarks.json (tests/unit/test_bench_report.py round-trips it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.figures import (
    MARKER,
    Figures,
    blocks,
    check_counts,
    check_markdown,
    numbers_in,
    shows,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_marked_figure_is_in_the_json_of_its_run(path: Path) -> None:
    assert check_markdown(path, ROOT) == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_counted_file_figure_is_the_count(path: Path) -> None:
    assert check_counts(path, ROOT) == []


def test_the_measured_sections_are_marked() -> None:
    """The tables of docs/reliability.md and the README's measured blocks name their source."""
    reliability = (ROOT / "docs" / "reliability.md").read_text().splitlines()
    for i, line in enumerate(reliability):
        starts_table = line.startswith("|") and (i == 0 or not reliability[i - 1].startswith("|"))
        if not starts_table:
            continue
        above = reliability[i - 1] if i else ""
        has_counts = "<!-- files:" in reliability[i + 2] if i + 2 < len(reliability) else False
        assert MARKER.search(above) or has_counts, f"docs/reliability.md:{i + 1}: table unmarked"
    readme = {b.source.name for b in blocks(ROOT / "README.md", ROOT)}
    assert {"e2e-figures.json", "chaos.json"} <= readme
    sources = {b.source.name for p in DOCS for b in blocks(p, ROOT)}
    assert {"e2e-figures.json", "chaos.json", "soak.json"} <= sources


def test_the_kept_e2e_figures_name_their_command() -> None:
    doc = json.loads((ROOT / "docs" / "e2e-figures.json").read_text())
    assert doc["command"].startswith("hack/test.sh")
    assert doc["date"] and doc["figures"]


# ----------------------------------------------------------------------------- the checker itself


def test_numbers_a_reader_sees() -> None:
    text = "took 16.2 s (bound `15s`, n=15) on 2026-11-30T10:00:00Z at 13:13, 48,967 requests"
    assert numbers_in(text) == ["16.2", "15", "48,967"]
    assert numbers_in("see [x](docs/a1.md) <!-- 99 --> v1.37.2") == []


@pytest.mark.parametrize(
    ("token", "value", "ok"),
    [
        ("16.2", 16.23, True),
        ("16.2", 16.26, False),
        ("4.1", 4.06, True),
        ("15", 15.0, True),
        ("15", 15.2, False),
        ("48,967", 48967, True),
        ("0.64", "0.64", True),
    ],
)
def test_a_token_shows_a_value_at_its_precision(token: str, value: object, ok: bool) -> None:
    assert shows(token, value) is ok


def test_a_figure_the_run_did_not_produce_is_caught(tmp_path: Path) -> None:
    figures = Figures()
    figures.record("ha", sigkill_s=16.23, settings={"lease_s": 15})
    figures.write(tmp_path / "figs.json", "hack/test.sh")
    good = "<!-- figures: figs.json ha -->\n| SIGKILL | 16.2 s (lease 15 s) |\n"
    (tmp_path / "good.md").write_text(good)
    assert check_markdown(tmp_path / "good.md", tmp_path) == []
    (tmp_path / "bad.md").write_text(good.replace("16.2", "28"))
    assert check_markdown(tmp_path / "bad.md", tmp_path) == ["bad.md:1: 28 is not in figs.json ha"]
    (tmp_path / "const.md").write_text(
        good.replace("16.2", "17").replace("-->", "; constants: 17 -->")
    )
    assert check_markdown(tmp_path / "const.md", tmp_path) == []
    (tmp_path / "missing.md").write_text("<!-- figures: figs.json nope -->\n| 1 |\n")
    assert check_markdown(tmp_path / "missing.md", tmp_path) == [
        "missing.md:1: figs.json has no 'nope'"
    ]


def test_a_wrong_file_count_is_caught(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    for name, cls in (("a", "x"), ("b", "x"), ("c", "y")):
        (tmp_path / "c" / f"{name}.yaml").write_text(f"kumaco.test/class: {cls}\n")
    (tmp_path / "ok.md").write_text(
        "| 2 <!-- files: c/*.yaml class=x --> | 3 <!-- files: c/*.yaml --> |\n"
    )
    assert check_counts(tmp_path / "ok.md", tmp_path) == []
    (tmp_path / "bad.md").write_text("| 3 <!-- files: c/*.yaml class=x,z --> |\n")
    assert check_counts(tmp_path / "bad.md", tmp_path) == ["bad.md:1: says 3, c/*.yaml x,z has 2"]
