"""No forgotten node: which nodes wait for maintenance, and since when.

Contract: pure, no I/O, no clock. A node *waits* when it asks for maintenance -- every
required condition is True (with none configured: it is under maintenance) -- does not
hold ``MaintenanceInProgress``, and only the schedule or the fleet keeps it out: its
``MaintenanceInProgress`` reason is that of a rule that says so
(:attr:`~kumaco.core.planning.policy.Rule.waits`: no window open for it, the admission cutoff,
a ceiling, a group ceiling, a window budget, another group in progress, the admission
rate). A node kept out by
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

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from kumaco.core.objects.nodes import TRUE, NodeSet, NodeView
from kumaco.core.planning.policy import NodePlan, Plan, Policy
from kumaco.core.planning.rulebook import RULEBOOK
from kumaco.core.time.instants import parse_timestamp

__all__ = ["Waiter", "asked_since", "oldest_wait", "waiters", "waiters_as_written"]

#: How many of the longest waiters the status and the forecast name.
SHOWN = 3


@dataclass(frozen=True, slots=True)
class Waiter:
    """A node waiting for maintenance, since when, and what keeps it out (the reason)."""

    name: str
    since: int
    reason: str


def waiting_reasons(policy: Policy) -> frozenset[str]:
    """The reasons a waiting node carries under ``policy``'s rules.

    Read as written (``kubectl kumaco status``, which knows no flags of the leader's),
    a policy without rules takes every rule of the rulebook that keeps a node waiting.
    """
    rules = policy.rules or RULEBOOK
    return frozenset(r.reason for r in rules if r.waits)


def asked_since(
    node: NodeView,
    require: Sequence[str],
    under_maintenance: str,
    in_progress: str,
    planned: tuple[NodePlan, int] | None = None,
) -> int | None:
    """Since when ``node`` asks for maintenance without holding it (None: it does not).

    ``planned``: read ``node`` as the planner's answer for it writes it at that instant (a
    condition whose status changes, or that is new, takes the instant as its transition
    time).
    """
    asking = [_state(node, t, planned) for t in (require or (under_maintenance,))]
    if not all(status == TRUE for status, _t in asking):
        return None
    held, since = _state(node, in_progress, planned)
    if held == TRUE:
        return None
    stamps = [t for _s, t in asking] + ([since] if held is not None else [])
    known = [t for t in stamps if t is not None]
    return max(known) if known else None


def _state(
    node: NodeView, ctype: str, planned: tuple[NodePlan, int] | None
) -> tuple[str | None, int | None]:
    """A condition's status and transition time, as written or as ``planned`` writes it."""
    cur = node.condition(ctype)
    if planned is not None:
        answer, at = planned
        desired = next((d for d in answer.desired if d.type == ctype), None)
        stale = cur is None or cur.last_transition_time is None
        if desired is not None and (stale or cur is None or cur.status != desired.status):
            return desired.status, at
    if cur is None:
        return None, None
    return cur.status, _instant(cur.last_transition_time)


#: Transition times repeat across a fleet (a window's opening, a kumaco start): parsed once.
_instant = lru_cache(maxsize=4096)(parse_timestamp)


def _collect(
    found: Iterable[tuple[NodeView, str, tuple[NodePlan, int] | None]], policy: Policy
) -> Iterator[Waiter]:
    reasons = waiting_reasons(policy)
    for node, reason, planned in found:
        if reason not in reasons:
            continue
        since = asked_since(
            node, policy.require, policy.under_maintenance, policy.in_progress, planned
        )
        if since is not None:
            yield Waiter(node.name, since, reason)


def _ordered(found: Iterable[Waiter]) -> tuple[Waiter, ...]:
    return tuple(sorted(found, key=lambda w: (w.since, w.name)))


def _planned(result: Plan, nodes: NodeSet, policy: Policy) -> Iterator[Waiter]:
    return _collect(
        (
            (node, n.in_progress.reason, (n, result.at))
            for n in result.nodes
            if n.in_progress is not None
            and n.in_progress.status != TRUE
            and (node := nodes.get(n.name)) is not None
        ),
        policy,
    )


def waiters(result: Plan, nodes: NodeSet, policy: Policy) -> tuple[Waiter, ...]:
    """The nodes of ``result`` (planned under ``policy``) that wait, the longest first.

    Each node is read as ``result`` writes it (a condition whose status changes takes
    ``result.at`` as its transition time), so the answer is the one
    :func:`waiters_as_written` gives once the writes landed.
    """
    return _ordered(_planned(result, nodes, policy))


def oldest_wait(result: Plan, nodes: NodeSet, policy: Policy) -> int:
    """How long (ns) the longest waiter of ``result`` has waited at its instant (0: none)."""
    oldest = min((w.since for w in _planned(result, nodes, policy)), default=None)
    return 0 if oldest is None else max(0, result.at - oldest)


def waiters_as_written(nodes: Iterable[NodeView], policy: Policy) -> tuple[Waiter, ...]:
    """The nodes that wait by their conditions as written (``policy``: the names), longest first."""
    found = (
        (node, held.reason, None)
        for node in nodes
        if (held := node.condition(policy.in_progress)) is not None and held.status != TRUE
    )
    return _ordered(_collect(found, policy))
