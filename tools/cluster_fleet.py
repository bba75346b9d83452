"""kumaco's pods over a kwok fleet on the real cluster: their memory against the base's limit.

Contract. :func:`fleet_run` takes a started :class:`~tests.support.env.cluster.Cluster` (two
real nodes) and, in this order: starts kwok for the fleet, registers ``nodes`` tainted fleet
Nodes and waits until kwok renews a Lease for each
(:mod:`tests.support.env.clusterfleet`); creates the ``maintenance`` namespace and in it one
window open now for ``window_seconds`` with an empty ``nodeSelector`` (every node: the leader
must write ``UnderMaintenance=True`` on all ``nodes + 2``) -- before kumaco starts, since a
change of the windows makes the leader exit 3 by design; installs kumaco as a deployer does
(the delegated overlay, ``components/ha``: three replicas on the two real nodes) with the
memory ``request``/``limit`` given (a patch of the base's, when they differ from it); then
samples each replica's container cgroup (:class:`~tests.support.env.clusterfleet.MemorySampler`)
until every node is ``UnderMaintenance=True`` and for ``hold`` seconds more (the heartbeats'
churn meanwhile). It yields the :class:`FleetRun`; on leaving, the sampler has read the
kernel's counters and :meth:`FleetRun.record` gives the figures: per replica the container's
high-water mark (``memory.max_usage_in_bytes``, its whole life), peak sampled working set and
RSS, ``memory.failcnt`` and OOM kills, the leader (the Lease's holder) apart, and the pods'
``restartCount`` and last termination reasons as the kubelet reports them. ``oom`` is
``"none"`` unless a container was OOM-killed or restarted.

``python hack/cluster_fleet.py --nodes 5000`` is the long form (a record in
docs/cluster-fleet.json); tests/e2e/test_cluster_fleet.py the short one.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.cluster import Cluster
from tests.support.env.clusterdeploy import NAMESPACE, install_kumaco, kumaco_pods
from tests.support.env.clusterfleet import (
    ContainerMemory,
    MemorySampler,
    container_cgroup,
    restarts,
    seed_fleet,
    start_fleet_kwok,
    under_maintenance,
)
from tests.support.env.controlplane import log
from tests.support.env.harness import Api
from tests.support.env.kured import window_open_for

WINDOWS_NS = "maintenance"  # the delegated overlay's
#: The base's memory request and limit (kustomize/base/deployment.yaml).
BASE_RESOURCES = ("128Mi", "256Mi")
#: docs/deploy.md's table: fleet size -> (memory request, memory limit).
DOCUMENTED = {5000: ("128Mi", "256Mi"), 20000: ("256Mi", "384Mi"), 50000: ("384Mi", "512Mi")}


def resources_patch(request: str, limit: str) -> str:
    """Kustomization text patching the Deployment's memory request and limit (empty: the base's)."""
    if (request, limit) == BASE_RESOURCES:
        return ""
    return (
        "patches:\n  - target: {kind: Deployment, name: kumaco}\n    patch: |-\n"
        "      - op: replace\n"
        "        path: /spec/template/spec/containers/0/resources/requests/memory\n"
        f"        value: {request}\n"
        "      - op: replace\n"
        "        path: /spec/template/spec/containers/0/resources/limits/memory\n"
        f"        value: {limit}\n"
    )


@dataclass
class FleetRun:
    """What :func:`fleet_run` set up and measured."""

    cluster: Cluster
    nodes: int
    request: str
    limit: str
    pods: list[dict[str, Any]] = field(default_factory=list)
    leader: str = ""
    memory: list[ContainerMemory] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    under_maintenance: tuple[int, int] = (0, 0)
    pods_after: list[dict[str, Any]] = field(default_factory=list)
    sampler_errors: list[str] = field(default_factory=list)

    def verdicts(self) -> dict[str, list[tuple[str, int, str]]]:
        """Each pod's containers' (name, restartCount, last termination reason), read after."""
        return {p["metadata"]["name"]: restarts(p) for p in self.pods_after}

    def oom(self) -> list[str]:
        """Every OOM kill or restart seen; [] when none."""
        found = [
            f"{pod}/{name}: restartCount {count}, last termination {reason or '-'}"
            for pod, states in self.verdicts().items()
            for name, count, reason in states
            if count or reason
        ]
        found += [
            f"{m.pod}: {m.oom_kills} OOM kills in its cgroup" for m in self.memory if m.oom_kills
        ]
        before = {p["metadata"]["uid"] for p in self.pods}
        after = {p["metadata"]["uid"] for p in self.pods_after}
        if before != after:
            found.append(f"the pods changed: {sorted(before ^ after)}")
        return found

    def record(self) -> dict[str, Any]:
        leader = next(m for m in self.memory if m.pod == self.leader)
        followers = [m for m in self.memory if m.pod != self.leader]
        oom = self.oom()
        return {
            "nodes": self.nodes + len(self.cluster.real),
            "fleet_nodes": self.nodes,
            "real_nodes": len(self.cluster.real),
            "replicas": len(self.memory),
            "pod_nodes": sorted({p["spec"]["nodeName"] for p in self.pods_after}),
            "memory_request": self.request,
            "memory_limit": self.limit,
            "limit_mib": leader.limit_mib,
            "leader": leader.as_record(),
            "followers": [f.as_record() for f in followers],
            "follower_max_usage_mib": round(max(f.max_usage_mib for f in followers), 1),
            "follower_peak_working_set_mib": round(
                max(f.peak_working_set_mib for f in followers), 1
            ),
            "under_maintenance": self.under_maintenance[0],
            "oom": oom or "none",
            "restarts": sum(c for states in self.verdicts().values() for _, c, _ in states),
            **{k: round(v, 1) for k, v in self.timings.items()},
        }


def _holder(api: Api) -> str:
    lease = api.lease(NAMESPACE, "kumaco") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "").rsplit("_", 1)[0]


def _wait(check: Any, timeout: float, what: str, period: float = 2.0) -> float:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not after {timeout:.0f}s")
        time.sleep(period)
    return time.monotonic() - t0


@contextlib.contextmanager
def fleet_run(
    cluster: Cluster,
    workdir: Path,
    nodes: int,
    *,
    request: str = BASE_RESOURCES[0],
    limit: str = BASE_RESOURCES[1],
    hold: float = 60.0,
    window_seconds: float = 7200.0,
) -> Iterator[FleetRun]:
    """The fleet, the window, kumaco installed and measured (see the module contract)."""
    cp = cluster.cp
    assert cp is not None
    api = Api(cp)
    run = FleetRun(cluster, nodes, request, limit)
    kwok = start_fleet_kwok(cluster, workdir / "kwok")
    try:
        run.timings["seed_seconds"] = seed_fleet(cp, nodes)
        log(f"fleet: {nodes} nodes registered in {run.timings['seed_seconds']:.1f}s")
        total = nodes + len(cluster.real)
        run.timings["kwok_takeover_seconds"] = kwok.wait_leases(total, 120 + nodes / 25)
        api.namespace(WINDOWS_NS)
        api.window(WINDOWS_NS, "fleet", window_open_for(window_seconds))
        t0 = time.monotonic()
        install_kumaco(
            cluster, workdir, extra=resources_patch(request, limit), timeout=240 + nodes / 50
        )
        run.timings["rollout_seconds"] = time.monotonic() - t0
        run.pods = kumaco_pods(cluster)
        _wait(lambda: _holder(api), 120, "a Lease holder")
        run.leader = _holder(api)
        run.memory = [
            ContainerMemory(p["metadata"]["name"], container_cgroup(cluster, p)) for p in run.pods
        ]
        with MemorySampler(run.memory) as sampler:

            def all_under() -> bool:
                run.under_maintenance = under_maintenance(cp)
                return run.under_maintenance[0] >= total

            run.timings["all_under_maintenance_seconds"] = (
                _wait(all_under, 300 + nodes / 10, f"UnderMaintenance=True on {total} nodes", 5.0)
                + run.timings["rollout_seconds"]
            )
            log(f"UnderMaintenance=True on all {total} nodes; holding {hold:.0f}s")
            time.sleep(hold)
            run.timings["hold_seconds"] = hold
            run.under_maintenance = under_maintenance(cp)
            run.sampler_errors = sampler.errors
        run.pods_after = kumaco_pods(cluster)
        yield run
    finally:
        kwok.stop()


def commit(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()


def keep(record_path: Path, run: dict[str, Any], program: str) -> dict[str, Any]:
    """Add ``run`` to the record file (replacing a run of the same size); the whole record."""
    doc: dict[str, Any] = {"program": program, "runs": []}
    if record_path.exists():
        doc = json.loads(record_path.read_text())
    doc["runs"] = sorted(
        [r for r in doc.get("runs", []) if r["fleet_nodes"] != run["fleet_nodes"]] + [run],
        key=lambda r: int(r["fleet_nodes"]),
    )
    record_path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc
