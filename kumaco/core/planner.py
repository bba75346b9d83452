"""The planner: windows + nodes + an instant + a policy -> each node's desired conditions.

Contract: :func:`plan` is a pure function. Given the same inputs it returns
the same :class:`Plan`; it reads no clock and does no I/O. The controller and
the offline ``kumaco plan`` command call it alike.

``kured.dev/UnderMaintenance`` (name configurable)
    True for a node in scope that matches at least one open window, else
    False. The message names the open windows and when the node's maintenance
    closes (the latest close among them).

``MaintenanceInProgress`` (only when a ceiling is set)
    True only for a node that is under maintenance, has every required
    condition True and no blocking condition True -- and never for more
    nodes than the ceiling. A node already holding it that is still eligible
    keeps it and counts first; new nodes are admitted oldest first (by the
    latest ``lastTransitionTime`` among their required conditions, then by
    name; a missing or malformed time sorts after every known one). When
    holders already exceed a lowered ceiling, nobody is revoked and nobody new
    is admitted. An ineligible holder loses it.

Ceilings are an integer (``0`` admits nobody: a pause switch) or a
percentage of the nodes in scope, rounded down but never below 1.

Messages carry no counters or clocks that change while nothing changes, so an
unchanged world produces identical conditions and the controller writes
nothing. :attr:`Plan.next_change` is the next instant at which a window
matching some node in scope opens or closes -- strictly after ``now``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.nodes import FALSE, TRUE, NodeSet, NodeView
from kumaco.core.selectors import Selector, parse_selector
from kumaco.core.times import format_instant, parse_timestamp
from kumaco.core.windows import Window, WindowState

UNDER_MAINTENANCE = "kured.dev/UnderMaintenance"
IN_PROGRESS = "MaintenanceInProgress"

# Reasons (CamelCase, as Kubernetes conventions ask).
WINDOW_OPEN = "MaintenanceWindowOpen"
NO_WINDOW = "NoMaintenanceWindowOpen"
ALLOWED = "MaintenanceAllowed"
NOT_UNDER_MAINTENANCE = "NotUnderMaintenance"
REQUIREMENT_NOT_MET = "RequiredConditionNotTrue"
BLOCKED = "BlockedByCondition"
CEILING_REACHED = "ConcurrencyCeilingReached"

_CEILING = re.compile(r"(0|[1-9][0-9]{0,6})(%?)")


@dataclass(frozen=True)
class Ceiling:
    """At most ``value`` nodes, or ``value`` percent of the nodes in scope."""

    value: int
    percent: bool = False

    def limit(self, nodes_in_scope: int) -> int:
        if not self.percent:
            return self.value
        return max(1, self.value * nodes_in_scope // 100)

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


def parse_ceiling(text: str) -> Ceiling:
    """Parse ``N`` or ``P%`` (1 <= P <= 100)."""
    m = _CEILING.fullmatch(text.strip())
    if not m:
        raise InvalidInput(f"{excerpt(text)} is not a count (e.g. 2) or a percentage (e.g. 10%)")
    value, percent = int(m.group(1)), bool(m.group(2))
    if percent and not 1 <= value <= 100:
        raise InvalidInput(f"{excerpt(text)}: a percentage must be between 1% and 100%")
    return Ceiling(value, percent)


@dataclass(frozen=True)
class Policy:
    """What the operator configured: scope, condition names, the ceiling and its rules."""

    scope: Selector = field(default_factory=lambda: parse_selector(""))
    under_maintenance: str = UNDER_MAINTENANCE
    in_progress: str = IN_PROGRESS
    ceiling: Ceiling | None = None
    require: tuple[str, ...] = ()
    block: tuple[str, ...] = ()

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
class NodePlan:
    """The planner's answer for one node in scope."""

    name: str
    windows: tuple[str, ...]
    closes: int | None
    under_maintenance: Desired
    in_progress: Desired | None

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

    def node(self, name: str) -> NodePlan | None:
        return next((n for n in self.nodes if n.name == name), None)


def _window_message(keys: Sequence[str], closes: int | None) -> str:
    noun = "window" if len(keys) == 1 else "windows"
    until = f"until {format_instant(closes)}" if closes is not None else "with no end in sight"
    return f"maintenance {noun} {', '.join(keys)} open {until}"


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


def plan(windows: Iterable[Window], nodes: NodeSet, now: int, policy: Policy) -> Plan:
    """Compute each in-scope node's desired conditions at instant ``now``."""
    in_scope = policy.scope.select(nodes.index)
    states: dict[str, WindowState] = {}
    # Partition the nodes in scope by the tuple of open windows matching them:
    # a few set operations per window instead of a per-node, per-window loop.
    groups: dict[tuple[str, ...], frozenset[str]] = {(): frozenset(in_scope)} if in_scope else {}
    closes_of: dict[str, int | None] = {}
    next_change: int | None = None
    matching: dict[str, int] = {}
    for w in sorted(windows, key=lambda w: w.key):
        selected = w.selector.select(nodes.index) & in_scope
        state = w.state_at(now)
        states[w.key] = state
        matching[w.key] = len(selected)
        if not selected:
            continue
        nc = state.next_change
        if nc is not None and (next_change is None or nc < next_change):
            next_change = nc
        if not state.open:
            continue
        closes_of[w.key] = state.closes
        refined: dict[tuple[str, ...], frozenset[str]] = {}
        for keys, members in groups.items():
            inside = members & selected
            if not inside:
                refined[keys] = members
                continue
            refined[(*keys, w.key)] = inside
            if len(inside) != len(members):
                refined[keys] = members - inside
        groups = refined

    um_false = Desired(
        policy.under_maintenance, FALSE, NO_WINDOW, "no maintenance window is open for this node"
    )
    under: dict[str, tuple[tuple[str, ...], int | None, Desired]] = {}
    under_set: set[str] = set()
    for keys, members in groups.items():
        if keys:
            ends = [closes_of[k] for k in keys]
            closes = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
            desired = Desired(
                policy.under_maintenance, TRUE, WINDOW_OPEN, _window_message(keys, closes)
            )
            entry: tuple[tuple[str, ...], int | None, Desired] = (keys, closes, desired)
            under_set |= members
        else:
            entry = ((), None, um_false)
        for name in members:
            under[name] = entry

    in_progress: dict[str, Desired] = {}
    limit: int | None = None
    count = 0
    if policy.ceiling is not None:
        limit = policy.ceiling.limit(len(in_scope))
        in_progress, count = _in_progress(nodes, in_scope, frozenset(under_set), policy, limit)

    plans = tuple(
        NodePlan(
            name=name,
            windows=under[name][0],
            closes=under[name][1],
            under_maintenance=under[name][2],
            in_progress=in_progress.get(name),
        )
        for name in sorted(under)
    )
    return Plan(
        at=now,
        nodes=plans,
        next_change=next_change,
        windows=states,
        ceiling=limit,
        in_progress=count,
        matching=matching,
    )


def _in_progress(
    nodes: NodeSet,
    in_scope: frozenset[str],
    under: frozenset[str],
    policy: Policy,
    limit: int,
) -> tuple[dict[str, Desired], int]:
    """MaintenanceInProgress for every node in scope, by set algebra over the condition index."""
    ip = policy.in_progress
    result: dict[str, Desired] = {}
    not_under = Desired(
        ip, FALSE, NOT_UNDER_MAINTENANCE, "no maintenance window is open for this node"
    )
    for name in in_scope - under:
        result[name] = not_under

    ready = under
    for r in policy.require:
        ready = ready & nodes.with_true(r)
    shared: dict[str, Desired] = {}
    for name in under - ready:
        missing = ", ".join(r for r in policy.require if name not in nodes.with_true(r))
        d = shared.get(missing)
        if d is None:
            d = shared[missing] = Desired(
                ip, FALSE, REQUIREMENT_NOT_MET, f"required condition not True: {missing}"
            )
        result[name] = d

    blocking_any: frozenset[str] = frozenset().union(*(nodes.with_true(b) for b in policy.block))
    blocked = ready & blocking_any
    for name in blocked:
        which = ", ".join(b for b in policy.block if name in nodes.with_true(b))
        d = shared.get("\0" + which)
        if d is None:
            d = shared["\0" + which] = Desired(ip, FALSE, BLOCKED, f"blocked by condition: {which}")
        result[name] = d

    eligible = ready - blocked
    holders = eligible & nodes.with_true(ip)
    req = ", ".join(f"{r}=True" for r in policy.require)
    allowed_msg = (
        "in an open maintenance window" + (f" with {req}" if req else "") + " and not blocked"
    )
    allowed = Desired(ip, TRUE, ALLOWED, allowed_msg)
    for name in holders:
        result[name] = allowed
    count = len(holders)
    waiting = Desired(
        ip, FALSE, CEILING_REACHED, f"waiting: at most {limit} nodes may be in maintenance at once"
    )
    candidates = [nodes.get(name) for name in eligible - holders]
    for node in sorted(
        (n for n in candidates if n is not None), key=lambda n: _admission_key(n, policy.require)
    ):
        if count < limit:
            result[node.name] = allowed
            count += 1
        else:
            result[node.name] = waiting
    return result, count


# ----------------------------------------------------------------------------- changes


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


@dataclass(frozen=True)
class Changes:
    """The writes a plan needs: every revocation and other change first, then the grants.

    Sent in that order -- and grants only once every revocation landed -- the
    number of nodes holding MaintenanceInProgress never exceeds the ceiling,
    even transiently.
    """

    revocations: tuple[NodeChange, ...]
    grants: tuple[NodeChange, ...]

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
    as desired gets no write (no heartbeat writes).
    """
    stamp = format_instant(now)
    revocations: list[NodeChange] = []
    grants: list[NodeChange] = []
    for np in result.nodes:
        node = nodes.get(np.name)
        if node is None:
            continue
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
            for d in np.desired
            if (cur := node.condition(d.type)) is None
            or (cur.status, cur.reason, cur.message) != (d.status, d.reason, d.message)
        )
        if not written:
            continue
        grant = any(
            c.type == policy.in_progress and c.status == TRUE for c in written
        ) and not node.is_true(policy.in_progress)
        change = NodeChange(np.name, versions.get(np.name), written, grant, np.desired)
        (grants if grant else revocations).append(change)
    return Changes(tuple(revocations), tuple(grants))
