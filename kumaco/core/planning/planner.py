"""The planner: windows + nodes + an instant + a policy -> each node's desired conditions.

Contract: :func:`plan` is a pure function. Given the same inputs it returns the same
:class:`~kumaco.core.planning.policy.Plan`, whatever the order of nodes and windows. It
composes the planning's parts: UnderMaintenance
(:mod:`kumaco.core.planning.under_maintenance`), the ``MaintenanceInProgress`` lifecycle
over the rules (:mod:`kumaco.core.planning.admission`, the rules' own docstrings state
each), advance notice (:mod:`kumaco.core.planning.lookahead`); docs/reference.md
describes them for users. The names of the answer live where they are defined: import
them from there.
"""

from __future__ import annotations

from collections.abc import Iterable

from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.admission import Lifecycle
from kumaco.core.planning.lookahead import Lookahead, lookahead
from kumaco.core.planning.policy import (
    NodePlan,
    Plan,
    Policy,
)
from kumaco.core.planning.under_maintenance import under_maintenance_answers, window_groups
from kumaco.core.windows.window import Window

__all__ = ["plan"]


def plan(
    windows: Iterable[Window],
    nodes: NodeSet,
    now: int,
    policy: Policy,
    refusals: Refusals = NO_REFUSALS,
) -> Plan:
    """Compute each in-scope node's desired conditions at instant ``now``.

    ``refusals``: for a rule that reads PodDisruptionBudgets, node name -> those that
    would refuse draining it now (:mod:`kumaco.core.objects.disruptions`).
    """
    windows = tuple(windows)
    in_scope = frozenset(policy.scope.select(nodes.index))
    ws = window_groups(windows, nodes, in_scope, now)
    under = under_maintenance_answers(ws, policy)
    lifecycle: Lifecycle | None = None
    next_change = ws.next_change
    if policy.ceiling is not None:
        lifecycle = Lifecycle(nodes, in_scope, under, ws, policy, now, refusals)
        lifecycle.run()
        if lifecycle.next_change is not None and (
            next_change is None or lifecycle.next_change < next_change
        ):
            next_change = lifecycle.next_change
    ahead: Lookahead | None = None
    if policy.planned_lead:
        ahead = lookahead(windows, ws, under, in_scope, now, policy)
        if ahead.next_change is not None and (
            next_change is None or ahead.next_change < next_change
        ):
            next_change = ahead.next_change
    plans = tuple(
        NodePlan(
            name=name,
            windows=u.windows,
            closes=u.closes,
            under_maintenance=u.desired,
            in_progress=lifecycle.desired[name] if lifecycle else None,
            freezes=u.freezes,
            verdict=lifecycle.verdicts[name] if lifecycle else None,
            planned=ahead.answers[name].desired if ahead else None,
            planned_start=ahead.answers[name].start if ahead else None,
            planned_windows=ahead.answers[name].windows if ahead else (),
        )
        for name, u in sorted(under.items())
    )
    return Plan(
        at=now,
        nodes=plans,
        next_change=next_change,
        windows=ws.states,
        ceiling=lifecycle.ceiling if lifecycle else None,
        in_progress=lifecycle.in_progress if lifecycle else 0,
        matching=ws.matching,
        ceilings=tuple(p.use() for p in lifecycle.pools) if lifecycle else (),
        planned_lead=policy.planned_lead,
        leads=ahead.leads if ahead else {},
        details=tuple(d for r in policy.rules for d in r.details) if lifecycle else (),
    )


# ----------------------------------------------------------------------------- the lifecycle
