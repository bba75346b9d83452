"""The admission rules that need no more than the nodes and the windows, one object each.

Contract: pure. Each rule is an immutable :class:`~kumaco.core.planning.policy.Rule` carrying its
own configuration (a rule with a flag is in force only when the flag is set): its
reason, stage, flag, the condition types it reads, one check, whether it counts a node
toward the ceilings (:meth:`~kumaco.core.planning.policy.Rule.counts`), its typed detail and when
its answer next changes (the interface and its stages are in :mod:`kumaco.core.planning.policy`;
the ceiling rules are in :mod:`kumaco.core.planning.ceiling_rules`, the fleet rules in
:mod:`kumaco.core.planning.pacing_rules`, the PodDisruptionBudget rule in
:mod:`kumaco.core.planning.pdb_rule`). Their order is
:data:`kumaco.core.planning.rulebook.RULEBOOK`'s. :func:`conditions_read` is the condition types the
planner reads under a policy (what the controller's node store keeps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kumaco.core.objects.boots import Report, admitted_on, last_reports, reboot_of, rebooted_message
from kumaco.core.objects.nodes import READY, TRUE, Condition, NodeView
from kumaco.core.planning.policy import (
    ADMISSION_CUTOFF,
    ADMIT,
    BLOCKED,
    CAUSE_CLEARED,
    CAUSE_REBOOTED,
    CAUSE_TIMED_OUT,
    COUNT,
    FINISHED,
    FROZEN,
    HOLD,
    NOT_REPORTED_SINCE_REBOOT,
    NOT_UNDER_MAINTENANCE,
    REBOOTED_IN_WINDOW,
    RELEASE_DELAY,
    RELEASED_UNAVAILABLE,
    REQUIREMENT_NOT_MET,
    SETTLE,
    TIMED_OUT,
    UNAVAILABLE,
    Detail,
    Flag,
    Policy,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.time.durations import format_go_duration, parse_flag_duration
from kumaco.core.time.instants import format_instant, parse_timestamp, transitioned


def reported(c: Condition) -> int:
    """The latest instant a condition says it was reported at (-1: never), by its writer's clock.

    Its ``lastHeartbeatTime`` or ``lastTransitionTime``, whichever is later, as
    written (to the second). Only for a release written before kumaco kept the
    reports seen at a reboot (:func:`report_of`): such a release has nothing else
    to compare with, so its freshness falls back to comparing clocks.
    """
    times = [
        t
        for t in (parse_timestamp(c.last_heartbeat_time), parse_timestamp(c.last_transition_time))
        if t is not None
    ]
    return max(times) if times else -1


def report_of(node: NodeView, ctype: str) -> Report:
    """How ``node``'s condition ``ctype`` reads now, as a release's record keeps it."""
    c = node.condition(ctype)
    if c is None:
        return Report.of(ctype, None, None, None)
    return Report.of(ctype, c.status, c.last_transition_time, c.last_heartbeat_time)


def _same_report(recorded: Report | None, now: Report) -> bool:
    """Whether ``now`` is the report ``recorded``.

    A view kept without heartbeats (``kubectl kumaco status --watch``'s) compares
    status and transition only, so it never takes an old report for a fresh one.
    """
    if recorded is None:
        return False
    if now.heartbeat == "-" and recorded.heartbeat != "-":
        recorded = Report(recorded.type, recorded.status, recorded.transition, "-")
    return recorded == now


def not_reported_since(
    node: NodeView, require: tuple[str, ...], release: Condition
) -> tuple[str, ...]:
    """The required conditions not reported since a release by an observed reboot.

    A condition is reported afresh when it differs from what the release recorded
    (a new heartbeat, a new transition, another status), whatever its stamps say:
    nothing here compares a time written by the node's clock with kumaco's. An absent
    condition is never fresh. A release without a record (written by an older kumaco)
    is read as before: fresh when reported after the release by the stamps.
    """
    record = last_reports(release.message)
    stale: list[str] = []
    for r in require:
        c = node.condition(r)
        if c is None:
            stale.append(r)
        elif record is None:
            since = transitioned(release.last_transition_time)
            if since is not None and reported(c) < since:
                stale.append(r)
        elif _same_report(record.get(r), report_of(node, r)):
            stale.append(r)
    return tuple(stale)


def _missing(node: NodeView, policy: Policy) -> tuple[str, ...]:
    return tuple(r for r in policy.require if not node.is_true(r))


def _released_as(scene: Scene, reason: str) -> bool:
    """Whether the node does not hold MaintenanceInProgress, released with ``reason``.

    A holder never settles: :meth:`ReleaseDelay.counts` is asked of every node not
    admitted by this plan, a holder this plan stops among them.
    """
    held = scene.held
    return held is not None and held.status != TRUE and held.reason == reason


def _as_written(scene: Scene, verdict: Verdict) -> Stop:
    """A settling rule's stop: the node keeps its MaintenanceInProgress as written."""
    assert scene.held is not None
    return Stop(scene.held.message, verdict)


def _since_plus(scene: Scene, duration: int | None) -> int | None:
    """When ``duration`` (0 or None: never) has passed since MaintenanceInProgress transitioned."""
    return None if not duration or scene.since is None else scene.since + duration


class _ReadsRequired(Rule):
    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset(policy.require)


# ----------------------------------------------------------------------------- holding


@dataclass(frozen=True)
class RebootObserved(_ReadsRequired):
    """A holder whose machine rebooted since it was admitted is done.

    Whatever its reporters say yet: they may still report from before the reboot.
    The release records how each required condition reads at that moment, so that
    a report made after the reboot is told from the old one by change alone.
    """

    reason = CAUSE_REBOOTED
    stage = HOLD

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        admitted = admitted_on(scene.held.message) if scene.held is not None else None
        if admitted is None or scene.boot is None or scene.boot == admitted:
            return None
        require = scene.policy.require
        reports = tuple(report_of(node, r) for r in require)
        return Stop(
            rebooted_message(admitted, scene.boot, require, reports),
            Verdict(FINISHED, cause=CAUSE_REBOOTED),
        )


@dataclass(frozen=True)
class RequirementCleared(_ReadsRequired):
    """A holder whose required condition is no longer True is done."""

    reason = CAUSE_CLEARED
    stage = HOLD

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        missing = _missing(node, scene.policy)
        if not scene.policy.require or not missing:
            return None
        return Stop(
            f"maintenance finished: {', '.join(missing)} no longer True",
            Verdict(FINISHED, missing=missing, cause=CAUSE_CLEARED),
        )


@dataclass(frozen=True)
class InProgressTimeout(Rule):
    """``--in-progress-timeout``: a holder held this long is revoked (with required conditions)."""

    reason = CAUSE_TIMED_OUT
    stage = HOLD
    flag = Flag(
        "--in-progress-timeout",
        "revoke MaintenanceInProgress held longer than DURATION (kured's --lock-ttl; "
        "default: off, only reported)",
        "DURATION",
        parse_flag_duration,
    )
    timeout: int

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        ends = self.next_change(node, scene)
        if ends is None or scene.now < ends:
            return None
        return Stop(
            f"held {format_go_duration(self.timeout)} or longer "
            "(in-progress timeout); not admitted again until "
            + ", ".join(scene.policy.require)
            + " clears",
            Verdict(TIMED_OUT, missing=(), until=None, cause=CAUSE_TIMED_OUT),
        )

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        if not scene.policy.require:
            return None
        return _since_plus(scene, self.timeout)


# ----------------------------------------------------------------------------- settling


@dataclass(frozen=True)
class TimedOutUntilCleared(_ReadsRequired):
    """A node whose maintenance timed out stays out until its required conditions clear."""

    reason = TIMED_OUT
    stage = SETTLE

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if not _released_as(scene, TIMED_OUT) or not scene.policy.require:
            return None
        if _missing(node, scene.policy):
            return None
        return _as_written(scene, Verdict(TIMED_OUT))


@dataclass(frozen=True)
class ReleaseDelay(Rule):
    """``--release-delay``: a node released less than that ago is not admitted again yet.

    It still counts toward every ceiling it would count toward until the delay ends.
    """

    reason = RELEASE_DELAY
    stage = SETTLE
    flag = Flag(
        "--release-delay",
        "a node released less than DURATION ago still counts toward the ceilings "
        "(kured's --lock-release-delay; default: off)",
        "DURATION",
        parse_flag_duration,
    )
    delay: int

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if not self.counts(node, scene):
            return None
        return _as_written(scene, Verdict(RELEASE_DELAY, until=self.next_change(node, scene)))

    def counts(self, node: NodeView, scene: Scene) -> bool:
        ends = self.next_change(node, scene)
        return ends is not None and scene.now < ends

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        if not _released_as(scene, FINISHED):
            return None
        return _since_plus(scene, self.delay)


@dataclass(frozen=True)
class FinishedIdle(_ReadsRequired):
    """Done and idle: the finished state is kept (no rewrite) until it needs maintenance again."""

    reason = FINISHED
    stage = SETTLE

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        missing = _missing(node, scene.policy)
        if not missing or not _released_as(scene, FINISHED):
            return None
        return _as_written(scene, Verdict(FINISHED, missing=missing))


@dataclass(frozen=True)
class NotReported(Detail):
    """The required conditions not reported since the node's observed reboot."""

    key: ClassVar[str] = "notReportedSinceReboot"
    stale: tuple[str, ...]

    def json(self) -> object:
        return list(self.stale)

    def text(self) -> str:
        return "not reported since the reboot: " + ",".join(self.stale)


@dataclass(frozen=True)
class ReportedSinceReboot(_ReadsRequired):
    """Released by a reboot: a required condition still as it was at the reboot is the old request.

    Without required conditions: out until the node has left its maintenance window.
    See :func:`not_reported_since`.
    """

    reason = NOT_REPORTED_SINCE_REBOOT
    stage = SETTLE
    details = (NotReported,)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        held, since, policy = scene.held, scene.since, scene.policy
        if not _released_as(scene, FINISHED) or since is None:
            return None
        assert held is not None
        if reboot_of(held.message) is None:
            return None
        if not policy.require:
            return _as_written(scene, Verdict(REBOOTED_IN_WINDOW)) if scene.windows else None
        stale = not_reported_since(node, policy.require, held)
        return (
            _as_written(scene, Verdict(NOT_REPORTED_SINCE_REBOOT, details=(NotReported(stale),)))
            if stale
            else None
        )


# ----------------------------------------------------------------------------- admitting


@dataclass(frozen=True)
class Frozen(Rule):
    """Nobody is admitted while an open freeze covers it."""

    reason = FROZEN
    stage = ADMIT

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if not scene.freezes:
            return None
        names = ", ".join(scene.freezes)
        return Stop(f"maintenance frozen by {names}", Verdict(FROZEN), held=f"frozen by {names}")


@dataclass(frozen=True)
class WindowClosed(Rule):
    """Only a node under maintenance (an open window covers it) is admitted."""

    reason = NOT_UNDER_MAINTENANCE
    stage = ADMIT
    waits = True

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if scene.windows:
            return None
        return Stop(
            "no maintenance window is open for this node",
            Verdict(NOT_UNDER_MAINTENANCE),
            held="window closed",
        )


@dataclass(frozen=True)
class Required(_ReadsRequired):
    """Every required condition must be True to be admitted."""

    reason = REQUIREMENT_NOT_MET
    stage = ADMIT

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        missing = _missing(node, scene.policy)
        if not missing:
            return None
        return Stop(
            f"required condition not True: {', '.join(missing)}",
            Verdict(REQUIREMENT_NOT_MET, missing=missing),
        )


@dataclass(frozen=True)
class Blocked(Rule):
    """No blocking condition may be True to be admitted (nor to be admitted again: held)."""

    reason = BLOCKED
    stage = ADMIT

    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset(policy.block)

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        blocking = tuple(b for b in scene.policy.block if node.is_true(b))
        if not blocking:
            return None
        message = f"blocked by condition: {', '.join(blocking)}"
        return Stop(message, Verdict(BLOCKED, blocking=blocking), held=message)


@dataclass(frozen=True)
class Cutoff(Rule):
    """``--admission-cutoff``: not admitted when its maintenance closes less than that away."""

    reason = ADMISSION_CUTOFF
    stage = ADMIT
    waits = True
    flag = Flag(
        "--admission-cutoff",
        "admit a node only if its maintenance window stays open at least DURATION longer "
        "(default: off)",
        "DURATION",
        parse_flag_duration,
    )
    cutoff: int

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        first_too_late = self.next_change(node, scene)
        if first_too_late is None or scene.now < first_too_late:
            return None
        closes = scene.closes
        assert closes is not None
        return Stop(
            f"too late to start: the window closes at {format_instant(closes)}, less than "
            f"{format_go_duration(self.cutoff)} away",
            Verdict(ADMISSION_CUTOFF, until=closes),
        )

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        """The first instant too late (the cutoff passes: closes - admission_cutoff)."""
        if scene.closes is None:
            return None
        return scene.closes - self.cutoff + 1


@dataclass(frozen=True)
class Unavailable(Rule):
    """``--count-unavailable``: an unavailable node counts toward its ceilings.

    Unavailable: not ``Ready=True``, or cordoned; one that does not hold it counts
    toward every ceiling it falls under all the same. It stops nobody.
    """

    reason = UNAVAILABLE
    stage = COUNT
    flag = Flag(
        "--count-unavailable",
        "nodes not Ready or cordoned count toward the ceilings",
        "BOOL",
        kind="bool",
    )

    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset((READY,))

    def counts(self, node: NodeView, scene: Scene) -> bool:
        return unavailable(node)


def unavailable(node: NodeView) -> bool:
    """Not ``Ready=True``, or cordoned."""
    return node.unschedulable or not node.is_true(READY)


@dataclass(frozen=True)
class ReleasedUnavailable(Rule):
    """``--count-released-unavailable``: the maintenance's own disruption keeps its places.

    A node kumaco released (MaintenanceInProgress False with ``MaintenanceFinished``, or
    ``MaintenanceTimedOut``: revoked) less than ``window`` ago that is still unavailable
    (not ``Ready=True``, or cordoned) counts toward every ceiling it falls under: kured
    v2's daemon uncordons a rebooted node only after its release. Any other unavailable
    node takes no place (kured v1 kept rebooting past it); ``window`` bounds the count,
    since nothing in the cluster says whether a released node was schedulable in between
    (a node cordoned a week after its maintenance is not its maintenance's doing).

    A settling rule, as :class:`ReleaseDelay`: a node it counts is kept out, its condition
    as written, so that the count survives the plan's own writes (a timed-out node whose
    required conditions cleared would otherwise be rewritten, and stop counting, in the
    very plan that counted it).
    """

    reason = RELEASED_UNAVAILABLE
    stage = SETTLE
    flag = Flag(
        "--count-released-unavailable",
        "a node kumaco released less than DURATION ago that is still not Ready or "
        "cordoned counts toward the ceilings: the maintenance's own disruption "
        "(other unavailable nodes take no place; default: off)",
        "DURATION",
        parse_flag_duration,
    )
    window: int

    def reads(self, policy: Policy) -> frozenset[str]:
        return frozenset((READY,))

    def check(self, node: NodeView, scene: Scene) -> Stop | None:
        if not self.counts(node, scene):
            return None
        return _as_written(
            scene, Verdict(RELEASED_UNAVAILABLE, until=self.next_change(node, scene))
        )

    def counts(self, node: NodeView, scene: Scene) -> bool:
        ends = self.next_change(node, scene)
        return ends is not None and scene.now < ends and unavailable(node)

    def next_change(self, node: NodeView, scene: Scene) -> int | None:
        if not (_released_as(scene, FINISHED) or _released_as(scene, TIMED_OUT)):
            return None
        return _since_plus(scene, self.window)


def conditions_read(policy: Policy) -> frozenset[str]:
    """The condition types the planner reads under ``policy``.

    kumaco's own two (three with a planned lead), and every type one of its rules reads
    (the admission order reads the required ones, which :class:`Required` declares).
    """
    types = {policy.under_maintenance, policy.in_progress, *policy.owned}
    for rule in policy.rules:
        types |= rule.reads(policy)
    return frozenset(types)
