"""The planner (kumaco.core.planning.planner): one table test per rule of UnderMaintenance and MaintenanceInProgress."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest

from kumaco.core.errors import InvalidInput
from kumaco.core.labels.selectors import parse_selector
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    ADMISSION_CUTOFF,
    ALLOWED,
    BLOCKED,
    CEILING_REACHED,
    FINISHED,
    FROZEN,
    HELD,
    NO_WINDOW,
    NOT_UNDER_MAINTENANCE,
    RELEASE_DELAY,
    RELEASED_UNAVAILABLE,
    REQUIREMENT_NOT_MET,
    TIMED_OUT,
    TOPOLOGY_CEILING_REACHED,
    WINDOW_BUDGET_REACHED,
    WINDOW_OPEN,
)
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.ceilings import Ceiling, parse_ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.planning import (
    BLOCK,
    MIP,
    NOW,
    REQ,
    blk,
    node,
    nodeset,
    req,
    window,
)
from tests.support.builders.policies import policy_of


def mip(status: str = "True") -> dict[str, str]:
    return {MIP: status}


KURED = policy_of(ceiling=Ceiling(2), require=(REQ,), block=(BLOCK,))


def test_under_maintenance_true_only_for_nodes_matching_an_open_window() -> None:
    p = plan(
        [window("a", selector="zone=a")],
        nodeset(node("n1", {"zone": "a"}), node("n2", {"zone": "b"})),
        NOW,
        policy_of(),
    )
    n1, n2 = p.nodes
    assert (n1.is_under_maintenance, n1.under_maintenance.reason, n1.windows) == (
        True,
        WINDOW_OPEN,
        ("maint/a",),
    )
    assert (
        n1.under_maintenance.message == "maintenance window maint/a open until 2026-12-01T05:00:00Z"
    )
    assert (n2.is_under_maintenance, n2.under_maintenance.reason, n2.windows) == (
        False,
        NO_WINDOW,
        (),
    )
    assert n1.in_progress is None  # no ceiling: MaintenanceInProgress is not managed


def test_several_windows_are_named_and_the_latest_close_wins() -> None:
    p = plan(
        [window("a", duration="1h"), window("b", start="30 3 * * *", duration="3h")],
        nodeset(node("n")),
        NOW,
        policy_of(),
    )
    (n,) = p.nodes
    assert n.windows == ("maint/a", "maint/b")
    assert (
        n.under_maintenance.message
        == "maintenance windows maint/a, maint/b open until 2026-12-01T06:30:00Z"
    )


def test_only_nodes_in_scope_are_planned() -> None:
    p = plan(
        [window("a")],
        nodeset(node("in", {"pool": "x"}), node("out", {"pool": "y"})),
        NOW,
        policy_of(scope=parse_selector("pool=x")),
    )
    assert [n.name for n in p.nodes] == ["in"]


def test_closed_windows_and_next_change() -> None:
    later = NOW + 3 * 3600 * SECOND
    p = plan([window("a")], nodeset(node("n")), later, policy_of())
    assert not p.nodes[0].is_under_maintenance
    assert p.next_change == int(dt.datetime(2026, 12, 2, 3, tzinfo=dt.UTC).timestamp()) * SECOND
    open_now = plan([window("a")], nodeset(node("n")), NOW, policy_of())
    assert (
        open_now.next_change == int(dt.datetime(2026, 12, 1, 5, tzinfo=dt.UTC).timestamp()) * SECOND
    )


def test_next_change_ignores_windows_that_match_no_node_in_scope() -> None:
    p = plan(
        [window("a", start="*/5 * * * *", duration="1m", selector="zone=nowhere"), window("b")],
        nodeset(node("n")),
        NOW,
        policy_of(),
    )
    assert p.next_change == int(dt.datetime(2026, 12, 1, 5, tzinfo=dt.UTC).timestamp()) * SECOND


@pytest.mark.parametrize(
    ("conds", "status", "reason"),
    [
        ({}, "False", REQUIREMENT_NOT_MET),
        (req("False"), "False", REQUIREMENT_NOT_MET),
        (req("Unknown"), "False", REQUIREMENT_NOT_MET),
        ({**req(), **blk()}, "False", BLOCKED),
        ({**req(), **blk("False")}, "True", ALLOWED),
        (req(), "True", ALLOWED),
    ],
)
def test_in_progress_needs_every_required_and_no_blocking_condition(
    conds: dict[str, str], status: str, reason: str
) -> None:
    (n,) = plan([window("a")], nodeset(node("n", **conds)), NOW, KURED).nodes
    assert n.in_progress is not None
    assert (n.in_progress.status, n.in_progress.reason) == (status, reason)


def test_not_under_maintenance_means_not_in_progress() -> None:
    (n,) = plan([window("a", selector="zone=a")], nodeset(node("n", **req())), NOW, KURED).nodes
    assert n.in_progress is not None
    assert (n.in_progress.status, n.in_progress.reason) == ("False", NOT_UNDER_MAINTENANCE)


def test_a_holder_outside_its_window_keeps_it_until_its_maintenance_is_done() -> None:
    # The lifecycle: a closed window stops new admissions, it never revokes a holder.
    (n,) = plan(
        [window("a", selector="zone=a")], nodeset(node("n", **req(), **mip())), NOW, KURED
    ).nodes
    assert n.in_progress is not None
    assert (n.in_progress.status, n.in_progress.reason, n.in_progress.message) == (
        "True",
        HELD,
        f"window closed; waiting for {REQ} to clear",
    )


def test_a_blocked_holder_keeps_it() -> None:
    (n,) = plan([window("a")], nodeset(node("n", **req(), **blk(), **mip())), NOW, KURED).nodes
    assert n.in_progress is not None
    assert (n.in_progress.status, n.in_progress.reason, n.in_progress.message) == (
        "True",
        HELD,
        f"blocked by condition: {BLOCK}; waiting for {REQ} to clear",
    )


def test_without_required_conditions_a_holder_keeps_it_only_while_admissible() -> None:
    policy = policy_of(ceiling=Ceiling(1), block=(BLOCK,))
    (n,) = plan([window("a")], nodeset(node("n", **blk(), **mip())), NOW, policy).nodes
    assert n.in_progress is not None
    assert (n.in_progress.status, n.in_progress.reason) == ("False", BLOCKED)


def test_the_ceiling_admits_oldest_first_by_latest_required_transition_then_name() -> None:
    nodes = nodeset(
        node("d", **req(ltt="2026-11-04T00:00:00Z")),
        node("c", **req(ltt="2026-11-02T00:00:00Z")),
        node("b", **req(ltt="2026-11-02T00:00:00Z")),
        node("a", **req(ltt="2026-11-03T00:00:00Z")),
    )
    p = plan([window("w")], nodes, NOW, KURED)
    granted = [n.name for n in p.nodes if n.is_in_progress]
    assert granted == ["b", "c"]
    waiting = {
        n.name: n.in_progress.reason for n in p.nodes if n.in_progress and not n.is_in_progress
    }
    assert waiting == {"a": CEILING_REACHED, "d": CEILING_REACHED}
    assert (p.ceiling, p.in_progress) == (2, 2)


def test_the_latest_of_several_required_conditions_orders_admission() -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ, "kured.dev/Drained"))
    nodes = nodeset(
        node(
            "x",
            **req(ltt="2026-11-01T00:00:00Z"),
            kured_dev__Drained=("True", "2026-11-09T00:00:00Z"),
        ),
        node(
            "y",
            **req(ltt="2026-11-05T00:00:00Z"),
            kured_dev__Drained=("True", "2026-11-05T00:00:00Z"),
        ),
    )
    assert [n.name for n in plan([window("w")], nodes, NOW, policy).nodes if n.is_in_progress] == [
        "y"
    ]


def test_a_missing_or_malformed_time_sorts_after_known_ones() -> None:
    nodes = nodeset(node("a", **req(ltt="garbage")), node("b", **req(ltt="2026-11-20T00:00:00Z")))
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,))
    assert [n.name for n in plan([window("w")], nodes, NOW, policy).nodes if n.is_in_progress] == [
        "b"
    ]


def test_holders_keep_it_and_count_first() -> None:
    nodes = nodeset(
        node("old", **req(ltt="2026-10-01T00:00:00Z")),
        node("holder", **req(ltt="2026-11-20T00:00:00Z"), **mip()),
    )
    p = plan([window("w")], nodes, NOW, policy_of(ceiling=Ceiling(1), require=(REQ,)))
    assert [n.name for n in p.nodes if n.is_in_progress] == ["holder"]


def test_a_lowered_ceiling_revokes_nobody_and_admits_nobody() -> None:
    nodes = nodeset(*(node(f"h{i}", **req(), **mip()) for i in range(3)), node("new", **req()))
    p = plan([window("w")], nodes, NOW, policy_of(ceiling=Ceiling(1), require=(REQ,)))
    assert [n.name for n in p.nodes if n.is_in_progress] == ["h0", "h1", "h2"]
    new = p.node("new")
    assert new is not None and new.in_progress is not None
    assert new.in_progress.reason == CEILING_REACHED


def test_a_ceiling_of_zero_is_a_pause_switch() -> None:
    p = plan(
        [window("w")],
        nodeset(node("n", **req())),
        NOW,
        policy_of(ceiling=Ceiling(0), require=(REQ,)),
    )
    assert p.nodes[0].is_in_progress is False


@pytest.mark.parametrize(
    ("text", "nodes", "limit"),
    [("10%", 25, 2), ("10%", 9, 1), ("50%", 3, 1), ("100%", 7, 7), ("1%", 1000, 10), ("3", 1, 3)],
)
def test_percentages_round_down_but_never_below_one(text: str, nodes: int, limit: int) -> None:
    assert parse_ceiling(text).limit(nodes) == limit


@pytest.mark.parametrize("text", ["", "-1", "1.5", "101%", "10 %", "ten", "1e3", "%"])
def test_bad_ceilings(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_ceiling(text)


def test_the_percentage_base_is_the_nodes_in_scope() -> None:
    nodes = nodeset(*(node(f"n{i}", {"pool": "x" if i < 10 else "y"}, **req()) for i in range(30)))
    p = plan(
        [window("w")],
        nodes,
        NOW,
        policy_of(scope=parse_selector("pool=x"), ceiling=Ceiling(20, True), require=(REQ,)),
    )
    assert p.ceiling == 2
    assert sum(1 for n in p.nodes if n.is_in_progress) == 2


def test_messages_do_not_change_while_nothing_changes() -> None:
    nodes = nodeset(node("n", **req()), node("m", **req()))
    a = plan([window("w")], nodes, NOW, policy_of(ceiling=Ceiling(1), require=(REQ,)))
    b = plan(
        [window("w")], nodes, NOW + 600 * SECOND, policy_of(ceiling=Ceiling(1), require=(REQ,))
    )
    assert [n.desired for n in a.nodes] == [n.desired for n in b.nodes]


def test_malformed_nodes_do_not_crash_the_planner() -> None:
    objs = [
        {"metadata": {"name": "no-status"}},
        {"metadata": {"name": "bad-status"}, "status": "weird"},
        {
            "metadata": {"name": "bad-conds"},
            "status": {"conditions": [{"status": "True"}, "x", {"type": 3}]},
        },
        {
            "metadata": {"name": "dup"},
            "status": {
                "conditions": [{"type": REQ, "status": "True"}, {"type": REQ, "status": "False"}]
            },
        },
        {"metadata": {"name": "labels", "labels": {"a": 1, "b": None, "c": "ok"}}},
        {"metadata": {}},
        {"kind": "Node"},
        None,
    ]
    views = [node_view(o) for o in objs]
    ns = NodeSet(v for v in views if v is not None)
    p = plan([window("w", selector="c=ok")], ns, NOW, KURED)
    assert {n.name for n in p.nodes} == {"no-status", "bad-status", "bad-conds", "dup", "labels"}
    dup = p.node("dup")
    assert dup is not None and dup.is_in_progress is False  # not under maintenance (no c=ok label)
    assert p.node("labels") is not None and p.node("labels").is_under_maintenance  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- changes


def test_changes_write_only_what_differs_and_keep_transition_times() -> None:
    from kumaco.core.planning.changes import changes

    nodes = nodeset(
        node("a", **{UM.replace("/", "__").replace(".", "_"): "True"}, **req()),
        node("b", **req()),
    )
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,))
    p = plan([window("w")], nodes, NOW, policy)
    due = changes(p, nodes, {"a": "7", "b": "8"}, NOW, policy)
    stamp = "2026-12-01T03:30:00Z"
    by_name = {c.name: c for c in due}
    # a: UnderMaintenance was True with another message -> rewritten, transition time kept.
    (a_um, a_mip) = by_name["a"].conditions
    assert (a_um.type, a_um.status, a_um.last_transition_time) == (
        UM,
        "True",
        "2026-11-01T00:00:00Z",
    )
    assert (a_mip.type, a_mip.status, a_mip.last_transition_time) == (MIP, "True", stamp)
    assert by_name["a"].grant and by_name["a"].resource_version == "7"
    # b waits (ceiling 1): its conditions are new, so their transition time is now.
    assert [(c.type, c.status, c.last_transition_time) for c in by_name["b"].conditions] == [
        (UM, "True", stamp),
        (MIP, "False", stamp),
    ]
    assert not by_name["b"].grant
    # Grants come last.
    assert [c.name for c in due] == ["b", "a"]
    assert [c.name for c in due.revocations] == ["b"] and [c.name for c in due.grants] == ["a"]
    # Applied, the same plan needs nothing more.
    applied = nodeset(
        *[
            {
                "metadata": {"name": c.name},
                "status": {
                    "conditions": [
                        *[w.as_json() for w in c.conditions],
                        {
                            "type": REQ,
                            "status": "True",
                            "lastTransitionTime": "2026-11-01T00:00:00Z",
                        },
                    ]
                },
            }
            for c in due
        ]
    )
    again = plan([window("w")], applied, NOW, policy)
    assert len(changes(again, applied, {}, NOW, policy)) == 0


UM = "kured.dev/UnderMaintenance"


# ----------------------------------------------------------------------------- the lifecycle


def node_r(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    mip_: tuple[str, str, str] | None = None,
    unschedulable: bool = False,
    **conds: str | tuple[str, str],
) -> object:
    """A node whose MaintenanceInProgress has a status, reason and transition time."""
    obj: dict[str, Any] = node(name, labels, **conds)  # type: ignore[assignment]
    if mip_ is not None:
        status, reason, ltt = mip_
        obj["status"]["conditions"].append(
            {"type": MIP, "status": status, "reason": reason, "lastTransitionTime": ltt}
        )
    if unschedulable:
        obj["spec"] = {"unschedulable": True}
    return obj


def mip_of(p: Any, name: str) -> tuple[str, str]:
    n = p.node(name)
    assert n is not None and n.in_progress is not None
    return n.in_progress.status, n.in_progress.reason


def test_a_holder_whose_required_condition_clears_is_released_and_the_place_goes_on() -> None:
    nodes = nodeset(
        node_r("a", mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"), **req("False")),
        node("b", **req()),
    )
    p = plan([window("w")], nodes, NOW, policy_of(ceiling=Ceiling(1), require=(REQ,)))
    assert mip_of(p, "a") == ("False", FINISHED)
    assert mip_of(p, "b") == ("True", ALLOWED)  # the freed place, in the same pass


def test_a_freeze_opening_over_a_holder_keeps_the_holder_and_admits_nobody() -> None:
    freeze = parse_window(
        "maint",
        "f",
        {"startTime": "0 3 * * *", "duration": "1h", "nodeSelector": "", "freeze": "true"},
    )
    assert isinstance(freeze, Window) and freeze.freeze
    nodes = nodeset(
        node_r("a", mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"), **req()), node("b", **req())
    )
    p = plan([window("w"), freeze], nodes, NOW, policy_of(ceiling=Ceiling(2), require=(REQ,)))
    a, b = p.node("a"), p.node("b")
    assert a is not None and b is not None
    assert (a.under_maintenance.status, a.under_maintenance.reason) == ("False", FROZEN)
    assert (
        a.under_maintenance.message
        == "maintenance frozen by freeze maint/f until 2026-12-01T04:00:00Z"
    )
    assert mip_of(p, "a") == ("True", HELD)
    assert mip_of(p, "b") == ("False", FROZEN)
    assert a.freezes == ("maint/f",) and a.windows == ("maint/w",)


@pytest.mark.parametrize(
    ("released", "counts"),
    [
        ("2026-12-01T03:25:01Z", True),  # within 03:25:01-03:25:02: still settling
        # Counted from the end of the second (times are truncated to it): still settling.
        ("2026-12-01T03:25:00Z", True),
        ("2026-12-01T03:24:59Z", False),  # the delay ends exactly now
        ("2026-12-01T03:25:00.000Z", False),  # an exact time: exactly 5m ago
        ("2026-12-01T03:00:00Z", False),
    ],
)
def test_a_release_delay_counts_a_recent_release_until_it_ends(released: str, counts: bool) -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,), release_delay=5 * 60 * SECOND)
    nodes = nodeset(
        node_r("a", mip_=("False", FINISHED, released), **req("False")), node("b", **req())
    )
    p = plan([window("w")], nodes, NOW, policy)
    assert mip_of(p, "b") == (("False", CEILING_REACHED) if counts else ("True", ALLOWED))
    assert mip_of(p, "a") == ("False", FINISHED)  # unchanged: no rewrite of the settling node
    if released == "2026-12-01T03:25:01Z":
        assert p.next_change == NOW + 2 * SECOND  # the delay ends: look again then


def test_only_a_real_release_counts_for_the_delay() -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,), release_delay=5 * 60 * SECOND)
    never_held = node_r(
        "a", mip_=("False", CEILING_REACHED, "2026-12-01T03:29:00Z"), **req("False")
    )
    p = plan([window("w")], nodeset(never_held, node("b", **req())), NOW, policy)
    assert mip_of(p, "b") == ("True", ALLOWED)


def test_a_just_released_holder_settles_from_now_with_a_delay() -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,), release_delay=5 * 60 * SECOND)
    nodes = nodeset(
        node_r("a", mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"), **req("False")),
        node("b", **req()),
    )
    p = plan([window("w")], nodes, NOW, policy)
    assert mip_of(p, "a") == ("False", FINISHED) and mip_of(p, "b") == ("False", CEILING_REACHED)
    assert p.next_change == NOW + 5 * 60 * SECOND


def test_the_in_progress_timeout_revokes_a_stuck_holder_once() -> None:
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,), in_progress_timeout=3600 * SECOND)
    stuck = node_r("a", mip_=("True", ALLOWED, "2026-12-01T02:29:59Z"), **req())
    p = plan([window("w")], nodeset(stuck, node("b", **req())), NOW, policy)
    assert mip_of(p, "a") == ("False", TIMED_OUT) and mip_of(p, "b") == ("True", ALLOWED)
    # Still stuck (required still True): not admitted again.
    again = node_r("a", mip_=("False", TIMED_OUT, "2026-12-01T03:30:00Z"), **req())
    q = plan([window("w")], nodeset(again), NOW, policy)
    assert mip_of(q, "a") == ("False", TIMED_OUT)
    # Not yet timed out: kept, and the planner looks again when it would time out.
    young = node_r("a", mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"), **req())
    r = plan([window("w")], nodeset(young), NOW, policy)
    # (counted from the end of the second the transition happened in)
    assert mip_of(r, "a") == ("True", ALLOWED) and r.next_change == NOW + 30 * 60 * SECOND + SECOND


def test_per_zone_ceilings_admit_one_per_zone_and_nodes_without_the_label_form_a_group() -> None:
    policy = policy_of(ceiling=Ceiling(10), require=(REQ,), ceilings_per=(("zone", Ceiling(1)),))
    nodes = nodeset(
        node("a1", {"zone": "a"}, **req(ltt="2026-11-01T00:00:00Z")),
        node("a2", {"zone": "a"}, **req(ltt="2026-11-02T00:00:00Z")),
        node("b1", {"zone": "b"}, **req(ltt="2026-11-03T00:00:00Z")),
        node("x1", **req(ltt="2026-11-04T00:00:00Z")),
        node("x2", **req(ltt="2026-11-05T00:00:00Z")),
    )
    p = plan([window("w")], nodes, NOW, policy)
    assert [n.name for n in p.nodes if n.is_in_progress] == ["a1", "b1", "x1"]
    assert mip_of(p, "a2") == ("False", TOPOLOGY_CEILING_REACHED)
    a2 = p.node("a2")
    assert a2 is not None and a2.verdict is not None
    assert (a2.verdict.ceiling, a2.verdict.holders) == ("zone=a", ("a1",))
    assert a2.in_progress is not None
    assert (
        a2.in_progress.message
        == "waiting: at most 1 node with zone=a may be in maintenance at once"
    )
    x1 = p.node("x1")
    assert x1 is not None and x1.verdict is not None
    assert x1.verdict.counts_toward == ("global", "zone unset")


@pytest.mark.parametrize(
    ("text", "group", "limit"), [("50%", 3, 1), ("50%", 4, 2), ("1%", 1, 1), ("0%", 5, 0)]
)
def test_group_percentages_are_of_the_group_rounded_down_never_below_one(
    text: str, group: int, limit: int
) -> None:
    policy = policy_of(
        ceiling=Ceiling(100), require=(REQ,), ceilings_per=(("zone", parse_ceiling(text)),)
    )
    nodes = nodeset(*(node(f"n{i}", {"zone": "a"}, **req()) for i in range(group)))
    p = plan([window("w")], nodes, NOW, policy)
    assert sum(1 for n in p.nodes if n.is_in_progress) == limit
    assert {c.name: c.limit for c in p.ceilings}["zone=a"] == limit


def budget_window(name: str, budget: str, selector: str = "") -> Window:
    w = parse_window(
        "maint",
        name,
        {
            "startTime": "0 3 * * *",
            "duration": "2h",
            "nodeSelector": selector,
            "maxInProgress": budget,
        },
    )
    assert isinstance(w, Window)
    return w


def test_a_node_in_two_windows_must_fit_both_budgets() -> None:
    policy = policy_of(ceiling=Ceiling(10), require=(REQ,))
    nodes = nodeset(
        node("a", {"zone": "a"}, **req(ltt="2026-11-01T00:00:00Z")),
        node("b", {"zone": "a"}, **req(ltt="2026-11-02T00:00:00Z")),
        node("c", {"zone": "b"}, **req(ltt="2026-11-03T00:00:00Z")),
    )
    wide, narrow = budget_window("wide", "2"), budget_window("narrow", "1", "zone=a")
    p = plan([wide, narrow], nodes, NOW, policy)
    # a takes narrow's only place; b (in both) must wait; c (wide only) takes wide's second.
    assert [n.name for n in p.nodes if n.is_in_progress] == ["a", "c"]
    assert mip_of(p, "b") == ("False", WINDOW_BUDGET_REACHED)
    b = p.node("b")
    assert b is not None and b.verdict is not None and b.verdict.ceiling == "window maint/narrow"


def test_a_window_budget_of_zero_pauses_that_window_only() -> None:
    policy = policy_of(ceiling=Ceiling(10), require=(REQ,))
    nodes = nodeset(node("a", {"zone": "a"}, **req()), node("c", {"zone": "b"}, **req()))
    p = plan(
        [budget_window("paused", "0", "zone=a"), window("open", selector="zone=b")],
        nodes,
        NOW,
        policy,
    )
    assert [n.name for n in p.nodes if n.is_in_progress] == ["c"]


def test_a_window_budget_percentage_is_of_the_nodes_it_selects() -> None:
    policy = policy_of(ceiling=Ceiling(100), require=(REQ,))
    nodes = nodeset(*(node(f"n{i}", {"zone": "a" if i < 4 else "b"}, **req()) for i in range(10)))
    p = plan([budget_window("w", "50%", "zone=a")], nodes, NOW, policy)
    assert sum(1 for n in p.nodes if n.is_in_progress) == 2


def test_unavailable_nodes_count_toward_every_ceiling_when_asked() -> None:
    down = node("down", **req("False"), Ready="False")
    cordoned = node_r("cordoned", unschedulable=True, **req("False"), Ready="True")
    ready = node("ready", **req(), Ready="True")
    for extra, admitted in (([down], False), ([cordoned], False), ([], True)):
        on = policy_of(ceiling=Ceiling(1), require=(REQ,), count_unavailable=True)
        p = plan([window("w")], nodeset(ready, *extra), NOW, on)
        assert (mip_of(p, "ready")[0] == "True") is admitted
        off = policy_of(ceiling=Ceiling(1), require=(REQ,))
        assert mip_of(plan([window("w")], nodeset(ready, *extra), NOW, off), "ready") == (
            "True",
            ALLOWED,
        )


RELEASED_WINDOW = 30 * 60 * SECOND
#: At most one node, counting only what the maintenance itself disrupts.
OWN_DISRUPTION = policy_of(
    ceiling=Ceiling(1), require=(REQ,), count_released_unavailable=RELEASED_WINDOW
)


@pytest.mark.parametrize(
    ("other", "counts"),
    [
        # Released by kumaco 5 minutes ago, still cordoned (kured's daemon uncordons it
        # only after the release) or not Ready: its maintenance's own disruption.
        (
            node_r(
                "o",
                mip_=("False", FINISHED, "2026-12-01T03:25:00Z"),
                unschedulable=True,
                **req("False"),
                Ready="True",
            ),
            True,
        ),
        (
            node_r(
                "o", mip_=("False", FINISHED, "2026-12-01T03:25:00Z"), **req("False"), Ready="False"
            ),
            True,
        ),
        # Revoked by the in-progress timeout and not back: disrupted by its maintenance.
        (
            node_r(
                "o", mip_=("False", TIMED_OUT, "2026-12-01T03:25:00Z"), **req(), Ready="Unknown"
            ),
            True,
        ),
        # Released and available again: no place.
        (
            node_r(
                "o", mip_=("False", FINISHED, "2026-12-01T03:25:00Z"), **req("False"), Ready="True"
            ),
            False,
        ),
        # Released longer ago than the window (to the end of its second): no longer its doing.
        (
            node_r(
                "o",
                mip_=("False", FINISHED, "2026-12-01T02:59:59Z"),
                unschedulable=True,
                **req("False"),
                Ready="True",
            ),
            False,
        ),
        # Cordoned or NotReady without kumaco's release: kured v1 kept rebooting past it.
        (node_r("o", unschedulable=True, **req("False"), Ready="True"), False),
        (node_r("o", **req("False"), Ready="False"), False),
        (
            node_r(
                "o",
                mip_=("False", CEILING_REACHED, "2026-12-01T03:25:00Z"),
                **req("False"),
                Ready="False",
            ),
            False,
        ),
    ],
)
def test_count_released_unavailable_counts_only_the_maintenances_own_disruption(
    other: object, counts: bool
) -> None:
    nodes = nodeset(node("ready", **req(), Ready="True"), other)
    p = plan([window("w")], nodes, NOW, OWN_DISRUPTION)
    assert mip_of(p, "ready") == (("False", CEILING_REACHED) if counts else ("True", ALLOWED))
    o = p.node("o")
    assert o is not None and o.verdict is not None
    assert o.verdict.counts_toward == (("global",) if counts else ())
    if counts:  # the count ends by time alone: the planner looks again then
        assert p.next_change == NOW - 5 * 60 * SECOND + SECOND + RELEASED_WINDOW


def test_a_released_node_counted_keeps_its_condition_so_planning_again_agrees() -> None:
    # Timed out, its request since cleared, still cordoned: counted, and kept as written
    # (rewritten to RequiredConditionNotTrue it would stop counting once written).
    timed_out = node_r(
        "o",
        mip_=("False", TIMED_OUT, "2026-12-01T03:25:00Z"),
        unschedulable=True,
        **req("False"),
        Ready="True",
    )
    p = plan(
        [window("w")], nodeset(node("ready", **req(), Ready="True"), timed_out), NOW, OWN_DISRUPTION
    )
    assert mip_of(p, "o") == ("False", TIMED_OUT)
    assert mip_of(p, "ready") == ("False", CEILING_REACHED)
    o = p.node("o")
    assert o is not None and o.verdict is not None and o.verdict.rule == RELEASED_UNAVAILABLE
    # Released, asking again, still cordoned: kept out while it counts.
    again = node_r(
        "o",
        mip_=("False", FINISHED, "2026-12-01T03:25:00Z"),
        unschedulable=True,
        **req(),
        Ready="True",
    )
    p = plan([window("w")], nodeset(again), NOW, OWN_DISRUPTION)
    assert mip_of(p, "o") == ("False", FINISHED)


def test_a_holder_released_while_cordoned_keeps_its_place_in_the_same_plan() -> None:
    nodes = nodeset(
        node_r(
            "a",
            mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"),
            unschedulable=True,
            **req("False"),
            Ready="True",
        ),
        node("b", **req(), Ready="True"),
    )
    p = plan([window("w")], nodes, NOW, OWN_DISRUPTION)
    assert mip_of(p, "a") == ("False", FINISHED)
    assert mip_of(p, "b") == ("False", CEILING_REACHED)  # a is still cordoned
    assert p.next_change == NOW + RELEASED_WINDOW
    uncordoned = nodeset(
        node_r("a", mip_=("True", ALLOWED, "2026-12-01T03:00:00Z"), **req("False"), Ready="True"),
        node("b", **req(), Ready="True"),
    )
    assert mip_of(plan([window("w")], uncordoned, NOW, OWN_DISRUPTION), "b") == (
        "True",
        ALLOWED,
    )


def test_no_late_starts_within_the_admission_cutoff() -> None:
    cutoff = policy_of(ceiling=Ceiling(1), require=(REQ,), admission_cutoff=90 * 60 * SECOND)
    # The window closes at 05:00; at 03:30 it is exactly 90 minutes away: still admitted.
    assert mip_of(plan([window("w")], nodeset(node("n", **req())), NOW, cutoff), "n") == (
        "True",
        ALLOWED,
    )
    late = plan([window("w")], nodeset(node("n", **req())), NOW + SECOND, cutoff)
    assert mip_of(late, "n") == ("False", ADMISSION_CUTOFF)
    n = late.node("n")
    assert n is not None and n.in_progress is not None
    assert (
        n.in_progress.message
        == "too late to start: the window closes at 2026-12-01T05:00:00Z, less than 1h30m0s away"
    )
    # Before the cutoff, the planner looks again when it passes.
    early = plan(
        [window("w")],
        nodeset(node("n", **req())),
        NOW - 600 * SECOND,
        policy_of(ceiling=Ceiling(0), require=(REQ,), admission_cutoff=90 * 60 * SECOND),
    )
    assert early.next_change == NOW + 1  # the first instant that is too late


def test_the_rules_combine_and_each_names_itself() -> None:
    policy = policy_of(
        ceiling=Ceiling(3),
        require=(REQ,),
        block=(BLOCK,),
        ceilings_per=(("zone", Ceiling(1)),),
        release_delay=600 * SECOND,
    )
    nodes = nodeset(
        node_r(
            "settling",
            {"zone": "a"},
            mip_=("False", FINISHED, "2026-12-01T03:25:00Z"),
            **req("False"),
        ),
        node("a-waits", {"zone": "a"}, **req()),
        node("b-blocked", {"zone": "b"}, **req(), **blk()),
        node("b-ok", {"zone": "b"}, **req()),
        node("c-idle", {"zone": "c"}, **req("False")),
    )
    p = plan([window("w")], nodes, NOW, policy)
    got = {n.name: n.verdict.rule for n in p.nodes if n.verdict is not None}
    assert got == {
        "settling": RELEASE_DELAY,
        "a-waits": TOPOLOGY_CEILING_REACHED,
        "b-blocked": BLOCKED,
        "b-ok": ALLOWED,
        "c-idle": REQUIREMENT_NOT_MET,
    }
    uses = {c.name: (c.limit, c.occupants) for c in p.ceilings}
    assert uses["global"] == (3, ("b-ok", "settling"))
    assert uses["zone=a"] == (1, ("settling",))


UM = "kured.dev/UnderMaintenance"
