"""The planner: windows + nodes + an instant + a policy -> each node's desired conditions.

Contract: :func:`plan` is a pure function. Given the same inputs it returns
the same :class:`Plan`, whatever the order of nodes and windows; it reads no
clock and does no I/O. The controller, ``kumaco plan`` and ``kumaco forecast``
call it alike; :func:`changes` turns its answer into the writes that reach it.

``kured.dev/UnderMaintenance`` (name configurable)
    True for a node in scope that matches at least one open maintenance
    window and no open freeze window; the message names the open windows and
    when the node's maintenance closes (the latest close among them). A node
    in an open freeze is False with reason ``MaintenanceFrozen``, the message
    naming the freeze.

``MaintenanceInProgress`` (only when a ceiling is set) -- the lifecycle
    *Admission*: a node that does not hold it gets it only while it is under
    maintenance, every required condition is True, no blocking condition is
    True, its maintenance closes no sooner than the admission cutoff, it is
    not settling after a release of its own, and every ceiling it falls under
    has room: the global ceiling, the ceiling of its group for each
    ``--max-in-progress-per`` label, and the budget (``maxInProgress``) of
    each open window it is in. New nodes are admitted oldest request first (by
    the latest ``lastTransitionTime`` among their required conditions, then by
    name; a missing or malformed time sorts after every known one).

    *Holding*: a node that holds it keeps it, and keeps counting toward every
    ceiling, as long as every required condition stays True -- the
    maintenance is not done. A closed window, a blocking condition, a freeze
    or a lowered ceiling never revoke a holder; they only stop new
    admissions, and the holder's reason becomes ``MaintenanceNotFinished``
    with a message saying why it would not be admitted now. Only
    ``in_progress_timeout`` revokes a holder whose maintenance still runs
    (reason ``MaintenanceTimedOut``; it is not admitted again until its
    required conditions clear).

    *Release*: a holder whose required condition is no longer True loses it
    (reason ``MaintenanceFinished``). With ``release_delay``, a node released
    less than that long ago (its condition's ``lastTransitionTime``, reason
    ``MaintenanceFinished``; counted from the end of that second, as Kubernetes
    truncates the time) still counts toward every ceiling it would count
    toward, and is not admitted again before the delay ends. With no
    required condition configured nothing marks the end of a maintenance: a
    holder keeps it while it stays admissible, as before.

    *Unavailable nodes* (``--count-unavailable``): a node in scope that is not
    ``Ready=True`` or is cordoned, and does not hold it, counts toward every
    ceiling it falls under.

    *PodDisruptionBudgets* (``--respect-pdbs``): a node whose drain a budget would
    refuse now (the ``refusals`` input) is not admitted (reason
    ``DisruptionBudgetExhausted``, naming the budgets); it takes no place and a
    holder is never revoked for it.
``MaintenancePlanned`` (name configurable; only with ``planned_lead``) -- advance notice:
    True (``MaintenanceWindow``) on a node that a window will put under maintenance within
    the lead, False (``NoMaintenancePlanned``) otherwise, while it is under maintenance and
    when a freeze covers that start (:mod:`kumaco.core.planned`).

Each rule above is one configured object (:mod:`kumaco.core.rulebook` lists them) and a
policy is planned with the rules in force (:attr:`Policy.rules`).

Ceilings are ``N`` or ``P%`` (:mod:`kumaco.core.ceilings`); a global
percentage is of the nodes in scope, a group's of the nodes in scope in that
group, a window's of the nodes in scope it selects.

Messages carry no counters or clocks that change while nothing changes, so an
unchanged world produces identical conditions and the controller writes
nothing. :attr:`Plan.next_change` is the next instant, strictly after
``now``, at which the answer may change by time alone: a window matching a
node in scope opens or closes, a release delay or an in-progress timeout
ends, or an admission cutoff passes -- and, with a planned lead, a lead begins.
"""

from __future__ import annotations

from collections.abc import Iterable

from kumaco.core.admission import Lifecycle
from kumaco.core.ceilings import Ceiling, parse_ceiling
from kumaco.core.changes import (
    KUMACO_MANAGER_PREFIX,
    Changes,
    ConditionWrite,
    Conflict,
    NodeChange,
    changes,
    out_of_scope,
)
from kumaco.core.disruptions import NO_REFUSALS, Refusals
from kumaco.core.nodes import NodeSet
from kumaco.core.planned import Lookahead, lookahead
from kumaco.core.policy import (
    ADMISSION_CUTOFF,
    ALLOWED,
    BLOCKED,
    CAUSE_CLEARED,
    CAUSE_REBOOTED,
    CAUSE_TIMED_OUT,
    CEILING_REACHED,
    FINISHED,
    FROZEN,
    GLOBAL,
    HELD,
    IN_PROGRESS,
    MAINTENANCE_PLANNED,
    NO_WINDOW,
    NOT_PLANNED,
    NOT_REPORTED_SINCE_REBOOT,
    NOT_UNDER_MAINTENANCE,
    OUT_OF_SCOPE,
    PLANNED_WINDOW,
    REBOOTED_IN_WINDOW,
    RELEASE_DELAY,
    REQUIREMENT_NOT_MET,
    TIMED_OUT,
    TOPOLOGY_CEILING_REACHED,
    UNDER_MAINTENANCE,
    WINDOW_BUDGET_REACHED,
    WINDOW_OPEN,
    CeilingUse,
    Desired,
    NodePlan,
    Plan,
    Policy,
    Verdict,
)
from kumaco.core.windowgroups import under_maintenance_answers, window_groups
from kumaco.core.windows import Window

__all__ = [
    "ADMISSION_CUTOFF",
    "ALLOWED",
    "BLOCKED",
    "CAUSE_CLEARED",
    "CAUSE_REBOOTED",
    "CAUSE_TIMED_OUT",
    "CEILING_REACHED",
    "FINISHED",
    "FROZEN",
    "GLOBAL",
    "HELD",
    "IN_PROGRESS",
    "KUMACO_MANAGER_PREFIX",
    "MAINTENANCE_PLANNED",
    "NOT_PLANNED",
    "NOT_REPORTED_SINCE_REBOOT",
    "NOT_UNDER_MAINTENANCE",
    "NO_WINDOW",
    "OUT_OF_SCOPE",
    "PLANNED_WINDOW",
    "REBOOTED_IN_WINDOW",
    "RELEASE_DELAY",
    "REQUIREMENT_NOT_MET",
    "TIMED_OUT",
    "TOPOLOGY_CEILING_REACHED",
    "UNDER_MAINTENANCE",
    "WINDOW_BUDGET_REACHED",
    "WINDOW_OPEN",
    "Ceiling",
    "CeilingUse",
    "Changes",
    "ConditionWrite",
    "Conflict",
    "Desired",
    "NodeChange",
    "NodePlan",
    "Plan",
    "Policy",
    "Verdict",
    "changes",
    "out_of_scope",
    "parse_ceiling",
    "plan",
]


def plan(
    windows: Iterable[Window],
    nodes: NodeSet,
    now: int,
    policy: Policy,
    refusals: Refusals = NO_REFUSALS,
) -> Plan:
    """Compute each in-scope node's desired conditions at instant ``now``.

    ``refusals``: for a rule that reads PodDisruptionBudgets, node name -> those that
    would refuse draining it now (:mod:`kumaco.core.disruptions`).
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
