"""Every measured figure in the docs is the one value of the JSON its marker names.

The docs are README.md, CONTRIBUTING.md and docs/*.md (:func:`tests.support.judges.figures.documents`).

The rules are tests/support/judges/figures.py's: a ``<!-- figures: FILE ITEMS -->`` comment before a
table or paragraph names the JSON kept from the command that measured it (the e2e tier's
``docs/e2e-figures.json``, ``docs/chaos.json``, ``docs/soak.json``, ...) and, in reading
order, one item per number of the block: a path to one value, shown at its precision, or a
constant ``=N``. Counts of corpus files carry ``<!-- files: GLOB class=... -->`` and are
counted. Each broken input below is one the checker must refuse;
tests/unit/test_figures_mutation.py measures how many one-digit changes it catches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.judges.figures import (
    Figures,
    blocks,
    check_counts,
    check_markdown,
    ci_figures,
    compare_with_run,
    documents,
    numbers_in,
    requote,
    resolve,
    shows,
    within,
)

ROOT = Path(__file__).resolve().parents[2]
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
    doc = json.loads((ROOT / "docs" / "e2e-figures.json").read_text())
    assert doc["command"].startswith("hack/test.sh")
    assert doc["date"] and doc["figures"]


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


def test_requote_writes_a_new_runs_figures_at_the_precision_shown(tmp_path: Path) -> None:
    figs = _run(tmp_path)
    text = (
        "<!-- figures: figs.json\nha: sigkill_s settings.lease_s =17 settings.replicas~record"
        " -->\n| SIGKILL | 16.2 s (lease 15 s, bound 17 s) | 3 replicas (CI run of 046fb15, "
        "2026-12-01) |\n"
    )
    (tmp_path / "doc.md").write_text(text)
    new = json.loads(figs.read_text())
    new["figures"]["ha"] = {"sigkill_s": 8.46, "settings": {"lease_s": 8, "replicas": 1234}}
    figs.write_text(json.dumps({**new, "commit": "abc1234", "date": "2026-12-02T06:00:00Z"}))
    out, changed = requote(tmp_path / "doc.md", tmp_path, figs)
    assert changed == 3  # the constant stays: it is not a measurement
    assert (
        "| 8.5 s (lease 8 s, bound 17 s) | 1234 replicas (CI run of abc1234, 2026-12-02) |" in out
    )
    (tmp_path / "doc.md").write_text(out)
    assert check_markdown(tmp_path / "doc.md", tmp_path) == []
    assert requote(tmp_path / "doc.md", tmp_path, figs) == (out, 0)


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
    assert _check(tmp_path, "<!-- figures: figs.json ha; constants: 17 -->\n| 17 |\n")[0] == (
        "doc.md:1: '; constants:' is gone: write each constant in its place as =N"
    )


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


def test_a_record_figure_names_its_run(tmp_path: Path) -> None:
    run = _run(tmp_path)
    doc = json.loads(run.read_text())
    said = f"CI run of {doc['commit']}, {doc['date'][:10]}"
    text = f"<!-- figures: figs.json ha.sigkill_s~record -->\n16.2 s ({said})\n"
    assert _check(tmp_path, text) == []
    assert _check(tmp_path, "<!-- figures: figs.json ha.sigkill_s~record -->\n16.2 s\n") == [
        f"doc.md:1: ~record figures, but the block does not say {said!r}"
    ]


def test_a_fresh_run_is_compared_within_the_stated_tolerance(tmp_path: Path) -> None:
    assert within("a.sigkill_s", 15.12, 40.0)
    assert not within("a.sigkill_s", 15.12, 46.0)
    assert within("a.converged_s", 0.07, 0.5)
    assert within("a.converged_s", 0.07, 0.9)  # a second of slack: TIME_SLACK
    assert not within("a.converged_s", 0.07, 1.2)
    assert within("a.worst_late_ms", 9, 400)
    assert not within("a.settings.replicas", 3, 4)
    assert within("a.takeover_seconds.SIGKILL.n", 4, 4)
    kept = _run(tmp_path)
    (tmp_path / "doc.md").write_text(
        "<!-- figures: figs.json\nha: sigkill_s settings.replicas ha2.starts.max~record -->\n"
        "16.2 s, 3 replicas, 3.4 s (CI run of x)\n"
    )
    fresh = tmp_path / "fresh.json"
    fresh.write_text(
        json.dumps({"figures": {"ha": {"sigkill_s": 30.0, "settings": {"replicas": 3}}}})
    )
    got = compare_with_run([tmp_path / "doc.md"], tmp_path, kept, fresh)
    assert (got.compared, got.recorded, got.problems) == (2, 1, [])
    fresh.write_text(json.dumps({"figures": {"ha": {"sigkill_s": 60.0, "settings": {}}}}))
    got = compare_with_run([tmp_path / "doc.md"], tmp_path, kept, fresh)
    assert got.problems == [
        "doc.md:3: ha.sigkill_s: the docs say 16.2 (16.23), this run measured 60.0, "
        "not within the tolerance",
        "doc.md:3: ha.settings.replicas: not in both runs (ha.settings.replicas: no 'replicas')",
    ]


def test_ci_compares_the_docs_with_the_kept_run_itself(tmp_path: Path) -> None:
    """The kept run reproduces itself; a run that measured other figures does not."""
    kept = ROOT / "docs" / "e2e-figures.json"
    lines, problems = ci_figures(ROOT, kept)
    assert problems == []
    assert "reproduced by this run" in lines[0]
    doc = json.loads(kept.read_text())
    doc["figures"]["ha_failover"]["settings"]["replicas"] = 5
    (tmp_path / "figures.json").write_text(json.dumps(doc))
    _lines, problems = ci_figures(ROOT, tmp_path / "figures.json")
    assert problems and all("ha_failover.settings.replicas" in p for p in problems)
    assert ci_figures(ROOT, tmp_path / "absent.json")[1]


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


def test_a_fault_runs_counts_may_move_a_little_but_small_counts_not_at_all() -> None:
    from tests.support.judges.figures import within

    assert within("faults.blackhole.extra.blackholed_connections", 12, 13)
    assert within("faults.blackhole.extra.blackholed_connections", 12, 9)
    assert not within("faults.blackhole.extra.blackholed_connections", 12, 16)
    assert not within("faults.x.max_in_progress", 2, 3)  # a ceiling: exactly
    assert not within("faults.x.overlaps", 0, 1)
    assert within("ha_failover.sigkill_takeover_s", 15.12, 16.0)
    assert not within("corpus_live.valid_windows", 19.0, 19.5)  # not an integer: exactly
