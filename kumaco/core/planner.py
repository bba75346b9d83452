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

    *Unavailable nodes* (``count_unavailable``): a node in scope that is not
    ``Ready=True`` or is cordoned, and does not hold it, counts toward every
    ceiling it falls under.

Ceilings are ``N`` or ``P%`` (:mod:`kumaco.core.ceilings`); a global
percentage is of the nodes in scope, a group's of the nodes in scope in that
group, a window's of the nodes in scope it selects.

Messages carry no counters or clocks that change while nothing changes, so an
unchanged world produces identical conditions and the controller writes
nothing. :attr:`Plan.next_change` is the next instant, strictly after
``now``, at which the answer may change by time alone: a window matching a
node in scope opens or closes, a release delay or an in-progress timeout
ends, or an admission cutoff passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kumaco.core.boots import admitted_on, boot_token, reboot_of, rebooted_message, with_boot
from kumaco.core.ceilings import Ceiling, parse_ceiling
from kumaco.core.durations import SECOND, format_go_duration
from kumaco.core.nodes import FALSE, READY, TRUE, Condition, NodeSet, NodeView
from kumaco.core.selectors import Selector, parse_selector
from kumaco.core.times import format_instant, parse_timestamp
from kumaco.core.windows import Window, WindowState

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
    "HELD",
    "IN_PROGRESS",
    "NOT_REPORTED_SINCE_REBOOT",
    "NOT_UNDER_MAINTENANCE",
    "NO_WINDOW",
    "OUT_OF_SCOPE",
    "REBOOTED_IN_WINDOW",
    "RELEASE_DELAY",
    "REQUIREMENT_NOT_MET",
    "TIMED_OUT",
    "TOPOLOGY_CEILING_REACHED",
    "UNDER_MAINTENANCE",
    "WINDOW_BUDGET_REACHED",
    "WINDOW_OPEN",
    "Ceiling",
    "Changes",
    "Plan",
    "Policy",
    "changes",
    "out_of_scope",
    "parse_ceiling",
    "plan",
]

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


@dataclass
class _Windows:
    """The windows at ``now``: states, which open windows cover which nodes, what comes next."""

    states: dict[str, WindowState]
    matching: dict[str, int]
    selected: dict[str, frozenset[str]]
    groups: dict[tuple[str, ...], frozenset[str]]
    closes: dict[str, int | None]
    freeze: dict[str, bool]
    budgets: dict[str, Ceiling]
    next_change: int | None


def _window_groups(
    windows: Iterable[Window], nodes: NodeSet, in_scope: frozenset[str], now: int
) -> _Windows:
    """Partition the nodes in scope by the tuple of open windows matching them.

    A few set operations per window instead of a per-node, per-window loop.
    """
    found = _Windows({}, {}, {}, {(): in_scope} if in_scope else {}, {}, {}, {}, None)
    for w in sorted(windows, key=lambda w: w.key):
        selected = w.selector.select(nodes.index) & in_scope
        state = w.state_at(now)
        found.states[w.key] = state
        found.matching[w.key] = len(selected)
        found.selected[w.key] = selected
        found.freeze[w.key] = w.freeze
        if w.budget is not None:
            found.budgets[w.key] = w.budget
        if not selected:
            continue
        nc = state.next_change
        if nc is not None and (found.next_change is None or nc < found.next_change):
            found.next_change = nc
        if not state.open:
            continue
        found.closes[w.key] = state.closes
        refined: dict[tuple[str, ...], frozenset[str]] = {}
        for keys, members in found.groups.items():
            inside = members & selected
            if not inside:
                refined[keys] = members
                continue
            refined[(*keys, w.key)] = inside
            if len(inside) != len(members):
                refined[keys] = members - inside
        found.groups = refined
    return found


def _latest(ends: Sequence[int | None]) -> int | None:
    return None if any(e is None for e in ends) else max(e for e in ends if e is not None)


def _window_message(keys: Sequence[str], closes: int | None) -> str:
    noun = "window" if len(keys) == 1 else "windows"
    until = f"until {format_instant(closes)}" if closes is not None else "with no end in sight"
    return f"maintenance {noun} {', '.join(keys)} open {until}"


@dataclass(frozen=True, slots=True)
class _Under:
    windows: tuple[str, ...]
    freezes: tuple[str, ...]
    closes: int | None
    desired: Desired


def _under_maintenance(ws: _Windows, policy: Policy) -> dict[str, _Under]:
    um = policy.under_maintenance
    nothing = _Under(
        (), (), None, Desired(um, FALSE, NO_WINDOW, "no maintenance window is open for this node")
    )
    under: dict[str, _Under] = {}
    for keys, members in ws.groups.items():
        entry = nothing
        if keys:
            maint = tuple(k for k in keys if not ws.freeze[k])
            frozen = tuple(k for k in keys if ws.freeze[k])
            closes = _latest([ws.closes[k] for k in maint]) if maint else None
            if frozen:
                ends = _latest([ws.closes[k] for k in frozen])
                noun = "freeze" if len(frozen) == 1 else "freezes"
                until = (
                    f"until {format_instant(ends)}" if ends is not None else "with no end in sight"
                )
                desired = Desired(
                    um, FALSE, FROZEN, f"maintenance frozen by {noun} {', '.join(frozen)} {until}"
                )
            elif maint:
                desired = Desired(um, TRUE, WINDOW_OPEN, _window_message(maint, closes))
            else:
                desired = nothing.desired
            entry = _Under(maint, frozen, closes, desired)
        for name in members:
            under[name] = entry
    return under


# ----------------------------------------------------------------------------- plan


def plan(windows: Iterable[Window], nodes: NodeSet, now: int, policy: Policy) -> Plan:
    """Compute each in-scope node's desired conditions at instant ``now``."""
    in_scope = frozenset(policy.scope.select(nodes.index))
    ws = _window_groups(windows, nodes, in_scope, now)
    under = _under_maintenance(ws, policy)
    lifecycle: _Lifecycle | None = None
    next_change = ws.next_change
    if policy.ceiling is not None:
        lifecycle = _Lifecycle(nodes, in_scope, under, ws, policy, now)
        lifecycle.run()
        if lifecycle.next_change is not None and (
            next_change is None or lifecycle.next_change < next_change
        ):
            next_change = lifecycle.next_change
    plans = tuple(
        NodePlan(
            name=name,
            windows=u.windows,
            closes=u.closes,
            under_maintenance=u.desired,
            in_progress=lifecycle.desired[name] if lifecycle else None,
            freezes=u.freezes,
            verdict=lifecycle.verdicts[name] if lifecycle else None,
        )
        for name, u in sorted(under.items())
    )
    return Plan(
        at=now,
        nodes=plans,
        next_change=next_change,
        windows=ws.states,
        ceiling=lifecycle.pools[0].limit if lifecycle else None,
        in_progress=lifecycle.in_progress if lifecycle else 0,
        matching=ws.matching,
        ceilings=tuple(p.use() for p in lifecycle.pools) if lifecycle else (),
    )


# ----------------------------------------------------------------------------- the lifecycle


def _admission_key(node: NodeView, require: Sequence[str]) -> tuple[int, int, str]:
    times = [
        parse_timestamp(c.last_transition_time)
        for r in require
        if (c := node.condition(r)) is not None
    ]
    if not times:
        return (0, 0, node.name)
    if any(t is None for t in times):
        return (1, 0, node.name)
    return (0, max(t for t in times if t is not None), node.name)


class _Pool:
    """One ceiling: which nodes it covers, its limit, and who occupies a place in it."""

    def __init__(self, name: str, members: frozenset[str] | None, ceiling: Ceiling, base: int):
        self.name = name
        self.members = members  # None: every node in scope
        self.limit = ceiling.limit(base)
        self.occupants: set[str] = set()

    def covers(self, name: str) -> bool:
        return self.members is None or name in self.members

    def room_for(self, name: str) -> bool:
        return len(self.occupants) + (0 if name in self.occupants else 1) <= self.limit

    def use(self) -> CeilingUse:
        return CeilingUse(self.name, self.limit, tuple(sorted(self.occupants)))


class _Lifecycle:
    """MaintenanceInProgress for every node in scope (see the module contract)."""

    def __init__(
        self,
        nodes: NodeSet,
        in_scope: frozenset[str],
        under: Mapping[str, _Under],
        ws: _Windows,
        policy: Policy,
        now: int,
    ) -> None:
        self.nodes, self.in_scope, self.under, self.ws = nodes, in_scope, under, ws
        self.policy, self.now = policy, now
        self.desired: dict[str, Desired] = {}
        self.verdicts: dict[str, Verdict] = {}
        self.next_change: int | None = None
        self.in_progress = 0
        assert policy.ceiling is not None
        self.pools = [_Pool(GLOBAL, None, policy.ceiling, len(in_scope))]
        self._group_pools: list[tuple[str, dict[str, _Pool]]] = []
        for key, ceiling in policy.ceilings_per:
            groups: dict[str, set[str]] = {}
            for name in in_scope:
                node = nodes.get(name)
                value = node.labels.get(key) if node is not None else None
                groups.setdefault(_group_name(key, value), set()).add(name)
            by_group = {
                g: _Pool(g, frozenset(members), ceiling, len(members))
                for g, members in sorted(groups.items())
            }
            self._group_pools.append((key, by_group))
            self.pools.extend(by_group.values())
        self._window_pools = {
            k: _Pool(f"window {k}", ws.selected[k], b, len(ws.selected[k]))
            for k, b in sorted(ws.budgets.items())
            if not ws.freeze.get(k, False)
        }
        self.pools.extend(self._window_pools.values())

    # ---------------------------------------------------------------- helpers

    def _later(self, t: int | None) -> None:
        if t is not None and t > self.now and (self.next_change is None or t < self.next_change):
            self.next_change = t

    def _set(self, name: str, status: str, reason: str, message: str, verdict: Verdict) -> None:
        self.desired[name] = Desired(self.policy.in_progress, status, reason, message)
        node = self.nodes.get(name)
        boot = self._boot(node) if node is not None else None
        self.verdicts[name] = verdict if boot is None else replace(verdict, boot=boot)

    @staticmethod
    def _boot(node: NodeView) -> str | None:
        """The node's boot ID as messages keep it (None: it reports none)."""
        return None if node.boot_id is None else boot_token(node.boot_id)

    def _pools_of(self, name: str) -> list[_Pool]:
        """The ceilings a node falls under (a window's budget only while it is open for it)."""
        pools = [self.pools[0]]
        node = self.nodes.get(name)
        for key, by_group in self._group_pools:
            value = node.labels.get(key) if node is not None else None
            pools.append(by_group[_group_name(key, value)])
        for k in self.under[name].windows:
            if k in self._window_pools:
                pools.append(self._window_pools[k])
        return pools

    def _occupy(self, name: str) -> tuple[str, ...]:
        """Count ``name`` in every ceiling that covers it; return their names.

        A window's budget covers every node the window selects, open for it or not
        (a holder whose window closed still counts toward that window's budget).
        """
        pools = [self.pools[0]]
        node = self.nodes.get(name)
        for key, by_group in self._group_pools:
            value = node.labels.get(key) if node is not None else None
            pools.append(by_group[_group_name(key, value)])
        pools += [p for p in self._window_pools.values() if p.covers(name)]
        for p in pools:
            p.occupants.add(name)
        return tuple(p.name for p in pools)

    def _missing(self, node: NodeView) -> tuple[str, ...]:
        return tuple(r for r in self.policy.require if not node.is_true(r))

    def _blocking(self, node: NodeView) -> tuple[str, ...]:
        return tuple(b for b in self.policy.block if node.is_true(b))

    def _unavailable(self, node: NodeView) -> bool:
        return node.unschedulable or not node.is_true(READY)

    def _cutoff(self, name: str) -> int | None:
        """When the admission cutoff passes for this node (None: it never stops it)."""
        closes = self.under[name].closes
        if not self.policy.admission_cutoff or closes is None:
            return None
        return closes - self.policy.admission_cutoff

    # ---------------------------------------------------------------- the passes

    def run(self) -> None:
        candidates: list[NodeView] = []
        for name in sorted(self.in_scope):
            node = self.nodes.get(name)
            if node is None:
                continue
            if self._holder(node) or self._released(node) or self._unadmissible(node):
                continue
            candidates.append(node)
        if self.policy.count_unavailable:
            # Already down and not holding it (now): it takes a place whatever happens to it.
            for name in sorted(self.in_scope):
                node = self.nodes.get(name)
                desired = self.desired.get(name)
                if (
                    node is not None
                    and self._unavailable(node)
                    and (desired is None or desired.status != TRUE)
                ):
                    counts = self._occupy(name)
                    if name in self.verdicts:
                        self.verdicts[name] = replace(self.verdicts[name], counts_toward=counts)
        waiting = [
            node.name
            for node in sorted(candidates, key=lambda n: _admission_key(n, self.policy.require))
            if not self._admit(node)
        ]
        # Why each waits is read off the ceilings once every admission is made, so that the
        # answer is the same when planned again after the admissions were written.
        for name in waiting:
            self._waiting(name)
        self.in_progress = sum(1 for d in self.desired.values() if d.status == TRUE)

    def _holder(self, node: NodeView) -> bool:
        """A node holding it: kept (counting toward its ceilings), timed out or released."""
        cur = node.condition(self.policy.in_progress)
        if cur is None or cur.status != TRUE:
            return False
        name, policy = node.name, self.policy
        admitted = admitted_on(cur.message)
        boot = self._boot(node)
        if admitted is not None and boot is not None and boot != admitted:
            # The machine rebooted since it was admitted: that maintenance is done,
            # whatever its reporters say yet (they may still report from before it).
            self._release_rebooted(node, admitted, boot)
            return True
        missing, blocking = self._missing(node), self._blocking(node)
        why_not = self._why_not_admissible(name, blocking)
        if policy.require and missing:
            self._release(node, missing)
            return True
        if not policy.require and why_not is not None:
            # Nothing marks the end of a maintenance: held while admissible, as before.
            return False
        since = _transitioned(cur.last_transition_time)
        timeout = policy.in_progress_timeout
        if timeout and policy.require and since is not None:
            if self.now >= since + timeout:
                self._set(
                    name,
                    FALSE,
                    TIMED_OUT,
                    f"held {format_go_duration(timeout)} or longer (in-progress timeout); "
                    "not admitted again until " + ", ".join(policy.require) + " clears",
                    Verdict(TIMED_OUT, missing=(), until=None, cause=CAUSE_TIMED_OUT),
                )
                return True
            self._later(since + timeout)
        counts = self._occupy(name)
        # The boot it was admitted on; a holder admitted before its node reported one
        # (or by another scheduler) takes the boot it has now.
        mark = admitted if admitted is not None else boot
        if why_not is None:
            self._set(
                name,
                TRUE,
                ALLOWED,
                with_boot(self._allowed_message(), mark),
                Verdict(ALLOWED, counts_toward=counts),
            )
        else:
            self._set(
                name,
                TRUE,
                HELD,
                with_boot(f"{why_not}; waiting for {', '.join(policy.require)} to clear", mark),
                Verdict(HELD, blocking=blocking, counts_toward=counts),
            )
        return True

    def _release_rebooted(self, node: NodeView, old: str, new: str) -> None:
        """A holder whose boot changed since admission: released, cause ``RebootObserved``."""
        counts: tuple[str, ...] = ()
        if self.policy.release_delay:
            counts = self._occupy(node.name)
            self._later(self.now + self.policy.release_delay)
        self._set(
            node.name,
            FALSE,
            FINISHED,
            rebooted_message(old, new, self.policy.require),
            Verdict(FINISHED, counts_toward=counts, cause=CAUSE_REBOOTED),
        )

    def _release(self, node: NodeView, missing: tuple[str, ...]) -> None:
        """A holder whose maintenance is done: MaintenanceInProgress goes False."""
        message = f"maintenance finished: {', '.join(missing)} no longer True"
        counts: tuple[str, ...] = ()
        if self.policy.release_delay:
            counts = self._occupy(node.name)  # it went False now: it settles from now on
            self._later(self.now + self.policy.release_delay)
        self._set(
            node.name,
            FALSE,
            FINISHED,
            message,
            Verdict(FINISHED, missing=missing, counts_toward=counts, cause=CAUSE_CLEARED),
        )

    def _released(self, node: NodeView) -> bool:
        """A node released earlier: still settling, or keeping its finished state while idle."""
        cur = node.condition(self.policy.in_progress)
        if cur is None or cur.status == TRUE or cur.reason not in (FINISHED, TIMED_OUT):
            return False
        name = node.name
        missing = self._missing(node)
        if cur.reason == TIMED_OUT:
            if self.policy.require and not missing:
                # Stuck: not admitted again until its required conditions clear.
                self._set(name, FALSE, TIMED_OUT, cur.message, Verdict(TIMED_OUT))
                return True
            return False
        since = _transitioned(cur.last_transition_time)
        delay = self.policy.release_delay
        if delay and since is not None and self.now < since + delay:
            counts = self._occupy(name)
            self._later(since + delay)
            self._set(
                name,
                FALSE,
                FINISHED,
                cur.message,
                Verdict(RELEASE_DELAY, counts_toward=counts, until=since + delay),
            )
            return True
        if missing:
            # Done and idle: keep the finished state (no rewrite) until it needs maintenance again.
            self._set(name, FALSE, FINISHED, cur.message, Verdict(FINISHED, missing=missing))
            return True
        if reboot_of(cur.message) is not None and since is not None:
            # Released by a reboot: a True reported before it is the old request.
            if self.policy.require:
                stale = tuple(
                    r
                    for r in self.policy.require
                    if (c := node.condition(r)) is None or _reported(c) < since
                )
                if stale:
                    verdict = Verdict(NOT_REPORTED_SINCE_REBOOT, stale=stale)
                    self._set(name, FALSE, FINISHED, cur.message, verdict)
                    return True
            elif self.under[name].windows:
                self._set(name, FALSE, FINISHED, cur.message, Verdict(REBOOTED_IN_WINDOW))
                return True
        return False

    def _why_not_admissible(self, name: str, blocking: tuple[str, ...]) -> str | None:
        """Why a node would not be admitted now by the window and condition rules (or None)."""
        under = self.under[name]
        if under.freezes:
            return f"frozen by {', '.join(under.freezes)}"
        if not under.windows:
            return "window closed"
        if blocking:
            return f"blocked by condition: {', '.join(blocking)}"
        return None

    def _unadmissible(self, node: NodeView) -> bool:
        """A node stopped before the ceilings: not under maintenance, conditions, or cutoff.

        With ``count_unavailable`` an unavailable node counts toward its ceilings
        whatever stops it.
        """
        name = node.name
        counts: tuple[str, ...] = ()  # an unavailable node's places are counted by run()
        under = self.under[name]
        missing, blocking = self._missing(node), self._blocking(node)
        if under.freezes:
            self._set(
                name,
                FALSE,
                FROZEN,
                f"maintenance frozen by {', '.join(under.freezes)}",
                Verdict(FROZEN, counts_toward=counts),
            )
        elif not under.windows:
            self._set(
                name,
                FALSE,
                NOT_UNDER_MAINTENANCE,
                "no maintenance window is open for this node",
                Verdict(NOT_UNDER_MAINTENANCE, counts_toward=counts),
            )
        elif missing:
            self._set(
                name,
                FALSE,
                REQUIREMENT_NOT_MET,
                f"required condition not True: {', '.join(missing)}",
                Verdict(REQUIREMENT_NOT_MET, missing=missing, counts_toward=counts),
            )
        elif blocking:
            self._set(
                name,
                FALSE,
                BLOCKED,
                f"blocked by condition: {', '.join(blocking)}",
                Verdict(BLOCKED, blocking=blocking, counts_toward=counts),
            )
        elif (cutoff := self._cutoff(name)) is not None and self.now > cutoff:
            closes = self.under[name].closes
            assert closes is not None
            self._set(
                name,
                FALSE,
                ADMISSION_CUTOFF,
                f"too late to start: the window closes at {format_instant(closes)}, less than "
                f"{format_go_duration(self.policy.admission_cutoff)} away",
                Verdict(ADMISSION_CUTOFF, counts_toward=counts, until=closes),
            )
        else:
            cutoff = self._cutoff(name)
            self._later(None if cutoff is None else cutoff + 1)  # the first instant too late
            return False
        return True

    def _admit(self, node: NodeView) -> bool:
        """Admit ``node`` if every ceiling it falls under has room; whether it was."""
        name = node.name
        if any(not p.room_for(name) for p in self._pools_of(name)):
            return False
        counts = self._occupy(name)
        message = with_boot(self._allowed_message(), self._boot(node))
        self._set(name, TRUE, ALLOWED, message, Verdict(ALLOWED, counts_toward=counts))
        timeout = self.policy.in_progress_timeout
        if timeout and self.policy.require:
            # Admitted now: its lastTransitionTime will read this second (Kubernetes
            # truncates it), and the timeout counts from the end of that second
            # (_transitioned). Without this the controller, whose own write wakes nobody,
            # would sleep past the timeout until something else changed.
            self._later(self.now - self.now % SECOND + SECOND + timeout)
        return True

    def _waiting(self, name: str) -> None:
        """A node left waiting: the first of its ceilings (in a fixed order) that is full."""
        full = next(p for p in self._pools_of(name) if not p.room_for(name))
        reason, message = self._full_message(full)
        holders = tuple(sorted(full.occupants - {name}))
        counts = (
            tuple(p.name for p in self.pools if name in p.occupants)
            if self.policy.count_unavailable
            else ()
        )
        verdict = Verdict(reason, ceiling=full.name, holders=holders, counts_toward=counts)
        self._set(name, FALSE, reason, message, verdict)

    def _full_message(self, pool: _Pool) -> tuple[str, str]:
        noun = "node" if pool.limit == 1 else "nodes"
        if pool.name == GLOBAL:
            return (
                CEILING_REACHED,
                f"waiting: at most {pool.limit} {noun} may be in maintenance at once",
            )
        if pool.name.startswith("window "):
            return (
                WINDOW_BUDGET_REACHED,
                f"waiting: at most {pool.limit} {noun} of {pool.name} "
                "may be in maintenance at once",
            )
        return (
            TOPOLOGY_CEILING_REACHED,
            f"waiting: at most {pool.limit} {noun} with {pool.name} may be in maintenance at once",
        )

    def _allowed_message(self) -> str:
        req = ", ".join(f"{r}=True" for r in self.policy.require)
        return (
            "in an open maintenance window" + (f" with {req}" if req else "") + " and not blocked"
        )


def _transitioned(text: str | None) -> int | None:
    """The latest instant a condition's transition can have happened at.

    Kubernetes writes ``lastTransitionTime`` to the second, truncated: a release at
    12:00:03.7 reads 12:00:03. Counting a release delay or an in-progress timeout
    from the end of that second (12:00:04) makes the delay never shorter, and the
    timeout never earlier, than configured. A timestamp with a fraction is exact.
    """
    t = parse_timestamp(text)
    if t is None or text is None or "." in text:
        return t
    return t + SECOND


def _reported(c: Condition) -> int:
    """The latest instant a condition is known to have been reported at (-1: never).

    Its ``lastHeartbeatTime`` or ``lastTransitionTime``, whichever is later, as
    written (to the second): a report at 12:00:03.7 reads 12:00:03, so it
    counts as after a reboot observed during 12:00:02 and not one observed at
    12:00:03.2 -- never earlier than it was.
    """
    times = [
        t
        for t in (parse_timestamp(c.last_heartbeat_time), parse_timestamp(c.last_transition_time))
        if t is not None
    ]
    return max(times) if times else -1


def _group_name(key: str, value: str | None) -> str:
    """A topology group's name: ``key=value``, or ``key unset`` for nodes without the label."""
    return f"{key}={value}" if value is not None else f"{key} unset"


# ----------------------------------------------------------------------------- changes

#: Field managers of kumaco instances are ``kumaco/<instance>``.
KUMACO_MANAGER_PREFIX = "kumaco/"


@dataclass(frozen=True, slots=True)
class ConditionWrite:
    """One condition as a status write sends it (a NodeCondition)."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str
    last_heartbeat_time: str

    def as_json(self) -> dict[str, str]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
            "lastHeartbeatTime": self.last_heartbeat_time,
        }


@dataclass(frozen=True, slots=True)
class NodeChange:
    """The status write one node needs: only the conditions that differ from its current ones.

    ``grant`` is True when the write gives the node MaintenanceInProgress it does
    not hold yet; ``resource_version`` is the version the decision was taken on
    (the write's precondition).
    """

    name: str
    resource_version: str | None
    conditions: tuple[ConditionWrite, ...]
    grant: bool
    desired: tuple[Desired, ...]


@dataclass(frozen=True, slots=True)
class Conflict:
    """A condition kumaco would change but another kumaco instance last wrote."""

    node: str
    type: str
    owner: str


@dataclass(frozen=True)
class Changes:
    """The writes a plan needs: every revocation and other change first, then the grants.

    Sent in that order -- and grants only once every revocation landed -- the
    number of nodes holding MaintenanceInProgress never exceeds the ceiling,
    even transiently. ``conflicts`` are the conditions left alone because
    another kumaco instance owns them.
    """

    revocations: tuple[NodeChange, ...]
    grants: tuple[NodeChange, ...]
    conflicts: tuple[Conflict, ...] = ()

    def __iter__(self) -> Iterator[NodeChange]:
        yield from self.revocations
        yield from self.grants

    def __len__(self) -> int:
        return len(self.revocations) + len(self.grants)


def changes(
    result: Plan,
    nodes: NodeSet,
    versions: Mapping[str, str | None],
    now: int,
    policy: Policy,
) -> Changes:
    """The writes that bring every node of ``result`` to its desired conditions at ``now``.

    A condition is written when its status, reason or message differs;
    ``lastTransitionTime`` keeps the current value while the status stays the
    same and becomes ``now`` when it changes. A node whose conditions are all
    as desired gets no write (no heartbeat writes). A condition last written by
    another kumaco instance (a field manager ``kumaco/...`` other than
    ``policy.manager``) is not written: it is reported as a :class:`Conflict`.
    Any other writer (a person, a script) is corrected.
    """
    stamp = format_instant(now)
    revocations: list[NodeChange] = []
    grants: list[NodeChange] = []
    conflicts: list[Conflict] = []
    for np in result.nodes:
        node = nodes.get(np.name)
        if node is None:
            continue
        differ = [
            (d, cur)
            for d in np.desired
            if (cur := node.condition(d.type)) is None
            or (cur.status, cur.reason, cur.message) != (d.status, d.reason, d.message)
        ]
        if policy.manager:
            for d, _cur in differ:
                owner = node.owners.get(d.type, "")
                if owner.startswith(KUMACO_MANAGER_PREFIX) and owner != policy.manager:
                    conflicts.append(Conflict(np.name, d.type, owner))
            taken = {c.type for c in conflicts if c.node == np.name}
            differ = [(d, cur) for d, cur in differ if d.type not in taken]
        written = tuple(
            ConditionWrite(
                d.type,
                d.status,
                d.reason,
                d.message,
                cur.last_transition_time
                if cur is not None and cur.status == d.status and cur.last_transition_time
                else stamp,
                stamp,
            )
            for d, cur in differ
        )
        if not written:
            continue
        grant = any(
            c.type == policy.in_progress and c.status == TRUE for c in written
        ) and not node.is_true(policy.in_progress)
        change = NodeChange(np.name, versions.get(np.name), written, grant, np.desired)
        (grants if grant else revocations).append(change)
    return Changes(tuple(revocations), tuple(grants), tuple(conflicts))


def out_of_scope(
    node: NodeView, version: str | None, now: int, policy: Policy
) -> tuple[NodeChange | None, bool]:
    """What this instance writes on a node that left its scope, and whether it is holding.

    Its own ``UnderMaintenance`` (last written by ``policy.manager``) becomes
    False with reason ``OutOfScope``; its ``MaintenanceInProgress`` is left
    alone: a holder finishes its maintenance (the second answer says the node
    holds it), anything else already says False.
    """
    um = node.condition(policy.under_maintenance)
    holding = (
        policy.ceiling is not None
        and node.is_true(policy.in_progress)
        and node.owners.get(policy.in_progress) == policy.manager
    )
    if (
        um is None
        or node.owners.get(policy.under_maintenance) != policy.manager
        or (um.status, um.reason) == (FALSE, OUT_OF_SCOPE)
    ):
        return None, holding
    stamp = format_instant(now)
    write = ConditionWrite(
        policy.under_maintenance,
        FALSE,
        OUT_OF_SCOPE,
        "this node left kumaco's scope (its --node-selector)",
        um.last_transition_time if um.status == FALSE and um.last_transition_time else stamp,
        stamp,
    )
    desired = (Desired(write.type, write.status, write.reason, write.message),)
    return NodeChange(node.name, version, (write,), False, desired), holding
