"""The figures checks catch every changed figure: no one-digit mutation survives.

Each checked figure of README.md, CONTRIBUTING.md and docs/*.md (a number of a
``figures:`` block -- a record of a run or a constant -- or a ``files:`` count) has its
last digit raised by one (9 becomes 0), one at a time, and the checks of
tests/support/judges/figures.py run on the changed document
(:func:`tests.support.judges.figures.mutation_score`): a record is compared exactly, a
constant with the marker's ``=N``, so every change must fail. The caught/total figure is
printed (the CI log shows it with ``-s``/in the captured output of a failure) and recorded
as the ``figures_mutation`` figure of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.judges import figures as figs
from tests.support.judges.figures import Figures, documents, mutation_score

ROOT = Path(__file__).resolve().parents[3]
DOCS = documents(ROOT)


def test_every_changed_figure_is_caught(
    figures: Figures, capsys: pytest.CaptureFixture[str]
) -> None:
    total, survivors = mutation_score(DOCS, ROOT)
    caught = total - len(survivors)
    with capsys.disabled():
        print(f"\nfigures mutation score: {caught}/{total} one-digit changes caught")
    figures.record("figures_mutation", caught=caught, total=total)
    assert total >= 400, "fewer checked figures than the docs had when this test was written"
    assert survivors == [], "survivors:\n" + "\n".join(survivors)


def test_a_checker_that_accepts_anything_scores_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The score measures the checks: with them disabled, every mutation survives."""
    (tmp_path / "r.json").write_text('{"a": 12, "b": 3.45}')
    doc = tmp_path / "d.md"
    doc.write_text("<!-- figures: r.json a b -->\n12 items in 3.45 s\n")
    assert mutation_score([doc], tmp_path) == (2, [])
    monkeypatch.setattr(figs, "check_markdown", lambda *_a, **_k: [])
    total, survivors = mutation_score([doc], tmp_path)
    assert (total, survivors) == (2, ["d.md:2: 12 -> 13", "d.md:2: 3.45 -> 3.46"])


def test_a_mutation_is_another_figure_of_the_same_shape() -> None:
    assert [figs.mutate(t) for t in ("3", "19", "2.04", "48,967")] == [
        "4",
        "10",
        "2.05",
        "48,968",
    ]
