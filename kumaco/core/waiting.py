"""No forgotten node (issue 28): which nodes wait for maintenance, and since when.

Contract: pure, no I/O, no clock. A node *waits* when it asks for maintenance -- every
required condition is True (with none configured: it is under maintenance) -- does not
hold ``MaintenanceInProgress``, and only the schedule or the fleet keeps it out: its
``MaintenanceInProgress`` reason is ``NotUnderMaintenance`` (no window open for it),
``AdmissionCutoff``, or the reason of a ``CEILING`` rule (a ceiling, a group ceiling, a
window budget, another group in progress, the admission rate). A node kept out by
itself or on purpose -- blocked, frozen, settling after its own maintenance (release
delay, spacing, not reported since its reboot, timed out) -- is not waiting.

It waits *since* its request: the latest ``lastTransitionTime`` among its required
conditions (with none configured: its UnderMaintenance's), and no earlier than its
``MaintenanceInProgress``'s last transition (its last release, or kumaco's first
write); a time that is missing or malformed is left out, and a node none of whose times
is known is not reported. All of it is read from the cluster, so every replica and
``kubectl kumaco status`` agree, and a wait survives a change of leader. The wait goes on
across windows: a node that loses its turn window after window (kured#173) keeps
counting from its request.

:func:`waiters` reads the planner's answer (the leader's view, ``kumaco_oldest_waiting_seconds``);
:func:`waiters_as_written` reads the conditions as kumaco wrote them (``kubectl kumaco
status``, which does not plan the lifecycle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from kumaco.core.nodes import TRUE, Condition, NodeView
from kumaco.core.policy import (
    ADMISSION_CUTOFF,
    CEILING,
    NOT_UNDER_MAINTENANCE,
    NodePlan,
    Plan,
    Policy,
)
from kumaco.core.rules import rules_of
from kumaco.core.times import format_instant, parse_timestamp

__all__ = ["Waiter", "longest", "waiters", "waiters_as_written", "waiting_reasons"]

#: How many of the longest waiters the status and the forecast name.
SHOWN = 3


@dataclass(frozen=True, slots=True)
class Waiter:
    """A node waiting for maintenance, since when, and what keeps it out (the reason)."""

    name: str
    since: int
    reason: str


def waiting_reasons(policy: Policy) -> frozenset[str]:
    """The reasons a waiting node carries under ``policy``'s rules."""
    ceilings = (r.reason for r in rules_of(policy) if r.stage == CEILING)
    return frozenset((NOT_UNDER_MAINTENANCE, ADMISSION_CUTOFF, *ceilings))


def asked_since(
    node: NodeView, require: Sequence[str], under_maintenance: str, in_progress: str
) -> int | None:
    """Since when ``node`` asks for maintenance without holding it (None: it does not)."""
    asking = (
        [node.condition(r) for r in require] if require else [node.condition(under_maintenance)]
    )
    if not all(c is not None and c.status == TRUE for c in asking):
        return None
    held = node.condition(in_progress)
    if held is not None and held.status == TRUE:
        return None
    stamps = [c.last_transition_time for c in asking if c is not None]
    if held is not None:
        stamps.append(held.last_transition_time)
    known = [t for s in stamps if (t := parse_timestamp(s)) is not None]
    return max(known) if known else None


def _collect(
    found: Iterable[tuple[NodeView, str]], reasons: frozenset[str], policy: Policy
) -> tuple[Waiter, ...]:
    out = []
    for node, reason in found:
        if reason not in reasons:
            continue
        since = asked_since(node, policy.require, policy.under_maintenance, policy.in_progress)
        if since is not None:
            out.append(Waiter(node.name, since, reason))
    return tuple(sorted(out, key=lambda w: (w.since, w.name)))


def waiters(result: Plan, nodes: Iterable[NodeView], policy: Policy) -> tuple[Waiter, ...]:
    """The nodes of ``result`` (planned under ``policy``) that wait, the longest first.

    Each node is taken as ``result`` writes it (a condition whose status changes takes
    ``result.at`` as its transition time), so the answer is the one
    :func:`waiters_as_written` gives once the writes landed.
    """
    by_name = {n.name: n for n in nodes}
    found = (
        (_as_planned(by_name[n.name], n, result.at), n.in_progress.reason)
        for n in result.nodes
        if n.name in by_name and n.in_progress is not None and n.in_progress.status != TRUE
    )
    return _collect(found, waiting_reasons(policy), policy)


def _as_planned(node: NodeView, planned: NodePlan, at: int) -> NodeView:
    """``node`` with the conditions ``planned`` writes (their status and transition time)."""
    conditions = dict(node.conditions)
    for d in planned.desired:
        cur = conditions.get(d.type)
        if cur is None or cur.status != d.status or cur.last_transition_time is None:
            conditions[d.type] = Condition(
                d.type, d.status, d.reason, d.message, format_instant(at)
            )
    return replace(node, conditions=MappingProxyType(conditions))


def waiters_as_written(nodes: Iterable[NodeView], policy: Policy) -> tuple[Waiter, ...]:
    """The nodes that wait by their conditions as written (``policy``: the names), longest first."""
    found = (
        (node, held.reason)
        for node in nodes
        if (held := node.condition(policy.in_progress)) is not None and held.status != TRUE
    )
    return _collect(found, waiting_reasons(policy), policy)


def longest(found: Sequence[Waiter], now: int) -> int:
    """How long (ns) the longest of ``found`` has waited at ``now`` (0: nobody waits)."""
    return max(0, now - found[0].since) if found else 0
