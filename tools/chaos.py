"""Chaos for kumaco's HA and its ceiling, on the real test control plane, judged three ways.

Three replicas run against a kube-apiserver with auditing on
(:data:`tests.support.env.auditing.AUDIT_POLICY`), with a ceiling on
MaintenanceInProgress, ``kured.dev/RebootRequired`` required and
``kured.dev/RebootInhibited`` blocking. A window opens every minute for
``window_seconds`` (20 s by default), so admissions stop and start again
while reboots run. Around kumaco, stand-ins play the rest of a kured fleet:

* kured's reboot-required reporter sets ``RebootRequired=True`` on a random
  node that does not need a reboot and is not in maintenance, every
  0.2-1.0 s; it never clears it (the consumer does);
* a reboot inhibitor (an alert, a blocker pod) raises ``RebootInhibited=True``
  every 1-4 s on a random node, mostly (70 %) on a node that is rebooting
  right now when there is one (a blocker raised mid-maintenance), and clears it
  2-8 s later;
* the consumer (kured's drain-and-reboot, :class:`Consumer`) watches the
  nodes on its own connection; when a node needing a reboot gets
  ``MaintenanceInProgress=True`` it records the *start* of a reboot and
  reboots it for a random 3-30 s -- often past the window's close -- then
  records the *finish* and clears ``RebootRequired``. A reboot, once started,
  runs to its end whatever happens to the conditions (as a drained, rebooting
  node does).

Meanwhile the leader (read from the Lease) is killed ``kills`` times,
alternating SIGKILL and SIGTERM; a supervisor restarts an exited replica
after 0.5 s, as the kubelet would. A kill is never skipped: when the Lease
names no live replica, the run waits for one, and fails if none appears. The
run lasts at least ``min_seconds`` and then goes on (up to ``max_seconds``)
until a reboot has outlasted its window and a blocker has been raised on a
rebooting node, so that it did what it claims to test.

Pass conditions (:meth:`ChaosResult.failures`):

* every kill was sent and each one was followed by a takeover, within its
  bound: after SIGKILL lease duration + retry period (+ slack), after SIGTERM
  about one retry period;
* **physically**: the consumer's own record of its reboots (start to
  finish) never has more than ``ceiling`` nodes rebooting at once, and no
  node lost MaintenanceInProgress while it was still rebooting;
* **the audit log** (:func:`tests.support.judges.audit.judge_ceiling`): replaying
  every write to the nodes in commit order, never more than ``ceiling``
  nodes held MaintenanceInProgress;
* **a separate watcher** agrees with the audit log's maximum and never
  relisted (a relist is a gap in its record);
* the audit log shows no node-status write by a replica while another
  replica's lease period was current, nor outside its own
  (:func:`tests.support.judges.audit.audit_check`);
* the run did what it claims: reboots happened, at least one outlasted its
  window, and at least one blocker was raised on a rebooting node.

Full form: ``python hack/chaos.py`` (30 kills, default lease timings, its own
control plane: :func:`full_form`). ``tests/e2e/test_ha.py`` runs a short form
of :func:`run_chaos` on the session's control plane.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import signal
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kumaco.core.time.durations import SECOND
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.env.auditing import audited_control_plane
from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    Api,
    NodeWatcher,
    condition_status,
    holding,
    unique,
)
from tests.support.env.supervisor import (
    ReplicaFactory,
    Supervisor,
    Timings,
    leader_of,
    replica_flags,
    wait_leader,
)
from tests.support.judges.audit import (
    UPPER_BOUND,
    WriteAudit,
    audit_check,
    judge_ceiling,
    unresolved_problems,
)
from tests.support.judges.consumer import Consumer, Reboot, max_overlap

BLOCKING = "kured.dev/RebootInhibited"


@dataclass
class Takeover:
    """One leader kill and how long the next leader took."""

    signal: str
    seconds: float


@dataclass(frozen=True)
class Settings:
    """What a chaos run is asked to do (recorded with its result)."""

    kills: int = 30
    nodes: int = 20
    ceiling: int = 2
    window_seconds: int = 20
    reboot_seconds: tuple[float, float] = (3.0, 30.0)
    min_seconds: float = 0.0  # keep the chaos going at least this long (kills may end sooner)
    # ... and, past that, until a reboot has outlasted its window and a blocker was raised on
    # a rebooting node, at most this long in all:
    max_seconds: float = 300.0
    seed: int = 5683


@dataclass
class ChaosResult(WriteAudit):
    """What a chaos run measured (the audit log's verdicts included); :meth:`failures` judges."""

    settings: Settings = field(default_factory=Settings)
    timings: Timings = field(default_factory=Timings)
    kills: int = 0
    takeovers: list[Takeover] = field(default_factory=list)
    restarts: int = 0
    seconds: float = 0.0
    max_in_progress_seen: int = 0  # the watcher's count
    watcher_relists: int = 0
    audit_max_in_progress: int = 0  # the audit log's exact count
    audit_over_ceiling: list[str] = field(default_factory=list)
    #: writes of unknown outcome the judge could not resolve and that may hide a holder
    audit_unresolved: list[str] = field(default_factory=list)
    audit_node_writes: int = 0  # every write to the run's nodes, kumaco's and the stand-ins'
    reboots: list[Reboot] = field(default_factory=list)
    max_rebooting: int = 0  # physically, from the consumer's record
    outlasted_window: int = 0
    blockers_raised: int = 0
    blockers_mid_maintenance: int = 0
    consumer_errors: list[str] = field(default_factory=list)

    def takeover_bound(self, sig: str) -> float:
        t = self.timings
        return t.lease + t.retry * 1.2 + 1.0 if sig == "SIGKILL" else t.retry * 1.2 + 1.0

    def failures(self) -> list[str]:
        """Every pass condition of the module docstring that does not hold."""
        s, out = self.settings, []
        if self.kills != s.kills:
            out.append(f"{self.kills} kills sent, {s.kills} asked")
        if len(self.takeovers) != self.kills:
            out.append(f"{len(self.takeovers)} takeovers after {self.kills} kills")
        out += [
            f"{t.signal} takeover took {t.seconds:.2f}s (bound {self.takeover_bound(t.signal)}s)"
            for t in self.takeovers
            if t.seconds > self.takeover_bound(t.signal)
        ]
        if self.max_rebooting > s.ceiling:
            out.append(f"{self.max_rebooting} nodes rebooting at once (ceiling {s.ceiling})")
        revoked = [r.node for r in self.reboots if r.revoked_while_rebooting]
        if revoked:
            out.append(f"MaintenanceInProgress revoked while rebooting: {revoked}")
        out += self.audit_over_ceiling[:5]
        out += self.audit_unresolved[:5]  # tests.support.judges.audit.assert_resolved's rule
        if self.audit_max_in_progress > s.ceiling:
            out.append(f"the audit log shows {self.audit_max_in_progress} holding at once")
        if self.watcher_relists != 1:
            out.append(f"the watcher relisted ({self.watcher_relists} LISTs): a gap")
        if self.max_in_progress_seen != self.audit_max_in_progress:
            out.append(
                f"the watcher saw at most {self.max_in_progress_seen} in progress, "
                f"the audit log {self.audit_max_in_progress}"
            )
        out += self.overlaps[:5] + self.unfenced[:5]
        if self.node_writes == 0:
            out.append("kumaco wrote no node status")
        if not any(r.finish is not None for r in self.reboots):
            out.append("no reboot finished")
        if self.outlasted_window == 0:
            out.append("no reboot outlasted its window")
        if self.blockers_mid_maintenance == 0:
            out.append("no blocker was raised on a rebooting node")
        out += self.consumer_errors[:5]
        return out

    def summary(self) -> dict[str, Any]:
        by_sig: dict[str, list[float]] = {}
        for t in self.takeovers:
            by_sig.setdefault(t.signal, []).append(t.seconds)
        done = [r for r in self.reboots if r.finish is not None]
        return {
            "settings": {**asdict(self.settings), "timings": asdict(self.timings)},
            "seconds": round(self.seconds, 1),
            "kills": self.kills,
            "takeovers": len(self.takeovers),
            "takeover_seconds": {
                s: {
                    "n": len(v),
                    "min": round(min(v), 2),
                    "median": round(statistics.median(v), 2),
                    "max": round(max(v), 2),
                    "bound": round(self.takeover_bound(s), 2),
                }
                for s, v in sorted(by_sig.items())
            },
            "replica_restarts": self.restarts,
            "max_in_progress_watcher": self.max_in_progress_seen,
            "watcher_relists": self.watcher_relists,
            "max_in_progress_audit": self.audit_max_in_progress,
            "audited_node_writes": self.audit_node_writes,
            "max_rebooting": self.max_rebooting,
            "reboots_started": len(self.reboots),
            "reboots_finished": len(done),
            "reboot_seconds": {
                "min": round(min((r.finish - r.start for r in done if r.finish), default=0), 1),
                "max": round(max((r.finish - r.start for r in done if r.finish), default=0), 1),
            },
            "reboots_outlasting_their_window": self.outlasted_window,
            "revoked_while_rebooting": sum(r.revoked_while_rebooting for r in self.reboots),
            "blockers_raised": self.blockers_raised,
            "blockers_raised_mid_maintenance": self.blockers_mid_maintenance,
            "node_status_writes": self.node_writes,
            "writes_by_replica": self.writes_by_replica,
            "overlapping_writes": len(self.overlaps),
            "unfenced_writes": len(self.unfenced),
            "failures": self.failures(),
        }


def _outlasted(window: Window, reboots: list[Reboot], until: float) -> int:
    """Reboots that started in an open window and ended (or ran on) after it closed."""
    n = 0
    for r in reboots:
        end = r.finish if r.finish is not None else until
        start_ns, end_ns = int(r.start * SECOND), int(end * SECOND)
        if any(
            i.start <= start_ns < i.end < end_ns
            for i in window.intervals(start_ns - 3600 * SECOND, end_ns)
        ):
            n += 1
    return n


def _live_leader(api: Api, sup: Supervisor, ns: str, lease: str, timeout: float) -> str:
    """The Lease's holder once it is a live replica of ``sup``; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    holder = ""
    while time.monotonic() < deadline:
        holder = leader_of(api, ns, lease)
        k = sup.by_identity(holder) if holder else None
        if k is not None and k.alive:
            return holder
        time.sleep(0.02)
    raise AssertionError(f"the Lease named no live replica within {timeout}s (last: {holder!r})")


def run_chaos(
    cp: ControlPlane,
    kubeconfig: Path,
    workdir: Path,
    audit_log: Path,
    settings: Settings | None = None,
    timings: Timings | None = None,
    log: Callable[[str], object] = print,
    kumaco_path: Path | None = None,
) -> ChaosResult:
    """Run the scenario; return what was measured (the caller asserts :meth:`~ChaosResult.failures`).

    ``kumaco_path``: a directory holding another ``kumaco`` package for the replicas to run
    (they run there, so ``python -m kumaco`` imports it first), e.g. an older commit's.
    """
    s = settings or Settings()
    timings = timings or Timings()
    rng = random.Random(s.seed)
    api = Api(cp)
    created = time.time()
    run = unique("chaos")
    ns = api.namespace(unique("chaos"))
    names = [f"{run}-{i:02d}" for i in range(s.nodes)]
    for i, name in enumerate(names):
        needs = [{"type": REQUIRED, "status": "True"}] if i % 2 == 0 else []
        api.node(name, {RUN_LABEL: run}, needs)
    window_data = {
        "startTime": "* * * * *",
        "duration": f"{s.window_seconds}s",
        "nodeSelector": "",
    }
    window = parse_window(ns, "pulse", window_data)
    assert isinstance(window, Window), window
    api.window(ns, "pulse", window_data)
    flags = [*replica_flags(run, ns, s.ceiling, timings), "--block-condition", BLOCKING]
    make = ReplicaFactory(kubeconfig, flags, workdir, run, cwd=kumaco_path)
    result = ChaosResult(settings=s, timings=timings)
    stop = threading.Event()
    blockers: list[tuple[float, str, bool]] = []  # (when, node, on a rebooting node)
    started = time.time()
    draws = random.Random(s.seed + 1)
    consumer = Consumer(api, run, lambda _node: draws.uniform(*s.reboot_seconds))

    def report() -> None:  # kured's reboot-required reporter
        r = random.Random(s.seed + 2)
        while not stop.wait(r.uniform(0.2, 1.0)):
            idle = [
                n
                for n in names
                if consumer.state.get(n, {}).get(REQUIRED) != "True"
                and consumer.state.get(n, {}).get(MIP) != "True"
            ]
            if idle:
                with contextlib.suppress(RuntimeError, OSError):
                    api.set_condition(r.choice(idle), REQUIRED, "True", reason="RebootRequired")

    def inhibit() -> None:  # an alert or a blocker pod, now and then on a rebooting node
        r = random.Random(s.seed + 3)
        clear: list[tuple[float, str]] = []
        while not stop.wait(r.uniform(1.0, 4.0)):
            now = time.monotonic()
            for due, node in [c for c in clear if c[0] <= now]:
                clear.remove((due, node))
                with contextlib.suppress(RuntimeError, OSError):
                    api.set_condition(node, BLOCKING, "False", reason="AlertResolved")
            busy = sorted(consumer.rebooting())
            node = r.choice(busy) if busy and r.random() < 0.7 else r.choice(names)
            if any(n == node for _, n in clear):
                continue
            with contextlib.suppress(RuntimeError, OSError):
                api.set_condition(node, BLOCKING, "True", reason="AlertFiring")
                blockers.append((time.time(), node, node in consumer.rebooting()))
                clear.append((now + r.uniform(2.0, 8.0), node))

    threads = [threading.Thread(target=f, daemon=True) for f in (report, inhibit)]
    sup: Supervisor | None = None
    try:
        with NodeWatcher(api, run) as watcher, consumer:
            sup = Supervisor(make, 3)
            for t in threads:
                t.start()
            _live_leader(api, sup, ns, run, 60)
            for i in range(s.kills):
                time.sleep(rng.uniform(1.0, 3.0))
                leader = _live_leader(api, sup, ns, run, timings.lease + timings.retry + 30)
                victim = sup.by_identity(leader)
                assert victim is not None
                sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
                t0 = time.monotonic()
                victim.send(sig)
                result.kills += 1
                new = wait_leader(api, ns, run, timings.lease + timings.retry + 30, not_=leader)
                took = time.monotonic() - t0
                result.takeovers.append(Takeover(sig.name, took))
                log(f"kill {i + 1}/{s.kills}: {sig.name} {leader} -> {new} in {took:.2f}s")
            while time.time() - started < s.min_seconds or (
                time.time() - started < s.max_seconds
                and not (
                    _outlasted(window, consumer.reboots, time.time())
                    and any(busy for _t, _n, busy in blockers)
                    # what failures() asks for: a reboot seen to its end, not only begun
                    and any(r.finish is not None for r in consumer.reboots)
                )
            ):
                time.sleep(0.5)
            time.sleep(2)
            stop.set()
        ended = time.time()
        result.max_in_progress_seen = watcher.max_count(
            lambda c: condition_status(c, MIP) == "True", gaps_ok=True
        )
        result.watcher_relists = watcher.relists
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        if sup is not None:
            sup.stop()
            result.restarts = sup.restarts
    result.seconds = ended - started
    result.reboots = list(consumer.reboots)
    result.consumer_errors = list(consumer.errors)
    result.max_rebooting = max_overlap(
        [(r.start, r.finish if r.finish is not None else ended) for r in result.reboots]
    )
    result.outlasted_window = _outlasted(window, result.reboots, ended)
    result.blockers_raised = len(blockers)
    result.blockers_mid_maintenance = sum(1 for _t, _n, busy in blockers if busy)
    verdict = judge_ceiling(audit_log, f"{run}-", MIP, created, holding(api, run, MIP))
    result.audit_max_in_progress = verdict.max_holding
    result.audit_over_ceiling = verdict.over(s.ceiling)
    # A revocation taken as not applied only over-counts: failures() judges the ceiling on
    # that upper bound and demands the watcher's count equal it.
    result.audit_unresolved = unresolved_problems(verdict, audit_log, UPPER_BOUND)[0]
    result.audit_node_writes = verdict.writes
    audit_check(audit_log, ns, run, f"{run}-", timings.lease, started, result)
    return result


def full_form(
    settings: Settings,
    workdir: Path,
    output: Path,
    timings: Timings | None = None,
    kumaco_path: Path | None = None,
    command: str = "python hack/chaos.py",
) -> int:
    """``python hack/chaos.py``: a run on its own audited control plane; 0 if it passed.

    Writes the summary (with the command, the date and the settings) to ``output`` and
    prints it.
    """
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    timings = timings or Timings()
    with audited_control_plane(workdir) as (cp, kubeconfig):
        result = run_chaos(
            cp, kubeconfig, workdir, cp.audit_log, settings, timings, kumaco_path=kumaco_path
        )
    summary = {
        "command": command,
        "kumaco": str(kumaco_path) if kumaco_path is not None else "this checkout",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **result.summary(),
        "overlap_examples": result.overlaps[:5],
        "unfenced_examples": result.unfenced[:5],
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if not result.failures() else 1
