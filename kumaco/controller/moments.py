"""The nodes' maintenance moments people are told about: admitted, finished, timed out, waiting.

Contract: pure (no I/O, no clock: ``now`` is passed in). :class:`NodeMoments` remembers,
for one leadership term, each node's ``MaintenanceInProgress`` condition as last seen and
turns each change of it, seen in the node set the leader plans from (its own writes are
stored through, a follower's release of a rebooted holder arrives by the watch), into a
:class:`~kumaco.notify.messages.Moment`:

* False or absent -> True: ``admitted`` (with the windows the plan admitted it under and
  the boot it was admitted on);
* True -> not True with reason ``MaintenanceTimedOut``: ``timed-out`` (how long it held);
* True -> not True otherwise: ``finished`` -- rebooted, from which boot to which (the
  release's message, :func:`~kumaco.core.objects.boots.reboot_of`), or released for the
  reason its message gives -- and how long after its admission (the condition's
  ``lastTransitionTime`` when it became True).

The first observation of a term is the baseline. It yields nothing, except with
``since`` (:meth:`NodeMoments.reset`: the previous leader's last word, the ``renewTime``
of the Lease it released or last renewed): a holder whose condition became True, or a
release whose condition became False, at or after that second (``lastTransitionTime``)
is told now -- the previous leader may not have seen it. So a moment of the second before
a takeover may be told twice; one that a crashed leader saw and had not sent before its
last renewal is lost (docs/observability.md). A node that disappears yields nothing.

:class:`WaitingMoments` tells ``waiting-too-long`` once per wait: a
:class:`~kumaco.core.planning.waiting.Waiter` (its wait is its ``since``) whose wait reached
the threshold (``--notify-waiting-after``) at ``since + threshold``. A wait is told once;
a node that is admitted or stops asking and later waits again has a new ``since`` and is
told again when that wait reaches the threshold. A node blocked for a while and then
kept out by the schedule again waits from the same request: it is the same wait, not
told twice. Its first observation of a term tells only waits that reached the threshold
at or after ``since`` (:meth:`WaitingMoments.reset`, the previous leader's last word; none
without it): the previous leader told those before. :meth:`WaitingMoments.observe` also
returns the next instant a wait reaches the threshold, for the loop to wake at.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from kumaco.core.objects.boots import admitted_on, reboot_of
from kumaco.core.objects.nodes import Condition, NodeView
from kumaco.core.planning.policy import FINISHED as FINISHED_REASON
from kumaco.core.planning.policy import TIMED_OUT, Plan
from kumaco.core.planning.waiting import Waiter
from kumaco.core.time.durations import SECOND, format_go_duration
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.notify.messages import ADMITTED, FINISHED, TIMED_OUT_EVENT, WAITING_EVENT, Moment

UNKNOWN = "unknown"


def _since(cond: Condition | None, now: int) -> str:
    start = parse_timestamp(cond.last_transition_time) if cond is not None else None
    if start is None:
        return UNKNOWN
    return format_go_duration(max(0, now - start) // SECOND * SECOND)


class NodeMoments:
    """One leadership term's memory of the holders; see the module contract."""

    def __init__(self, in_progress: str) -> None:
        self.in_progress = in_progress
        self._seen: dict[str, Condition | None] | None = None
        self._since: int | None = None

    def reset(self, since: int | None = None) -> None:
        """Forget everything: a new term's baseline tells what changed from ``since`` on."""
        self._seen = None
        self._since = None if since is None else since // SECOND * SECOND

    def _caught_up(self, current: dict[str, Condition | None], now: int) -> list[Moment]:
        """At a takeover: what changed at or after the previous leader's last word."""
        since, self._since = self._since, None
        moments: list[Moment] = []
        for name in sorted(current):
            cond = current[name]
            changed = parse_timestamp(cond.last_transition_time) if cond is not None else None
            if since is None or cond is None or changed is None or changed < since:
                continue
            if cond.is_true:
                moments.append(self._admitted(name, cond, ()))
            elif cond.reason in (TIMED_OUT, FINISHED_REASON):
                moments.append(self._released(name, None, cond, now))
        return moments

    def observe(
        self, nodes: Iterable[NodeView], now: int, plan: Plan | None = None
    ) -> list[Moment]:
        """The moments since the last observation, in node-name order."""
        current = {n.name: n.condition(self.in_progress) for n in nodes}
        seen, self._seen = self._seen, current
        if seen is None:
            return self._caught_up(current, now)
        moments: list[Moment] = []
        windows: dict[str, tuple[str, ...]] | None = None
        for name in sorted(current):
            if name not in seen:
                continue
            before, after = seen[name], current[name]
            was = before is not None and before.is_true
            is_ = after is not None and after.is_true
            if is_ and not was:
                if windows is None:
                    windows = {} if plan is None else {n.name: n.windows for n in plan.nodes}
                moments.append(self._admitted(name, after, windows.get(name, ())))
            elif was and not is_:
                moments.append(self._released(name, before, after, now))
        return moments

    @staticmethod
    def _admitted(name: str, cond: Condition | None, windows: tuple[str, ...]) -> Moment:
        boot = admitted_on(cond.message) if cond is not None else None
        fields = (
            ("node", name),
            ("windows", ", ".join(windows) or UNKNOWN),
            ("boot", boot or UNKNOWN),
        )
        return Moment(ADMITTED, name, fields)

    @staticmethod
    def _released(name: str, before: Condition | None, after: Condition | None, now: int) -> Moment:
        held = _since(before, now)
        if after is not None and after.reason == TIMED_OUT:
            return Moment(
                TIMED_OUT_EVENT, name, (("node", name), ("held", held), ("reason", after.message))
            )
        reboot = reboot_of(after.message) if after is not None else None
        if reboot is not None:
            outcome = f"the node rebooted (boot {reboot[0]} -> {reboot[1]})"
        elif after is None:
            outcome = "its MaintenanceInProgress condition was removed"
        else:
            outcome = "released: " + (after.message.split(";")[0] or after.reason)
        return Moment(
            FINISHED,
            name,
            (
                ("node", name),
                ("outcome", outcome),
                ("boot_before", reboot[0] if reboot else UNKNOWN),
                ("boot_after", reboot[1] if reboot else UNKNOWN),
                ("duration", held),
            ),
        )


class WaitingMoments:
    """One leadership term's memory of the waits told; see the module contract."""

    def __init__(self) -> None:
        #: Each node's wait told (its ``since``); None: the term's first observation is due.
        self._told: dict[str, int] | None = None
        self._since: int | None = None

    def reset(self, since: int | None = None) -> None:
        """Forget everything: a new term tells the waits that reached it from ``since`` on."""
        self._told = None
        self._since = None if since is None else since // SECOND * SECOND

    def observe(
        self, waiters: Iterable[Waiter], nodes: Container[str], now: int, threshold: int
    ) -> tuple[list[Moment], int | None]:
        """The waits that reached ``threshold`` (ns) by ``now`` (by name), and when the next does.

        The next: None when no wait will without a change. ``nodes``: the names of the
        nodes there are (the memory of a node gone is dropped).
        """
        first = self._told is None
        told: dict[str, int] = {} if self._told is None else self._told
        catch_up, self._since = self._since, None
        moments: list[Moment] = []
        next_at: int | None = None
        for w in sorted(waiters, key=lambda w: w.name):
            if told.get(w.name) == w.since:
                continue
            reached = w.since + threshold
            if reached > now:
                next_at = reached if next_at is None else min(next_at, reached)
                continue
            told[w.name] = w.since
            if first and (catch_up is None or reached < catch_up):
                continue  # the previous leader's to tell (or before this replica's time)
            moments.append(_waiting(w, now))
        self._told = {n: s for n, s in told.items() if n in nodes}
        return moments, next_at


def _waiting(w: Waiter, now: int) -> Moment:
    waited = format_go_duration(max(0, now - w.since) // SECOND * SECOND)
    return Moment(
        WAITING_EVENT,
        w.name,
        (
            ("node", w.name),
            ("waited", waited),
            ("since", format_instant(w.since)),
            ("reason", w.reason),
        ),
    )
