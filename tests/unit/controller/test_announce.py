"""Window announcements (kumaco.controller.announce): once per run, as pure decisions of now.

Also ``WindowPlanned`` (advance notice before a window opens): once per run, when the run's lead begins,
and ``WindowExpired`` (a dated window whose dates leave no occurrence to come): once per term.
"""

from __future__ import annotations

import datetime as dt

from kumaco.controller.announce import ENDED, EXPIRED, PLANNED, STARTED, UNBOUNDED, Announcer
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders import planning
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


# ----------------------------------------------------------------------------- WindowExpired


def announced(a: Announcer, w: Window, now: int) -> list[tuple[str, str]]:
    """Every announcement of one pass, in the loop's order: the runs', then the expiry."""
    result = plan([w], NodeSet(), now, policy_of())
    known = {w.key: w}
    return [(x.reason, x.run) for x in (*a.step(result, known, now), *a.expired(result, known))]


def test_a_one_shot_window_expires_once_after_its_one_occurrence_closes() -> None:
    w, a = planning.window("once", "2026-12-01T02:00:00Z", "1h"), Announcer(5 * MIN)
    start = str(at("2026-12-01T02:00:00+00:00"))
    assert announced(a, w, at("2026-12-01T01:00:00+00:00")) == []  # before: to come
    assert announced(a, w, at("2026-12-01T02:00:00+00:00")) == [(STARTED, start)]
    assert announced(a, w, at("2026-12-01T02:59:59+00:00")) == []  # open: not ended
    # The close: the occurrence's end first, then the window's.
    assert announced(a, w, at("2026-12-01T03:00:00+00:00")) == [(ENDED, start), (EXPIRED, "ended")]
    assert announced(a, w, at("2026-12-01T03:00:01+00:00")) == []  # not twice
    assert announced(a, w, at("2027-06-01T00:00:00+00:00")) == []
    a.reset()  # a new term announces it again (the Event's name is taken: the server's 409)
    assert announced(a, w, at("2027-06-01T00:00:00+00:00")) == [(EXPIRED, "ended")]
    assert announced(a, w, at("2027-06-01T00:00:01+00:00")) == []


def test_the_expiry_note_says_why_and_what_to_do() -> None:
    # Without an offset, startTime is read in timeZone: 03:00 in Berlin is 02:00Z.
    w = planning.window("once", "2026-12-01T03:00:00", "1h", timeZone="Europe/Berlin")
    now = at("2026-12-01T03:00:00+00:00")
    result = plan([w], NodeSet(), now, policy_of())
    (x,) = Announcer(5 * MIN).expired(result, {w.key: w})
    assert (x.window, x.reason, x.run) == ("maint/once", EXPIRED, "ended")
    assert x.note == (
        "window maint/once has ended: its one occurrence (2026-12-01T02:00:00Z) is over; "
        "it will never open again (kumaco does not delete ConfigMaps: delete it)"
    )


def test_a_one_shot_window_first_seen_long_after_its_occurrence_only_expires() -> None:
    w, a = planning.window("once", "2026-12-01T02:00:00+01:00", "1h"), Announcer(5 * MIN)
    # 01:00Z-02:00Z; seen at 04:00Z, beyond the lookback: no missed end to catch up.
    assert announced(a, w, at("2026-12-01T04:00:00+00:00")) == [(EXPIRED, "ended")]
    # Within the lookback, a new leader catches up the end, then the expiry.
    late = Announcer(5 * MIN)
    assert announced(late, w, at("2026-12-01T02:04:00+00:00")) == [
        (ENDED, str(at("2026-12-01T01:00:00+00:00"))),
        (EXPIRED, "ended"),
    ]


def test_a_bounded_window_expires_once_after_its_last_occurrence_before_not_after() -> None:
    w = planning.window("bounded", "0 2 * * *", "1h", notAfter="2026-12-03")
    a = Announcer(5 * MIN)
    first, last = at("2026-12-01T02:00:00+00:00"), at("2026-12-02T02:00:00+00:00")
    assert announced(a, w, first) == [(STARTED, str(first))]
    # Closed between its occurrences: one is still to come.
    assert announced(a, w, first + 60 * MIN) == [(ENDED, str(first))]
    assert announced(a, w, last - 1) == []
    assert announced(a, w, last) == [(STARTED, str(last))]
    assert announced(a, w, last + 60 * MIN) == [(ENDED, str(last)), (EXPIRED, "ended")]
    # Its 2026-12-03T02:00 firing is past notAfter: it never opens again, nor expires twice.
    assert announced(a, w, at("2026-12-03T02:00:00+00:00")) == []
    assert announced(a, w, at("2026-12-03T02:30:00+00:00")) == []
    (x,) = Announcer(5 * MIN).expired(
        plan([w], NodeSet(), last + 60 * MIN, policy_of()), {w.key: w}
    )
    assert x.note == (
        "window maint/bounded has ended: no occurrence starts before its notAfter 2026-12-03 "
        "(2026-12-03T00:00:00Z); it will never open again (kumaco does not delete "
        "ConfigMaps: delete it)"
    )


def test_windows_with_occurrences_to_come_never_expire() -> None:
    # The same schedule without notAfter, and one whose notAfter is beyond robfig's five years.
    endless = planning.window("endless", "0 2 * * *", "1h")
    far = planning.window("far", "0 2 * * *", "1h", notAfter="2040-01-01")
    to_come = planning.window("later", "2027-01-15T02:00:00Z", "1h")
    a = Announcer(5 * MIN)
    for w in (endless, far, to_come):
        for t in (
            "2026-12-01T01:00:00+00:00",
            "2026-12-02T03:00:00+00:00",
            "2026-12-30T12:00:00+00:00",
        ):
            assert EXPIRED not in [r for r, _run in announced(a, w, at(t))], (w.key, t)


def test_an_expired_window_whose_configmap_is_gone_is_not_announced() -> None:
    w = planning.window("once", "2026-12-01T02:00:00Z", "1h")
    now = at("2026-12-01T04:00:00+00:00")
    assert Announcer(5 * MIN).expired(plan([w], NodeSet(), now, policy_of()), {}) == []
