"""The planner's vocabulary: condition names, reasons, the Policy and the answer's types.

Contract: data only (frozen dataclasses and constants), no behaviour beyond small
accessors. Every reason a node condition can carry is defined here, once; the
planner (:mod:`kumaco.core.planner`), the lifecycle (:mod:`kumaco.core.admission`)
and the writes (:mod:`kumaco.core.changes`) use these names, and the views quote them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kumaco.core.ceilings import Ceiling
from kumaco.core.nodes import TRUE
from kumaco.core.selectors import Selector, parse_selector
from kumaco.core.windows import WindowState

UNDER_MAINTENANCE = "kured.dev/UnderMaintenance"
IN_PROGRESS = "MaintenanceInProgress"

# Reasons (CamelCase, as Kubernetes conventions ask). UnderMaintenance:
WINDOW_OPEN = "MaintenanceWindowOpen"
NO_WINDOW = "NoMaintenanceWindowOpen"
FROZEN = "MaintenanceFrozen"
OUT_OF_SCOPE = "OutOfScope"
# MaintenanceInProgress, True:
ALLOWED = "MaintenanceAllowed"
HELD = "MaintenanceNotFinished"
# MaintenanceInProgress, False -- one stable reason per rule:
NOT_UNDER_MAINTENANCE = "NotUnderMaintenance"
REQUIREMENT_NOT_MET = "RequiredConditionNotTrue"
BLOCKED = "BlockedByCondition"
CEILING_REACHED = "ConcurrencyCeilingReached"
TOPOLOGY_CEILING_REACHED = "TopologyCeilingReached"
WINDOW_BUDGET_REACHED = "WindowBudgetReached"
ADMISSION_CUTOFF = "AdmissionCutoff"
FINISHED = "MaintenanceFinished"
TIMED_OUT = "MaintenanceTimedOut"
#: The rule (not a condition reason: the condition keeps ``MaintenanceFinished``)
#: that stops a node settling after its own release.
RELEASE_DELAY = "ReleaseDelay"
#: The rule (the condition keeps ``MaintenanceFinished``) that keeps a node released
#: by an observed reboot out until its required conditions are reported afresh.
NOT_REPORTED_SINCE_REBOOT = "RequiredConditionNotReportedSinceReboot"
#: The same without required conditions: out until it has left its maintenance window.
REBOOTED_IN_WINDOW = "RebootedInThisWindow"
#: Why a holder was released (:attr:`Verdict.cause`; the metrics' ``cause`` label).
CAUSE_CLEARED = "RequiredConditionCleared"
CAUSE_REBOOTED = "RebootObserved"
CAUSE_TIMED_OUT = "InProgressTimeout"
#: The name of the global ceiling in :attr:`Verdict.counts_toward` and :attr:`Plan.ceilings`.
GLOBAL = "global"


@dataclass(frozen=True)
class Policy:
    """What the operator configured: scope, condition names, the ceilings and their rules.

    Durations are in ns; 0 (or None) turns a rule off.
    """

    scope: Selector = field(default_factory=lambda: parse_selector(""))
    under_maintenance: str = UNDER_MAINTENANCE
    in_progress: str = IN_PROGRESS
    ceiling: Ceiling | None = None
    require: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    #: ``--max-in-progress-per KEY=N``: (label key, ceiling) pairs.
    ceilings_per: tuple[tuple[str, Ceiling], ...] = ()
    release_delay: int = 0
    in_progress_timeout: int | None = None
    count_unavailable: bool = False
    admission_cutoff: int = 0
    #: This instance's field manager: a condition last written by another kumaco
    #: instance (a manager named ``kumaco/...``) is not written (:func:`changes`).
    manager: str = ""

    @property
    def owned(self) -> tuple[str, ...]:
        """The condition types kumaco writes under this policy."""
        return (
            (self.under_maintenance,)
            if self.ceiling is None
            else (self.under_maintenance, self.in_progress)
        )


@dataclass(frozen=True, slots=True)
class Desired:
    """A condition as kumaco wants it (its transition time is the writer's business)."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a node does or does not get MaintenanceInProgress, in detail (for people).

    ``rule`` is the stable reason of the rule that decided; ``missing`` and
    ``blocking`` the conditions involved; ``ceiling`` the full ceiling that
    stopped it and ``holders`` the nodes occupying it; ``counts_toward`` the
    ceilings the node occupies a place in; ``until`` when a time-bound rule
    (release delay, cutoff, timeout) changes its answer; ``cause`` why a
    holder is released by this plan (``CAUSE_*``); ``stale`` the required
    conditions not reported since the node's observed reboot; ``boot`` the
    node's boot ID as kept in messages (None: the node reports none, so only
    a required condition clearing ends its maintenance).
    """

    rule: str
    missing: tuple[str, ...] = ()
    blocking: tuple[str, ...] = ()
    ceiling: str | None = None
    holders: tuple[str, ...] = ()
    counts_toward: tuple[str, ...] = ()
    until: int | None = None
    cause: str | None = None
    stale: tuple[str, ...] = ()
    boot: str | None = None


@dataclass(frozen=True, slots=True)
class NodePlan:
    """The planner's answer for one node in scope."""

    name: str
    windows: tuple[str, ...]
    closes: int | None
    under_maintenance: Desired
    in_progress: Desired | None
    freezes: tuple[str, ...] = ()
    verdict: Verdict | None = None

    @property
    def is_under_maintenance(self) -> bool:
        return self.under_maintenance.status == TRUE

    @property
    def is_in_progress(self) -> bool | None:
        return None if self.in_progress is None else self.in_progress.status == TRUE

    @property
    def desired(self) -> tuple[Desired, ...]:
        return (
            (self.under_maintenance,)
            if self.in_progress is None
            else (self.under_maintenance, self.in_progress)
        )


@dataclass(frozen=True, slots=True)
class CeilingUse:
    """One ceiling at the instant planned: its limit and who occupies it."""

    name: str
    limit: int
    occupants: tuple[str, ...]

    @property
    def used(self) -> int:
        return len(self.occupants)


@dataclass(frozen=True)
class Plan:
    """Desired conditions of every node in scope, and when to look again."""

    at: int
    nodes: tuple[NodePlan, ...]
    next_change: int | None
    windows: Mapping[str, WindowState]
    ceiling: int | None = None
    in_progress: int = 0
    #: How many nodes in scope each window's selector matches (open or not), by key.
    matching: Mapping[str, int] = field(default_factory=dict)
    #: Every ceiling in force (global first), after this plan's admissions.
    ceilings: tuple[CeilingUse, ...] = ()

    def node(self, name: str) -> NodePlan | None:
        return next((n for n in self.nodes if n.name == name), None)


# ----------------------------------------------------------------------------- windows
