"""Window announcements (kumaco.controller.announce): once per run, as pure decisions of now.

Also ``WindowPlanned`` (advance notice before a window opens): once per run, when the run's lead begins.
"""

from __future__ import annotations

import datetime as dt

from kumaco.controller.announce import ENDED, PLANNED, STARTED, UNBOUNDED, Announcer
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.policies import policy_of

MIN = 60 * SECOND


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND


def window(start: str, duration: str) -> Window:
    w = parse_window("ns", "w", {"startTime": start, "duration": duration, "nodeSelector": ""})
    assert isinstance(w, Window)
    return w


def step(a: Announcer, w: Window, now: int) -> list[tuple[str, str]]:
    result = plan([w], NodeSet(), now, policy_of())
    return [(x.reason, x.run) for x in a.step(result, {w.key: w}, now)]


def test_started_once_per_run_and_ended_once() -> None:
    w, a = window("0 2 * * *", "1h"), Announcer(5 * MIN)
    start = str(at("2026-12-01T02:00:00+00:00"))
    assert step(a, w, at("2026-12-01T01:00:00+00:00")) == []
    assert step(a, w, at("2026-12-01T02:00:00+00:00")) == [(STARTED, start)]
    assert step(a, w, at("2026-12-01T02:30:00+00:00")) == []
    assert step(a, w, at("2026-12-01T03:00:00+00:00")) == [(ENDED, start)]
    assert step(a, w, at("2026-12-01T03:30:00+00:00")) == []


def test_a_new_run_seen_without_the_close_in_between_ends_the_old_one_first() -> None:
    w, a = window("0 * * * *", "30m"), Announcer(5 * MIN)
    first, second = at("2026-12-01T02:10:00+00:00"), at("2026-12-01T03:10:00+00:00")
    assert step(a, w, first) == [(STARTED, str(at("2026-12-01T02:00:00+00:00")))]
    assert step(a, w, second) == [
        (ENDED, str(at("2026-12-01T02:00:00+00:00"))),
        (STARTED, str(at("2026-12-01T03:00:00+00:00"))),
    ]


def test_a_run_that_never_closes_is_named_unbounded() -> None:
    w, a = window("* * * * *", "2m"), Announcer(5 * MIN)
    assert step(a, w, at("2026-12-01T02:10:00+00:00")) == [(STARTED, UNBOUNDED)]
    assert step(a, w, at("2026-12-01T09:10:00+00:00")) == []


def test_after_a_takeover_a_missed_end_is_announced_once_within_the_lookback() -> None:
    w = window("0 2 * * *", "1h")
    start = str(at("2026-12-01T02:00:00+00:00"))
    a = Announcer(5 * MIN)
    assert step(a, w, at("2026-12-01T03:04:00+00:00")) == [(ENDED, start)]
    assert step(a, w, at("2026-12-01T03:05:00+00:00")) == []
    late = Announcer(5 * MIN)  # beyond the lookback: nothing to catch up
    assert step(late, w, at("2026-12-01T03:06:00+00:00")) == []
    a.reset()  # a new leadership term catches up again
    assert step(a, w, at("2026-12-01T03:04:30+00:00")) == [(ENDED, start)]


def leads(a: Announcer, w: Window, now: int, lead: int = 60 * MIN) -> list[tuple[str, str, str]]:
    node = node_view({"metadata": {"name": "n"}})
    assert node is not None
    result = plan([w], NodeSet([node]), now, policy_of(planned_lead=lead))
    return [(x.reason, x.run, x.note) for x in a.leads(result)]


def test_window_planned_once_per_run_when_its_lead_begins() -> None:
    w, a = window("0 2 * * *", "1h"), Announcer(5 * MIN)
    opens = at("2026-12-01T02:00:00+00:00")
    note = (
        "window ns/w opens at 2026-12-01T02:00:00Z, within the 1h0m0s lead: "
        "maintenance planned for 1 node(s)"
    )
    assert leads(a, w, opens - 60 * MIN - 1) == []
    assert leads(a, w, opens - 60 * MIN) == [(PLANNED, str(opens), note)]
    assert leads(a, w, opens - 1) == []
    assert leads(a, w, opens) == []  # open: no further run within the lead
    # Tomorrow's run, when its lead begins.
    tomorrow = opens + 24 * 60 * MIN
    assert leads(a, w, tomorrow - 60 * MIN)[0][:2] == (PLANNED, str(tomorrow))
    a.reset()  # a new leadership term announces it again (the Event name is taken: 409)
    assert leads(a, w, tomorrow - 30 * MIN)[0][:2] == (PLANNED, str(tomorrow))


def test_window_planned_for_a_window_that_opens_within_its_own_lead() -> None:
    # Every hour for 30 minutes, a 2-hour lead: the next run is announced when the one
    # before it opens (its own lead began while the window was open).
    w, a = window("0 * * * *", "30m"), Announcer(5 * MIN)
    two = at("2026-12-01T02:00:00+00:00")
    assert [r for _x, r, _n in leads(a, w, two + 10 * MIN, 120 * MIN)] == [str(two + 60 * MIN)]
    assert leads(a, w, two + 40 * MIN, 120 * MIN) == []
    assert [r for _x, r, _n in leads(a, w, two + 60 * MIN, 120 * MIN)] == [str(two + 120 * MIN)]


def test_no_window_planned_for_a_freeze() -> None:
    f = parse_window(
        "ns",
        "f",
        {"startTime": "0 2 * * *", "duration": "1h", "nodeSelector": "", "freeze": "true"},
    )
    assert isinstance(f, Window)
    assert leads(Announcer(5 * MIN), f, at("2026-12-01T01:30:00+00:00")) == []
