"""``--respect-pdbs``: a node is not admitted while a PodDisruptionBudget would refuse its drain.

Contract: pure. :class:`RespectDisruptionBudgets` is an ``ADMIT``-stage
:class:`~kumaco.core.planning.policy.Rule` (in :data:`kumaco.core.planning.rulebook.RULEBOOK`), in
force with its flag: it reads pods and PodDisruptionBudgets from the cluster
(:attr:`~kumaco.core.planning.policy.Rule.cluster_reads`), and a candidate whose
:attr:`Scene.refused_by <kumaco.core.planning.policy.Scene.refused_by>` names budgets --
the planner's input, computed by :mod:`kumaco.core.objects.disruptions` -- stays out with reason
``DisruptionBudgetExhausted``, its message and its :class:`Budgets` detail naming them
(``namespace/name``). It takes no place
in any ceiling, so the next candidate in the admission order gets its turn, and it keeps
its own place in that order (its request is as old as it was). It never stops or revokes
a holder (no :attr:`Stop.held <kumaco.core.planning.policy.Stop.held>`): a node being drained
exhausts the budgets of its own pods. Until the pods and budgets are listed (a new
leader's start-up) every candidate is refused so
(:data:`~kumaco.core.objects.disruptions.NOT_LISTED`): windows open at once, admissions wait for the
first LIST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kumaco.core.objects.disruptions import NOT_LISTED
from kumaco.core.objects.nodes import NodeView
from kumaco.core.planning.policy import (
    ADMIT,
    DISRUPTION_BUDGET_EXHAUSTED,
    Detail,
    Flag,
    Rule,
    Scene,
    Stop,
    Verdict,
)


def refusal_message(budgets: tuple[str, ...]) -> str:
    """The condition's message for a node whose drain ``budgets`` would refuse."""
    if budgets == NOT_LISTED:
        return "the pods and PodDisruptionBudgets are not listed yet: no admission before"
    noun = "PodDisruptionBudget" if len(budgets) == 1 else "PodDisruptionBudgets"
    return f"draining it now would be refused by {noun} {', '.join(budgets)}"


@dataclass(frozen=True)
class Budgets(Detail):
    """The PodDisruptionBudgets (``namespace/name``) that would refuse draining the node now."""

    key: ClassVar[str] = "disruptionBudgets"
    budgets: tuple[str, ...]

    def json(self) -> object:
        return list(self.budgets)

    def text(self) -> str:
        return "refused by PDB " + ",".join(self.budgets) if self.budgets else ""


#: The API resources the rule reads (``kumaco run`` watches them; offline: ``--pods``, ``--pdbs``).
PODS, PDBS = "pods", "poddisruptionbudgets"


@dataclass(frozen=True)
class RespectDisruptionBudgets(Rule):
    """``--respect-pdbs``: not admitted while a PodDisruptionBudget would refuse evicting a pod."""

    reason = DISRUPTION_BUDGET_EXHAUSTED
    stage = ADMIT
    flag = Flag(
        "--respect-pdbs",
        "admit no node whose drain a PodDisruptionBudget would refuse now (needs "
        "--max-in-progress; run: watches pods and PDBs, offline: --pods and --pdbs; "
        "default: off)",
        "BOOL",
        kind="bool",
    )
    cluster_reads = frozenset((PODS, PDBS))
    details = (Budgets,)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if not scene.refused_by:
            return None
        budgets = scene.refused_by
        named = () if budgets == NOT_LISTED else budgets
        verdict = Verdict(DISRUPTION_BUDGET_EXHAUSTED, details=(Budgets(named),))
        return Stop(refusal_message(budgets), verdict)
