"""A living fleet on top of kwok's kubelets: node-problem-detector, relabelling, reboots, replacements.

:class:`Churn` writes to the test API server what a real fleet's other
writers do, at rates given per node (so they scale with the fleet) and
multiplied by ``scale`` (a short test compresses a day into a minute):

* node-problem-detector's heartbeat: every ``npd_heartbeat`` seconds each node's
  NPD conditions are re-sent unchanged (a strategic merge patch of
  ``nodes/status``, as NPD's exporter does), spread evenly over the period;
* problems: an NPD condition (``KernelDeadlock`` ...) turns True on a random
  node and back to False ``problem_seconds`` later;
* label changes: node-feature-discovery's kernel-version label moves to a new value;
* reboots: the annotation that kwok's reboot Stage (:mod:`tests.support.env.kwok`)
  turns into NotReady for ``reboot_seconds`` and back;
* replacements: a random node is deleted and a new one registers
  (``churn-NNNNN``), as an autoscaler retiring expired nodes.

Rare events are a Poisson process (exponential gaps, seeded). Every action
is recorded (:attr:`Churn.actions`), with the time it was sent, so a
benchmark knows which nodes were added, deleted or changed in a phase.
Requests carry the user agent :data:`USER_AGENT`. Defaults, and the public
figures they come from, are in docs/benchmarks.md ("A living cluster").
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import heapq
import http.client
import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.support.env.controlplane import NPD_CONDITIONS, ControlPlane, node_object
from tests.support.env.kwok import REBOOT

USER_AGENT = "kumaco-bench-churn"
KERNEL_LABEL = "feature.node.kubernetes.io/kernel-version.full"
DAY = 86400.0
CONTROL_PLANE = frozenset(f"node-{i:05d}" for i in range(3))  # node_object's role


@dataclass(frozen=True)
class ChurnRates:
    """Rates per node (see docs/benchmarks.md for their sources); 0 switches one off."""

    #: NPD's --k8s-exporter-heartbeat-period (default 5m): conditions re-sent unchanged.
    npd_heartbeat: float = 300.0
    #: Node problems per node and day: 419 unexpected interruptions in 54 days on
    #: 2,048 hosts (Llama 3 training, Meta 2024).
    problems_per_day: float = 419 / 54 / 2048
    #: How long a problem condition stays True.
    problem_seconds: float = 300.0
    #: Reboots per node and day: a kernel update every two weeks (Ubuntu's 4/2 kernel
    #: SRU cycle), each a kured reboot.
    reboots_per_day: float = 1 / 14
    #: How long a reboot keeps the node NotReady.
    reboot_seconds: float = 120.0
    #: Label changes per node and day: node-feature-discovery's kernel label, once per
    #: new kernel.
    labels_per_day: float = 1 / 14
    #: Replacements per node and day: Karpenter's default expireAfter (720h).
    replacements_per_day: float = 1 / 30
    #: Multiplies every rate above except the NPD heartbeat (a test's day in minutes).
    scale: float = 1.0


@dataclass(frozen=True)
class Action:
    """One write the churn sent: when, what, on which node, and the answer's status."""

    at: float
    kind: str  # npd-heartbeat, problem, recovery, label, reboot, delete, add
    node: str
    status: int


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    run: Callable[[], None] = field(compare=False)


class Churn:
    """Runs the fleet's other writers against ``cp`` until stopped (see the module docstring)."""

    def __init__(
        self,
        cp: ControlPlane,
        nodes: Iterable[str],
        rates: ChurnRates | None = None,
        *,
        seed: int = 1,
        workers: int = 4,
        first_new: int = 0,
    ) -> None:
        self.cp = cp
        self.rates = rates or ChurnRates()
        self.rng = random.Random(seed)
        self.present: list[str] = sorted(nodes)
        self._index = {n: i for i, n in enumerate(self.present)}
        self.actions: list[Action] = []
        self.failures = 0  # actions whose request failed (no answer)
        self._problems: dict[str, str] = {}  # node -> the NPD condition that is True
        self._lock = threading.Lock()
        self._queue: list[_Due] = []
        self._seq = 0
        self._next_new = first_new
        self._stop = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, "churn")
        self._local = threading.local()
        self._thread = threading.Thread(target=self._loop, name="churn", daemon=True)

    # ------------------------------------------------------------------ scheduling

    def _at(self, when: float, run: Callable[[], None]) -> None:
        with self._lock:
            self._seq += 1
            heapq.heappush(self._queue, _Due(when, self._seq, run))

    def _poisson(self, per_node_day: float, act: Callable[[], None]) -> None:
        """Schedule ``act`` as a Poisson process at ``per_node_day`` x nodes x scale."""
        rate = per_node_day * self.rates.scale * max(1, len(self.present)) / DAY
        if rate <= 0:
            return

        def fire() -> None:
            self._at(time.time() + self.rng.expovariate(rate), fire)  # even if act() fails
            act()

        self._at(time.time() + self.rng.expovariate(rate), fire)

    def start(self) -> Churn:
        now = time.time()
        r = self.rates
        if r.npd_heartbeat > 0:
            step = r.npd_heartbeat / max(1, len(self.present))
            for i, name in enumerate(self.present):
                self._heartbeat_at(name, now + i * step)
        self._poisson(r.problems_per_day, self._problem)
        self._poisson(r.reboots_per_day, self._reboot)
        self._poisson(r.labels_per_day, self._label)
        self._poisson(r.replacements_per_day, self._replace)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Churn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                due = self._queue[0] if self._queue else None
                if due is not None and due.at <= time.time():
                    heapq.heappop(self._queue)
                else:
                    due = None
            if due is None:
                self._stop.wait(0.02)
                continue
            self._pool.submit(self._safely, due.run)

    def _safely(self, run: Callable[[], None]) -> None:
        try:
            run()
        except (OSError, http.client.HTTPException):
            with self._lock:
                self.failures += 1

    # ------------------------------------------------------------------ writes

    def _request(self, method: str, path: str, body: object, content_type: str) -> int:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.cp.connection()
        try:
            conn.request(
                method,
                path,
                body=json.dumps(body).encode() if body is not None else None,
                headers={"Content-Type": content_type, "User-Agent": USER_AGENT},
            )
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            self._local.conn = None
            raise
        return resp.status

    def _record(self, kind: str, node: str, status: int) -> None:
        with self._lock:
            self.actions.append(Action(time.time(), kind, node, status))

    def _alive(self, name: str) -> bool:
        with self._lock:
            return name in self._index

    def _pick(self) -> str | None:
        with self._lock:
            candidates = [n for n in self.present if n in self._index]
            return self.rng.choice(candidates) if candidates else None

    def _npd_patch(self, name: str, kind: str) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            problem = self._problems.get(name)
        conditions = [
            {
                "type": t,
                "status": "True" if t == problem else "False",
                "reason": t if t == problem else reason,
                "message": f"{t} detected" if t == problem else message,
                "lastHeartbeatTime": stamp,
                **({"lastTransitionTime": stamp} if kind != "npd-heartbeat" else {}),
            }
            for t, reason, message in NPD_CONDITIONS
        ]
        status = self._request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": {"conditions": conditions}},
            "application/strategic-merge-patch+json",
        )
        self._record(kind, name, status)

    def _heartbeat_at(self, name: str, when: float) -> None:
        def beat() -> None:
            if not self._alive(name):
                return
            # The next beat first: a failed PATCH (a dropped keep-alive connection) must not
            # end this node's heartbeats for the rest of the run.
            self._heartbeat_at(name, when + self.rates.npd_heartbeat)
            self._npd_patch(name, "npd-heartbeat")

        self._at(when, beat)

    def _problem(self) -> None:
        name = self._pick()
        if name is None:
            return
        with self._lock:
            if name in self._problems:
                return
            self._problems[name] = self.rng.choice(NPD_CONDITIONS)[0]
        self._npd_patch(name, "problem")

        def recover() -> None:
            with self._lock:
                self._problems.pop(name, None)
            if self._alive(name):
                self._npd_patch(name, "recovery")

        self._at(time.time() + self.rates.problem_seconds, recover)

    def _meta(self, name: str, kind: str, meta: dict[str, object]) -> None:
        status = self._request(
            "PATCH", f"/api/v1/nodes/{name}", {"metadata": meta}, "application/merge-patch+json"
        )
        self._record(kind, name, status)

    def _label(self) -> None:
        name = self._pick()
        if name is not None:
            kernel = f"6.1.0-{self.rng.randrange(10, 99)}-amd64"
            self._meta(name, "label", {"labels": {KERNEL_LABEL: kernel}})

    def _reboot(self) -> None:
        name = self._pick()
        if name is not None:
            self._meta(name, "reboot", {"annotations": {REBOOT: f"{self.rates.reboot_seconds:g}s"}})

    def _replace(self) -> None:
        name = self._pick()
        if name is None or name in CONTROL_PLANE:
            return  # the control-plane nodes stay
        with self._lock:
            self._index.pop(name, None)
            new = f"churn-{self._next_new:05d}"
            self._next_new += 1
        self._record(
            "delete",
            name,
            self._request("DELETE", f"/api/v1/nodes/{name}", None, "application/json"),
        )
        i = self._next_new + 100_000
        node = node_object(
            i,
            random.Random(i),
            heartbeat=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            npd=True,
            name=new,
        )
        status = self._request("POST", "/api/v1/nodes", node, "application/json")
        self._record("add", new, status)
        if status < 300:
            with self._lock:
                self._index[new] = len(self.present)
                self.present.append(new)
            if self.rates.npd_heartbeat > 0:
                self._heartbeat_at(new, time.time() + self.rates.npd_heartbeat)

    # ------------------------------------------------------------------ questions

    def since(self, t0: float, t1: float | None = None) -> list[Action]:
        with self._lock:
            return [a for a in self.actions if a.at >= t0 and (t1 is None or a.at <= t1)]

    def deleted(self, since: float = 0.0) -> set[str]:
        return {a.node for a in self.since(since) if a.kind == "delete"}

    def added(self, since: float = 0.0) -> set[str]:
        return {a.node for a in self.since(since) if a.kind == "add" and a.status < 300}

    def counts(self, t0: float, t1: float | None = None) -> dict[str, int]:
        out: dict[str, int] = {}
        for a in self.since(t0, t1):
            key = a.kind if a.status < 300 else f"{a.kind} {a.status}"
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))
