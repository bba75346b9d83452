"""The admission rules are declared objects (kumaco.core.rules): a rule added through the
interface alone is honoured everywhere a policy is planned.

The throw-away rules here are added to a :class:`Policy`'s rules and to nothing else --
no internal is patched: ``plan``, ``forecast``, the controller (through its fake-kube
harness, tests/unit/test_controller.py) and the node store's condition list all follow.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kumaco.controller.stores import NodeStore, planner_conditions
from kumaco.core.ceilings import Ceiling
from kumaco.core.forecast import forecast
from kumaco.core.nodes import READY, NodeSet, NodeView, node_view
from kumaco.core.planner import Policy, plan
from kumaco.core.policy import (
    ADMIT,
    CEILING,
    STAGES,
    Ground,
    Place,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.rules import DEFAULT_RULES, conditions_read, rules_of
from kumaco.core.windowdata import parse_window
from kumaco.core.windows import Window
from tests.support.builders import kubeseam as harness
from tests.support.builders.kubeobjects import MIP, REQ, cm, node

SECOND = 1_000_000_000
QUARANTINED = "example.com/Quarantined"
#: The controller's fake-kube harness (a fixture of tests/support/builders/kubeseam.py).
make = harness.make
MAINTENANCE_AT = int(dt.datetime(2027, 1, 13, 2, 30, tzinfo=dt.UTC).timestamp()) * SECOND


@dataclass(frozen=True)
class NeverQuarantined(Rule):
    """Throw-away: a node labelled ``x=y``, or whose condition nobody else reads is True,
    is never admitted (and a holder is held)."""

    reason = "Quarantined"
    stage = ADMIT
    key: str = "x"
    value: str = "y"

    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset((QUARANTINED,))

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if node.labels.get(self.key) != self.value and not node.is_true(QUARANTINED):
            return None
        return Stop("quarantined: never admitted", Verdict(self.reason), held="quarantined")


@dataclass(frozen=True)
class NotBefore(Rule):
    """Throw-away: nobody is admitted before an instant (its answer changes then)."""

    reason = "TooEarly"
    stage = ADMIT
    at: int = 0

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        return (
            Stop("too early", Verdict(self.reason, until=self.at)) if scene.now < self.at else None
        )

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        return self.at


@dataclass(frozen=True)
class OneGpuAtATime(Rule):
    """Throw-away ceiling: at most one node labelled ``gpu=true`` in maintenance at once."""

    reason = "GpuCeilingReached"
    stage = CEILING

    def places(self, ground: Ground) -> Sequence[Place]:
        gpus = frozenset(
            n
            for n in ground.in_scope
            if (v := ground.nodes.get(n)) and v.labels.get("gpu") == "true"
        )
        return (Place("gpu", 1, gpus),)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        full = next((p for p in scene.places if not p.room_for(node.name)), None)
        if full is None:
            return None
        return Stop("waiting: one gpu node at a time", Verdict(self.reason, ceiling=full.name))


WITH_QUARANTINE = (*DEFAULT_RULES, NeverQuarantined())
POLICY = Policy(ceiling=Ceiling(5), require=(REQ,), rules=WITH_QUARANTINE)


def view(
    name: str, labels: Mapping[str, str] | None = None, conditions: Mapping[str, str] | None = None
) -> NodeView:
    """A node needing maintenance (its required condition True), with more conditions."""
    obj = {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": "2027-01-01T00:00:00Z"}
                for t, s in {REQ: "True", **(conditions or {})}.items()
            ]
        },
    }
    v = node_view(obj)
    assert v is not None
    return v


def night() -> Window:
    w = parse_window(
        "maint", "night", {"startTime": "0 2 13 1 *", "duration": "2h", "nodeSelector": ""}
    )
    assert isinstance(w, Window), w
    return w


def three() -> NodeSet:
    return NodeSet([view("a"), view("b", {"x": "y"}), view("c", conditions={QUARANTINED: "True"})])


def in_progress(
    nodes: NodeSet, policy: Policy, at: int = MAINTENANCE_AT
) -> dict[str, tuple[str, str]]:
    result = plan([night()], nodes, at, policy)
    return {
        np.name: (np.in_progress.status, np.in_progress.reason)
        for np in result.nodes
        if np.in_progress is not None
    }


# ----------------------------------------------------------------------------- the list


def test_the_default_rules_are_one_ordered_list_of_declared_objects() -> None:
    assert rules_of(Policy()) is DEFAULT_RULES
    assert rules_of(POLICY) == WITH_QUARANTINE
    assert all(r.stage in STAGES and r.reason for r in DEFAULT_RULES)
    stages = [STAGES.index(r.stage) for r in DEFAULT_RULES]
    assert stages == sorted(stages)  # written in the order a node meets them


@pytest.mark.parametrize(
    "policy",
    [
        Policy(),
        Policy(ceiling=Ceiling(1), require=(REQ, "b/Two"), block=("c/Block",)),
        Policy(ceiling=Ceiling(1), count_unavailable=True, in_progress="Mine"),
    ],
)
def test_the_conditions_read_are_what_the_store_kept_before_rules_declared_them(
    policy: Policy,
) -> None:
    before = {policy.under_maintenance, policy.in_progress, *policy.require, *policy.block}
    if policy.count_unavailable:
        before.add(READY)
    assert conditions_read(policy) == planner_conditions(policy) == frozenset(before)


# ----------------------------------------------------------------------------- plan


def test_plan_honours_an_added_rule_for_candidates() -> None:
    assert in_progress(three(), Policy(ceiling=Ceiling(5), require=(REQ,))) == {
        "a": ("True", "MaintenanceAllowed"),
        "b": ("True", "MaintenanceAllowed"),
        "c": ("True", "MaintenanceAllowed"),
    }
    assert in_progress(three(), POLICY) == {
        "a": ("True", "MaintenanceAllowed"),
        "b": ("False", "Quarantined"),
        "c": ("False", "Quarantined"),
    }
    result = plan([night()], three(), MAINTENANCE_AT, POLICY)
    b = result.node("b")
    assert b is not None and b.in_progress is not None and b.verdict is not None
    assert b.in_progress.message == "quarantined: never admitted"
    assert b.verdict.rule == "Quarantined"


def test_plan_honours_an_added_rule_for_holders() -> None:
    holder = view("b", {"x": "y"}, {MIP: "True"})
    result = plan([night()], NodeSet([holder]), MAINTENANCE_AT, POLICY)
    b = result.node("b")
    assert b is not None and b.in_progress is not None
    assert (b.in_progress.status, b.in_progress.reason) == ("True", "MaintenanceNotFinished")
    assert b.in_progress.message == f"quarantined; waiting for {REQ} to clear"


def test_an_added_rule_says_when_its_answer_changes() -> None:
    later = MAINTENANCE_AT + 600 * SECOND
    policy = Policy(ceiling=Ceiling(5), require=(REQ,), rules=(*DEFAULT_RULES, NotBefore(later)))
    early = plan([night()], NodeSet([view("a")]), MAINTENANCE_AT, policy)
    assert early.next_change == later
    assert in_progress(NodeSet([view("a")]), policy) == {"a": ("False", "TooEarly")}
    assert in_progress(NodeSet([view("a")]), policy, at=later) == {
        "a": ("True", "MaintenanceAllowed")
    }


def test_an_added_ceiling_keeps_its_places() -> None:
    policy = Policy(ceiling=Ceiling(5), require=(REQ,), rules=(*DEFAULT_RULES, OneGpuAtATime()))
    nodes = NodeSet([view("g1", {"gpu": "true"}), view("g2", {"gpu": "true"}), view("n")])
    assert in_progress(nodes, policy) == {
        "g1": ("True", "MaintenanceAllowed"),
        "g2": ("False", "GpuCeilingReached"),
        "n": ("True", "MaintenanceAllowed"),
    }
    result = plan([night()], nodes, MAINTENANCE_AT, policy)
    assert [(c.name, c.occupants) for c in result.ceilings] == [
        ("global", ("g1", "n")),
        ("gpu", ("g1",)),
    ]


# ----------------------------------------------------------------------------- forecast


def test_forecast_honours_an_added_rule() -> None:
    start, until = MAINTENANCE_AT - 3600 * SECOND, MAINTENANCE_AT + 3 * 3600 * SECOND
    ran = forecast([night()], three(), start, until, POLICY, duration=600 * SECOND)
    assert ran.unfinished == ("b", "c")
    assert [(t.name, t.admitted is not None) for t in ran.turns] == [
        ("a", True),
        ("b", False),
        ("c", False),
    ]
    plain = Policy(ceiling=Ceiling(5), require=(REQ,))
    assert forecast([night()], three(), start, until, plain, duration=600 * SECOND).all_finished


# ----------------------------------------------------------------------------- the controller


def test_the_node_store_keeps_what_an_added_rule_reads() -> None:
    assert QUARANTINED in planner_conditions(POLICY)
    assert QUARANTINED not in planner_conditions(Policy(ceiling=Ceiling(5), require=(REQ,)))
    obj = {
        "metadata": {"name": "c", "resourceVersion": "1"},
        "status": {"conditions": [{"type": QUARANTINED, "status": "True"}]},
    }
    kept = NodeStore(keep=planner_conditions(POLICY)).trim(obj)
    dropped = NodeStore(keep=planner_conditions(Policy(require=(REQ,)))).trim(obj)
    assert kept is not None and kept.view.is_true(QUARANTINED)
    assert dropped is not None and dropped.view.condition(QUARANTINED) is None


def test_the_controller_honours_an_added_rule(make: Any) -> None:
    policy = Policy(
        ceiling=Ceiling(5), require=(REQ,), manager="kumaco/test", rules=WITH_QUARANTINE
    )
    nodes = [
        node("a", "10", kured_dev__RebootRequired="True"),
        node("b", "11", {"x": "y"}, kured_dev__RebootRequired="True"),
        # Only the added rule reads this condition: the store keeps it because the rule says so.
        node("c", "12", kured_dev__RebootRequired="True", example_com__Quarantined="True"),
    ]
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy)
    c.step()
    assert [(name, conds.get(MIP)) for name, conds in world.writes()] == [
        ("b", ("False", "Quarantined")),
        ("c", ("False", "Quarantined")),
        ("a", ("True", "MaintenanceAllowed")),
    ]
