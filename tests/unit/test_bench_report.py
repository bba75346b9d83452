"""The benchmark report: kumaco's requests apart from the API server's own, analysis kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench import ANALYSIS, split_counts, targets, write_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_split_counts_keeps_kumaco_resources_apart() -> None:
    mine, others = split_counts(
        {
            "PATCH nodes/status": 5,
            "GET leases": 3,
            "LIST services": 1,
            "GET /openapi/v3": 2,
            "WATCH configmaps": 1,
        }
    )
    assert mine == {"PATCH nodes/status": 5, "GET leases": 3, "WATCH configmaps": 1}
    assert others == {"LIST services": 1, "GET /openapi/v3": 2}


def test_rewriting_the_report_keeps_the_hand_written_analysis(tmp_path: Path) -> None:
    doc = json.loads((ROOT / "docs" / "benchmarks.json").read_text())
    out = tmp_path / "benchmarks.md"
    write_markdown(out, doc)
    assert ANALYSIS not in out.read_text()
    out.write_text(out.read_text() + ANALYSIS + "\nwhere the time goes\n")
    write_markdown(out, doc)
    text = out.read_text()
    assert text.count(ANALYSIS) == 1
    assert text.endswith(ANALYSIS + "\nwhere the time goes\n")
    assert "## Targets" in text


def test_targets_judge_the_largest_scale() -> None:
    doc = json.loads((ROOT / "docs" / "benchmarks.json").read_text())
    judged = targets(doc)
    biggest = max(r["nodes"] for r in doc["runs"])
    assert any(f"({biggest} x" in t for t, _m, _ok in judged)
    for r in doc["runs"]:
        if r["nodes"] == biggest:
            ok = next(
                ok
                for t, _m, ok in judged
                if t.startswith("leader RSS") and f"x {r['windows']})" in t
            )
            assert ok == (r["leader"]["peak_rss_mb"] <= 150)
