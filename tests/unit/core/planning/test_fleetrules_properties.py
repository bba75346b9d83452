"""Properties of the fleet rules (admission rate, one group at a time, spacing) under random clusters and sequences of events (hypothesis).

Each sequence (test_lifecycle.py's events: time passing, maintenances finishing, nodes
asking, blocks, ceilings) is planned step by step and written back the way the
controller writes it, under random policies that turn on the admission rate, one group
at a time and spacing per node beside every other rule. Judged against an independent
ledger kept by the test from the writes, never from the planner's own record:

* the rate: in any sliding window of its DURATION no more than N admissions (False or
  absent -> True), counting the holders the cluster starts with at their transition times;
* one group: whenever a node is admitted, every node taking a place after the plan
  (holders, settling releases, counted unavailable nodes) shares one value of the label;
* spacing: a node admitted again is admitted no sooner than the interval after the end
  (the transition to False with MaintenanceFinished/MaintenanceTimedOut) of its previous
  maintenance, counted from the end of that second;
* nobody is revoked by these rules, no ceiling is exceeded, and every newly admitted node
  is admissible (test_lifecycle.check);
* the answer does not depend on the order of nodes or windows;
* planned again at the same instant after the writes, the answer is the same.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kumaco.core.objects.nodes import NodeSet, NodeView
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import FINISHED, TIMED_OUT, Plan, Policy
from kumaco.core.planning.rates import AdmissionRate
from kumaco.core.windows.window import Window
from tests.support.builders.policies import reconfigured, setting
from tests.support.judges.lifecycle import (
    MINUTE,
    MIP,
    READY,
    SECOND,
    SUPPRESS,
    T0,
    apply,
    check,
    clusters,
    events,
    happen,
    policies,
    transitioned,
    windows,
)

ZONE = "zone"


@st.composite
def fleet_policies(draw: st.DrawFn) -> Policy:
    """test_lifecycle's policies, with the three fleet rules on or off."""
    base = draw(policies())
    rate = draw(st.sampled_from((None, (1, 30), (2, 60), (3, 20))))
    return reconfigured(
        base,
        admission_rate=None if rate is None else AdmissionRate(rate[0], rate[1] * MINUTE),
        one_group_at_a_time=draw(st.sampled_from((None, ZONE, ZONE, "gpu"))),
        node_min_interval=draw(st.sampled_from((0, 0, 15 * MINUTE, 90 * MINUTE))),
    )


def group(v: NodeView, key: str) -> str | None:
    return v.labels.get(key)


def occupants(views: list[NodeView], policy: Policy, result: Plan, now: int) -> set[str]:
    """Every node in scope taking a place after ``result`` (read independently)."""
    planned = {n.name: n for n in result.nodes}
    out = set()
    for v in views:
        if v.name not in planned:
            continue
        after = bool(planned[v.name].is_in_progress)
        c = v.condition(MIP)
        before = c is not None and c.status == "True"
        released = planned[v.name].in_progress
        settling = False
        if setting(policy, "release_delay") and not after:
            if before and released is not None and released.reason == FINISHED:
                settling = True
            elif c is not None and not before and c.reason == FINISHED:
                since = transitioned(c.last_transition_time)
                settling = since is not None and now < since + setting(policy, "release_delay")
        unavailable = (
            setting(policy, "count_unavailable")
            and not after
            and (v.unschedulable or not v.is_true(READY))
        )
        if after or settling or unavailable:
            out.add(v.name)
    return out


class Ledger:
    """The test's own record of admissions and ends of maintenance, from the writes."""

    def __init__(self, views: dict[str, NodeView], policy: Policy) -> None:
        """The holders in scope count at their transition times; ends are read as written."""
        self.admissions: list[tuple[int, str]] = []
        self.ended: dict[str, int] = {}
        for v in views.values():
            c = v.condition(MIP)
            if c is None or not policy.scope.matches(v.labels):
                continue
            t = transitioned(c.last_transition_time)
            if c.status == "True" and t is not None:
                self.admissions.append((t, v.name))
            elif c.reason in (FINISHED, TIMED_OUT) and t is not None:
                self.ended[v.name] = t

    def step(
        self, before: dict[str, NodeView], result: Plan, now: int, policy: Policy
    ) -> list[str]:
        """Record ``result``'s admissions and releases; judge the new admissions."""
        admitted = []
        for n in result.nodes:
            c = before[n.name].condition(MIP)
            was = c is not None and c.status == "True"
            if n.is_in_progress and not was:
                admitted.append(n.name)
                # Spacing: no sooner than the interval after the previous end.
                if setting(policy, "node_min_interval") and n.name in self.ended:
                    assert now >= self.ended[n.name] + setting(policy, "node_min_interval"), (
                        n.name,
                        now,
                        self.ended[n.name],
                    )
                self.admissions.append((now, n.name))
            elif (
                was
                and n.in_progress is not None
                and not n.is_in_progress
                and n.in_progress.reason in (FINISHED, TIMED_OUT)
            ):
                self.ended[n.name] = now - now % SECOND + SECOND  # written to the second
        rate = setting(policy, "admission_rate")
        if rate is not None and admitted:
            inside = [t for t, _n in self.admissions if now - rate.per < t <= now + SECOND]
            assert len(inside) <= rate.count, (rate, sorted(self.admissions), now)
        return admitted


def judge(
    windows_: list[Window],
    views: dict[str, NodeView],
    now: int,
    policy: Policy,
    ledger: Ledger,
    data: st.DataObject,
) -> dict[str, NodeView]:
    current = list(views.values())
    result = plan(windows_, NodeSet(current), now, policy)
    check(windows_, current, now, policy, result)  # ceilings, no revocation, admissible
    admitted = ledger.step(views, result, now, policy)
    key = setting(policy, "one_group_at_a_time")
    in_scope = [v for v in current if policy.scope.matches(v.labels)]
    if key is not None and admitted:
        inside = {group(views[n], key) for n in occupants(in_scope, policy, result, now)}
        assert len(inside) == 1, (key, admitted, inside)
    if admitted:
        event("admitted in a step with a fleet rule on")
    shuffled = plan(
        data.draw(st.permutations(windows_), label="windows order"),
        NodeSet(data.draw(st.permutations(current), label="nodes order")),
        now,
        policy,
    )
    assert shuffled == result
    written = apply(views, result, now)
    again = plan(windows_, NodeSet(written.values()), now, policy)
    assert [n.desired for n in again.nodes] == [n.desired for n in result.nodes]
    return written


@settings(max_examples=300, deadline=None, suppress_health_check=SUPPRESS)
@given(windows(), fleet_policies(), st.lists(events, min_size=1, max_size=30), st.data())
def test_sequences_keep_the_rate_one_group_and_the_spacing(
    windows_: list[Window], policy: Policy, steps: list[tuple[str, Any]], data: st.DataObject
) -> None:
    now = T0
    views = {v.name: v for v in data.draw(clusters(now), label="nodes")}
    ledger = Ledger(views, policy)
    views = judge(windows_, views, now, policy, ledger, data)
    for kind, arg in steps:
        now, policy = happen(views, kind, arg, now, policy)
        views = judge(windows_, views, now, policy, ledger, data)
