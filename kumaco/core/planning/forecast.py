"""The forecast: the planner run forward in simulated time, to see a maintenance run before it.

Contract: :func:`forecast` is pure. From the nodes as they are at ``start``
(a :class:`~kumaco.core.objects.nodes.NodeSet`), the windows and the policy, it steps
through every instant at which something can change -- a window opening or
closing, a maintenance finishing, a release delay or an admission cutoff
passing (the planner's :attr:`~kumaco.core.planning.planner.Plan.next_change`) -- and
at each one calls :func:`kumaco.core.planning.planner.plan`, exactly as the controller
does, then applies the writes :func:`kumaco.core.planning.planner.changes` computes from it
(the controller's own diff: ``lastTransitionTime`` moving with the status, conditions
another kumaco instance owns left alone).

* The nodes that need maintenance are those in scope whose required
  conditions are all True at ``start``. A node admitted at ``t`` finishes at
  ``t + D`` (its duration: the default, or the first matching
  :class:`DurationRule`): its required conditions become False then, and the
  lifecycle releases it. A node already holding MaintenanceInProgress at
  ``start`` continues from its condition's ``lastTransitionTime``.
* Nothing else changes by itself: blocking conditions, labels and other
  nodes stay as they are at ``start``, and so do the PodDisruptionBudgets'
  answers (``refusals``, with ``--respect-pdbs``: a node a budget refuses at
  ``start`` is not admitted all the run long).
* The run ends at ``until``, or earlier when nothing can change any more.
* A node whose next chance comes while a ceiling's places are taken by nodes that stay
  unavailable (``--count-unavailable`` counts them, and the forecast keeps them as they
  are) never fits: it has no chance, and the nodes in its way are named.
* :attr:`Forecast.waits`: how long each node that needs maintenance (and does not hold
  it at ``start``) waits from its request (:func:`kumaco.core.planning.waiting.asked_since`) to its
  admission, or to ``until`` when it is not admitted; the longest first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals
from kumaco.core.objects.nodes import FALSE, TRUE, Condition, NodeSet, NodeView
from kumaco.core.planning.changes import Changes, changes
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    BLOCKED,
    CEILING_REACHED,
    REQUIREMENT_NOT_MET,
    TIMED_OUT,
    TOPOLOGY_CEILING_REACHED,
    WINDOW_BUDGET_REACHED,
    Plan,
    Policy,
)
from kumaco.core.planning.rules import Unavailable, unavailable
from kumaco.core.planning.waiting import asked_since
from kumaco.core.time.durations import SECOND, parse_go_duration
from kumaco.core.time.instants import format_exact_instant, parse_timestamp
from kumaco.core.windows.window import Window

#: At most this many planner steps (a bound on hostile input; a real run needs a few per node).
MAX_STEPS = 200_000


@dataclass(frozen=True)
class DurationRule:
    """``LABEL=VALUE:D``: nodes with this label value take ``duration`` ns."""

    key: str
    value: str
    duration: int


def parse_duration_rule(text: str) -> DurationRule:
    """``LABEL=VALUE:D``, ``D`` a Go duration greater than 0."""
    head, sep, duration = text.rpartition(":")
    key, eq, value = head.partition("=")
    if not sep or not eq or not key:
        raise InvalidInput(
            f"{excerpt(text)} is not LABEL=VALUE:DURATION (e.g. nvidia.com/gpu.present=true:45m)"
        )
    ns = parse_go_duration(duration)
    if ns <= 0:
        raise InvalidInput(f"{excerpt(text)}: the duration must be greater than 0")
    return DurationRule(key, value, ns)


@dataclass(frozen=True)
class NodeTurn:
    """One node's turn: when it was admitted and finished (None: not before ``until``)."""

    name: str
    admitted: int | None
    finished: int | None
    windows: tuple[str, ...]
    duration: int


@dataclass(frozen=True)
class Wait:
    """How long one node waits: from its request to its admission (None: not before ``until``)."""

    name: str
    since: int
    admitted: int | None
    waited: int


@dataclass(frozen=True)
class Forecast:
    """The simulated run: every node that needs maintenance, and whether all fit."""

    start: int
    until: int
    turns: tuple[NodeTurn, ...]
    #: When the last node finished, if every node finished before ``until``.
    finished_at: int | None
    unfinished: tuple[str, ...]
    #: For unfinished nodes not in progress at ``until``: the next instant at or after it at
    #: which the planner would admit the node on its own (its windows, freezes, cutoff and
    #: blockers; other nodes' places aside), and the window it would be admitted in.
    next_chance: Mapping[str, tuple[int, str]]
    steps: int
    #: Unfinished nodes that no maintenance window selects: no chance ever.
    in_no_window: tuple[str, ...] = ()
    #: Unfinished nodes in a window that the planner would not admit on their own within
    #: :data:`CHANCE_HORIZON` (or ever: a blocker stays as it is), and why.
    no_chance: Mapping[str, str] = field(default_factory=dict)
    #: Each waiting node's wait, the longest first (then by name).
    waits: tuple[Wait, ...] = ()

    @property
    def all_finished(self) -> bool:
        return not self.unfinished


def _duration_of(node: NodeView, default: int, rules: Sequence[DurationRule]) -> int:
    for r in rules:
        if node.labels.get(r.key) == r.value:
            return r.duration
    return default


def _with(node: NodeView, updates: Iterable[Condition]) -> NodeView:
    conditions = dict(node.conditions)
    for c in updates:
        conditions[c.type] = c
    return dataclasses.replace(node, conditions=MappingProxyType(conditions))


def apply_changes(writes: Changes, state: dict[str, NodeView]) -> None:
    """The controller's writes applied to ``state`` (in place), as its node store sees them."""
    for change in writes:
        state[change.name] = _with(
            state[change.name],
            (
                Condition(w.type, w.status, w.reason, w.message, w.last_transition_time)
                for w in change.conditions
            ),
        )


#: Plans at one instant until the writes stop (the controller's echoes; two suffice).
SETTLE_ROUNDS = 4


def _settle(
    windows: Sequence[Window],
    state: dict[str, NodeView],
    t: int,
    policy: Policy,
    refusals: Refusals = NO_REFUSALS,
) -> Plan:
    """Plan at ``t``, apply the controller's writes, and plan again until none are left.

    The writes are :func:`~kumaco.core.planning.planner.changes`'s, the controller's own diff
    (``lastTransitionTime`` rule, conditions another instance owns left alone), applied as
    its node store would see their echoes; the controller plans again on each echo.
    Returns the last plan; ``state`` is updated in place.
    """
    current = NodeSet(state.values())
    result = plan(windows, current, t, policy, refusals)
    for _ in range(SETTLE_ROUNDS):
        # The nodes the plan was made on; stamped exactly: a simulated write happens at t.
        writes = changes(result, current, {}, t, policy, exact=True)
        if not writes.revocations and not writes.grants:
            break
        apply_changes(writes, state)
        current = NodeSet(state.values())
        result = plan(windows, current, t, policy, refusals)
    return result


def forecast(
    windows: Sequence[Window],
    nodes: NodeSet,
    start: int,
    until: int,
    policy: Policy,
    duration: int,
    rules: Sequence[DurationRule] = (),
    refusals: Refusals = NO_REFUSALS,
) -> Forecast:
    """Simulate from ``start`` to ``until``; see the module contract."""
    if not policy.require:
        raise InvalidInput(
            "a forecast needs --require-condition: it says which nodes need maintenance "
            "and when a maintenance is done"
        )
    if policy.ceiling is None:
        raise InvalidInput("a forecast needs --max-in-progress")
    in_scope = policy.scope.select(nodes.index)
    state: dict[str, NodeView] = {n.name: n for n in nodes}
    needing = sorted(n for n in in_scope if all(state[n].is_true(r) for r in policy.require))
    admitted: dict[str, int] = {}
    finish: dict[str, int] = {}
    in_windows: dict[str, tuple[str, ...]] = {}
    durations = {n: _duration_of(state[n], duration, rules) for n in needing}
    asked = {
        n: t
        for n in needing
        if (
            t := asked_since(state[n], policy.require, policy.under_maintenance, policy.in_progress)
        )
        is not None
    }
    for name in needing:  # holders continue from where they are
        cur = state[name].condition(policy.in_progress)
        since = parse_timestamp(cur.last_transition_time) if cur is not None else None
        if cur is not None and cur.status == TRUE:
            began = since if since is not None else start
            admitted[name] = began
            finish[name] = max(start, began + durations[name])

    t, steps = start, 0
    while t < until and steps < MAX_STEPS:
        steps += 1
        # Maintenances that are done by now: their required conditions clear.
        for name, at in finish.items():
            if at <= t and any(state[name].is_true(r) for r in policy.require):
                stamp = format_exact_instant(at)
                state[name] = _with(
                    state[name],
                    (
                        Condition(r, FALSE, "MaintenanceDone", "simulated", stamp)
                        for r in policy.require
                    ),
                )
        result = _settle(windows, state, t, policy, refusals)
        for np in result.nodes:
            if np.is_in_progress and np.name in durations and np.name not in admitted:
                admitted[np.name] = t
                finish[np.name] = t + durations[np.name]
                in_windows[np.name] = np.windows
        pending = [at for at in finish.values() if at > t]
        if not pending and all(n in finish for n in needing):
            break  # every maintenance is done: nothing left to simulate
        candidates = [x for x in (result.next_change, *pending) if x is not None and x > t]
        if not candidates:
            break
        t = min(*candidates, until)

    turns = tuple(
        NodeTurn(
            name,
            admitted.get(name),
            finish[name] if name in finish and finish[name] <= until else None,
            in_windows.get(name, ()),
            durations[name],
        )
        for name in sorted(needing, key=lambda n: (admitted.get(n, until + 1), n))
    )
    unfinished = tuple(x.name for x in turns if x.finished is None)
    finished_at = max((x.finished for x in turns if x.finished is not None), default=None)
    chances = _next_chances(windows, state, unfinished, until, policy, in_scope)
    return Forecast(
        start=start,
        until=until,
        turns=turns,
        finished_at=None if unfinished else (finished_at if turns else start),
        unfinished=unfinished,
        next_chance=chances.next_chance,
        steps=steps,
        in_no_window=chances.in_no_window,
        no_chance=chances.no_chance,
        waits=_waits(asked, admitted, until),
    )


def _waits(asked: Mapping[str, int], admitted: Mapping[str, int], until: int) -> tuple[Wait, ...]:
    waits = []
    for name, since in asked.items():
        at = admitted.get(name)
        waits.append(Wait(name, since, at, max(0, (until if at is None else at) - since)))
    return tuple(sorted(waits, key=lambda w: (-w.waited, w.name)))


#: How far past ``until`` a node's next chance is looked for (robfig's own horizon), and in
#: how many planner steps at most.
CHANCE_HORIZON = 5 * 366 * 24 * 3600 * SECOND
CHANCE_STEPS = 500
#: Rules that keep deciding for a node alone, whatever the instant: the forecast keeps
#: conditions as they are, and a global or per-label ceiling stops a lone node only at 0.
_FOR_GOOD = frozenset(
    {BLOCKED, TIMED_OUT, REQUIREMENT_NOT_MET, CEILING_REACHED, TOPOLOGY_CEILING_REACHED}
)


@dataclass(frozen=True)
class Chances:
    """Where the unfinished nodes stand after ``until`` (see :class:`Forecast`)."""

    next_chance: dict[str, tuple[int, str]]
    in_no_window: tuple[str, ...]
    no_chance: dict[str, str]


def _chance(
    windows: Sequence[Window], node: NodeView, until: int, policy: Policy
) -> tuple[int, str] | str:
    """The first instant from ``until`` at which the planner admits ``node`` alone, or why not.

    Why not: the rule that stops it for good, or, when no instant within the horizon
    admits it, what stopped it the last time a window was open for it.
    """
    alone, t = NodeSet([node]), until
    why = ""
    for _ in range(CHANCE_STEPS):
        answer = plan(windows, alone, t, policy)
        found = answer.node(node.name)
        if found is None:
            return "out of scope"
        if found.is_in_progress:
            return t, found.windows[0] if found.windows else ""
        decided = found.in_progress or found.under_maintenance
        if found.verdict is not None and found.verdict.rule in _FOR_GOOD:
            return f"{decided.message}; a forecast keeps conditions and ceilings as they are"
        if found.is_under_maintenance:
            why = decided.message or decided.reason
        nxt = answer.next_change
        if nxt is None or nxt > until + CHANCE_HORIZON:
            break
        t = nxt
    last = f": {why}" if why else ": no window opens for it"
    return f"not admitted within five years or {CHANCE_STEPS} planner steps{last}"


#: The rules whose stop names a full ceiling and the nodes in its places.
_CEILINGS = frozenset({CEILING_REACHED, TOPOLOGY_CEILING_REACHED, WINDOW_BUDGET_REACHED})


def _idle(node: NodeView, policy: Policy) -> NodeView:
    """``node`` needing no maintenance and holding none (its MaintenanceInProgress removed)."""
    conditions = {t: c for t, c in node.conditions.items() if t != policy.in_progress}
    for r in policy.require:
        conditions[r] = Condition(r, FALSE, "", "")
    return dataclasses.replace(node, conditions=MappingProxyType(conditions))


def _taken_for_good(
    windows: Sequence[Window],
    state: Mapping[str, NodeView],
    name: str,
    at: int,
    policy: Policy,
    in_scope: frozenset[str],
) -> str | None:
    """Why ``name`` does not fit at its chance ``at``: a ceiling full of nodes kept unavailable.

    With ``--count-unavailable`` an unavailable node takes its places for good (the forecast
    keeps every node as it is). The planner is asked at ``at`` with those nodes as they
    are, ``name`` as it is and every other node in scope needing nothing and holding
    nothing (percentages are still of every node in scope); None when ``name`` fits.
    """
    if policy.rule(Unavailable) is None:
        return None
    kept = {n for n in in_scope if n != name and unavailable(state[n])}
    if not kept:
        return None
    nodes = [state[n] if n in kept or n == name else _idle(state[n], policy) for n in in_scope]
    answer = plan(windows, NodeSet(nodes), at, policy)
    found = answer.node(name)
    verdict = found.verdict if found is not None else None
    if found is None or found.is_in_progress or verdict is None or verdict.rule not in _CEILINGS:
        return None
    if not verdict.holders or not set(verdict.holders) <= kept:
        return None
    limit = next((c.limit for c in answer.ceilings if c.name == verdict.ceiling), None)
    most = "" if limit is None else f" (at most {limit})"
    return (
        f"ceiling {verdict.ceiling}{most} taken for good by {', '.join(verdict.holders)}: "
        "not Ready or cordoned, counted by --count-unavailable, and a forecast keeps nodes "
        "as they are"
    )


def _next_chances(
    windows: Sequence[Window],
    state: Mapping[str, NodeView],
    names: Sequence[str],
    until: int,
    policy: Policy,
    in_scope: frozenset[str] = frozenset(),
) -> Chances:
    """The next chance of each node of ``names`` (those still in progress are left out).

    A chance that a ceiling full of nodes kept unavailable takes away is none
    (:func:`_taken_for_good`).
    """
    maintenance = [w for w in windows if not w.freeze]
    chances: dict[str, tuple[int, str]] = {}
    none: list[str] = []
    never: dict[str, str] = {}
    #: Nodes alike in labels and conditions (all but the name) have the same chance.
    seen: dict[tuple[object, ...], tuple[int, str] | str] = {}
    taken: dict[tuple[object, ...], str | None] = {}
    for name in names:
        node = state[name]
        if node.is_true(policy.in_progress):
            continue  # in progress at until: it finishes after it
        if not any(w.selector.matches(node.labels) for w in maintenance):
            none.append(name)
            continue
        alike = (
            tuple(sorted(node.labels.items())),
            tuple(sorted(node.conditions.items())),
            node.unschedulable,
            node.boot_id,
        )
        if alike not in seen:
            seen[alike] = _chance(windows, node, until, policy)
        found = seen[alike]
        if not isinstance(found, str):
            # Alike nodes that are available meet the same unavailable ones in their way.
            key = alike if not unavailable(node) else (name,)
            if key not in taken:
                taken[key] = _taken_for_good(windows, state, name, found[0], policy, in_scope)
            why = taken[key]
            if why is not None:
                found = why
        if isinstance(found, str):
            never[name] = found
        else:
            chances[name] = found
    return Chances(chances, tuple(none), never)
