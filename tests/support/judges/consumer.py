"""kured's stand-in for the tests: it reboots the nodes kumaco admits, and keeps its own record.

Contract: :class:`Consumer` watches one test run's nodes on its own connection
(a :class:`~tests.support.env.harness.NodeWatcher` with a callback). When a node
with ``RebootRequired=True`` gets ``MaintenanceInProgress=True`` it starts a
"reboot" there (recording the instant it saw the grant), and ``duration(node)``
seconds later finishes it: it records the finish, then clears
``RebootRequired`` -- what kured does after the reboot. A reboot, once started,
runs to its end whatever happens to the conditions, as a drained, rebooting node
does. Its record (:attr:`Consumer.reboots`) is what was *physically* in
maintenance, independent of kumaco's conditions: :meth:`Consumer.max_concurrent`
judges a ceiling by it. Used by the chaos run (random durations) and the policy
and forecast tests (fixed ones). Only loopback traffic.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.env.harness import MIP, REQUIRED, Api, NodeWatcher


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
    ``RebootRequired`` is True and that it is not rebooting already; it ends after
    its planned duration, when the finish is recorded and ``RebootRequired`` is
    cleared (in that order, so the record never ends after kumaco could react).
    """

    def __init__(self, api: Api, run: str, duration: Callable[[str], float]):
        self.api = api
        self.duration = duration  # node -> seconds its reboot takes (drawn when it starts)
        self.reboots: list[Reboot] = []
        self.state: dict[str, dict[str, str]] = {}  # node -> {condition type: status}
        self.errors: list[str] = []
        self._rebooting: dict[str, Reboot] = {}
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
            current = self._rebooting.get(name)
            if current is not None:
                if statuses.get(MIP) != "True":
                    current.revoked_while_rebooting = True
                return
            if self._stopped or statuses.get(MIP) != "True" or statuses.get(REQUIRED) != "True":
                return
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
        try:
            self.api.set_condition(
                reboot.node, REQUIRED, "False", reason="Rebooted", message="rebooted by the test"
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
