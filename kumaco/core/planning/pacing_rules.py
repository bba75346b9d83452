"""What fleets ask for: an admission rate, one group at a time, spacing per node.

Contract: pure, no I/O, no clock. Three immutable :class:`~kumaco.core.planning.policy.Rule`
objects, each configured by its own flag (listed in :data:`kumaco.core.planning.rulebook.RULEBOOK`);
each is in force only when its flag is set, and none ever revokes a holder:

* :class:`AdmissionRateLimit` (``CEILING``, ``--admission-rate N/DURATION``): at most N
  nodes start maintenance (``MaintenanceInProgress`` becomes True) in any sliding
  DURATION, on top of the ceilings; reason ``AdmissionRateReached``. The admissions are
  read from the cluster, so they survive a restart and a change of leader: a holder's
  is its ``lastTransitionTime``, and every ``MaintenanceInProgress`` message kumaco
  writes under a rate ends (before ``; admitted on boot ...``) with
  ``; recent admissions: T1, T2`` -- this node's admissions that were still inside
  DURATION when its condition last changed status (:meth:`AdmissionRateLimit.record`).
  The record is made by the very write that admits (a grant's message carries its own
  instant), carried unchanged through every later message, pruned only when the status
  changes; so a release, a second admission and a leader change in between lose
  nothing. A grant records its instant exactly (microseconds, rounded up), so an
  admission leaves the window exactly DURATION later -- in ``run`` as in the forecast,
  where a whole-second mark would add a second to every wave; a holder's own
  ``lastTransitionTime``, which Kubernetes keeps to the second, counts from the end of
  that second (the rate never undercounts), and is the same admission as a recorded
  instant within that second. The rule's next change is when the oldest counted
  admission leaves the window.
* :class:`OneGroupAtATime` (``CEILING``, ``--one-group-at-a-time KEY``): every node
  taking a place -- holders, and the nodes a release delay or ``--count-unavailable``
  count -- shares one value of the label KEY (nodes without it form one group); reason
  ``AnotherGroupInProgress``. When nobody takes a place, the group of the most recent
  maintenance (a holder, else the latest release) goes on while it has an eligible
  node; otherwise the group of the eligible node first in admission order -- the
  oldest request -- goes next.
* :class:`NodeMinInterval` (``ADMIT``, first of its stage, ``--node-min-interval
  DURATION``): a node whose previous maintenance ended (its ``MaintenanceInProgress``
  went False with reason ``MaintenanceFinished`` or ``MaintenanceTimedOut``; its
  ``lastTransitionTime``, counted from the end of that second) less than DURATION ago is
  not admitted; reason ``TooSoonAfterLastMaintenance``, the message saying from when it
  may be. Kept as that reason until then, so the end stays known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.labels.syntax import qualified_name_problems
from kumaco.core.objects.boots import admitted_on
from kumaco.core.objects.nodes import TRUE, Condition, NodeView
from kumaco.core.planning.ceiling_rules import CeilingRule
from kumaco.core.planning.policy import (
    ADMISSION_RATE_REACHED,
    ADMIT,
    ANOTHER_GROUP_IN_PROGRESS,
    FINISHED,
    TIMED_OUT,
    TOO_SOON,
    CeilingUse,
    Flag,
    Ground,
    Place,
    Policy,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.planning.rates import AdmissionRate, parse_admission_rate
from kumaco.core.time.durations import SECOND, format_go_duration, parse_flag_duration
from kumaco.core.time.instants import (
    format_exact_instant,
    format_instant,
    parse_timestamp,
    transitioned,
)

__all__ = [
    "AdmissionRateLimit",
    "NodeMinInterval",
    "OneGroupAtATime",
    "admissions_of",
    "parse_label_key",
    "recorded_admissions",
    "with_admissions",
]

# ----------------------------------------------------------------------------- the record

_MARK = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z"
_RECORD = re.compile(rf"; recent admissions: ({_MARK}(?:, {_MARK})*)")
_BOOT_SUFFIX = "; admitted on boot "


def recorded_admissions(message: str) -> tuple[str, ...]:
    """The admission instants a message records (RFC 3339, exact or to the second), oldest first."""
    m = _RECORD.search(message)
    return tuple(m.group(1).split(", ")) if m else ()


def with_admissions(message: str, marks: Sequence[str]) -> str:
    """``message`` recording exactly ``marks`` (none: no record), before a boot suffix."""
    bare = _RECORD.sub("", message, count=1)
    if not marks:
        return bare
    record = "; recent admissions: " + ", ".join(marks)
    if admitted_on(bare) is not None:
        at = bare.rfind(_BOOT_SUFFIX)
        return bare[:at] + record + bare[at:]
    return bare + record


def _mark(t: int) -> str:
    """A grant's own instant, exactly (a fraction reads as exact: :func:`transitioned`)."""
    return format_exact_instant(t)


def _chronological(marks: Iterable[str]) -> list[str]:
    """Marks oldest first (by their instant: the two formats do not sort as text)."""
    return sorted(set(marks), key=lambda m: (transitioned(m) or 0, m))


def admissions_of(held: Condition | None) -> tuple[str, ...]:
    """Every admission a MaintenanceInProgress condition records, its own (a holder's) included."""
    if held is None:
        return ()
    marks = list(recorded_admissions(held.message))
    first = parse_timestamp(held.last_transition_time)
    if held.status == TRUE and first is not None:
        text = held.last_transition_time or ""
        own = text if re.fullmatch(_MARK, text) else format_instant(first)
        last = transitioned(own) or first
        # The grant's recorded instant, if any, lies within the second Kubernetes kept.
        at = [parse_timestamp(m) for m in marks]
        if not any(t is not None and first <= t <= last for t in at):
            marks.append(own)
    return tuple(_chronological(marks))


def _in_window(marks: Sequence[str], rate: AdmissionRate, now: int) -> list[tuple[int, str]]:
    """The marks still counted at ``now``: (the instant each leaves the window, the mark)."""
    out = []
    for mark in marks:
        t = transitioned(mark)
        if t is not None and now < t + rate.per:
            out.append((t + rate.per, mark))
    return out


def _held(ground: Ground) -> Iterator[tuple[str, Condition | None]]:
    """Each node in scope and its MaintenanceInProgress as the cluster has it."""
    for name in ground.in_scope:
        node = ground.nodes.get(name)
        yield name, (node.condition(ground.policy.in_progress) if node is not None else None)


# ----------------------------------------------------------------------------- the rate


class RatePlace(Place):
    """The admissions counted in the sliding window; room while fewer than the rate's N.

    It covers nobody (holding is not admitting) and can stop every node in scope.
    """

    def __init__(
        self,
        name: str,
        rate: AdmissionRate,
        now: int,
        events: list[tuple[int, str]],
        stops: frozenset[str],
    ) -> None:
        super().__init__(name, rate.count, frozenset(), stops)
        self.rate, self.now = rate, now
        #: (the instant it leaves the window, the node), oldest first.
        self.events = sorted(events)

    def room_for(self, name: str) -> bool:
        return len(self.events) < self.limit

    def admitted(self, name: str) -> None:
        # Recorded exactly (:func:`_mark`, rounded up to the microsecond): counted from now.
        self.events.append(((transitioned(_mark(self.now)) or self.now) + self.rate.per, name))
        self.events.sort()

    def frees(self) -> int | None:
        """When the window next has room (None: it has room now)."""
        if self.room_for(""):
            return None
        return self.events[len(self.events) - self.limit][0]

    def use(self) -> CeilingUse:
        return CeilingUse(self.name, self.limit, tuple(sorted(n for _t, n in self.events)))


@dataclass(frozen=True)
class AdmissionRateLimit(CeilingRule):
    """``--admission-rate N/DURATION``: at most N admissions in any sliding DURATION."""

    reason = ADMISSION_RATE_REACHED
    flag = Flag(
        "--admission-rate",
        "at most N nodes start maintenance in any sliding DURATION, on top of the "
        "ceilings (e.g. 10/1h; default: off)",
        "N/DURATION",
        parse_admission_rate,
    )
    rate: AdmissionRate

    def places(self, ground: Ground) -> Sequence[Place]:
        rate = self.rate
        events = [
            (t, name)
            for name, held in _held(ground)
            for t, _m in _in_window(admissions_of(held), rate, ground.now)
        ]
        label = f"admissions per {rate.window}"
        return (RatePlace(label, rate, ground.now, events, ground.in_scope),)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        full = self._full(scene)
        if full is None:
            return None
        rate = full.rate
        noun = "node" if rate.count == 1 else "nodes"
        holders = tuple(sorted({n for _t, n in full.events}))
        return Stop(
            f"waiting: at most {rate.count} {noun} may start maintenance in any {rate.window}",
            Verdict(self.reason, ceiling=full.name, holders=holders, until=full.frees()),
        )

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        full = self._full(scene)
        return None if full is None else full.frees()

    @staticmethod
    def _full(scene: Scene) -> RatePlace | None:
        return next(
            (p for p in scene.places if isinstance(p, RatePlace) and not p.room_for("")), None
        )

    def record(
        self, message: str, held: Condition | None, status: str, policy: Policy, now: int
    ) -> str:
        """The message with this node's admissions recorded (see the module contract)."""
        rate = self.rate
        marks = admissions_of(held)
        was = held is not None and held.status == TRUE
        if status == TRUE and not was:  # admitted now: this write carries its instant
            marks = (*marks, _mark(now))
        if (status == TRUE) != was:  # the status changes: keep what is still counted
            kept = _in_window(_chronological(marks), rate, now)
            marks = tuple(m for _t, m in kept)[-rate.count :]
        elif held is not None:
            marks = recorded_admissions(held.message)
        return with_admissions(message, marks)


# ----------------------------------------------------------------------------- one group


class GroupPlace(Place):
    """Every node in scope by its group; room for a node when everyone inside is of its group.

    With nobody inside, only the group whose turn it is (:meth:`line_up`) has room.
    """

    def __init__(
        self, key: str, group_of: Mapping[str, str], marks: dict[str, tuple[int, int]]
    ) -> None:
        super().__init__(f"one {key} at a time", len(group_of))
        self.key, self.group_of = key, group_of
        #: Each node's last maintenance: (1 holding, 0 released; its transition, in ns).
        self.marks = marks
        self.turn: str | None = None

    @property
    def sticky(self) -> str | None:
        """The group of the most recent maintenance (a holder, else the latest release)."""
        latest = max(((m, n) for n, m in self.marks.items()), default=None)
        return None if latest is None else self.group_of[latest[1]]

    def released(self, name: str, at: int) -> None:
        # As it reads once the release is written (to the second): planned again, the same turn.
        self.marks[name] = (0, at - at % SECOND)

    def line_up(self, candidates: Sequence[str]) -> None:
        groups = [self.group_of[n] for n in candidates if n in self.group_of]
        sticky = self.sticky
        self.turn = sticky if sticky in groups else next(iter(groups), None)

    def room_for(self, name: str) -> bool:
        inside = {self.group_of.get(o) for o in self.occupants}
        if inside:
            return inside == {self.group_of.get(name)}
        return self.turn is None or self.group_of.get(name) == self.turn


def _group(node: NodeView | None, key: str) -> str:
    value = node.labels.get(key) if node is not None else None
    return f"{key}={value}" if value is not None else f"{key} unset"


_RELEASED = (FINISHED, TIMED_OUT, TOO_SOON)


def parse_label_key(text: str) -> str:
    """A node label key (a Kubernetes qualified name)."""
    problems = qualified_name_problems(text)
    if problems:
        raise InvalidInput(
            f"{excerpt(text)} is not a label key: {'; '.join(problems)} "
            "(e.g. topology.kubernetes.io/zone)"
        )
    return text


@dataclass(frozen=True)
class OneGroupAtATime(CeilingRule):
    """``--one-group-at-a-time KEY``: the nodes taking places share one value of KEY."""

    reason = ANOTHER_GROUP_IN_PROGRESS
    flag = Flag(
        "--one-group-at-a-time",
        "nodes in maintenance all share one value of the node label KEY; the next "
        "group goes when this one has no eligible node left (e.g. topology.kubernetes.io/zone; "
        "default: off)",
        "KEY",
        parse_label_key,
    )
    key: str

    def places(self, ground: Ground) -> Sequence[Place]:
        key = self.key
        group_of = {n: _group(ground.nodes.get(n), key) for n in ground.in_scope}
        marks: dict[str, tuple[int, int]] = {}
        for name, held in _held(ground):
            if held is None or (held.status != TRUE and held.reason not in _RELEASED):
                continue
            at = parse_timestamp(held.last_transition_time)
            marks[name] = (1 if held.status == TRUE else 0, -1 if at is None else at)
        return (GroupPlace(key, group_of, marks),)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        full = next(
            (p for p in scene.places if isinstance(p, GroupPlace) and not p.room_for(node.name)),
            None,
        )
        if full is None:
            return None
        key = full.key
        holders = tuple(sorted(full.occupants - {node.name}))
        return Stop(
            f"waiting: one {key} at a time, and it is another {key}'s turn",
            Verdict(self.reason, ceiling=full.name, holders=holders),
        )


# ----------------------------------------------------------------------------- spacing


def _second_up(t: int) -> int:
    return -(-t // SECOND) * SECOND


@dataclass(frozen=True)
class NodeMinInterval(Rule):
    """``--node-min-interval DURATION``: no new maintenance sooner than that after the last.

    First of the ``ADMIT`` stage, so that a node kept out keeps this reason -- and with
    it the instant its last maintenance ended -- until the interval is over.
    """

    reason = TOO_SOON
    stage = ADMIT
    flag = Flag(
        "--node-min-interval",
        "a node whose previous maintenance ended less than DURATION ago is not admitted "
        "again (default: off)",
        "DURATION",
        parse_flag_duration,
    )
    interval: int

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        ends = self.next_change(node, scene)
        if ends is None or scene.now >= ends:
            return None
        interval = format_go_duration(self.interval)
        assert scene.held is not None
        return Stop(
            f"too soon after its last maintenance (ended {scene.held.last_transition_time}): "
            f"may be admitted from {format_instant(_second_up(ends))} "
            f"(--node-min-interval {interval})",
            Verdict(self.reason, until=ends),
        )

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        held, interval = scene.held, self.interval
        if held is None or held.status == TRUE or scene.since is None:
            return None
        if held.reason not in _RELEASED:
            return None
        return scene.since + interval
