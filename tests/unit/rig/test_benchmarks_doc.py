"""docs/benchmarks.md and its chart are what ``python hack/bench.py --report`` makes of the JSON.

``hack/bench.py --report`` rewrites docs/benchmarks.md from docs/benchmarks.json
(:func:`tools.benchreport.write_markdown`: the generated tables, then the
hand-written analysis after :data:`~tools.benchreport.ANALYSIS`, kept from the file
itself) and docs/images/bench-scale.svg (:func:`~tools.benchreport.write_chart`).
Rendering them again from the committed JSON must give the committed files byte for byte:
a number edited by hand in the Markdown, or a JSON regenerated without its report, fails
here. To fix a failure, regenerate with ``python hack/bench.py --report``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tools.benchreport import ANALYSIS, write_chart, write_markdown

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DOCS / "benchmarks.json").read_text())
    return doc


def _regenerated(markdown: Path, tmp_path: Path) -> str:
    """What ``hack/bench.py --report`` writes over ``markdown`` (on a copy)."""
    copy = tmp_path / "benchmarks.md"
    shutil.copyfile(markdown, copy)
    write_markdown(copy, _doc())
    return copy.read_text()


def test_the_markdown_regenerated_from_the_json_is_the_committed_one(tmp_path: Path) -> None:
    committed = (DOCS / "benchmarks.md").read_text()
    assert ANALYSIS in committed, "the hand-written analysis has lost its marker"
    assert _regenerated(DOCS / "benchmarks.md", tmp_path) == committed, (
        "docs/benchmarks.md differs from its JSON: python hack/bench.py --report"
    )


def test_the_chart_regenerated_from_the_json_is_the_committed_one(tmp_path: Path) -> None:
    out = tmp_path / "images" / "bench-scale.svg"
    write_chart(out, _doc())
    assert out.read_text() == (DOCS / "images" / "bench-scale.svg").read_text(), (
        "docs/images/bench-scale.svg differs from its JSON: python hack/bench.py --report"
    )


def test_a_number_edited_by_hand_is_caught(tmp_path: Path) -> None:
    """The comparison sees one changed figure in the generated part (not the analysis)."""
    committed = (DOCS / "benchmarks.md").read_text()
    generated, analysis = committed.split(ANALYSIS, 1)
    figure = "2.28%"  # the 5,000-node steady-state CPU of the committed JSON
    assert figure in generated
    edited = tmp_path / "edited.md"
    edited.write_text(generated.replace(figure, "1.28%", 1) + ANALYSIS + analysis)
    assert _regenerated(edited, tmp_path) == committed != edited.read_text()
