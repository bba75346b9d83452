"""The planner's vocabulary: condition names, reasons, the Policy, the rule interface, answers.

Contract: data only (frozen dataclasses and constants) and the interfaces :class:`Rule`,
:class:`Detail` and :class:`Flag`, with no behaviour beyond small accessors. Every reason
a node condition can carry is defined here, once; the planner (:mod:`kumaco.core.planning.planner`),
the lifecycle (:mod:`kumaco.core.planning.admission`), the rules and the writes
(:mod:`kumaco.core.planning.changes`) use these names, and the views quote them.

An admission rule is one configured :class:`Rule` object: its fields are its
configuration, its class says its reason, stage, :class:`Flag` (name, parser, help,
whether it needs ``--max-in-progress``), whether a node it keeps out *waits*, what it
reads from the cluster (:meth:`Rule.reads` the condition types, which the controller's
node store keeps; :attr:`Rule.cluster_reads` other resources), its :class:`Detail`
types (rendered generically by the views); one check returning a :class:`Stop` (a
:class:`Verdict` and a message) or None, whether it counts a node toward the ceilings
(:meth:`Rule.counts`), and when its answer next changes by time alone
(:meth:`Rule.next_change`). A :class:`Policy` carries the rules in force, in order
(built from the flags by :func:`kumaco.core.planning.rulebook.build`);
:class:`kumaco.core.planning.admission.Lifecycle` applies them stage by stage (:data:`STAGES`).
A ``CEILING`` rule's places are told the candidates in admission order
(:meth:`Place.line_up`) and each admission they could have stopped
(:meth:`Place.admitted`); a rule may keep a record in the messages it is given
(:meth:`Rule.record`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar

from kumaco.core.labels.selectors import Selector, parse_selector
from kumaco.core.objects.nodes import TRUE, Condition, NodeSet, NodeView
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.window import WindowState

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
#: The rule (never a condition reason) that counts an unavailable node toward its ceilings.
UNAVAILABLE = "NodeUnavailable"
#: The rule (the condition keeps ``MaintenanceFinished`` or ``MaintenanceTimedOut``) that
#: counts, and keeps out, a node kumaco released that is not available yet.
RELEASED_UNAVAILABLE = "ReleasedNodeUnavailable"
#: The name of the global ceiling in :attr:`Verdict.counts_toward` and :attr:`Plan.ceilings`.
GLOBAL = "global"
#: ``--respect-pdbs``: draining the node now would be refused by a PodDisruptionBudget.
DISRUPTION_BUDGET_EXHAUSTED = "DisruptionBudgetExhausted"
# The fleet rules (kumaco.core.planning.pacing_rules), MaintenanceInProgress False:
#: ``--admission-rate N/DURATION``: N nodes started maintenance in the last DURATION.
ADMISSION_RATE_REACHED = "AdmissionRateReached"
#: ``--one-group-at-a-time KEY``: nodes with another value of KEY are in maintenance.
ANOTHER_GROUP_IN_PROGRESS = "AnotherGroupInProgress"
#: ``--node-min-interval DURATION``: its previous maintenance ended less than DURATION ago.
TOO_SOON = "TooSoonAfterLastMaintenance"

# Advance notice (``--planned-lead``, :mod:`kumaco.core.planning.lookahead`): the KEP-5683 condition
# and its reasons.
MAINTENANCE_PLANNED = "MaintenancePlanned"
PLANNED_WINDOW = "MaintenanceWindow"
NOT_PLANNED = "NoMaintenancePlanned"


@dataclass(frozen=True)
class Policy:
    """What the operator configured: scope, condition names, and the admission rules.

    Each rule carries its own configuration (:class:`Rule`); the rules in force are
    built from the flags in one place (:func:`kumaco.core.planning.rulebook.build`).
    MaintenanceInProgress is managed only when one of them puts a ceiling on every node
    in scope (``--max-in-progress``: :attr:`ceiling`).
    """

    scope: Selector = field(default_factory=lambda: parse_selector(""))
    under_maintenance: str = UNDER_MAINTENANCE
    in_progress: str = IN_PROGRESS
    require: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    #: This instance's field manager: a condition last written by another kumaco
    #: instance (a manager named ``kumaco/...``) is not written (:func:`changes`).
    manager: str = ""
    #: The admission rules in force, in the order they are applied.
    rules: tuple[Rule, ...] = ()
    #: ``--planned-lead``: MaintenancePlanned is True this long before a window puts a
    #: node under maintenance (0: the condition is not managed); ``--planned-condition``.
    planned_lead: int = 0
    planned: str = MAINTENANCE_PLANNED

    @property
    def ceiling(self) -> Ceiling | None:
        """The ceiling on every node in scope (None: MaintenanceInProgress is not managed)."""
        return next((c for r in self.rules if (c := r.global_ceiling()) is not None), None)

    def rule(self, kind: type[R]) -> R | None:
        """The rule of that class in force (None: it is off)."""
        return next((r for r in self.rules if isinstance(r, kind)), None)

    def reads_cluster(self, resource: str) -> bool:
        """Whether a rule in force reads ``resource`` (a plural API resource) from the cluster."""
        return any(resource in r.cluster_reads for r in self.rules)

    @property
    def owned(self) -> tuple[str, ...]:
        """The condition types kumaco writes under this policy."""
        found = (
            (self.under_maintenance,)
            if self.ceiling is None
            else (self.under_maintenance, self.in_progress)
        )
        return (*found, self.planned) if self.planned_lead else found


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
    holder is released by this plan (``CAUSE_*``); ``boot`` the node's boot ID
    as kept in messages (None: the node reports none, so only a required
    condition clearing ends its maintenance); ``details`` what the deciding rule
    adds of its own (:class:`Detail`), which the views render generically.
    """

    rule: str
    missing: tuple[str, ...] = ()
    blocking: tuple[str, ...] = ()
    ceiling: str | None = None
    holders: tuple[str, ...] = ()
    counts_toward: tuple[str, ...] = ()
    until: int | None = None
    cause: str | None = None
    boot: str | None = None
    details: tuple[Detail, ...] = ()

    def detail(self, kind: type[D]) -> D | None:
        """The detail of that class the deciding rule added (None: none)."""
        return next((d for d in self.details if isinstance(d, kind)), None)


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
    #: MaintenancePlanned (None: no ``--planned-lead``), the instant a window next puts the
    #: node under maintenance within the lead (None: not planned) and those windows.
    planned: Desired | None = None
    planned_start: int | None = None
    planned_windows: tuple[str, ...] = ()

    @property
    def is_under_maintenance(self) -> bool:
        return self.under_maintenance.status == TRUE

    @property
    def is_in_progress(self) -> bool | None:
        return None if self.in_progress is None else self.in_progress.status == TRUE

    @property
    def is_planned(self) -> bool:
        return self.planned is not None and self.planned.status == TRUE

    @property
    def desired(self) -> tuple[Desired, ...]:
        found = (
            (self.under_maintenance,)
            if self.in_progress is None
            else (self.under_maintenance, self.in_progress)
        )
        return found if self.planned is None else (*found, self.planned)


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
    #: ``--planned-lead`` (0: off), and each maintenance window's first opening within it
    #: (for the windows that select nodes in scope): the ``WindowPlanned`` Events.
    planned_lead: int = 0
    leads: Mapping[str, int] = field(default_factory=dict)
    #: The :class:`Detail` kinds the rules in force may add (``plan -o json`` shows each).
    details: tuple[type[Detail], ...] = ()

    def node(self, name: str) -> NodePlan | None:
        return next((n for n in self.nodes if n.name == name), None)


# ----------------------------------------------------------------------------- the rules

#: The stages a rule acts in, in the order a node meets them (:attr:`Rule.stage`):
#: ``HOLD`` for a node holding MaintenanceInProgress -- a stop releases it (its verdict's
#: rule is the condition's reason); ``SETTLE`` for one that does not hold it -- a stop keeps
#: it out, its condition as written; ``ADMIT`` for every other node -- a stop keeps it out
#: (its verdict's rule is the reason), and a stop with :attr:`Stop.held` holds a holder
#: with that phrase; ``COUNT`` for a rule that stops nobody and only counts nodes toward
#: the ceilings (:meth:`Rule.counts`, which a rule of any stage may answer); ``CEILING``
#: for the candidates left, in admission order -- a rule keeps places
#: (:meth:`Rule.places`) and stops a node when one of them has no room.
HOLD, SETTLE, ADMIT, COUNT, CEILING = "hold", "settle", "admit", "count", "ceiling"
STAGES = (HOLD, SETTLE, ADMIT, COUNT, CEILING)


class Place:
    """One ceiling: its name and limit, whom it counts, whom it can stop, who occupies it."""

    def __init__(
        self,
        name: str,
        limit: int,
        members: frozenset[str] | None = None,
        stops: frozenset[str] | None = None,
    ) -> None:
        self.name, self.limit = name, limit
        self.members = members  # who counts toward it when holding (None: every node in scope)
        self.stops = members if stops is None else stops  # whom it can keep waiting
        self.occupants: set[str] = set()

    def room_for(self, name: str) -> bool:
        return len(self.occupants) + (0 if name in self.occupants else 1) <= self.limit

    def use(self) -> CeilingUse:
        return CeilingUse(self.name, self.limit, tuple(sorted(self.occupants)))

    def line_up(self, candidates: Sequence[str]) -> None:
        """The candidates left for the ceiling stage, in admission order, before any is admitted."""

    def admitted(self, name: str) -> None:
        """``name``, a node this place could stop, was admitted in this plan."""

    def released(self, name: str, at: int) -> None:
        """``name``, a holder, was released in this plan at ``at`` (before :meth:`line_up`)."""


@dataclass(frozen=True, slots=True)
class Scene:
    """What a rule sees of one node in scope at the instant planned, besides the node."""

    policy: Policy
    now: int
    #: The open maintenance windows it is in, the open freezes, and when its maintenance
    #: closes (the latest close among those windows; None: none open, or no end).
    windows: tuple[str, ...]
    freezes: tuple[str, ...]
    closes: int | None
    #: Its MaintenanceInProgress as the cluster has it, and the latest instant that
    #: condition can have transitioned at (:func:`kumaco.core.planning.rules.transitioned`).
    held: Condition | None
    since: int | None
    #: Its boot ID as messages keep it (None: it reports none).
    boot: str | None
    #: For a ``CEILING`` rule: the places it keeps that can stop this node, in order.
    places: tuple[Place, ...] = ()
    #: The PodDisruptionBudgets that would refuse draining it now (``namespace/name``).
    refused_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ground:
    """What a ``CEILING`` rule sees of the whole plan to lay out its places."""

    policy: Policy
    nodes: NodeSet
    in_scope: frozenset[str]
    #: Each node in scope's open maintenance windows.
    open_for: Mapping[str, tuple[str, ...]]
    #: Each window's nodes in scope (open or not), its ``maxInProgress``, the freezes.
    selected: Mapping[str, frozenset[str]]
    budgets: Mapping[str, Ceiling]
    freezes: frozenset[str]
    #: The instant planned.
    now: int = 0


@dataclass(frozen=True, slots=True)
class Stop:
    """A rule's answer when it stops a node: the verdict, and the condition's message.

    ``held``: for an ``ADMIT`` rule that also stops a holder, why it would not be
    admitted now (``MaintenanceNotFinished``'s message).
    """

    message: str
    verdict: Verdict
    held: str | None = None


R = TypeVar("R", bound="Rule")
D = TypeVar("D", bound="Detail")


class Detail(ABC):
    """What a rule adds to a :class:`Verdict` of its own: typed, rendered generically.

    ``key`` is its field in ``plan -o json`` (present on every node while its rule is in
    force: :meth:`empty`); :meth:`text` its part of the plan table's DETAIL column.
    """

    key: ClassVar[str]

    @abstractmethod
    def json(self) -> object:
        """Its value in ``plan -o json``."""

    @abstractmethod
    def text(self) -> str:
        """Its phrase in the plan table ('' to show nothing)."""

    @classmethod
    def empty(cls) -> object:
        """Its ``plan -o json`` value on a node it says nothing of."""
        return []


@dataclass(frozen=True)
class Flag:
    """A rule's command-line flag: how an operator configures it.

    ``parse`` turns the flag's text into the rule's configuration and raises
    :class:`~kumaco.core.errors.InvalidInput` (the reason, with the fix) otherwise;
    ``kind``: ``value`` (one value), ``bool`` (``--flag`` or ``--flag=BOOL``) or
    ``repeat`` (repeatable; ``parse`` gets each value); ``needs_ceiling``: it decides
    MaintenanceInProgress, so it is refused without ``--max-in-progress``.
    """

    name: str
    help: str
    metavar: str = ""
    parse: Callable[[str], object] = str
    kind: Literal["value", "bool", "repeat"] = "value"
    needs_ceiling: bool = True

    @property
    def dest(self) -> str:
        """Its attribute in parsed arguments (``--admission-rate`` -> ``admission_rate``)."""
        return self.name.lstrip("-").replace("-", "_")


class Rule(ABC):
    """One admission rule (see the module contract); subclasses are immutable."""

    #: Its stable name (the :attr:`Verdict.rule` it stops with, or a release's cause).
    reason: ClassVar[str]
    #: Where the lifecycle applies it (:data:`STAGES`).
    stage: ClassVar[str]
    #: Its flag (None: always in force, configured by the condition names alone).
    flag: ClassVar[Flag | None] = None
    #: Whether a node it keeps out *waits* (only the schedule or the fleet keeps it out:
    #: :mod:`kumaco.core.planning.waiting`), rather than being kept out by itself or on purpose.
    waits: ClassVar[bool] = False
    #: The API resources (plural) it reads beyond nodes and ConfigMaps (``run`` watches
    #: them, the offline commands read them from files).
    cluster_reads: ClassVar[frozenset[str]] = frozenset()
    #: The :class:`Detail` classes its verdicts carry (their keys show in ``plan -o json``).
    details: ClassVar[tuple[type[Detail], ...]] = ()

    @classmethod
    def configured(cls: type[R], value: object) -> R | None:
        """The rule as its flag's parsed ``value`` configures it (None: off).

        A rule without a flag is always in force: ``value`` is None.
        """
        if cls.flag is None:
            return cls()
        if value in (None, False, 0, (), ""):
            return None
        return cls() if cls.flag.kind == "bool" else cls(value)  # type: ignore[call-arg]

    def global_ceiling(self) -> Ceiling | None:
        """The ceiling it puts on every node in scope (``--max-in-progress`` alone has one)."""
        return None

    def counts(self, node: NodeView, scene: Scene) -> bool:
        """Whether ``node``, not holding MaintenanceInProgress, takes its places all the same."""
        return False

    def reads(self, policy: Policy) -> frozenset[str]:
        """The condition types it reads under ``policy`` (beyond kumaco's own conditions)."""
        return frozenset()

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        """Its answer for ``node``: a :class:`Stop`, or None when it lets the node through."""
        return None

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        """When its answer for ``node`` may next change by time alone (None: never)."""
        return None

    def places(self, ground: Ground) -> Sequence[Place]:
        """The ceilings a ``CEILING`` rule keeps (none for the other stages)."""
        return ()

    def record(
        self, message: str, held: Condition | None, status: str, policy: Policy, now: int
    ) -> str:
        """The MaintenanceInProgress message to write, given the node's current one (``held``).

        A rule that keeps a record in the cluster (the admission rate's admissions) adds it
        here to every message the lifecycle sets, holders' and others'; by default the
        message is unchanged.
        """
        return message
