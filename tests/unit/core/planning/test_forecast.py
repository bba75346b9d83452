"""The forecast (kumaco.core.planning.forecast): hand-computed answers and properties."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.objects.nodes import NodeSet, NodeView, node_view
from kumaco.core.planning.changes import changes
from kumaco.core.planning.forecast import DurationRule, apply_changes, forecast, parse_duration_rule
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Plan
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.policies import policy_of

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
REQ = "kured.dev/RebootRequired"


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND


def window(start: str = "0 2 13 1 *", duration: str = "2h", **extra: str) -> Window:
    w = parse_window(
        "maint", "night", {"startTime": start, "duration": duration, "nodeSelector": "", **extra}
    )
    assert isinstance(w, Window), w
    return w


def nodes(count: int, zones: str = "", needing: int | None = None) -> NodeSet:
    views = []
    for i in range(count):
        labels = {"zone": zones[i % len(zones)]} if zones else {}
        status = "True" if needing is None or i < needing else "False"
        obj = {
            "metadata": {"name": f"n{i:02d}", "labels": labels},
            "status": {
                "conditions": [
                    {
                        "type": REQ,
                        "status": status,
                        "lastTransitionTime": f"2027-01-0{1 + i % 9}T00:00:00Z",
                    }
                ]
            },
        }
        v = node_view(obj)
        assert v is not None
        views.append(v)
    return NodeSet(views)


FROM, UNTIL = at("2027-01-13T00:00:00+00:00"), at("2027-01-13T06:00:00+00:00")
POLICY = policy_of(ceiling=Ceiling(2), require=(REQ,))


def test_six_nodes_two_at_a_time_in_a_two_hour_window_finish_at_half_past_three() -> None:
    f = forecast([window()], nodes(6), FROM, UNTIL, POLICY, 30 * MINUTE)
    assert f.all_finished and f.finished_at == at("2027-01-13T03:30:00+00:00")
    assert [t.admitted for t in f.turns] == [
        at(f"2027-01-13T0{h}+00:00") for h in ("2:00", "2:00", "2:30", "2:30", "3:00", "3:00")
    ]


def test_ten_nodes_eight_fit_two_do_not() -> None:
    f = forecast([window()], nodes(10), FROM, UNTIL, POLICY, 30 * MINUTE)
    admitted = [t.admitted for t in f.turns if t.admitted is not None]
    assert admitted == [
        at(f"2027-01-13T0{h}+00:00")
        for h in ("2:00", "2:00", "2:30", "2:30", "3:00", "3:00", "3:30", "3:30")
    ]
    assert len(f.unfinished) == 2 and f.finished_at is None
    # Oldest request first: the two newest requests (n08: Jan 9, n07: Jan 8 ... ) wait.
    assert set(f.unfinished) == {"n07", "n08"}
    assert f.next_chance["n07"] == (at("2028-01-13T02:00:00+00:00"), "maint/night")


def test_a_release_delay_fits_fewer() -> None:
    delayed = policy_of(ceiling=Ceiling(2), require=(REQ,), release_delay=10 * MINUTE)
    f = forecast([window()], nodes(10), FROM, UNTIL, delayed, 30 * MINUTE)
    # A node released exactly 10 minutes ago no longer counts: the simulated releases are
    # stamped exactly, so no wave starts a second late.
    assert [t.admitted for t in f.turns if t.admitted is not None] == [
        at(f"2027-01-13T0{h}+00:00")
        for h in ("2:00:00", "2:00:00", "2:40:00", "2:40:00", "3:20:00", "3:20:00")
    ]
    assert len(f.unfinished) == 4


def test_run_counts_a_release_delay_from_the_end_of_the_second_the_forecast_exactly() -> None:
    """The same planner, two stampings: ``run``'s writes to the second (Kubernetes keeps no
    more, so a release at 02:30:00.4 reads 02:30:00 and the delay must end at 02:40:01 to be
    never shorter), the forecast's exact (its release happened at 02:30:00)."""
    delayed = policy_of(ceiling=Ceiling(1), require=(REQ,), release_delay=10 * MINUTE)
    opened, done = at("2027-01-13T02:00:00+00:00"), at("2027-01-13T02:30:00+00:00")
    for exact, settles_until in ((False, "02:40:01"), (True, "02:40:00")):
        state = {n.name: n for n in nodes(2)}

        def step(t: int, exact: bool = exact, state: dict[str, NodeView] = state) -> Plan:
            result = plan([window()], NodeSet(state.values()), t, delayed)
            apply_changes(
                changes(result, NodeSet(state.values()), {}, t, delayed, exact=exact), state
            )
            return result

        held = [n.name for n in step(opened).nodes if n.is_in_progress]
        assert held == ["n00"]
        cleared = {"type": REQ, "status": "False", "lastTransitionTime": "2027-01-13T02:30:00Z"}
        view = node_view({"metadata": {"name": "n00"}, "status": {"conditions": [cleared]}})
        assert view is not None
        state["n00"] = dataclasses.replace(
            view, conditions={**state["n00"].conditions, **view.conditions}
        )
        step(done)  # the release, written
        stamp = state["n00"].conditions[delayed.in_progress].last_transition_time
        assert stamp == ("2027-01-13T02:30:00.000000Z" if exact else "2027-01-13T02:30:00Z")
        until = at(f"2027-01-13T{settles_until}+00:00")
        assert step(done).next_change == until  # planned again on the write's echo
        settling = plan([window()], NodeSet(state.values()), until - SECOND // 2, delayed)
        assert not any(n.is_in_progress for n in settling.nodes)
        assert [n.name for n in step(until).nodes if n.is_in_progress] == ["n01"]


def test_a_zone_ceiling_orders_the_turns_by_zone() -> None:
    zoned = policy_of(ceiling=Ceiling(3), require=(REQ,), ceilings_per=(("zone", Ceiling(1)),))
    f = forecast([window()], nodes(6, zones="ab"), FROM, UNTIL, zoned, 30 * MINUTE)
    by_time: dict[int | None, list[str]] = {}
    for t in f.turns:
        by_time.setdefault(t.admitted, []).append(t.name)
    # One node per zone at a time: pairs (one of a, one of b) every 30 minutes.
    assert list(by_time.values()) == [["n00", "n01"], ["n02", "n03"], ["n04", "n05"]]


def test_a_holder_continues_from_its_transition_time() -> None:
    view = node_view(
        {
            "metadata": {"name": "h"},
            "status": {
                "conditions": [
                    {"type": REQ, "status": "True"},
                    {
                        "type": "MaintenanceInProgress",
                        "status": "True",
                        "lastTransitionTime": "2027-01-13T01:50:00Z",
                    },
                ]
            },
        }
    )
    assert view is not None
    f = forecast([window()], NodeSet([view]), FROM, UNTIL, POLICY, 30 * MINUTE)
    (turn,) = f.turns
    assert (turn.admitted, turn.finished) == (
        at("2027-01-13T01:50:00+00:00"),
        at("2027-01-13T02:20:00+00:00"),
    )


def test_durations_per_label_override_the_default() -> None:
    gpu = nodes(2, zones="g")  # zone=g stands in for a GPU label
    f = forecast(
        [window()],
        gpu,
        FROM,
        UNTIL,
        policy_of(ceiling=Ceiling(1), require=(REQ,)),
        30 * MINUTE,
        [DurationRule("zone", "g", 45 * MINUTE)],
    )
    assert [t.finished for t in f.turns] == [
        at("2027-01-13T02:45:00+00:00"),
        at("2027-01-13T03:30:00+00:00"),
    ]
    assert parse_duration_rule("nvidia.com/gpu.present=true:45m") == DurationRule(
        "nvidia.com/gpu.present", "true", 45 * MINUTE
    )
    for bad in ("gpu", "gpu=true", "=x:1h", "gpu=true:0s", "gpu=true:1d"):
        with pytest.raises(InvalidInput):
            parse_duration_rule(bad)


def test_a_forecast_needs_a_required_condition_and_a_ceiling() -> None:
    with pytest.raises(InvalidInput, match="--require-condition"):
        forecast([window()], nodes(1), FROM, UNTIL, policy_of(ceiling=Ceiling(1)), MINUTE)
    with pytest.raises(InvalidInput, match="--max-in-progress"):
        forecast([window()], nodes(1), FROM, UNTIL, policy_of(require=(REQ,)), MINUTE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(1, 25),
    ceiling=st.integers(1, 5),
    minutes=st.sampled_from((7, 30, 45, 60)),
)
def test_with_an_endless_window_n_nodes_finish_in_ceil_n_over_c_turns(
    count: int, ceiling: int, minutes: int
) -> None:
    endless = window("0 2 13 1 *", "8000h")  # opens at 02:00 (last year's closed in December)
    d = minutes * MINUTE
    f = forecast(
        [endless],
        nodes(count),
        FROM,
        FROM + 400 * 3600 * SECOND,
        policy_of(ceiling=Ceiling(ceiling), require=(REQ,)),
        d,
    )
    opens = at("2027-01-13T02:00:00+00:00")
    assert f.all_finished
    assert f.finished_at == opens + math.ceil(count / ceiling) * d
    # Never more than the ceiling at once.
    for t in f.turns:
        assert t.admitted is not None and t.finished is not None
        running = sum(1 for u in f.turns if u.admitted <= t.admitted < u.finished)  # type: ignore[operator]
        assert running <= ceiling


def test_a_holder_without_a_transition_time_times_out_as_the_controller_would_time_it() -> None:
    """Regression: the forecast re-implemented changes()'s diff and diverged.

    A holder whose MaintenanceInProgress has no lastTransitionTime and another reason is
    rewritten by the controller with lastTransitionTime = now (changes()), so its
    in-progress timeout runs from then; the old forecast kept the empty value, so the
    holder never timed out and the next node waited for it to finish (at 05:00).
    """
    holder = node_view(
        {
            "metadata": {"name": "h"},
            "status": {
                "conditions": [
                    {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"},
                    {"type": "MaintenanceInProgress", "status": "True", "reason": "ByHand"},
                ]
            },
        }
    )
    waiting = node_view(
        {
            "metadata": {"name": "w"},
            "status": {
                "conditions": [
                    {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-02T00:00:00Z"}
                ]
            },
        }
    )
    assert holder is not None and waiting is not None
    timed = policy_of(ceiling=Ceiling(1), require=(REQ,), in_progress_timeout=60 * MINUTE)
    start = at("2027-01-13T02:00:00+00:00")
    f = forecast(
        [window(duration="5h")], NodeSet([holder, waiting]), start, UNTIL, timed, 3 * 60 * MINUTE
    )
    turns = {t.name: t for t in f.turns}
    # Rewritten at 02:00:00, stamped exactly (a simulated write), timed out one hour later;
    # kumaco run, whose write is stamped to the second, times it out at 03:00:01.
    assert turns["w"].admitted == at("2027-01-13T03:00:00+00:00")


def test_the_next_chance_is_when_the_planner_would_admit_the_node_not_a_window_opening() -> None:
    """The next chance: one inside a freeze is none; a cutoff moves it too."""
    nightly = window("0 2 * * *", "4h")
    xmas = parse_window(
        "maint",
        "xmas",
        {"startTime": "0 23 19 12 *", "duration": "336h", "nodeSelector": "", "freeze": "true"},
    )
    assert isinstance(xmas, Window)
    start, until = at("2026-12-19T02:00:00+00:00"), at("2026-12-19T23:30:00+00:00")
    f = forecast(
        [nightly, xmas],
        nodes(3),
        start,
        until,
        policy_of(ceiling=Ceiling(1), require=(REQ,)),
        3 * 60 * MINUTE,
    )
    assert f.unfinished == ("n02",)
    assert f.next_chance == {"n02": (at("2027-01-03T02:00:00+00:00"), "maint/night")}
    # A 5 h cutoff in a 4 h window: the planner never admits it, so there is no next chance.
    cut = policy_of(ceiling=Ceiling(1), require=(REQ,), admission_cutoff=5 * 60 * MINUTE)
    g = forecast([nightly], nodes(1), start, start + MINUTE, cut, 30 * MINUTE)
    assert g.next_chance == {}
    assert g.no_chance["n00"].startswith(
        "not admitted within five years or 500 planner steps: too late to start: the window "
        "closes at "
    )
    # A paused ceiling stays paused: said at once.
    paused = policy_of(ceiling=Ceiling(0), require=(REQ,))
    h = forecast([nightly], nodes(1), start, start + MINUTE, paused, 30 * MINUTE)
    assert h.no_chance["n00"].endswith("; a forecast keeps conditions and ceilings as they are")
