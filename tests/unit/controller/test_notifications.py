"""The leader's notifications: one message per moment, in order, over the recording kube seam.

The controller is built on the fake of the typed API (tests/support/builders/kubeseam.py)
with an :class:`~kumaco.notify.sender.Outbox` whose notifier only records what it is
given: what the endpoints would receive, in the order they would receive it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kumaco.controller.moments import NodeMoments, WaitingMoments
from kumaco.core.objects.nodes import node_view
from kumaco.core.planning.policy import CEILING_REACHED
from kumaco.core.planning.waiting import Waiter
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.kube.errors import ApiError
from kumaco.notify.messages import (
    ADMITTED,
    CLOSED,
    DEFAULT_EVENTS,
    ENDED_EVENT,
    EVENTS,
    FINISHED,
    OPENED,
    TIMED_OUT_EVENT,
    WAITING_EVENT,
    Message,
    Templates,
)
from kumaco.notify.sender import Outbox
from tests.support.builders import kubeseam
from tests.support.builders.kubeobjects import MANAGER, MIP, REQ, cm, node
from tests.support.builders.kubeseam import CLOSED as AFTER_CLOSE
from tests.support.builders.policies import policy_of

make = kubeseam.make


class Recorder:
    """A notifier that keeps what it is given (the endpoints' view, in order)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.closed = 0

    def start(self) -> None:
        return None

    def publish(self, message: Message) -> None:
        self.messages.append(message)

    def close(self, timeout: float) -> int:
        self.closed += 1
        return 0

    def told(self) -> list[tuple[str, str]]:
        return [(m.event, m.title.rsplit(" ", 1)[1]) for m in self.messages]


def _outbox(events: tuple[str, ...] = EVENTS) -> tuple[Outbox, Recorder]:
    rec = Recorder()
    return Outbox(rec, Templates(instance="kumaco"), events, 1.0), rec  # type: ignore[arg-type]


def _three_nodes() -> list[dict[str, Any]]:
    nodes = []
    for i, name in enumerate("abc"):
        n = node(name, str(10 + i), kured_dev__RebootRequired="True")
        n["status"]["nodeInfo"] = {"bootID": f"{name}1"}
        nodes.append(n)
    return nodes


def _reboot(c: Any, world: Any, name: str) -> None:
    world.nodes[name]["status"]["nodeInfo"] = {"bootID": f"{name}2"}
    world.rv += 100
    world.nodes[name]["metadata"]["resourceVersion"] = str(world.rv)
    c.nodes.apply("MODIFIED", c.nodes.trim(world.nodes[name]))


def test_a_window_over_three_nodes_ceiling_1_tells_each_moment_once_in_order(make: Any) -> None:
    outbox, rec = _outbox()
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, world, _e, clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    c.settle()
    assert rec.told() == [(OPENED, "maintenance/w"), (ADMITTED, "a")]
    opened = rec.messages[0].body
    assert "for 3 node(s): a, b, c" in opened
    assert "closes at 2026-12-01T05:00:00Z" in opened
    assert rec.messages[1].body.startswith("Node a admitted to maintenance (window maintenance/w)")
    for name in "abc":
        clock[0] += 60 * SECOND
        _reboot(c, world, name)
        c.settle()
    clock[0] = AFTER_CLOSE
    c.settle()
    c.settle()  # nothing new: nothing told twice
    assert rec.told() == [
        (OPENED, "maintenance/w"),
        (ADMITTED, "a"),
        (FINISHED, "a"),
        (ADMITTED, "b"),
        (FINISHED, "b"),
        (ADMITTED, "c"),
        (FINISHED, "c"),
        (CLOSED, "maintenance/w"),
    ]
    finished_a = rec.messages[2].body
    assert "the node rebooted (boot a1 -> a2)" in finished_a
    assert "1m0s after its admission" in finished_a
    assert rec.messages[-1].body.startswith(
        "Maintenance window maintenance/w (opened at 2026-12-01T02:00:00Z) closed at "
        "2026-12-01T05:00:00Z."
    )


def test_only_the_chosen_events_are_told(make: Any) -> None:
    outbox, rec = _outbox(DEFAULT_EVENTS)
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, _world, _e, _clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    c.settle()
    assert rec.told() == [(ADMITTED, "a")]


def test_a_one_shot_window_is_told_opened_closed_and_ended_once(make: Any) -> None:
    outbox, rec = _outbox()
    once = cm("once", start="2026-12-01T02:00:00Z", duration="1h")
    c, _world, _e, clock = make([node("a", "10")], [once], outbox=outbox)
    c.settle()
    clock[0] += 3600 * SECOND  # its one occurrence is over
    c.settle()
    c.settle()  # nothing new: nothing told twice
    assert rec.told() == [
        (OPENED, "maintenance/once"),
        (CLOSED, "maintenance/once"),
        (ENDED_EVENT, "maintenance/once"),
    ]
    assert rec.messages[-1].body == (
        "Maintenance window maintenance/once has ended: its one occurrence "
        "(2026-12-01T02:00:00Z) is over. It will never open again: delete its ConfigMap."
    )


def test_a_new_leader_is_silent_about_an_opening_whose_event_exists(make: Any) -> None:
    outbox, rec = _outbox()
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    nodes = _three_nodes()
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy, outbox=outbox)

    def taken(_ns: str, _body: Any) -> Any:
        raise ApiError(409, "AlreadyExists", "the Event's name is taken")

    world.api.create_event = taken  # the old leader announced it
    c.settle()
    assert rec.told() == [(ADMITTED, "a")]


def test_a_follower_tells_nothing_and_stopping_flushes_before_the_lease_goes(make: Any) -> None:
    outbox, rec = _outbox()
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, _world, election, _clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    election.is_leader = False
    c.settle()
    assert rec.told() == []
    c._shutdown()
    assert (rec.closed, election.released) == (1, 1)


def _view(name: str, status: str | None, reason: str = "", message: str = "", ltt: str = "") -> Any:
    conds = []
    if status is not None:
        conds.append(
            {
                "type": MIP,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": ltt or "2026-12-01T02:00:00Z",
            }
        )
    return node_view({"metadata": {"name": name}, "status": {"conditions": conds}})


def test_node_moments_baseline_then_admission_timeout_and_release() -> None:
    m = NodeMoments(MIP)
    now = kubeseam.OPEN  # 2026-12-01T02:30:00Z
    assert m.observe([_view("a", "True"), _view("b", None), _view("c", "True")], now) == []
    later = [
        _view("a", "False", "MaintenanceTimedOut", "held too long"),
        _view("b", "True", "MaintenanceAllowed", "ok; admitted on boot b9"),
        _view("c", "False", "MaintenanceFinished", "maintenance finished: cleared"),
    ]
    got = m.observe(later, now)
    assert [(x.event, x.subject) for x in got] == [
        (TIMED_OUT_EVENT, "a"),
        (ADMITTED, "b"),
        (FINISHED, "c"),
    ]
    assert dict(got[0].fields)["held"] == "30m0s"
    assert dict(got[1].fields)["boot"] == "b9"
    assert dict(got[2].fields)["outcome"] == "released: maintenance finished: cleared"
    assert m.observe(later, now) == []
    m.reset()
    assert m.observe([_view("a", "True")], now) == []


def test_a_takeover_tells_what_changed_since_the_previous_leaders_last_word() -> None:
    m = NodeMoments(MIP)
    now = kubeseam.OPEN
    m.reset(since=now - 10 * SECOND + SECOND // 2)  # 02:29:50.5: its second counts
    views = [
        _view("a", "True", "MaintenanceAllowed", "x; admitted on boot a1", "2026-12-01T02:29:50Z"),
        _view("b", "True", "MaintenanceAllowed", "x", "2026-12-01T02:29:49Z"),
        _view(
            "c",
            "False",
            "MaintenanceFinished",
            "maintenance finished: the node rebooted (boot c1 -> c2)",
            "2026-12-01T02:29:55Z",
        ),
        _view("d", "False", "ConcurrencyCeilingReached", "", "2026-12-01T02:29:58Z"),
    ]
    got = m.observe(views, now)
    assert [(x.event, x.subject) for x in got] == [(ADMITTED, "a"), (FINISHED, "c")]
    assert dict(got[1].fields)["outcome"] == "the node rebooted (boot c1 -> c2)"
    assert dict(got[1].fields)["duration"] == "unknown"
    assert m.observe(views, now) == []


def _finished_node(name: str, rv: str, ltt: str) -> dict[str, Any]:
    n = node(name, rv, kured_dev__RebootRequired="False", MaintenanceInProgress="False")
    (mip,) = [c for c in n["status"]["conditions"] if c["type"] == MIP]
    mip.update(
        reason="MaintenanceFinished",
        message="maintenance finished: the node rebooted (boot x1 -> x2)",
        lastTransitionTime=ltt,
    )
    return n


def test_a_new_leader_tells_a_release_after_the_leases_last_word_within_the_lookback(
    make: Any,
) -> None:
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    # OPEN is 02:30:00; the event lookback is 300 s (kubeseam's options).
    nodes = [
        _finished_node("a", "10", "2026-12-01T02:29:58Z"),  # after the old leader's release
        _finished_node("b", "11", "2026-12-01T02:29:50Z"),  # before it: the old leader told it
    ]
    outbox, rec = _outbox()
    c, _w, election, _clock = make(nodes, [cm("w")], policy=policy, outbox=outbox)
    election.took_over_after = "2026-12-01T02:29:57.250000Z"
    c.settle()
    assert (FINISHED, "a") in rec.told()
    assert (FINISHED, "b") not in rec.told()
    # A Lease left a day ago: only --event-lookback back (02:25:00).
    outbox, rec = _outbox()
    nodes = [
        _finished_node("a", "10", "2026-12-01T02:26:00Z"),
        _finished_node("b", "11", "2026-12-01T02:20:00Z"),
    ]
    c, _w, election, _clock = make(nodes, [cm("w")], policy=policy, outbox=outbox)
    election.took_over_after = "2026-11-30T02:00:00.000000Z"
    c.settle()
    assert [m for m in rec.told() if m[0] == FINISHED] == [(FINISHED, "a")]


HOUR = 3600 * SECOND


def _waiting_after(c: Any, seconds: float) -> None:
    """``--notify-waiting-after`` for this controller (the options are read each pass)."""
    c.options = dataclasses.replace(c.options, notify_waiting_after=seconds)


def test_a_node_waiting_past_the_threshold_is_told_once_at_that_instant(make: Any) -> None:
    outbox, rec = _outbox()
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, world, _e, clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    _waiting_after(c, 3600.0)
    # 02:30: a admitted; b and c wait (ceiling 1) since kumaco's first write, 02:30.
    wake = c.settle()
    assert rec.told() == [(OPENED, "maintenance/w"), (ADMITTED, "a")]
    # The loop sleeps until the waits reach an hour (03:30), before the window closes (05:00).
    assert wake == kubeseam.OPEN + HOUR
    clock[0] = wake - 1
    assert c.settle() == wake
    assert len(rec.messages) == 2
    clock[0] = wake
    c.settle()
    assert rec.told()[2:] == [(WAITING_EVENT, "b"), (WAITING_EVENT, "c")]
    assert rec.messages[2].body == (
        "Node b has waited 1h0m0s for maintenance (since 2026-12-01T02:30:00Z, kept out by "
        "ConcurrencyCeilingReached); it is still not admitted. Look at the ceilings and the "
        "windows: kubectl kumaco status shows why."
    )
    # Still waiting, the same wait: told once; a's release and b's admission go on as ever.
    clock[0] += HOUR // 2
    c.settle()
    clock[0] += 60 * SECOND
    _reboot(c, world, "a")
    c.settle()
    c.settle()
    assert rec.told()[4:] == [(FINISHED, "a"), (ADMITTED, "b")]


def test_waiting_too_long_not_chosen_is_neither_told_nor_woken_for(make: Any) -> None:
    outbox, rec = _outbox(DEFAULT_EVENTS)
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, _world, _e, clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    _waiting_after(c, 3600.0)
    wake = c.settle()
    assert wake is not None and wake > kubeseam.OPEN + HOUR  # the window's close, not the wait
    clock[0] = kubeseam.OPEN + HOUR
    c.settle()
    assert rec.told() == [(ADMITTED, "a")]


def test_a_new_leader_tells_a_wait_that_reached_the_threshold_after_the_leases_last_word(
    make: Any,
) -> None:
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    outbox, rec = _outbox()
    c, _world, election, clock = make(_three_nodes(), [cm("w")], policy=policy, outbox=outbox)
    _waiting_after(c, 3600.0)
    c.settle()  # the old leader: a admitted, b and c wait since 02:30
    election.is_leader = False
    c.settle()
    # A takeover at 03:30:03 whose previous leader last renewed at 03:30:00.5: the waits
    # reached an hour at 03:30:00, in that second: told (maybe a second time).
    election.is_leader = True
    election.took_over_after = "2026-12-01T03:30:00.500000Z"
    clock[0] = kubeseam.OPEN + HOUR + 3 * SECOND
    c.settle()

    def waits() -> list[tuple[str, str]]:
        return [m for m in rec.told() if m[0] == WAITING_EVENT]

    assert waits() == [(WAITING_EVENT, "b"), (WAITING_EVENT, "c")]
    # A later takeover whose previous leader renewed after that: it told them; silence.
    election.is_leader = False
    c.settle()
    election.is_leader = True
    election.took_over_after = "2026-12-01T03:31:00.000000Z"
    clock[0] += 60 * SECOND
    c.settle()
    assert len(waits()) == 2


def _waiter(name: str, since_h: int, reason: str = CEILING_REACHED) -> Waiter:
    return Waiter(name, kubeseam.OPEN + since_h * HOUR, reason)


def test_waiting_moments_tell_each_wait_once_and_a_new_wait_again() -> None:
    m = WaitingMoments()
    m.reset(since=kubeseam.OPEN)  # a takeover at OPEN: waits reaching 1h from then on count
    now = kubeseam.OPEN
    got, nxt = m.observe([_waiter("a", 0), _waiter("b", -2)], {"a", "b"}, now, HOUR)
    # b reached an hour at OPEN - 1h, before the previous leader's last word: its to tell.
    assert (got, nxt) == ([], now + HOUR)
    now += HOUR
    got, nxt = m.observe([_waiter("a", 0), _waiter("b", -2)], {"a", "b"}, now, HOUR)
    assert [(x.event, x.subject) for x in got] == [(WAITING_EVENT, "a")]
    assert dict(got[0].fields) == {
        "node": "a",
        "waited": "1h0m0s",
        "since": "2026-12-01T02:30:00Z",
        "reason": CEILING_REACHED,
    }
    assert nxt is None
    # a is blocked for a while (not waiting), then waits again from the same request: no.
    now += HOUR
    assert m.observe([], {"a", "b"}, now, HOUR) == ([], None)
    assert m.observe([_waiter("a", 0, "NoWindowOpen")], {"a", "b"}, now, HOUR) == ([], None)
    # a admitted, released, and waits again from its release (since 3h): told once more.
    got, nxt = m.observe([_waiter("a", 3)], {"a", "b"}, now, HOUR)
    assert (got, nxt) == ([], kubeseam.OPEN + 4 * HOUR)
    now = kubeseam.OPEN + 4 * HOUR
    got, _nxt = m.observe([_waiter("a", 3)], {"a", "b"}, now, HOUR)
    assert [(x.subject, dict(x.fields)["since"]) for x in got] == [("a", "2026-12-01T05:30:00Z")]
    assert m.observe([_waiter("a", 3)], {"a", "b"}, now + HOUR, HOUR) == ([], None)


def test_waiting_moments_without_a_previous_leader_start_silent_and_forget_nodes_gone() -> None:
    m = WaitingMoments()
    now = kubeseam.OPEN
    assert m.observe([_waiter("a", -2)], {"a"}, now, HOUR) == ([], None)  # the baseline
    assert m.observe([_waiter("a", -2)], {"a"}, now + HOUR, HOUR) == ([], None)
    # a leaves, and a node of that name comes back still waiting from the same instant.
    assert m.observe([], set(), now + HOUR, HOUR) == ([], None)
    got, _nxt = m.observe([_waiter("a", -2)], {"a"}, now + HOUR, HOUR)
    assert [x.subject for x in got] == ["a"]
