"""The admission rules are configured objects: a rule added through the interface alone is
honoured everywhere a policy is planned.

The throw-away rules here live in this module and nowhere else -- no internal is
patched. :class:`NeverQuarantined` carries its own flag: added to a rulebook, it is
configured from the command line (``kumaco plan --quarantine-label x=y``), refused
without ``--max-in-progress`` like every rule that decides MaintenanceInProgress, and
``plan`` (its table and ``-o json``, where its detail shows under its own key),
``forecast``, the controller (through its fake-kube harness) and the node store's
condition list all follow.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from kumaco.cmd.cli import program
from kumaco.cmd.flags import UsageError, add_policy_flags, policy_from_args
from kumaco.controller.stores import NodeStore, planner_conditions
from kumaco.core.errors import InvalidInput
from kumaco.core.objects.nodes import READY, NodeSet, NodeView, node_view
from kumaco.core.planning.ceiling_rules import GlobalCeiling
from kumaco.core.planning.forecast import forecast
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    ADMIT,
    CEILING,
    STAGES,
    Detail,
    Flag,
    Ground,
    Place,
    Policy,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.planning.rulebook import RULEBOOK, Rulebook
from kumaco.core.planning.rules import Unavailable, conditions_read
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders import kubeseam as harness
from tests.support.builders.kubeobjects import MIP, REQ, cm, node
from tests.support.builders.policies import policy_of

SECOND = 1_000_000_000
QUARANTINED = "example.com/Quarantined"
#: The controller's fake-kube harness (a fixture of tests/support/builders/kubeseam.py).
make = harness.make
MAINTENANCE_AT = int(dt.datetime(2027, 1, 13, 2, 30, tzinfo=dt.UTC).timestamp()) * SECOND


def parse_label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise InvalidInput(f"{text!r} is not KEY=VALUE (e.g. x=y)")
    return key, value


@dataclass(frozen=True)
class QuarantinedBy(Detail):
    """Throw-away detail: what quarantined the node."""

    key: ClassVar[str] = "quarantinedBy"
    why: str

    def json(self) -> object:
        return self.why

    def text(self) -> str:
        return f"quarantined by {self.why}"

    @classmethod
    def empty(cls) -> object:
        return None


@dataclass(frozen=True)
class NeverQuarantined(Rule):
    """Throw-away: a node labelled KEY=VALUE, or whose condition nobody else reads is True,
    is never admitted (and a holder is held)."""

    reason = "Quarantined"
    stage = ADMIT
    flag = Flag(
        "--quarantine-label",
        "never admit a node with the label KEY=VALUE, or with example.com/Quarantined=True",
        "KEY=VALUE",
        parse_label,
    )
    details = (QuarantinedBy,)
    label: tuple[str, str] = ("x", "y")

    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset((QUARANTINED,))

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        key, value = self.label
        if node.labels.get(key) == value:
            why = f"{key}={value}"
        elif node.is_true(QUARANTINED):
            why = QUARANTINED
        else:
            return None
        verdict = Verdict(self.reason, details=(QuarantinedBy(why),))
        return Stop("quarantined: never admitted", verdict, held="quarantined")


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


#: The rulebook with the throw-away rule: all it takes to add a rule.
BOOK = (*RULEBOOK, NeverQuarantined)
FLAGS = ("--max-in-progress=5", f"--require-condition={REQ}", "--quarantine-label=x=y")


def policy_from_flags(*argv: str, rulebook: Rulebook = BOOK) -> Policy:
    """The policy ``kumaco plan``'s flags build with ``rulebook`` (the command line's path)."""
    parser = argparse.ArgumentParser()
    add_policy_flags(parser, rulebook)
    return policy_from_args(parser.parse_args(argv))[1]


POLICY = policy_from_flags(*FLAGS)
DEFAULTS = policy_of(ceiling=Ceiling(5)).rules


def view(
    name: str, labels: Mapping[str, str] | None = None, conditions: Mapping[str, str] | None = None
) -> NodeView:
    """A node needing maintenance (its required condition True), with more conditions."""
    v = node_view(node_obj(name, labels, conditions))
    assert v is not None
    return v


def node_obj(
    name: str, labels: Mapping[str, str] | None = None, conditions: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """:func:`view`'s node as ``kubectl get nodes -o json`` lists it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": "2027-01-01T00:00:00Z"}
                for t, s in {REQ: "True", **(conditions or {})}.items()
            ]
        },
    }


def night() -> Window:
    w = parse_window(
        "maint", "night", {"startTime": "0 2 13 1 *", "duration": "2h", "nodeSelector": ""}
    )
    assert isinstance(w, Window), w
    return w


THREE = (("a", {}, {}), ("b", {"x": "y"}, {}), ("c", {}, {QUARANTINED: "True"}))


def three() -> NodeSet:
    return NodeSet([view(*n) for n in THREE])


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


def test_the_rulebook_is_one_ordered_list_of_configured_rules() -> None:
    assert all(r.stage in STAGES and r.reason for r in RULEBOOK)
    stages = [STAGES.index(r.stage) for r in RULEBOOK]
    assert stages == sorted(stages)  # written in the order a node meets them
    assert POLICY.rules == (*DEFAULTS, NeverQuarantined(("x", "y")))
    assert POLICY.rule(NeverQuarantined) == NeverQuarantined(("x", "y"))
    # Every flag is a rule's own, once; a rule without one is always in force.
    names = [cls.flag.name for cls in RULEBOOK if cls.flag is not None]
    assert len(names) == len(set(names))
    always = {type(r) for r in policy_of(ceiling=Ceiling(1)).rules} - {GlobalCeiling}
    assert always == {cls for cls in RULEBOOK if cls.flag is None}


def test_a_rule_flag_without_a_ceiling_is_refused_naming_it() -> None:
    with pytest.raises(
        UsageError, match=r"^--quarantine-label: needs --max-in-progress: it decides"
    ):
        policy_from_flags("--quarantine-label=x=y")
    with pytest.raises(UsageError, match=r"^--quarantine-label: 'x' is not KEY=VALUE"):
        policy_from_flags("--max-in-progress=1", "--quarantine-label=x")
    # Not in the rulebook, the flag does not exist.
    with pytest.raises(SystemExit):
        policy_from_flags(*FLAGS, rulebook=RULEBOOK)


@pytest.mark.parametrize(
    "policy",
    [
        policy_of(),
        policy_of(ceiling=Ceiling(1), require=(REQ, "b/Two"), block=("c/Block",)),
        policy_of(ceiling=Ceiling(1), count_unavailable=True, in_progress="Mine"),
    ],
)
def test_the_conditions_read_are_what_the_store_kept_before_rules_declared_them(
    policy: Policy,
) -> None:
    before = {policy.under_maintenance, policy.in_progress, *policy.require, *policy.block}
    if policy.rule(Unavailable) is not None:
        before.add(READY)
    assert conditions_read(policy) == planner_conditions(policy) == frozenset(before)


# ----------------------------------------------------------------------------- plan


def test_plan_honours_an_added_rule_for_candidates() -> None:
    assert in_progress(three(), policy_of(ceiling=Ceiling(5), require=(REQ,))) == {
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
    assert b.verdict.detail(QuarantinedBy) == QuarantinedBy("x=y")


def test_plan_honours_an_added_rule_for_holders() -> None:
    holder = view("b", {"x": "y"}, {MIP: "True"})
    result = plan([night()], NodeSet([holder]), MAINTENANCE_AT, POLICY)
    b = result.node("b")
    assert b is not None and b.in_progress is not None
    assert (b.in_progress.status, b.in_progress.reason) == ("True", "MaintenanceNotFinished")
    assert b.in_progress.message == f"quarantined; waiting for {REQ} to clear"


def test_an_added_rule_says_when_its_answer_changes() -> None:
    later = MAINTENANCE_AT + 600 * SECOND
    policy = policy_of(ceiling=Ceiling(5), require=(REQ,), rules=(*DEFAULTS, NotBefore(later)))
    early = plan([night()], NodeSet([view("a")]), MAINTENANCE_AT, policy)
    assert early.next_change == later
    assert in_progress(NodeSet([view("a")]), policy) == {"a": ("False", "TooEarly")}
    assert in_progress(NodeSet([view("a")]), policy, at=later) == {
        "a": ("True", "MaintenanceAllowed")
    }


def test_an_added_ceiling_keeps_its_places() -> None:
    policy = policy_of(ceiling=Ceiling(5), require=(REQ,), rules=(*DEFAULTS, OneGpuAtATime()))
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
    plain = policy_of(ceiling=Ceiling(5), require=(REQ,))
    assert forecast([night()], three(), start, until, plain, duration=600 * SECOND).all_finished


# ----------------------------------------------------------------------------- the controller


def test_the_node_store_keeps_what_an_added_rule_reads() -> None:
    assert QUARANTINED in planner_conditions(POLICY)
    assert QUARANTINED not in planner_conditions(policy_of(ceiling=Ceiling(5), require=(REQ,)))
    obj = {
        "metadata": {"name": "c", "resourceVersion": "1"},
        "status": {"conditions": [{"type": QUARANTINED, "status": "True"}]},
    }
    kept = NodeStore(keep=planner_conditions(POLICY)).trim(obj)
    dropped = NodeStore(keep=planner_conditions(policy_of(require=(REQ,)))).trim(obj)
    assert kept is not None and kept.view.is_true(QUARANTINED)
    assert dropped is not None and dropped.view.condition(QUARANTINED) is None


def test_the_controller_honours_an_added_rule(make: Any) -> None:
    policy = dataclasses.replace(POLICY, manager="kumaco/test")
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


# ----------------------------------------------------------------------------- the command line


def test_kumaco_plan_takes_an_added_rule_through_its_flag_alone(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    windows = tmp_path / "w.yaml"
    windows.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: night\n  namespace: maint\n"
        "  labels: {kured.dev/maintenance-window: 'true'}\n"
        "data: {startTime: '0 2 13 1 *', duration: 2h, nodeSelector: ''}\n"
    )
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [node_obj(*n) for n in THREE]}))
    argv = ["plan", str(windows), "--nodes", str(nodes), "--at", "2027-01-13T02:30:00Z"]
    book = program(BOOK)
    assert book.main([*argv, *FLAGS, "-o", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["nodes"]}
    assert {n: (r["reason"], r["quarantinedBy"]) for n, r in rows.items()} == {
        "a": ("MaintenanceAllowed", None),
        "b": ("Quarantined", "x=y"),
        "c": ("Quarantined", QUARANTINED),
    }
    assert book.main([*argv, *FLAGS]) == 0
    table = capsys.readouterr().out
    assert "quarantined by x=y" in table and f"quarantined by {QUARANTINED}" in table
    # kumaco forecast: the same flag, the same rule (exit 1: b and c never finish).
    span = ["--from", "2027-01-13T01:00:00Z", "--until", "2027-01-13T05:00:00Z"]
    ahead = ["forecast", str(windows), "--nodes", str(nodes), *span]
    assert book.main([*ahead, "--maintenance-duration", "10m", *FLAGS, "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["unfinished"] == ["b", "c"]
    # Its flag without a ceiling: refused, naming it (exit 2).
    assert book.main([*argv, "--quarantine-label=x=y"]) == 2
    assert "--quarantine-label: needs --max-in-progress" in capsys.readouterr().err
    # The shipped program does not know it.
    with pytest.raises(SystemExit):
        program().main([*argv, *FLAGS])
