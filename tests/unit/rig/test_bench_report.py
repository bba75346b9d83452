"""The benchmark's report and plan: counts kept apart, analysis kept, targets judged, the chart,
and the measured window sized from the floor so that every opening fits."""

from __future__ import annotations

import datetime as dt
import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kumaco.core.time.schedule import parse_schedule
from tools.bench import Plan, keep_in_history
from tools.benchreport import (
    ANALYSIS,
    PANELS,
    chart,
    marginal_bytes_per_node,
    split_counts,
    targets,
    write_markdown,
)

ROOT = Path(__file__).resolve().parents[3]


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ROOT / "docs" / "benchmarks.json").read_text())
    return doc


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
    out = tmp_path / "benchmarks.md"
    write_markdown(out, _doc())
    assert ANALYSIS not in out.read_text()
    out.write_text(out.read_text() + ANALYSIS + "\nwhere the time goes\n")
    write_markdown(out, _doc())
    text = out.read_text()
    assert text.count(ANALYSIS) == 1
    assert text.endswith(ANALYSIS + "\nwhere the time goes\n")
    assert "## Targets at scale" in text


def _steady_run(total: float, leader: float, kumaco: dict[str, int], conflicts: int) -> Any:
    """A fixed 5,000-node run: its steady state and one opening of all its nodes."""
    return {
        "nodes": 5000,
        "windows": 100,
        "steady": {
            "cpu_percent": {"kumaco_total": total, "leader": leader, "follower": total - leader},
            "kumaco": kumaco,
            "kumaco_writes_to_added_nodes": 2,
            "kumaco_max_writes_per_node": 1,
        },
        "openings": [
            {
                "at": "2026-05-01T03:00:00Z",
                "nodes": 5000,
                "kumaco": {"PATCH nodes/status 409": conflicts},
                "kumaco_max_writes_per_node": 1 if conflicts < 250 else 2,
            }
        ],
    }


CPU = "steady state, 5,000 nodes, default churn: leader + follower <= 10% of one core"
QUIET = "steady state, 5,000 nodes: zero writes (one per node the churn added) and zero LISTs"
FIFTY = "50,000 nodes: leader RSS, start-up, opening"
ONE_WRITE = "every scale: at most one successful write per changed node"
NO_STORM = "every scale: no 409 storm (409s < 5% of the nodes of an opening)"


def test_targets_judge_the_steady_state_from_its_numbers() -> None:
    at_the_limits = _steady_run(10.0, 6.5, {"PATCH nodes/status": 2, "GET leases": 40}, 249)
    assert targets({"runs": [at_the_limits]}) == [
        (CPU, "10.00% (leader 6.50%, follower 3.50%)", True),
        (QUIET, "0 other writes, 2 to added nodes, 0 LISTs", True),
        (FIFTY, "not measured", None),
        (ONE_WRITE, "held at every scale", True),
        (NO_STORM, "worst opening: 4.98% of its nodes", True),
    ]
    past_them = _steady_run(10.01, 6.51, {"PATCH nodes/status": 3, "LIST nodes": 1}, 250)
    assert targets({"runs": [past_them]}) == [
        (CPU, "10.01% (leader 6.51%, follower 3.50%)", False),
        (QUIET, "1 other writes, 2 to added nodes, 1 LISTs", False),
        (FIFTY, "not measured", None),
        (ONE_WRITE, "5000: 2026-05-01T03:00:00Z", False),
        (NO_STORM, "worst opening: 5.00% of its nodes", False),
    ]
    assert targets({"runs": [{"nodes": 1000, "windows": 100}]}) == [
        ("steady state at 5,000 nodes", "not measured", None),
        (FIFTY, "not measured", None),
        (ONE_WRITE, "held at every scale", True),
        (NO_STORM, "worst opening: 0.00% of its nodes", True),
    ]


def test_a_scale_not_measured_is_said_so_not_passed() -> None:
    doc = _doc()
    doc["runs"] = [r for r in doc["runs"] if r["nodes"] != 50000]
    judged = {t: ok for t, _m, ok in targets(doc)}
    assert judged["50,000 nodes: leader RSS, start-up, opening"] is None


def test_bytes_per_node_come_from_the_growth_between_scales() -> None:
    runs = [
        {"nodes": 1000, "after_startup": {"leader": {"rss_mb": 60.0}}},
        {"nodes": 5000, "after_startup": {"leader": {"rss_mb": 100.0}}},
    ]
    assert marginal_bytes_per_node(runs) == {5000: round(40 * 2**20 / 4000)}


def test_the_chart_is_svg_with_a_line_per_measured_series() -> None:
    svg = chart(_doc())
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    for title, _unit, series in PANELS:
        assert any(title in (t or "") for t in texts)
        for name, _get in series:
            assert name in texts
    # The committed document measures four scales: every panel draws its lines.
    assert [r["nodes"] for r in _doc()["runs"] if r.get("processes")] == [1000, 5000, 20000, 50000]
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) >= len(PANELS)


@pytest.mark.parametrize("floor", [0.3, 9.6, 20.0, 51.0, 180.0])
def test_the_measured_window_outlasts_a_slow_opening_and_fires_exactly_as_planned(
    floor: float,
) -> None:
    planned = time.time()
    plan = Plan.size(floor, repeats=2, ready_in=100)
    # kumaco's clock is shifted so that its first opening comes ready_in seconds from now,
    # not at the machine's next minute after that.
    assert 0 <= plan.shift.offset < 60
    assert abs(plan.real(plan.opens[0]) - (planned + 100)) < 1
    assert plan.opens[0].second == 0 and plan.opens[0].microsecond == 0
    # The targets' slow reference machine: the floor took 2.5x as long with kumaco watching, and an
    # opening can take 1.3x that: the window must still be open when it ends.
    # This machine, loaded: 5.5x with kumaco watching; the opening is waited for that long
    # and more, and the window is still open then.
    assert plan.wait >= 1.3 * 5.5 * floor
    assert plan.duration > plan.wait
    assert plan.spacing * 60 >= plan.duration + 5 * floor
    assert len(plan.opens) == 2 + 3  # spares absorb a slow start
    fires: list[int] = []
    for text in plan.schedules():
        sched = parse_schedule(text)
        assert not isinstance(sched, str), sched
        t = int(plan.opens[0].timestamp()) - 1
        for _ in range(len(plan.opens)):
            nxt = sched.next_fire(t)
            if nxt is None or nxt > int(plan.opens[-1].timestamp()):
                break
            fires.append(nxt)
            t = nxt
    assert sorted(set(fires)) == [int(o.timestamp()) for o in plan.opens]
    assert all(o.tzinfo == dt.UTC for o in plan.opens)


def test_a_replaced_run_is_kept_in_the_history_once(tmp_path: Path) -> None:
    history = tmp_path / "docs" / "bench-history.json"
    old = {"nodes": 1000, "windows": 100, "kumaco_commit": "abc1234", "open_seconds": {"p50": 9.4}}
    keep_in_history(history, [old])
    keep_in_history(history, [old, {**old, "kumaco_commit": "def5678"}])
    doc = json.loads(history.read_text())
    assert "replaced" in doc["what"]
    assert [r["kumaco_commit"] for r in doc["runs"]] == ["abc1234", "def5678"]


def test_the_quiet_period_never_spans_an_opening_even_one_too_close_to_measure() -> None:
    plan = Plan.size(20.0, repeats=1, ready_in=100)
    first, second = (plan.real(t) for t in plan.opens[:2])
    need = 60.0
    # Room before the first opening: the quiet period starts at once.
    assert plan.quiet_from(first - 200, need) == first - 200
    assert plan.quiet_from(first - 70, need) == first - 70
    # Too close to the first opening (a slow start-up): once its window has closed and
    # its closing is worked off, there is room before the second.
    late = plan.quiet_from(first - 69, need)
    assert late == first + plan.duration + 45
    assert late + need <= second - 5
    # Never inside a window of the plan, wherever it starts.
    for now in range(int(first - 300), int(plan.real(plan.opens[-1])), 7):
        start = plan.quiet_from(float(now), need)
        assert start >= now
        for t in plan.opens:
            busy = (plan.real(t) - 10, plan.real(t) + plan.duration + 45)
            assert start + need <= busy[0] or start >= busy[1], (now, start, busy)
