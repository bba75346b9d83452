#!/usr/bin/env python3
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
its own control plane). ``tests/e2e/test_ha.py`` runs a shorter form.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import random
import signal
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.controlplane import ControlPlane, ensure_assets
from tests.support.harness import MIP, RUN_LABEL, Api, Kumaco, NodeWatcher, condition_status, unique

REQUIRED = "kured.dev/RebootRequired"

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch"]
    resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
  - level: Metadata
    verbs: ["patch", "update", "create"]
    resources: [{group: "", resources: ["nodes/status"]}]
  - level: None
"""


@dataclass(frozen=True)
class Timings:
    """Lease timings given to the replicas (seconds)."""

    lease: float = 15.0
    renew: float = 10.0
    retry: float = 2.0

    def flags(self) -> list[str]:
        return [
            "--leader-elect-lease-duration",
            f"{self.lease}s",
            "--leader-elect-renew-deadline",
            f"{self.renew}s",
            "--leader-elect-retry-period",
            f"{self.retry}s",
        ]


@dataclass
class Takeover:
    """One leader kill and how long the next leader took."""

    signal: str
    seconds: float


@dataclass
class ChaosResult:
    """What a chaos run measured; the caller asserts."""

    kills: int
    takeovers: list[Takeover] = field(default_factory=list)
    max_in_progress_seen: int = 0
    node_writes: int = 0
    writes_by_replica: dict[str, int] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)
    unfenced: list[str] = field(default_factory=list)
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


class Supervisor:
    """Keeps ``n`` replicas running; restarts an exited one after ``delay`` (as the kubelet)."""

    def __init__(self, make: Any, n: int, delay: float = 0.5) -> None:
        self.make = make
        self.delay = delay
        self.replicas: dict[str, Kumaco] = {}
        self.restarts = 0
        self._stop = threading.Event()
        for i in range(n):
            name = f"r{i}"
            self.replicas[name] = make(name).start()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            for name, k in list(self.replicas.items()):
                if not k.alive:
                    time.sleep(self.delay)
                    if self._stop.is_set():
                        return
                    self.replicas[name] = self.make(name).start()
                    self.restarts += 1

    def by_identity(self, identity: str) -> Kumaco | None:
        for k in self.replicas.values():
            if identity.startswith(k.env.get("POD_NAME", "\0") + "_"):
                return k
        return None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for k in self.replicas.values():
            with contextlib.suppress(AssertionError):
                k.stop(signal.SIGTERM, timeout=20)


def scope_flags(run: str, ns: str) -> list[str]:
    """``kumaco run`` flags that scope a test's replicas: its namespace, Lease and nodes."""
    return [
        "--namespaces",
        ns,
        "--leader-election-namespace",
        ns,
        "--leader-election-id",
        run,
        "--node-selector",
        f"{RUN_LABEL}={run}",
    ]


def replica_flags(run: str, ns: str, ceiling: int, timings: Timings) -> list[str]:
    """:func:`scope_flags`, a ceiling on MaintenanceInProgress and the Lease timings."""
    return [
        *scope_flags(run, ns),
        "--max-in-progress",
        str(ceiling),
        "--require-condition",
        REQUIRED,
        *timings.flags(),
    ]


def _ts(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def audit_check(
    audit_log: Path,
    lease_ns: str,
    lease_name: str,
    node_prefix: str,
    lease_seconds: float,
    since: float,
    result: ChaosResult,
) -> None:
    """Rebuild the lease periods from the audit log and check each kumaco node-status write."""
    periods: dict[str, list[list[float]]] = {}  # identity -> [[start, end], ...]
    writes: list[tuple[str, float, float, str]] = []
    for line in audit_log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            ev = json.loads(line)
            if ev.get("stage") != "ResponseComplete" or _ts(ev["requestReceivedTimestamp"]) < since:
                continue
            ref = ev.get("objectRef") or {}
            code = (ev.get("responseStatus") or {}).get("code", 0)
            if code >= 300:
                continue
            received, done = _ts(ev["requestReceivedTimestamp"]), _ts(ev["stageTimestamp"])
            ua = ev.get("userAgent", "")
            if (
                ref.get("resource") == "leases"
                and ref.get("name") == lease_name
                and ref.get("namespace") == lease_ns
            ):
                spec = (ev.get("requestObject") or {}).get("spec") or {}
                holder = spec.get("holderIdentity") or ""
                writer = ua[ua.find("(") + 1 : ua.rfind(")")] if "(" in ua else ""
                if holder:
                    duration = float(spec.get("leaseDurationSeconds") or lease_seconds)
                    periods.setdefault(holder, []).append([received, received + duration])
                elif writer in periods:  # a release ends the writer's current period
                    for p in periods[writer]:
                        p[1] = min(p[1], received) if p[0] <= received else p[1]
            elif (
                ref.get("resource") == "nodes"
                and ref.get("subresource") == "status"
                and str(ref.get("name", "")).startswith(node_prefix)
                and ua.startswith("kumaco/")
            ):
                identity = ua[ua.find("(") + 1 : ua.rfind(")")]
                writes.append((identity, received, done, ref["name"]))
    result.node_writes = len(writes)
    for identity, received, done, node in writes:
        result.writes_by_replica[identity] = result.writes_by_replica.get(identity, 0) + 1
        for other, spans in periods.items():
            if other == identity:
                continue
            for start, end in spans:
                if start < done and received < end:
                    held = f"[{start:.3f}, {end:.3f})"
                    result.overlaps.append(
                        f"{identity} wrote {node} at {received:.3f} while {other} held {held}"
                    )
        own = periods.get(identity, [])
        if not any(start <= received and done < end for start, end in own):
            result.unfenced.append(
                f"{identity} wrote {node} at {received:.3f} outside its own lease period"
            )


def leader_of(api: Api, ns: str, name: str) -> str:
    lease = api.lease(ns, name)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


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
    log: Any = print,
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
    flags = replica_flags(run, ns, ceiling, timings)
    started = time.time()
    counter = [0]

    def make(name: str) -> Kumaco:
        counter[0] += 1
        return Kumaco(
            kubeconfig,
            flags,
            workdir / f"{name}-{counter[0]}.log",
            {"POD_NAME": f"{run}-{name}"},
            name=name,
        )

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
            leader = _wait_leader(api, ns, run, 60)
            for i in range(kills):
                time.sleep(rng.uniform(1.0, 3.0))
                leader = _wait_leader(api, ns, run, 60)
                victim = sup.by_identity(leader)
                if victim is None:
                    continue
                sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
                t0 = time.monotonic()
                victim.send(sig)
                new = _wait_leader(api, ns, run, timings.lease + timings.retry + 30, not_=leader)
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


def _wait_leader(api: Api, ns: str, name: str, timeout: float, not_: str | None = None) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = leader_of(api, ns, name)
        if holder and holder != not_:
            return holder
        time.sleep(0.02)
    raise AssertionError(f"no new leader within {timeout}s (previous: {not_})")


@contextlib.contextmanager
def audited_control_plane(workdir: Path) -> Iterator[tuple[ControlPlane, Path, Path]]:
    policy = workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit = workdir / "audit.log"
    cp = ControlPlane(
        ensure_assets(),
        log_dir=workdir,
        apiserver_args={"audit-policy-file": str(policy), "audit-log-path": str(audit)},
    )
    cp.start()
    kubeconfig = workdir / "admin.kubeconfig"
    cp.write_kubeconfig(kubeconfig)
    try:
        yield cp, kubeconfig, audit
    finally:
        cp.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--ceiling", type=int, default=2)
    p.add_argument("--workdir", type=Path, default=Path("artifacts/chaos"))
    p.add_argument("--output", type=Path, default=Path("artifacts/chaos/result.json"))
    args = p.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    timings = Timings()
    with audited_control_plane(args.workdir) as (cp, kubeconfig, audit):
        result = run_chaos(
            cp,
            kubeconfig,
            args.workdir,
            audit,
            kills=args.kills,
            nodes=args.nodes,
            ceiling=args.ceiling,
            timings=timings,
        )
    summary = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "timings": timings.__dict__,
        **result.summary(),
        "overlap_examples": result.overlaps[:5],
        "unfenced_examples": result.unfenced[:5],
    }
    args.output.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    ok = not result.overlaps and not result.unfenced and result.max_in_progress_seen <= args.ceiling
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
