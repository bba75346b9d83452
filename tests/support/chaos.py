"""Leader-kill chaos for kumaco's HA, on the real test control plane, judged by the audit log.

Three replicas run against a kube-apiserver with auditing on; 20 nodes have
their ``kured.dev/RebootRequired`` condition flapping at random, a window is
open for all of them, and the ceiling is 2. The leader (read from the Lease)
is killed again and again, alternating SIGKILL and SIGTERM; a supervisor
restarts an exited replica after a short delay, as the kubelet would. A
separate watcher samples every node change.

Pass conditions:

* the watcher never sees more than ``ceiling`` nodes with
  MaintenanceInProgress=True at once;
* the audit log shows no node-status write by a replica while another
  replica's lease period was current (periods rebuilt from the Lease writes
  in the same audit log: each acquire/renew at time r makes its holder
  current until r + leaseDurationSeconds, a release ends it);
* every takeover is within the bounds: after SIGKILL within lease duration +
  retry period (+ slack), after SIGTERM within about one retry period.

Full form: ``python hack/chaos.py`` (30 kills, default lease timings, starts
its own control plane: :func:`full_form`). ``tests/e2e/test_ha.py`` runs a
shorter form of :func:`run_chaos` on the session's control plane.
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

from tests.support.audit import WriteAudit, audit_check, audited_control_plane
from tests.support.controlplane import ControlPlane
from tests.support.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    Api,
    NodeWatcher,
    condition_status,
    unique,
)
from tests.support.supervisor import ReplicaFactory, Supervisor, Timings, replica_flags, wait_leader


@dataclass
class Takeover:
    """One leader kill and how long the next leader took."""

    signal: str
    seconds: float


@dataclass
class ChaosResult(WriteAudit):
    """What a chaos run measured (the audit log's verdict included); the caller asserts."""

    kills: int = 0
    takeovers: list[Takeover] = field(default_factory=list)
    max_in_progress_seen: int = 0
    restarts: int = 0

    def summary(self) -> dict[str, Any]:
        by_sig: dict[str, list[float]] = {}
        for t in self.takeovers:
            by_sig.setdefault(t.signal, []).append(t.seconds)
        return {
            "kills": self.kills,
            "takeover_seconds": {
                s: {
                    "n": len(v),
                    "min": round(min(v), 2),
                    "median": round(statistics.median(v), 2),
                    "max": round(max(v), 2),
                }
                for s, v in by_sig.items()
            },
            "max_in_progress_seen": self.max_in_progress_seen,
            "node_status_writes": self.node_writes,
            "writes_by_replica": self.writes_by_replica,
            "overlapping_writes": len(self.overlaps),
            "unfenced_writes": len(self.unfenced),
            "replica_restarts": self.restarts,
        }


def run_chaos(
    cp: ControlPlane,
    kubeconfig: Path,
    workdir: Path,
    audit_log: Path,
    *,
    kills: int = 30,
    nodes: int = 20,
    ceiling: int = 2,
    timings: Timings | None = None,
    seed: int = 5683,
    log: Callable[[str], object] = print,
) -> ChaosResult:
    """Run the scenario; return what was measured (assertions are the caller's)."""
    timings = timings or Timings()
    rng = random.Random(seed)
    api = Api(cp)
    run = unique("chaos")
    ns = api.namespace(unique("chaos"))
    names = [f"{run}-{i:02d}" for i in range(nodes)]
    for name in names:
        api.node(name, {RUN_LABEL: run})
    api.window(ns, "always", {"startTime": "* * * * *", "duration": "2m", "nodeSelector": ""})
    make = ReplicaFactory(kubeconfig, replica_flags(run, ns, ceiling, timings), workdir, run)
    started = time.time()
    stop_flap = threading.Event()

    def flap() -> None:  # kured's reboot-required reporter, sped up
        while not stop_flap.wait(rng.uniform(0.05, 0.3)):
            with contextlib.suppress(RuntimeError, OSError):
                api.set_condition(
                    rng.choice(names), REQUIRED, rng.choice(["True", "True", "False"])
                )

    result = ChaosResult(kills=kills)
    sup = Supervisor(make, 3)
    flapper = threading.Thread(target=flap, daemon=True)
    try:
        with NodeWatcher(api, run) as watcher:
            flapper.start()
            leader = wait_leader(api, ns, run, 60)
            for i in range(kills):
                time.sleep(rng.uniform(1.0, 3.0))
                leader = wait_leader(api, ns, run, 60)
                victim = sup.by_identity(leader)
                if victim is None:
                    continue
                sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
                t0 = time.monotonic()
                victim.send(sig)
                new = wait_leader(api, ns, run, timings.lease + timings.retry + 30, not_=leader)
                took = time.monotonic() - t0
                result.takeovers.append(Takeover(sig.name, took))
                log(f"kill {i + 1}/{kills}: {sig.name} {leader} -> {new} in {took:.2f}s")
            time.sleep(2)
            stop_flap.set()
        result.max_in_progress_seen = watcher.max_count(
            lambda c: condition_status(c, MIP) == "True"
        )
    finally:
        stop_flap.set()
        sup.stop()
        result.restarts = sup.restarts
    audit_check(audit_log, ns, run, f"{run}-", timings.lease, started, result)
    return result


def full_form(*, kills: int, nodes: int, ceiling: int, workdir: Path, output: Path) -> int:
    """``python hack/chaos.py``: a run on its own audited control plane; 0 if it passed.

    Writes the summary to ``output`` and prints it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    timings = Timings()
    with audited_control_plane(workdir) as (cp, kubeconfig):
        result = run_chaos(
            cp,
            kubeconfig,
            workdir,
            cp.audit_log,
            kills=kills,
            nodes=nodes,
            ceiling=ceiling,
            timings=timings,
        )
    summary = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "timings": asdict(timings),
        **result.summary(),
        "overlap_examples": result.overlaps[:5],
        "unfenced_examples": result.unfenced[:5],
    }
    output.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    ok = not result.overlaps and not result.unfenced and result.max_in_progress_seen <= ceiling
    return 0 if ok else 1
