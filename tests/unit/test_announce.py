"""Window announcements (kumaco.controller.announce): once per run, as pure decisions of now."""

from __future__ import annotations

import datetime as dt

from kumaco.controller.announce import ENDED, STARTED, UNBOUNDED, Announcer
from kumaco.core.durations import SECOND
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import Policy, plan
from kumaco.core.windowdata import parse_window
from kumaco.core.windows import Window

MIN = 60 * SECOND


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND


def window(start: str, duration: str) -> Window:
    w = parse_window("ns", "w", {"startTime": start, "duration": duration, "nodeSelector": ""})
    assert isinstance(w, Window)
    return w


def step(a: Announcer, w: Window, now: int) -> list[tuple[str, str]]:
    result = plan([w], NodeSet(), now, Policy())
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
