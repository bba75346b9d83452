"""The fleet rules (admission rate, one group at a time, spacing) in the planner, one table test per behaviour (kumaco.core.planning.pacing_rules).

The admission rate (``--admission-rate``: what is counted, where it is recorded, when it
frees), one group at a time (``--one-group-at-a-time``: who goes, who goes next, how it
composes), spacing per node (``--node-min-interval``) and the waiters of
``kumaco_oldest_waiting_seconds`` (kumaco.core.planning.waiting). The hypothesis properties are in
tests/unit/core/planning/test_fleetrules_properties.py; the command line in tests/unit/cmd/test_cli_fleet.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from kumaco.core.errors import InvalidInput
from kumaco.core.objects.boots import admitted_on
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.pacing_rules import recorded_admissions, with_admissions
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    ADMISSION_RATE_REACHED,
    ALLOWED,
    ANOTHER_GROUP_IN_PROGRESS,
    CEILING_REACHED,
    FINISHED,
    HELD,
    NOT_UNDER_MAINTENANCE,
    TIMED_OUT,
    TOO_SOON,
    TOPOLOGY_CEILING_REACHED,
    Plan,
)
from kumaco.core.planning.rates import AdmissionRate, parse_admission_rate
from kumaco.core.planning.waiting import oldest_wait, waiters, waiters_as_written
from kumaco.core.time.durations import HOUR, MINUTE, SECOND
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.core.windows.ceilings import Ceiling
from tests.support.builders.planning import BLOCK, MIP, NOW, REQ, blk, node, nodeset, req, window
from tests.support.builders.policies import policy_of, reconfigured

ZONE = "zone"
RATE = policy_of(ceiling=Ceiling(10), require=(REQ,), admission_rate=AdmissionRate(2, HOUR))


def held(status: str, reason: str, ltt: str, message: str = "") -> dict[str, str]:
    """A MaintenanceInProgress condition (as :func:`with_mip` adds it)."""
    return {
        "type": MIP,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": ltt,
    }


def with_mip(obj: object, condition: Mapping[str, str], boot: str | None = None) -> object:
    o: dict[str, Any] = obj  # type: ignore[assignment]
    o["status"]["conditions"].append(dict(condition))
    if boot is not None:
        o["status"]["nodeInfo"] = {"bootID": boot}
    return o


def mip(p: Plan, name: str) -> tuple[str, str, str]:
    n = p.node(name)
    assert n is not None and n.in_progress is not None
    return n.in_progress.status, n.in_progress.reason, n.in_progress.message


def written(views: NodeSet, p: Plan, now: int) -> NodeSet:
    """The plan's MaintenanceInProgress written back as the controller writes it."""
    out = []
    for v in views:
        n = p.node(v.name)
        if n is None or n.in_progress is None:
            out.append(v)
            continue
        d, cur = n.in_progress, v.condition(MIP)
        ltt = (
            cur.last_transition_time
            if cur is not None and cur.status == d.status
            else format_instant(now)
        )
        conditions = dict(v.conditions)
        conditions[MIP] = dataclasses.replace(
            cur or next(iter(v.conditions.values())),
            type=MIP,
            status=d.status,
            reason=d.reason,
            message=d.message,
            last_transition_time=ltt,
        )
        out.append(dataclasses.replace(v, conditions=conditions))
    return NodeSet(out)


def set_req(views: NodeSet, name: str, status: str, now: int) -> NodeSet:
    out = []
    for v in views:
        conditions = dict(v.conditions)
        if v.name == name:
            conditions[REQ] = dataclasses.replace(
                conditions[REQ], status=status, last_transition_time=format_instant(now)
            )
        out.append(dataclasses.replace(v, conditions=conditions))
    return NodeSet(out)


# ----------------------------------------------------------------------------- the rate


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10/1h", AdmissionRate(10, HOUR)), (" 1/90s ", AdmissionRate(1, 90 * SECOND))],
)
def test_a_rate_is_n_per_a_go_duration(text: str, expected: AdmissionRate) -> None:
    assert parse_admission_rate(text) == expected
    assert str(AdmissionRate(10, HOUR)) == "10/1h0m0s"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("10", "'10' is not N/DURATION: a count of at least 1, a slash and a Go duration"),
        ("0/1h", "'0/1h' is not N/DURATION"),
        ("10/1d", '\'10/1d\': unknown unit "d" in duration "1d" (e.g. 10/1h)'),
        ("10/0s", "'10/0s': the duration must be greater than 0 (e.g. 10/1h)"),
        ("-1/1h", "'-1/1h' is not N/DURATION"),
    ],
)
def test_a_bad_rate_says_how_to_write_one(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        parse_admission_rate(text)
    assert exc.value.reason.startswith(says), exc.value.reason


def test_the_rate_counts_holders_and_recorded_admissions_inside_the_window() -> None:
    # 03:30 now, 2 per hour: a holder admitted at 03:00 and a release recording 02:40 fill
    # it; a release recording only 02:29:59 (left at 03:30:00) does not count.
    nodes = nodeset(
        with_mip(node("a", **req()), held("True", ALLOWED, "2026-12-01T03:00:00Z")),
        with_mip(
            node("b", **req("False")),
            held(
                "False",
                FINISHED,
                "2026-12-01T02:50:00Z",
                "maintenance finished; recent admissions: 2026-12-01T02:40:00Z",
            ),
        ),
        with_mip(
            node("c", **req("False")),
            held(
                "False",
                FINISHED,
                "2026-12-01T02:35:00Z",
                "maintenance finished; recent admissions: 2026-12-01T02:29:59Z",
            ),
        ),
        node("d", **req(ltt="2026-11-01T00:00:00Z")),
        node("e", **req(ltt="2026-11-02T00:00:00Z")),
    )
    p = plan([window("w")], nodes, NOW, RATE)
    assert mip(p, "d") == (
        "False",
        ADMISSION_RATE_REACHED,
        "waiting: at most 2 nodes may start maintenance in any 1h0m0s",
    )
    d = p.node("d")
    assert d is not None and d.verdict is not None
    # The oldest leaves at the end of its second plus an hour: 03:40:01.
    assert d.verdict.until == NOW + 10 * MINUTE + SECOND
    assert (d.verdict.ceiling, d.verdict.holders) == ("admissions per 1h0m0s", ("a", "b"))
    assert p.next_change == NOW + 10 * MINUTE + SECOND
    use = next(c for c in p.ceilings if c.name == "admissions per 1h0m0s")
    assert (use.limit, use.occupants) == (2, ("a", "b"))
    # When the oldest has left, the oldest request goes (d), and the rate is full again.
    q = plan([window("w")], nodes, NOW + 10 * MINUTE + SECOND, RATE)
    assert mip(q, "d")[:2] == ("True", ALLOWED) and mip(q, "e")[:2] == (
        "False",
        ADMISSION_RATE_REACHED,
    )


def test_a_plan_admits_no_more_than_the_rate_and_the_grant_records_its_instant() -> None:
    nodes = nodeset(*(node(f"n{i}", **req(ltt=f"2026-11-0{i + 1}T00:00:00Z")) for i in range(4)))
    p = plan([window("w")], nodes, NOW, RATE)
    assert [mip(p, f"n{i}")[:2] for i in range(4)] == [
        ("True", ALLOWED),
        ("True", ALLOWED),
        ("False", ADMISSION_RATE_REACHED),
        ("False", ADMISSION_RATE_REACHED),
    ]
    assert mip(p, "n0")[2] == (
        "in an open maintenance window with kured.dev/RebootRequired=True and not blocked; "
        "recent admissions: 2026-12-01T03:30:00.000000Z"
    )
    # The grant records its instant exactly: it leaves the window exactly an hour later.
    assert p.next_change == NOW + HOUR
    # Written back and planned again: the same answer, no rewrite.
    again = plan([window("w")], written(nodes, p, NOW), NOW, RATE)
    assert [n.desired for n in again.nodes] == [n.desired for n in p.nodes]


def test_a_second_admission_a_release_and_a_new_leader_lose_no_admission() -> None:
    """One node admitted twice inside the hour with a release between: each plan is made
    from the cluster alone (what a new leader reads), and both admissions stay counted."""
    policy = reconfigured(RATE, admission_rate=AdmissionRate(2, HOUR))
    views = nodeset(node("a", **req()), node("b", **req("False")))
    t = NOW
    views = written(views, plan([window("w")], views, t, policy), t)  # a admitted at 03:30
    t += 10 * MINUTE
    views = set_req(views, "a", "False", t)  # a's maintenance done
    views = written(views, plan([window("w")], views, t, policy), t)
    a = views.get("a")
    assert a is not None and a.condition(MIP) is not None
    release = a.condition(MIP)
    assert release is not None and release.reason == FINISHED
    assert recorded_admissions(release.message) == ("2026-12-01T03:30:00.000000Z",)
    t += 10 * MINUTE
    views = set_req(views, "a", "True", t)  # a needs maintenance again
    views = written(views, plan([window("w")], views, t, policy), t)  # a admitted at 03:50
    again = views.get("a")
    assert again is not None and again.condition(MIP) is not None
    holder = again.condition(MIP)
    assert holder is not None and holder.status == "True"
    assert recorded_admissions(holder.message) == (
        "2026-12-01T03:30:00.000000Z",
        "2026-12-01T03:50:00.000000Z",
    )
    t += 10 * MINUTE
    views = set_req(views, "a", "False", t)
    views = written(views, plan([window("w")], views, t, policy), t)
    views = set_req(views, "b", "True", t)  # b asks at 04:10
    # A new leader at 04:11 plans from the cluster: two admissions in the hour, b waits.
    p = plan([window("w")], views, t + MINUTE, policy)
    assert mip(p, "b")[:2] == ("False", ADMISSION_RATE_REACHED)
    b = p.node("b")
    assert b is not None and b.verdict is not None
    assert b.verdict.until == parse_timestamp("2026-12-01T04:30:00Z")  # 03:30 + 1h, exactly
    just_before = plan([window("w")], views, (b.verdict.until or 0) - 1, policy)
    assert mip(just_before, "b")[:2] == ("False", ADMISSION_RATE_REACHED)
    later = plan([window("w")], views, parse_timestamp("2026-12-01T04:30:00Z") or 0, policy)
    assert mip(later, "b")[:2] == ("True", ALLOWED)


def test_the_record_stays_before_the_boot_and_is_carried_unchanged() -> None:
    message = "in an open maintenance window and not blocked; admitted on boot abc"
    marked = with_admissions(message, ["2026-12-01T03:00:00Z"])
    assert marked == (
        "in an open maintenance window and not blocked; recent admissions: "
        "2026-12-01T03:00:00Z; admitted on boot abc"
    )
    assert admitted_on(marked) == "abc"
    assert with_admissions(marked, ["2026-12-01T03:00:00Z"]) == marked
    assert with_admissions(marked, []) == message
    # A holder admitted on a boot keeps both through a plan that changes its wording.
    nodes = nodeset(
        with_mip(
            node("a", **req(), **blk()),
            held("True", ALLOWED, "2026-12-01T03:00:00Z", marked),
            boot="abc",
        )
    )
    policy = dataclasses.replace(RATE, block=(BLOCK,))
    status, reason, text = mip(plan([window("w")], nodes, NOW, policy), "a")
    assert (status, reason) == ("True", HELD)
    assert (
        text.endswith("; recent admissions: 2026-12-01T03:00:00Z; admitted on boot abc")
        and admitted_on(text) == "abc"
    )


def test_without_a_rate_no_message_records_anything() -> None:
    nodes = nodeset(node("a", **req()))
    p = plan([window("w")], nodes, NOW, policy_of(ceiling=Ceiling(1), require=(REQ,)))
    assert "recent admissions" not in mip(p, "a")[2]


# ----------------------------------------------------------------------------- one group


GROUPS = policy_of(ceiling=Ceiling(10), require=(REQ,), one_group_at_a_time=ZONE)


def zone_nodes(*extra: object) -> list[object]:
    """a1, a2 in zone a, b1 in zone b (the oldest request), c1 without the label."""
    return [
        node("a1", {ZONE: "a"}, **req(ltt="2026-11-02T00:00:00Z")),
        node("a2", {ZONE: "a"}, **req(ltt="2026-11-03T00:00:00Z")),
        node("b1", {ZONE: "b"}, **req(ltt="2026-11-01T00:00:00Z")),
        node("c1", **req(ltt="2026-11-04T00:00:00Z")),
        *extra,
    ]


def test_with_nobody_in_progress_the_group_of_the_oldest_request_goes() -> None:
    p = plan([window("w")], nodeset(*zone_nodes()), NOW, GROUPS)
    assert [mip(p, n)[:2] for n in ("a1", "a2", "b1", "c1")] == [
        ("False", ANOTHER_GROUP_IN_PROGRESS),
        ("False", ANOTHER_GROUP_IN_PROGRESS),
        ("True", ALLOWED),
        ("False", ANOTHER_GROUP_IN_PROGRESS),
    ]
    assert mip(p, "a1")[2] == "waiting: one zone at a time, and it is another zone's turn"
    a1 = p.node("a1")
    assert a1 is not None and a1.verdict is not None
    assert (a1.verdict.ceiling, a1.verdict.holders) == ("one zone at a time", ("b1",))


def test_a_group_in_progress_admits_its_own_nodes_only_and_revokes_nobody() -> None:
    holders = [
        with_mip(node("a0", {ZONE: "a"}, **req()), held("True", ALLOWED, "2026-12-01T03:00:00Z")),
        with_mip(node("c0", {ZONE: "c"}, **req()), held("True", ALLOWED, "2026-12-01T03:00:00Z")),
    ]
    p = plan([window("w")], nodeset(*zone_nodes(holders[0])), NOW, GROUPS)
    assert [mip(p, n)[:2] for n in ("a0", "a1", "a2", "b1", "c1")] == [
        ("True", ALLOWED),
        ("True", ALLOWED),
        ("True", ALLOWED),
        ("False", ANOTHER_GROUP_IN_PROGRESS),
        ("False", ANOTHER_GROUP_IN_PROGRESS),
    ]
    # Two groups in progress already (the rule just turned on): both keep it, nobody new.
    q = plan([window("w")], nodeset(*zone_nodes(*holders)), NOW, GROUPS)
    assert mip(q, "a0")[:2] == mip(q, "c0")[:2] == ("True", ALLOWED)
    assert all(mip(q, n)[1] == ANOTHER_GROUP_IN_PROGRESS for n in ("a1", "a2", "b1", "c1"))


def test_the_group_of_the_last_maintenance_goes_on_while_it_has_an_eligible_node() -> None:
    # a0 is released in this plan (its reboot is done); b1's request is older than a2's,
    # but zone a still has an eligible node: a2 goes next, not b1.
    released_now = with_mip(
        node("a0", {ZONE: "a"}, **req("False")), held("True", ALLOWED, "2026-12-01T03:00:00Z")
    )
    nodes = [
        released_now,
        node("a2", {ZONE: "a"}, **req(ltt="2026-11-03T00:00:00Z")),
        node("b1", {ZONE: "b"}, **req(ltt="2026-11-01T00:00:00Z")),
    ]
    policy = reconfigured(GROUPS, ceiling=Ceiling(1))
    p = plan([window("w")], nodeset(*nodes), NOW, policy)
    assert [mip(p, n)[:2] for n in ("a0", "a2", "b1")] == [
        ("False", FINISHED),
        ("True", ALLOWED),
        ("False", CEILING_REACHED),
    ]
    # The same after a release delay: the latest release (a0's, 03:20) names the group.
    after_delay = [
        with_mip(
            node("a0", {ZONE: "a"}, **req("False")), held("False", FINISHED, "2026-12-01T03:20:00Z")
        ),
        with_mip(
            node("b0", {ZONE: "b"}, **req("False")), held("False", FINISHED, "2026-12-01T03:10:00Z")
        ),
        *nodes[1:],
    ]
    q = plan([window("w")], nodeset(*after_delay), NOW, GROUPS)
    assert mip(q, "a2")[:2] == ("True", ALLOWED) and mip(q, "b1")[1] == ANOTHER_GROUP_IN_PROGRESS
    # Once zone a has no eligible node left, the oldest request's group goes next.
    done = [after_delay[0], after_delay[1], nodes[2]]
    r = plan([window("w")], nodeset(*done), NOW, policy)
    assert mip(r, "b1")[:2] == ("True", ALLOWED)


def test_holders_released_together_name_the_same_group_when_planned_again() -> None:
    # a0 (zone a, admitted later) and b0 (zone b) finish in the same pass, while the rate
    # admits nobody: before the writes a0's admission is the latest, after them both
    # releases read the same second. The turn must not flip between the two plans.
    policy = reconfigured(GROUPS, ceiling=Ceiling(1), admission_rate=AdmissionRate(1, HOUR))
    nodes = nodeset(
        with_mip(
            node("a0", {ZONE: "a"}, **req("False")), held("True", ALLOWED, "2026-12-01T02:50:00Z")
        ),
        with_mip(
            node("b0", {ZONE: "b"}, **req("False")), held("True", ALLOWED, "2026-12-01T02:40:00Z")
        ),
        node("a1", {ZONE: "a"}, **req(ltt="2026-11-01T00:00:00Z")),
        node("b1", {ZONE: "b"}, **req(ltt="2026-11-02T00:00:00Z")),
    )
    p = plan([window("w")], nodes, NOW, policy)
    again = plan([window("w")], written(nodes, p, NOW), NOW, policy)
    assert [mip(again, n) for n in sorted(n.name for n in nodes)] == [
        mip(p, n) for n in sorted(n.name for n in nodes)
    ]
    assert {mip(p, n)[1] for n in ("a1", "b1")} == {
        ADMISSION_RATE_REACHED,
        ANOTHER_GROUP_IN_PROGRESS,
    }


def test_one_group_composes_with_group_ceilings_and_a_release_delay_keeps_the_group() -> None:
    policy = reconfigured(GROUPS, ceilings_per=((ZONE, Ceiling(1)),))
    p = plan([window("w")], nodeset(*zone_nodes()[:3]), NOW, policy)
    # Zone b has the oldest request but one node: b1 goes alone; zone a waits for its turn.
    assert [mip(p, n)[:2] for n in ("a1", "a2", "b1")] == [
        ("False", ANOTHER_GROUP_IN_PROGRESS),
        ("False", ANOTHER_GROUP_IN_PROGRESS),
        ("True", ALLOWED),
    ]
    two = reconfigured(policy, ceilings_per=((ZONE, Ceiling(1)),), one_group_at_a_time=ZONE)
    holder = with_mip(
        node("a0", {ZONE: "a"}, **req()), held("True", ALLOWED, "2026-12-01T03:00:00Z")
    )
    q = plan([window("w")], nodeset(holder, *zone_nodes()[:3]), NOW, two)
    assert mip(q, "a1")[:2] == ("False", TOPOLOGY_CEILING_REACHED)  # its zone's ceiling first
    assert mip(q, "b1")[:2] == ("False", ANOTHER_GROUP_IN_PROGRESS)
    # A node settling after its release (release delay) still holds its group's turn.
    settling = with_mip(
        node("a0", {ZONE: "a"}, **req("False")), held("False", FINISHED, "2026-12-01T03:29:00Z")
    )
    delayed = reconfigured(GROUPS, release_delay=5 * MINUTE)
    r = plan([window("w")], nodeset(settling, *zone_nodes()), NOW, delayed)
    assert mip(r, "a1")[:2] == ("True", ALLOWED) and mip(r, "b1")[1] == ANOTHER_GROUP_IN_PROGRESS


# ----------------------------------------------------------------------------- spacing


SPACED = policy_of(ceiling=Ceiling(10), require=(REQ,), node_min_interval=6 * HOUR)


@pytest.mark.parametrize("reason", [FINISHED, TIMED_OUT])
def test_a_node_is_not_admitted_again_within_the_interval_and_says_until_when(
    reason: str,
) -> None:
    released = with_mip(node("a", **req()), held("False", reason, "2026-12-01T01:00:00Z"))
    p = plan([window("w")], nodeset(released), NOW, SPACED)
    if reason == TIMED_OUT:  # timed out: out until its required condition clears first
        assert mip(p, "a")[:2] == ("False", TIMED_OUT)
        released = with_mip(
            node("a", **req("False")), held("False", reason, "2026-12-01T01:00:00Z")
        )
        p = plan([window("w")], nodeset(released), NOW, SPACED)
    assert mip(p, "a") == (
        "False",
        TOO_SOON,
        "too soon after its last maintenance (ended 2026-12-01T01:00:00Z): may be admitted "
        "from 2026-12-01T07:00:01Z (--node-min-interval 6h0m0s)",
    )
    a = p.node("a")
    assert a is not None and a.verdict is not None
    assert a.verdict.until == parse_timestamp("2026-12-01T07:00:01Z")
    # The planner looks again then (here the window's close, 05:00, comes first).
    late = plan([window("w", duration="12h")], nodeset(released), NOW, SPACED)
    assert late.next_change == parse_timestamp("2026-12-01T07:00:01Z")


def test_the_interval_survives_a_closed_window_and_ends_on_time() -> None:
    """Kept as TooSoonAfterLastMaintenance, the end stays known whatever else keeps it out."""
    views = nodeset(with_mip(node("a", **req()), held("False", FINISHED, "2026-12-01T03:00:00Z")))
    policy = reconfigured(SPACED, node_min_interval=24 * HOUR)
    t = NOW
    views = written(views, plan([window("w")], views, t, policy), t)
    for hours in (2, 12, 23):  # the window (03:00-05:00) closed, then open again next night
        at = NOW + hours * HOUR
        views = written(views, plan([window("w")], views, at, policy), at)
        a = views.get("a")
        assert a is not None and (c := a.condition(MIP)) is not None
        assert (c.status, c.reason, c.last_transition_time) == (
            "False",
            TOO_SOON,
            "2026-12-01T03:00:00Z",
        )
    end = parse_timestamp("2026-12-02T03:00:01Z") or 0
    assert mip(plan([window("w")], views, end - 1, policy), "a")[1] == TOO_SOON
    assert mip(plan([window("w")], views, end, policy), "a")[:2] == ("True", ALLOWED)


def test_spacing_keeps_a_release_message_while_idle_and_spares_others() -> None:
    idle = with_mip(
        node("a", **req("False")), held("False", FINISHED, "2026-12-01T03:00:00Z", "done")
    )
    never = with_mip(node("b", **req()), held("False", CEILING_REACHED, "2026-12-01T03:29:00Z"))
    holder = with_mip(node("c", **req()), held("True", ALLOWED, "2026-12-01T03:29:00Z"))
    p = plan([window("w")], nodeset(idle, never, holder), NOW, SPACED)
    assert mip(p, "a") == ("False", FINISHED, "done")  # idle: left as written
    assert mip(p, "b")[:2] == ("True", ALLOWED)  # never maintained: no spacing
    assert mip(p, "c")[:2] == ("True", ALLOWED)  # a holder: never revoked


# ----------------------------------------------------------------------------- waiters


def test_waiters_are_the_nodes_that_ask_and_only_the_schedule_or_the_fleet_keeps_out() -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,), block=(BLOCK,))
    nodes = nodeset(
        with_mip(node("holder", **req()), held("True", ALLOWED, "2026-12-01T03:00:00Z")),
        # Written False by kumaco on 11-15, asked on 11-20: waiting since its request.
        with_mip(
            node("queued", **req(ltt="2026-11-20T00:00:00Z")),
            held("False", NOT_UNDER_MAINTENANCE, "2026-11-15T00:00:00Z"),
        ),
        # Released at 02:00 after asking on 11-10: waiting since its release.
        with_mip(
            node("again", **req(ltt="2026-11-10T00:00:00Z")),
            held("False", CEILING_REACHED, "2026-12-01T02:00:00Z"),
        ),
        node("blocked", **req(ltt="2026-11-01T00:00:00Z"), **blk()),
        node("idle", **req("False")),
        with_mip(
            node("outside", {"pool": "x"}, **req(ltt="2026-11-25T00:00:00Z")),
            held("False", NOT_UNDER_MAINTENANCE, "2026-11-15T00:00:00Z"),
        ),
        # Never written by kumaco: waiting from this plan's first write (now).
        node("new", **req(ltt="2026-11-21T00:00:00Z")),
    )
    windows = [window("w", selector="!pool")]
    p = plan(windows, nodes, NOW, policy)
    found = waiters(p, nodes, policy)
    assert [(w.name, format_instant(w.since), w.reason) for w in found] == [
        ("queued", "2026-11-20T00:00:00Z", CEILING_REACHED),
        ("outside", "2026-11-25T00:00:00Z", NOT_UNDER_MAINTENANCE),
        ("again", "2026-12-01T02:00:00Z", CEILING_REACHED),
        ("new", "2026-12-01T03:30:00Z", CEILING_REACHED),
    ]
    assert oldest_wait(p, nodes, policy) == NOW - (parse_timestamp("2026-11-20T00:00:00Z") or 0)
    nobody = plan(windows, nodeset(node("idle", **req("False"))), NOW, policy)
    assert oldest_wait(nobody, nodeset(node("idle", **req("False"))), policy) == 0
    # As written (what kubectl kumaco status reads): the same, from the written conditions.
    as_written = written(nodes, p, NOW)
    assert waiters_as_written(as_written, policy) == found
    # Without required conditions, a node asks while it is under maintenance.
    bare = policy_of(ceiling=Ceiling(0))
    asking = nodeset(
        with_mip(
            node("w", kured_dev__UnderMaintenance=("True", "2026-12-01T03:00:00Z")),
            held("False", CEILING_REACHED, "2026-12-01T02:00:00Z"),
        ),
        with_mip(node("x"), held("False", NOT_UNDER_MAINTENANCE, "2026-12-01T02:00:00Z")),
    )
    assert [(w.name, format_instant(w.since)) for w in waiters_as_written(asking, bare)] == [
        ("w", "2026-12-01T03:00:00Z")
    ]


def test_a_holder_stopped_by_this_plan_takes_no_settling_place() -> None:
    # n0 holds MaintenanceInProgress (written with reason MaintenanceFinished) outside any
    # window and is stopped now; the release delay counts released nodes only, so the
    # place is g1's in this plan as in the next one, once n0's False is written.
    policy = policy_of(ceiling=Ceiling(1), release_delay=5 * MINUTE)
    nodes = nodeset(
        with_mip(node("n0", **req()), held("True", FINISHED, "2026-12-01T03:29:00Z")),
        node("g1", {"gpu": "true"}, **req()),
    )
    windows = [window("w", selector="gpu=true")]
    p = plan(windows, nodes, NOW, policy)
    assert mip(p, "g1")[:2] == ("True", ALLOWED)
    again = plan(windows, written(nodes, p, NOW), NOW, policy)
    assert [mip(again, n) for n in ("n0", "g1")] == [mip(p, n) for n in ("n0", "g1")]
