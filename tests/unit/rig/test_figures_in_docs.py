"""Every figure in the docs is a record of a named run, exactly, or a constant.

The docs are README.md, CONTRIBUTING.md and docs/*.md (:func:`tests.support.judges.figures.documents`).

The rules are tests/support/judges/figures.py's: a ``<!-- figures: FILE ITEMS -->`` comment before a
table or paragraph names the JSON kept from the command that measured it (the e2e tier's
record ``docs/e2e-figures.json``, ``docs/chaos.json``, ``docs/soak.json``, ...) and, in
reading order, one item per number of the block: a path to one value, shown at its
precision, or a constant ``=N`` (a setting, or a bound a test asserts). A block quoting the
e2e record names its run. Counts of corpus files carry ``<!-- files: GLOB class=... -->``
and are counted. ``hack/record_figures.py`` adopts a new run as the record and rewrites the
quotes (:func:`tests.support.judges.figures.adopt_run`). Each broken input below is one the
checker must refuse; tests/unit/rig/test_figures_mutation.py measures how many one-digit
changes it catches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.judges.figures import (
    RECORD,
    Figures,
    adopt_run,
    blocks,
    check_counts,
    check_markdown,
    documents,
    numbers_in,
    record_of,
    resolve,
    shows,
)

ROOT = Path(__file__).resolve().parents[3]
DOCS = documents(ROOT)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_marked_figure_is_in_the_json_of_its_run(path: Path) -> None:
    assert check_markdown(path, ROOT) == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_counted_file_figure_is_the_count(path: Path) -> None:
    assert check_counts(path, ROOT) == []


def test_the_measured_sections_are_marked() -> None:
    """The tables of docs/reliability.md name their source, its HA and chaos figures among them.

    (The HA and chaos tables were the README's measured blocks; they moved to
    docs/reliability.md, where every table must be marked.)
    """
    path = ROOT / "docs" / "reliability.md"
    reliability = path.read_text().splitlines()
    starts = {b.body for b in blocks(path, ROOT)}
    for i, line in enumerate(reliability):
        starts_table = line.startswith("|") and (i == 0 or not reliability[i - 1].startswith("|"))
        if not starts_table:
            continue
        has_counts = "<!-- files:" in reliability[i + 2] if i + 2 < len(reliability) else False
        assert i in starts or has_counts, f"docs/reliability.md:{i + 1}: table unmarked"
    sections: dict[str, set[str]] = {"## High availability": set(), "## Chaos": set()}
    heading = ""
    by_line = {b.body: b.source.name for b in blocks(path, ROOT)}
    for i, line in enumerate(reliability):
        if line.startswith("## "):
            heading = next((h for h in sections if line.startswith(h)), "")
        if heading and i in by_line:
            sections[heading].add(by_line[i])
    assert {"e2e-figures.json"} <= sections["## High availability"]
    assert {"e2e-figures.json", "chaos.json"} <= sections["## Chaos"]
    sources = {b.source.name for p in DOCS for b in blocks(p, ROOT)}
    assert {"e2e-figures.json", "chaos.json", "soak.json"} <= sources


def test_the_kept_e2e_figures_name_their_command() -> None:
    doc = json.loads((ROOT / RECORD).read_text())
    assert doc["command"].startswith("hack/test.sh")
    assert doc["commit"] and doc["date"] and doc["figures"]


def test_the_record_adopts_itself_unchanged(tmp_path: Path) -> None:
    """``hack/record_figures.py docs/e2e-figures.json`` on a copy of the repository's docs is
    a fixed point: the record's own figures are what the docs quote, at their precision."""
    for path in [*DOCS, ROOT / RECORD]:
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    for name in {b.source.relative_to(ROOT) for p in DOCS for b in blocks(p, ROOT)}:
        (tmp_path / name).write_text((ROOT / name).read_text())
    run = tmp_path / "run.json"
    run.write_text((ROOT / RECORD).read_text())
    done, problems = adopt_run(run, tmp_path)
    assert problems == []
    assert not any("figures rewritten" in line for line in done), done
    for path in DOCS:
        assert (tmp_path / path.relative_to(ROOT)).read_text() == path.read_text()


# ----------------------------------------------------------------------------- the checker itself


def test_numbers_a_reader_sees() -> None:
    text = "took 16.2 s (bound `15s`, n=15) on 2026-11-30T10:00:00Z at 13:13, 48,967 requests"
    assert numbers_in(text) == ["16.2", "15", "48,967"]
    assert numbers_in("see [x](docs/a1.md) <!-- 99 --> v1.37.2") == []
    assert numbers_in("commit 046fb15 (`--nodes\n1000`) of 2 runs") == ["2"]


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


def _run(tmp_path: Path) -> Path:
    figures = Figures()
    figures.record("ha", sigkill_s=16.23, settings={"lease_s": 15, "replicas": 3})
    figures.record("ha2", settings={"lease_s": 15, "replicas": 3}, starts=[2.5, 3.4, 2.9])
    figures.write(tmp_path / "figs.json", "hack/test.sh")
    # A fixed commit: the checker tells a commit from a figure by its letters, and HEAD's
    # short hash may be all digits (7961311 was), which made this test depend on HEAD.
    doc = json.loads((tmp_path / "figs.json").read_text())
    (tmp_path / "figs.json").write_text(json.dumps({**doc, "commit": "046fb15"}))
    return tmp_path / "figs.json"


GOOD = (
    "<!-- figures: figs.json\nha: sigkill_s settings.lease_s =17 settings.replicas -->\n"
    "| SIGKILL | 16.2 s (lease 15 s, bound 17 s) | 3 replicas |\n"
)


def _check(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "doc.md").write_text(text)
    return check_markdown(tmp_path / "doc.md", tmp_path)


SYNTHETIC = (
    "# A doc\n\n<!-- figures: docs/e2e-figures.json\nha: sigkill_s =17 settings.replicas =15\n"
    "chaos: writes -->\n| SIGKILL | 16.2 s (bound 17 s) | 3 replicas, lease 15 s |\n"
    "| chaos | 1,234 writes (run of 046fb15, 2026-12-01) |\n\nOther prose: 16.2 s.\n"
)


def _synthetic(tmp_path: Path) -> Path:
    """A repository of one doc quoting a record, and a new run in the artifacts' format."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "r.md").write_text(SYNTHETIC)
    old = {"ha": {"sigkill_s": 16.23, "settings": {"replicas": 3}}, "chaos": {"writes": 1234}}
    (tmp_path / RECORD).write_text(
        json.dumps(
            {"command": "hack/test.sh", "commit": "046fb15", "date": "2026-12-01T06:00:00+00:00"}
            | {"figures": old}
        )
    )
    assert check_markdown(tmp_path / "docs" / "r.md", tmp_path) == []
    figures = Figures()  # the session fixture's writer: the format of artifacts/figures.json
    figures.record("ha", sigkill_s=8.46, settings={"replicas": 12})
    figures.record("chaos", writes=98765)
    figures.record("unquoted", x=1)
    figures.write(tmp_path / "artifacts" / "figures.json", "hack/test.sh")
    doc = json.loads((tmp_path / "artifacts" / "figures.json").read_text())
    # A fixed commit with a letter (HEAD's short hash may be all digits).
    doc |= {"commit": "abc1234", "date": "2026-12-02T06:00:00+00:00"}
    (tmp_path / "artifacts" / "figures.json").write_text(json.dumps(doc))
    return tmp_path / "artifacts" / "figures.json"


def test_adopting_a_run_rewrites_the_quotes_at_the_precision_shown(tmp_path: Path) -> None:
    run = _synthetic(tmp_path)
    done, problems = adopt_run(run, tmp_path)
    assert problems == []
    assert done == [
        f"{RECORD}: the run of abc1234, 2026-12-02 (`hack/test.sh`)",
        "docs/r.md: 3 figures rewritten",
    ]
    out = (tmp_path / "docs" / "r.md").read_text()
    # the constants (a bound, a setting) stay; prose outside the block is not touched
    assert out == SYNTHETIC.replace("16.2 s (", "8.5 s (").replace(
        "3 replicas", "12 replicas"
    ).replace("1,234", "98,765").replace("046fb15, 2026-12-01", "abc1234, 2026-12-02")
    assert "Other prose: 16.2 s." in out
    assert json.loads((tmp_path / RECORD).read_text()) == json.loads(run.read_text())
    assert check_markdown(tmp_path / "docs" / "r.md", tmp_path) == []
    assert adopt_run(run, tmp_path) == (
        [f"{RECORD}: the run of abc1234, 2026-12-02 (`hack/test.sh`)"],
        [],
    )


def test_a_run_lacking_a_quoted_figure_is_not_adopted(tmp_path: Path) -> None:
    run = _synthetic(tmp_path)
    doc = json.loads(run.read_text())
    del doc["figures"]["chaos"]
    run.write_text(json.dumps(doc))
    before = (tmp_path / RECORD).read_text()
    done, problems = adopt_run(run, tmp_path)
    assert (done, problems) == (
        [],
        [f"{run} lacks a figure the docs quote: docs/r.md:7: chaos.writes: no 'chaos'"],
    )
    assert (tmp_path / RECORD).read_text() == before
    assert (tmp_path / "docs" / "r.md").read_text() == SYNTHETIC
    del doc["commit"]
    run.write_text(json.dumps(doc))
    assert adopt_run(run, tmp_path)[1] == [f"{run}: no commit: not the record of a named run"]


def test_the_record_command_runs_on_the_artifacts_format(tmp_path: Path) -> None:
    """``python hack/record_figures.py FILE`` is the one command; a bad run exits 1."""
    import subprocess
    import sys

    bad = tmp_path / "figures.json"
    bad.write_text(json.dumps({"figures": {}}))
    out = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "record_figures.py"), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert "not the record of a named run" in out.stderr


def test_a_marked_figure_is_checked_against_its_one_path(tmp_path: Path) -> None:
    _run(tmp_path)
    assert _check(tmp_path, GOOD) == []
    # a value that is elsewhere in the same section (replicas is 3) is no longer enough
    assert _check(tmp_path, GOOD.replace("lease 15", "lease 3")) == [
        "doc.md:3: 3 is not figs.json ha.settings.lease_s (15)"
    ]
    assert _check(tmp_path, GOOD.replace("16.2", "16.3")) == [
        "doc.md:3: 16.3 is not figs.json ha.sigkill_s (16.23)"
    ]
    assert _check(tmp_path, GOOD.replace("bound 17", "bound 18")) == [
        "doc.md:3: 18 is not the constant 17"
    ]


def test_a_marker_and_its_block_must_agree_in_number(tmp_path: Path) -> None:
    _run(tmp_path)
    more = GOOD.replace("3 replicas", "3 replicas, 2 zones")
    assert _check(tmp_path, more) == ["doc.md:1: the block shows 5 figures, the marker names 4"]
    assert _check(tmp_path, "<!-- figures: figs.json ha.sigkill_s -->\n\n| 16.2 |\n") == [
        "doc.md:1: the marker is followed by no block",
        "doc.md:1: the block shows 0 figures, the marker names 1",
    ]


def test_a_path_must_name_exactly_one_value(tmp_path: Path) -> None:
    _run(tmp_path)
    assert _check(tmp_path, "<!-- figures: figs.json ha.nope -->\n| 1 |\n") == [
        "doc.md:2: 1: figs.json has no ha.nope: no 'nope'"
    ]
    # a whole section holds many values: it names none of them
    assert _check(tmp_path, "<!-- figures: figs.json ha.settings -->\n| 15 |\n") == [
        "doc.md:2: 15: ha.settings is not one value"
    ]
    assert _check(tmp_path, "<!-- figures: nope.json x -->\n| 15 |\n") == [
        "doc.md:1: the source nope.json does not exist"
    ]
    # the old form, which accepted any value of the named sections, is refused
    assert _check(tmp_path, "<!-- figures: figs.json ha; constants: 17 -->\n| 17 |\n") == [
        "doc.md:1: the block shows 1 figures, the marker names 2",
        "doc.md:2: 17: figs.json has no ha;: no 'ha;'",
    ]


def test_paths_reach_list_elements_and_their_extremes(tmp_path: Path) -> None:
    doc = {"runs": [{"nodes": 5, "s": 1.5}, {"nodes": 7, "s": [2, 9]}], "t": "v 42 and 7"}
    assert resolve(doc, "runs[nodes=7].s.max") == 9
    assert resolve(doc, "runs.0.s") == 1.5
    assert resolve(doc, "runs.len") == 2
    assert resolve(doc, "t.#1") == "7"
    for bad in ("runs[nodes=6].s", "runs.2", "runs.0.s.x", "nope"):
        with pytest.raises(KeyError):
            resolve(doc, bad)
    twice = {"runs": [{"nodes": 5}, {"nodes": 5}]}
    with pytest.raises(KeyError, match="2 elements"):
        resolve(twice, "runs[nodes=5].nodes")


def test_a_prefix_and_quoting_in_a_marker(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text('{"a": {"GET x": 2, "b": {"c": 3}}, "d": 4}')
    text = '<!-- figures: r.json\na: "GET x" b.c\n: d -->\n2, 3 and 4\n'
    assert _check(tmp_path, text) == []
    assert _check(tmp_path, text.replace("and 4", "and 5")) == ["doc.md:4: 5 is not r.json d (4)"]


def test_a_quote_of_the_record_names_its_run(tmp_path: Path) -> None:
    _synthetic(tmp_path)
    said = record_of(json.loads((tmp_path / RECORD).read_text()))
    assert said == "run of 046fb15, 2026-12-01"
    text = f"<!-- figures: {RECORD} ha.sigkill_s -->\n16.2 s (the {said})\n"
    assert _check(tmp_path, text) == []
    assert _check(tmp_path, f"<!-- figures: {RECORD} ha.sigkill_s -->\n16.2 s\n") == [
        f"doc.md:1: a record of a run, but the block does not say {said!r}"
    ]
    # constants alone quote no run; and the old exemption is refused
    assert _check(tmp_path, f"<!-- figures: {RECORD} =3 -->\n3 replicas\n") == []
    assert _check(
        tmp_path, f"<!-- figures: {RECORD} ha.sigkill_s~record -->\n16.2 s ({said})\n"
    ) == ["doc.md:1: '~record' is gone: every path is a record of the run the block names"]


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
