"""The ceiling rules: the global ceiling, the per-label group ceilings, the window budgets.

Contract: pure. Each is an immutable ``CEILING``-stage :class:`~kumaco.core.planning.policy.Rule`
(:mod:`kumaco.core.planning.rules` lists them in order): it lays out its places
(:class:`~kumaco.core.planning.policy.Place`: a name, a limit, whom it counts, whom it can stop)
and stops a candidate while one of them has no room for it. Ceilings are ``N`` or
``P%`` (:mod:`kumaco.core.windows.ceilings`): a global percentage is of the nodes in scope, a
group's of the nodes in scope in that group, a window's of the nodes in scope it selects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.labels.syntax import qualified_name_problems
from kumaco.core.objects.nodes import NodeView
from kumaco.core.planning.policy import (
    CEILING,
    CEILING_REACHED,
    GLOBAL,
    TOPOLOGY_CEILING_REACHED,
    WINDOW_BUDGET_REACHED,
    Flag,
    Ground,
    Place,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.windows.ceilings import Ceiling, parse_ceiling


class CeilingRule(Rule):
    """A ceiling rule: a node waits while one of its places that can stop it is full."""

    stage = CEILING
    waits = True

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        full = next((p for p in scene.places if not p.room_for(node.name)), None)
        if full is None:
            return None
        holders = tuple(sorted(full.occupants - {node.name}))
        verdict = Verdict(self.reason, ceiling=full.name, holders=holders)
        noun = "node" if full.limit == 1 else "nodes"
        return Stop(f"waiting: at most {full.limit} {noun}{self.of(full)} {_AT_ONCE}", verdict)

    def of(self, place: Place) -> str:
        """The population a place limits, after "at most N nodes"."""
        return ""


_AT_ONCE = "may be in maintenance at once"


@dataclass(frozen=True)
class GlobalCeiling(CeilingRule):
    """``--max-in-progress``: at most so many nodes in scope at once.

    Its presence turns the admission lifecycle on (:attr:`Policy.ceiling
    <kumaco.core.planning.policy.Policy.ceiling>`).
    """

    reason = CEILING_REACHED
    flag = Flag(
        "--max-in-progress",
        "ceiling of nodes with MaintenanceInProgress at once (default: unset, "
        "MaintenanceInProgress is not managed)",
        "N|P%",
        parse_ceiling,
        needs_ceiling=False,
    )
    ceiling: Ceiling

    @classmethod
    def configured(cls, value: object) -> GlobalCeiling | None:
        # 0 is a ceiling (a pause), not "off".
        return cls(value) if isinstance(value, Ceiling) else None

    def global_ceiling(self) -> Ceiling | None:
        return self.ceiling

    def places(self, ground: Ground) -> Sequence[Place]:
        return (Place(GLOBAL, self.ceiling.limit(len(ground.in_scope))),)


def parse_group_ceiling(text: str) -> tuple[str, Ceiling]:
    """One ``KEY=N|P%`` of ``--max-in-progress-per``."""
    key, sep, ceiling = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InvalidInput(
            f"{excerpt(text)} is not KEY=N or KEY=P% (e.g. topology.kubernetes.io/zone=1)"
        )
    problems = qualified_name_problems(key)
    if problems:
        raise InvalidInput(f"{excerpt(key)} is not a label key: {'; '.join(problems)}")
    return key, parse_ceiling(ceiling.strip())


@dataclass(frozen=True)
class GroupCeilings(CeilingRule):
    """``--max-in-progress-per KEY=N``: at most so many of each group of nodes by that label."""

    reason = TOPOLOGY_CEILING_REACHED
    flag = Flag(
        "--max-in-progress-per",
        "at most N (or P%%) in progress per value of the node label KEY; nodes without it "
        "form one group (repeatable, e.g. topology.kubernetes.io/zone=1; default: none)",
        "KEY=N|P%",
        parse_group_ceiling,
        kind="repeat",
    )
    #: (label key, ceiling) pairs, each key once.
    per: tuple[tuple[str, Ceiling], ...]

    @classmethod
    def configured(cls, value: object) -> GroupCeilings | None:
        if not isinstance(value, tuple) or not value:
            return None
        keys = [k for k, _c in value]
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:
            raise InvalidInput(f"{twice} is given twice")
        return cls(value)

    def places(self, ground: Ground) -> Sequence[Place]:
        out: list[Place] = []
        for key, ceiling in self.per:
            groups: dict[str, set[str]] = {}
            for name in ground.in_scope:
                node = ground.nodes.get(name)
                value = node.labels.get(key) if node is not None else None
                group = f"{key}={value}" if value is not None else f"{key} unset"
                groups.setdefault(group, set()).add(name)
            out += (
                Place(g, ceiling.limit(len(members)), frozenset(members))
                for g, members in sorted(groups.items())
            )
        return out

    def of(self, place: Place) -> str:
        return f" with {place.name}"


@dataclass(frozen=True)
class WindowBudgets(CeilingRule):
    """A window's ``maxInProgress``: at most so many of the nodes it selects at once.

    It stops nodes while it is open for them; a holder whose window closed still
    counts toward it.
    """

    reason = WINDOW_BUDGET_REACHED

    def places(self, ground: Ground) -> Sequence[Place]:
        return tuple(
            Place(
                f"window {k}",
                budget.limit(len(ground.selected[k])),
                ground.selected[k],
                frozenset(n for n in ground.selected[k] if k in ground.open_for[n]),
            )
            for k, budget in sorted(ground.budgets.items())
            if k not in ground.freezes
        )

    def of(self, place: Place) -> str:
        return f" of {place.name}"
