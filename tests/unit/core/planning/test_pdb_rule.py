"""``--respect-pdbs`` in the planner (kumaco.core.planning.pdb_rule): tables and hypothesis properties.

The rule reads the planner's ``refusals`` input (node -> the PodDisruptionBudgets that would
refuse its drain now; how it is computed is tests/unit/core/objects/test_disruptions.py's). Proven here:

* a refused candidate waits with ``DisruptionBudgetExhausted``, its message and verdict
  naming the budgets, takes no place, and the next candidate in the admission order is
  admitted instead; once the budget allows it, it is first in line again;
* a holder is never revoked, nor its condition rewritten, by a refusal;
* without ``respect_pdbs`` the refusals change nothing, and the earlier rules decide first;
* properties (hypothesis, the lifecycle's random clusters, windows and policies): a
  refused node is never newly admitted, no holder's answer changes, the other invariants
  of tests/unit/core/planning/test_lifecycle.py still hold, and the answer does not depend on the order
  of nodes, windows or refusals -- also over random sequences of budgets changing while
  maintenances go on;
* ``forecast`` takes the refusals as they are at its start.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kumaco.core.objects.disruptions import Refusals, not_listed
from kumaco.core.objects.nodes import NodeSet, NodeView
from kumaco.core.planning.forecast import forecast
from kumaco.core.planning.pdb_rule import Budgets
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    ALLOWED,
    CEILING_REACHED,
    DISRUPTION_BUDGET_EXHAUSTED,
    NOT_UNDER_MAINTENANCE,
    REQUIREMENT_NOT_MET,
    Plan,
    Policy,
    Verdict,
)
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.core.windows.window import Window
from tests.support.builders.planning import MIP, NOW, REQ, node, nodeset, req, window
from tests.support.builders.policies import policy_of, reconfigured
from tests.support.judges.lifecycle import (
    MINUTE,
    SUPPRESS,
    T0,
    apply,
    check,
    clusters,
    policies,
    windows,
    with_condition,
)


def _budgets(v: Verdict | None) -> tuple[str, ...]:
    """The PodDisruptionBudgets a verdict names (none: no such detail)."""
    found = v.detail(Budgets) if v is not None else None
    return found.budgets if found is not None else ()


POLICY = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), respect_pdbs=True)


def mip(status: str) -> dict[str, tuple[str, str]]:
    return {"MaintenanceInProgress": (status, "2026-12-01T03:00:00Z")}


def early(name: str) -> object:
    return node(name, **req("True", "2026-11-01T00:00:00Z"))


def late(name: str) -> object:
    return node(name, **req("True", "2026-11-02T00:00:00Z"))


def answer(result: Plan, name: str) -> tuple[bool | None, str, tuple[str, ...]]:
    n = result.node(name)
    assert n is not None and n.in_progress is not None and n.verdict is not None
    return n.is_in_progress, n.in_progress.reason, _budgets(n.verdict)


# ----------------------------------------------------------------------------- tables


def test_a_refused_node_waits_naming_the_budget_and_the_next_one_goes() -> None:
    nodes = nodeset(early("a"), late("b"))
    refusals = {"a": ("shop/db",)}
    result = plan([window("w")], nodes, NOW, POLICY, refusals)
    assert answer(result, "a") == (False, DISRUPTION_BUDGET_EXHAUSTED, ("shop/db",))
    a = result.node("a")
    assert a is not None and a.in_progress is not None and a.verdict is not None
    assert (
        a.in_progress.message == "draining it now would be refused by PodDisruptionBudget shop/db"
    )
    assert a.verdict == Verdict(DISRUPTION_BUDGET_EXHAUSTED, details=(Budgets(("shop/db",)),))
    assert answer(result, "b") == (True, ALLOWED, ())
    assert result.ceilings[0].occupants == ("b",)
    # Several budgets: all named, sorted as given.
    two = plan([window("w")], nodes, NOW, POLICY, {"a": ("shop/a", "shop/b")})
    a2 = two.node("a")
    assert a2 is not None and a2.in_progress is not None
    assert a2.in_progress.message.endswith("PodDisruptionBudgets shop/a, shop/b")


def test_once_the_budget_allows_it_the_refused_node_is_first_in_line_again() -> None:
    # b was admitted while a waited; b finished: a, the older request, goes before c.
    nodes = nodeset(
        early("a"),
        node("b", **req("False"), **mip("False")),
        node("c", **req("True", "2026-11-03T00:00:00Z")),
    )
    assert answer(plan([window("w")], nodes, NOW, POLICY, {}), "a")[:2] == (True, ALLOWED)
    still = plan([window("w")], nodes, NOW, POLICY, {"a": ("shop/db",)})
    assert answer(still, "a")[1] == DISRUPTION_BUDGET_EXHAUSTED
    assert answer(still, "c")[:2] == (True, ALLOWED)


def test_a_holder_is_never_revoked_nor_rewritten_for_a_refusal() -> None:
    for policy in (POLICY, dataclasses.replace(POLICY, require=())):
        conds = {**req("True"), **mip("True")} if policy.require else mip("True")
        nodes = nodeset(node("a", **conds), late("b"))
        free = plan([window("w")], nodes, NOW, policy, {})
        refused = plan([window("w")], nodes, NOW, policy, {"a": ("shop/db",)})
        assert refused.node("a") == free.node("a"), policy
        assert answer(refused, "a")[:2] == (True, ALLOWED)
        assert answer(refused, "b")[1] == CEILING_REACHED, "a still holds the one place"


def test_without_respect_pdbs_refusals_change_nothing() -> None:
    nodes = nodeset(early("a"), late("b"))
    off = reconfigured(POLICY, respect_pdbs=False)
    assert plan([window("w")], nodes, NOW, off, {"a": ("shop/db",)}) == plan(
        [window("w")], nodes, NOW, off
    )


def test_the_earlier_rules_decide_first() -> None:
    nodes = nodeset(node("a", **req("False")), early("b"))
    closed = plan([window("w", start="0 9 * * *")], nodes, NOW, POLICY, {"b": ("s/d",)})
    assert answer(closed, "b")[1] == NOT_UNDER_MAINTENANCE
    opened = plan([window("w")], nodes, NOW, POLICY, {"a": ("s/d",)})
    assert answer(opened, "a")[1] == REQUIREMENT_NOT_MET


def test_forecast_takes_the_refusals_as_they_are_at_its_start() -> None:
    nodes = nodeset(early("a"), late("b"))
    w = window("w", duration="4h")
    start, until = NOW, NOW + 60 * MINUTE
    free = forecast([w], nodes, start, until, POLICY, 20 * MINUTE)
    assert free.all_finished and [t.name for t in free.turns] == ["a", "b"]
    held = forecast([w], nodes, start, until, POLICY, 20 * MINUTE, refusals={"a": ("s/d",)})
    assert held.unfinished == ("a",)
    assert [(t.name, t.admitted) for t in held.turns] == [("b", start), ("a", None)]


# ----------------------------------------------------------------------------- properties


def refusals_for(data: st.DataObject, views: list[NodeView]) -> Refusals:
    names = sorted(v.name for v in views)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True), label="refused nodes")
    budgets = st.lists(st.sampled_from(("x/a", "x/b", "y/a")), min_size=1, unique=True)
    return {n: tuple(sorted(data.draw(budgets, label=f"budgets of {n}"))) for n in chosen}


def judge(
    windows_: list[Window], views: list[NodeView], now: int, policy: Policy, refusals: Refusals
) -> Plan:
    """Plan with the refusals and check the rule against an independent reading."""
    result = plan(windows_, NodeSet(views), now, policy, refusals)
    check(windows_, views, now, policy, result)
    without = plan(windows_, NodeSet(views), now, policy)
    for v in views:
        planned = result.node(v.name)
        if planned is None:
            continue  # out of scope
        holder = v.is_true(MIP)
        if holder:  # never revoked, never rewritten for a refusal
            assert planned == without.node(v.name), v.name
        elif v.name in refusals:
            assert not planned.is_in_progress, v.name
        assert planned.verdict is not None
        if planned.verdict.rule == DISRUPTION_BUDGET_EXHAUSTED:
            assert not holder and _budgets(planned.verdict) == refusals[v.name]
    return result


@settings(max_examples=500, deadline=None, suppress_health_check=SUPPRESS)
@given(windows(), policies(), st.integers(0, 240).map(lambda m: T0 + m * MINUTE), st.data())
def test_a_refused_node_is_never_admitted_and_no_holder_changes(
    windows_: list[Window], policy: Policy, now: int, data: st.DataObject
) -> None:
    policy = reconfigured(policy, respect_pdbs=True)
    views = data.draw(clusters(now), label="nodes")
    refusals = refusals_for(data, views)
    result = judge(windows_, views, now, policy, refusals)
    shuffled = plan(
        data.draw(st.permutations(windows_), label="windows order"),
        NodeSet(data.draw(st.permutations(views), label="nodes order")),
        now,
        policy,
        dict(data.draw(st.permutations(sorted(refusals.items())), label="refusals order")),
    )
    assert shuffled == result


budget_events = st.one_of(
    st.tuples(st.just("wait"), st.integers(1, 90)),
    st.tuples(st.just("finish"), st.integers(0, 7)),
    st.tuples(st.just("need"), st.integers(0, 7)),
    st.tuples(st.just("refuse"), st.integers(0, 7)),
    st.tuples(st.just("allow"), st.integers(0, 7)),
)


@settings(max_examples=200, deadline=None, suppress_health_check=SUPPRESS)
@given(windows(), policies(), st.lists(budget_events, min_size=1, max_size=25), st.data())
def test_budgets_changing_during_maintenance_never_revoke_anyone(
    windows_: list[Window], policy: Policy, steps: list[tuple[str, Any]], data: st.DataObject
) -> None:
    policy = reconfigured(policy, respect_pdbs=True)
    now = T0
    views = {v.name: v for v in data.draw(clusters(now), label="nodes")}
    names = sorted(views)
    refusals: dict[str, tuple[str, ...]] = {}
    for kind, arg in steps:
        name = names[arg % len(names)]
        if kind == "wait":
            now += arg * MINUTE
        elif kind == "refuse":
            refusals[name] = ("x/a",)
        elif kind == "allow":
            refusals.pop(name, None)
        else:
            status = "False" if kind == "finish" else "True"
            views[name] = with_condition(views[name], REQ, status, now)
        result = judge(windows_, list(views.values()), now, policy, refusals)
        views = apply(views, result, now)


def test_before_the_first_list_every_candidate_waits_and_holders_keep_their_place() -> None:
    nodes = nodeset(node("a", **req("True"), **mip("True")), early("b"), late("c"))
    result = plan([window("w")], nodes, NOW, POLICY, not_listed(["a", "b", "c"]))
    assert answer(result, "a")[:2] == (True, ALLOWED)
    for name in ("b", "c"):
        n = result.node(name)
        assert n is not None and n.in_progress is not None
        assert n.is_under_maintenance  # the window opens regardless
        assert answer(result, name) == (False, DISRUPTION_BUDGET_EXHAUSTED, ())
        assert n.in_progress.message == (
            "the pods and PodDisruptionBudgets are not listed yet: no admission before"
        )
