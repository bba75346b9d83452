"""kured's stand-in for the tests: it reboots the nodes kumaco admits, and keeps its own record.

Contract: :class:`Consumer` watches one test run's nodes on its own connection
(a :class:`~tests.support.env.harness.NodeWatcher` with a callback). When a node
with ``RebootRequired=True`` gets ``MaintenanceInProgress=True`` it starts a
"reboot" there, once per grant (recording the instant it saw the grant), and ``duration(node)``
seconds later finishes it: it records the finish, then (``new_boot``) gives the
node a new ``status.nodeInfo.bootID``, as a kubelet back from a real reboot does,
then (``clears``, the default) clears ``RebootRequired`` -- what kured does after
the reboot; ``clears=False`` leaves the required condition as written (no report
after the reboot). A reboot, once started, runs to its end whatever happens to the
conditions, as a drained, rebooting node does. The condition it writes is stamped
by ``clock``, the nodes' wall clock (the machine's by default; a
:class:`SkewedClock`, one per instance, for nodes whose clock is off). Its record
(:attr:`Consumer.reboots`) is what was *physically* in maintenance, independent of
kumaco's conditions: :meth:`Consumer.max_concurrent` judges a ceiling by it.

:class:`Detector` is kured's ``reboot-required-detector`` on one node, stamped by
that node's ``clock``: its write rule (:func:`detector_write`, pure) is kured v2's
``UpdateNodeCondition`` (``internal/conditions/crud.go`` of the prototype, c06d381):
a report is written when the status changes, or when the last heartbeat is more than
``period`` old *by the node's own clock*; an unchanged status keeps its
``lastTransitionTime``.

Used by the chaos run (random durations), the policy and forecast tests (fixed
ones) and the clock-skew scenarios (:mod:`tests.support.judges.skew`). Only
loopback traffic.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.env.harness import MIP, REQUIRED, Api, NodeWatcher

#: kured v2's detector's reason and message for its condition (c06d381).
DETECTOR_REASON = "KuredSentinelDetected"


def stamp(t: float) -> str:
    """An instant as a Kubernetes condition time (``metav1.Time``: to the second, truncated)."""
    return dt.datetime.fromtimestamp(int(t // 1), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_stamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class SkewedClock:
    """A machine's wall clock: the real one plus ``offset`` seconds (each instance its own).

    :meth:`jump` moves it as a clock set by hand or by a bad NTP answer does.
    """

    offset: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


@dataclass
class Reboot:
    """One reboot as the consumer did it (wall-clock seconds)."""

    node: str
    start: float
    planned_s: float
    finish: float | None = None  # None: still running when the run ended
    revoked_while_rebooting: bool = False


class Consumer:
    """kured's stand-in: reboots the nodes kumaco admits and records each reboot.

    It watches on its own connection (a :class:`NodeWatcher` with a callback). A
    reboot starts when it sees ``MaintenanceInProgress=True`` on a node whose
    ``RebootRequired`` is True and that it is not rebooting already, once per grant (it
    has seen the node without ``MaintenanceInProgress=True`` since its last reboot
    started: a node back from its reboot still shows the grant until the release); it ends after
    its planned duration, when the finish is recorded and ``RebootRequired`` is
    cleared (in that order, so the record never ends after kumaco could react).
    """

    def __init__(
        self,
        api: Api,
        run: str,
        duration: Callable[[str], float],
        *,
        clock: Callable[[], float] = time.time,
        new_boot: bool = False,
        clears: bool = True,
    ):
        self.api = api
        self.duration = duration  # node -> seconds its reboot takes (drawn when it starts)
        self.clock = clock  # the nodes' wall clock: what the condition it writes is stamped by
        self.new_boot = new_boot  # a reboot gives the node a new bootID
        self.clears = clears  # a reboot clears the required condition
        self.boots: dict[str, list[str]] = {}  # node -> the bootIDs it gave it, in order
        self.reboots: list[Reboot] = []
        self.state: dict[str, dict[str, str]] = {}  # node -> {condition type: status}
        self.errors: list[str] = []
        self._rebooting: dict[str, Reboot] = {}
        # Nodes rebooted for a grant that it has not seen end yet: one reboot per grant
        # (a node back from its reboot still shows the grant until kumaco's release lands).
        self._served: set[str] = set()
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.watcher = NodeWatcher(api, run, on_node=self._seen)

    def __enter__(self) -> Consumer:
        self.watcher.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _seen(self, at: float, name: str, conds: dict[str, dict[str, Any]]) -> None:
        statuses = {t: str(c.get("status", "")) for t, c in conds.items()}
        with self._lock:
            self.state[name] = statuses
            if statuses.get(MIP) != "True":
                self._served.discard(name)
            current = self._rebooting.get(name)
            if current is not None:
                if statuses.get(MIP) != "True":
                    current.revoked_while_rebooting = True
                return
            if self._stopped or statuses.get(MIP) != "True" or statuses.get(REQUIRED) != "True":
                return
            if name in self._served:  # the grant it rebooted for, not yet released
                return
            self._served.add(name)
            planned = self.duration(name)
            reboot = Reboot(name, at, round(planned, 2))
            self._rebooting[name] = reboot
            self.reboots.append(reboot)
            timer = threading.Timer(planned, self._finish, (reboot,))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()

    def _finish(self, reboot: Reboot) -> None:
        with self._lock:
            if self._stopped:
                return
            reboot.finish = time.time()
            del self._rebooting[reboot.node]
        if self.new_boot:
            boot = str(uuid.uuid4())
            try:
                set_boot(self.api, reboot.node, boot)
                with self._lock:
                    self.boots.setdefault(reboot.node, []).append(boot)
            except (RuntimeError, OSError) as exc:
                self.errors.append(f"a new bootID on {reboot.node}: {exc}")
        if not self.clears:
            return
        try:
            self.api.set_condition(
                reboot.node,
                REQUIRED,
                "False",
                stamp(self.clock()),
                reason="Rebooted",
                message="rebooted by the test",
            )
        except (RuntimeError, OSError) as exc:
            self.errors.append(f"clearing {REQUIRED} on {reboot.node}: {exc}")

    def rebooting(self) -> set[str]:
        with self._lock:
            return set(self._rebooting)

    def finished(self) -> dict[str, float]:
        """When each node's (last) reboot finished."""
        with self._lock:
            return {r.node: r.finish for r in self.reboots if r.finish is not None}

    def max_concurrent(self, groups: Mapping[str, str] | None = None) -> int:
        """The most nodes rebooting at once (within one group, if ``groups`` maps nodes to
        groups), from the record; a reboot still running counts until now."""
        with self._lock:
            spans = [(r.node, r.start, r.finish or time.time()) for r in self.reboots]
        keys = {None} if groups is None else set(groups.values())
        return max(
            (
                max_overlap([(s, e) for n, s, e in spans if groups is None or groups.get(n) == k])
                for k in keys
            ),
            default=0,
        )

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            timers = list(self._timers)
        for t in timers:
            t.cancel()
        self.watcher.__exit__()


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans ``[start, end]`` that cover one instant (an end before a start at ties)."""
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    best = now = 0
    for _t, step in points:
        now += step
        best = max(best, now)
    return best


def set_boot(api: Api, node: str, boot: str) -> None:
    """Give ``node`` the ``status.nodeInfo.bootID`` ``boot`` (a kubelet after a boot)."""
    api.request(
        "PATCH",
        f"/api/v1/nodes/{node}/status",
        {"status": {"nodeInfo": {"bootID": boot}}},
        "application/merge-patch+json",
    )


def detector_write(
    current: Mapping[str, Any] | None, status: bool, now: float, period: float
) -> dict[str, str] | None:
    """The condition kured's detector writes over ``current`` at ``now`` (its clock), or None.

    kured v2's ``UpdateNodeCondition`` (c06d381): nothing when the status is unchanged
    and ``now - lastHeartbeatTime <= period`` -- also when that heartbeat is in the
    future by this clock, so a clock set back skips its rewrites until it reaches the
    old heartbeat again; otherwise ``lastHeartbeatTime`` is ``now`` and
    ``lastTransitionTime`` is kept for an unchanged status, ``now`` for a new one.
    """
    text = "True" if status else "False"
    written = stamp(now)
    ltt = written
    if current is not None and str(current.get("status")) == text:
        hb = current.get("lastHeartbeatTime")
        if hb and now - parse_stamp(str(hb)) <= period:
            return None
        ltt = str(current.get("lastTransitionTime") or written)
    return {
        "type": REQUIRED,
        "status": text,
        "reason": DETECTOR_REASON,
        "message": f"Kured sentinel check result is {str(status).lower()}",
        "lastHeartbeatTime": written,
        "lastTransitionTime": ltt,
    }


class Detector:
    """kured's reboot-required-detector on one node: :func:`detector_write` over the API.

    Each :meth:`report` is one tick of its ``--period``: it reads the node's condition
    (a GET, as kured does), decides by its node's ``clock`` and writes with a strategic
    merge patch of ``nodes/status``. It keeps every condition it wrote
    (:attr:`written`, with the machine's real time of the write).
    """

    def __init__(
        self,
        api: Api,
        node: str,
        *,
        clock: Callable[[], float] = time.time,
        period: float = 2.0,
    ) -> None:
        self.api = api
        self.node = node
        self.clock = clock
        self.period = period
        self.written: list[tuple[float, dict[str, str]]] = []

    def report(self, status: bool) -> bool:
        """One tick reporting ``status``: True when it wrote the condition."""
        cond = detector_write(
            self.api.conditions(self.node).get(REQUIRED), status, self.clock(), self.period
        )
        if cond is None:
            return False
        self.api.request(
            "PATCH",
            f"/api/v1/nodes/{self.node}/status",
            {"status": {"conditions": [cond]}},
            "application/strategic-merge-patch+json",
        )
        self.written.append((time.time(), cond))
        return True

    def report_when_due(self, status: bool, timeout: float) -> float:
        """Tick until a report is written (at most ``timeout`` seconds): the real time it was."""
        wait_until = time.monotonic() + timeout
        while not self.report(status):
            if time.monotonic() > wait_until:
                raise AssertionError(
                    f"{self.node}'s detector wrote nothing within {timeout}s of ticks"
                )
            time.sleep(0.1)
        return self.written[-1][0]
