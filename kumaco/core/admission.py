"""The admission lifecycle of ``MaintenanceInProgress``: admit, hold, release, time out.

Contract: pure. :class:`Lifecycle` is the second half of
:func:`kumaco.core.planner.plan` (whose docstring states the rules): given the nodes in
scope, their UnderMaintenance answer (:mod:`kumaco.core.windowgroups`) and the policy,
it decides every node's ``MaintenanceInProgress`` with a :class:`~kumaco.core.policy.Verdict`
naming the rule, and the instants at which its answer changes by time alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from kumaco.core.boots import admitted_on, boot_token, reboot_of, rebooted_message, with_boot
from kumaco.core.ceilings import Ceiling
from kumaco.core.durations import SECOND, format_go_duration
from kumaco.core.nodes import FALSE, READY, TRUE, Condition, NodeSet, NodeView
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
    NOT_REPORTED_SINCE_REBOOT,
    NOT_UNDER_MAINTENANCE,
    REBOOTED_IN_WINDOW,
    RELEASE_DELAY,
    REQUIREMENT_NOT_MET,
    TIMED_OUT,
    TOPOLOGY_CEILING_REACHED,
    WINDOW_BUDGET_REACHED,
    CeilingUse,
    Desired,
    Policy,
    Verdict,
)
from kumaco.core.times import format_instant, parse_timestamp
from kumaco.core.windowgroups import OpenWindows, UnderAnswer


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


class Lifecycle:
    """MaintenanceInProgress for every node in scope (see the module contract)."""

    def __init__(
        self,
        nodes: NodeSet,
        in_scope: frozenset[str],
        under: Mapping[str, UnderAnswer],
        ws: OpenWindows,
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
