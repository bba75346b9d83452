"""A kwok fleet around the real cluster, and kumaco's pods' memory as the kubelet's cgroups hold it.

Contract. The real cluster of :mod:`tests.support.env.cluster` has two real nodes; this module
adds ``count`` simulated ones and reads what kumaco's containers use:

* :func:`start_fleet_kwok` starts kwok (:class:`tests.support.env.kwok.Kwok`) against the real
  cluster's API server, scoped to the nodes carrying :data:`FLEET_LABEL` (the real nodes do
  not: the real kubelets keep them), renewing each node Lease every ``lease_seconds / 4``
  (:data:`LEASE_SECONDS`: every 30 s, inside kube-controller-manager's 50 s
  ``--node-monitor-grace-period``, so the node lifecycle controller keeps the fleet Ready at a
  quarter of the kubelet's 10 s renewal traffic) and reporting status every 5 minutes (the
  kubelet's ``nodeStatusReportFrequency``: the heartbeats are the fleet's status churn);
* :func:`seed_fleet` registers the nodes as :func:`~tests.support.env.controlplane.seed_nodes`
  does (``node-NNNNN``, a kubelet's labels, conditions and ~50 images, heartbeats spread over
  the last status period) with kwok's own taint :data:`FLEET_TAINT` (``NoSchedule``): the
  scheduler never binds a pod to a simulated node (kumaco's Deployment tolerates no taint, and
  its hard spread constraint has ``nodeTaintsPolicy: Honor``, so the fleet does not count
  there either);
* :func:`container_cgroup` finds a running container's memory cgroup (cgroup v1) under its
  node's ``cgroupRoot`` (``kubepods[/<qos>]/pod<uid>/<container id>``, the ``cgroupfs``
  driver's layout); :class:`MemorySampler` samples every given container's cgroup in a thread
  and keeps, per container, the kernel's high-water mark (``memory.max_usage_in_bytes``: page
  cache included, what the limit is enforced on), the peak working set it sampled (usage less
  inactive file pages: what the kubelet reports and evicts on), the peak RSS, ``memory.failcnt``
  (charges that hit the limit) and the OOM kills of ``memory.oom_control``;
* :func:`restarts` reads the pod's verdict as the kubelet reports it: each container's
  ``restartCount`` and the reason of its last termination (``OOMKilled``, ``Error``...);
* :func:`under_maintenance` counts the nodes whose ``kured.dev/UnderMaintenance`` is ``True``.

Nothing here starts kumaco: :func:`tests.support.env.clusterdeploy.install_kumaco` does.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kumaco.core.planning.policy import UNDER_MAINTENANCE
from tests.support.env.cluster import CGROUP_FS, Cluster
from tests.support.env.controlplane import ControlPlane, seed_nodes
from tests.support.env.kwok import Kwok, KwokSettings

#: A label every fleet node carries and no real node does (node_object's pool label).
FLEET_LABEL = "kumaco.test/pool"
#: kwok's own taint for its nodes: nothing is scheduled there.
FLEET_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
#: Node Lease duration of the fleet (renewed every quarter: 30 s, within the 50 s grace).
LEASE_SECONDS = 120
#: The kubelet's status report period for an unchanged node (the heartbeat churn).
STATUS_PERIOD = 300.0
MIB = 1024 * 1024


def fleet_node_name(i: int) -> str:
    return f"node-{i:05d}"


def start_fleet_kwok(
    cluster: Cluster, workdir: Path, *, status_period: float = STATUS_PERIOD
) -> Kwok:
    """kwok against the real cluster's API server, playing the fleet's kubelets only."""
    assert cluster.cp is not None
    settings = KwokSettings(
        status_period=status_period, lease_seconds=LEASE_SECONDS, scope=FLEET_LABEL
    )
    return Kwok(cluster.cp, workdir, settings).start()


def seed_fleet(
    cp: ControlPlane, count: int, *, workers: int = 8, heartbeat_spread: float = STATUS_PERIOD
) -> float:
    """Register ``count`` tainted fleet Nodes (see the contract); the seconds it took."""
    return seed_nodes(cp, count, workers, heartbeat_spread=heartbeat_spread, taints=[FLEET_TAINT])


def list_nodes(cp: ControlPlane) -> list[dict[str, Any]]:
    """Every Node, listed in pages of 1,000 (a fleet's list is large: ~50 images a node)."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        path = "/api/v1/nodes?limit=1000" + (f"&continue={token}" if token else "")
        status, body = cp.get(path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
        doc = json.loads(body)
        items += doc["items"]
        token = (doc.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


def under_maintenance(cp: ControlPlane, condition: str = UNDER_MAINTENANCE) -> tuple[int, int]:
    """(nodes whose ``condition`` is True, nodes in all)."""
    nodes = list_nodes(cp)
    on = sum(
        any(c["type"] == condition and c["status"] == "True" for c in n["status"]["conditions"])
        for n in nodes
    )
    return on, len(nodes)


def container_cgroup(cluster: Cluster, pod: dict[str, Any], container: str = "kumaco") -> Path:
    """The memory cgroup (v1) of ``pod``'s running ``container`` on its real node."""
    node = next(n for n in cluster.real if n.name == pod["spec"]["nodeName"])
    cid: str = next(
        s["containerID"].split("://", 1)[1]
        for s in pod["status"]["containerStatuses"]
        if s["name"] == container
    )
    uid = pod["metadata"]["uid"]
    root = CGROUP_FS / "memory" / node.cgroup_root
    for qos in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
        path = root / qos / f"pod{uid}" / cid
        if path.is_dir():
            return path
    raise RuntimeError(f"no memory cgroup for {pod['metadata']['name']}/{container} under {root}")


def _read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def _stat(path: Path) -> dict[str, int]:
    out = {}
    for line in (path / "memory.stat").read_text().splitlines():
        key, value = line.split()
        out[key] = int(value)
    return out


def oom_kills(path: Path) -> int:
    """The ``oom_kill`` count of ``memory.oom_control`` (0 when the kernel keeps none)."""
    for line in (path / "memory.oom_control").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


@dataclass
class ContainerMemory:
    """One container's memory, as its cgroup holds it (MiB)."""

    pod: str
    cgroup: Path
    limit_mib: float = 0.0
    peak_working_set_mib: float = 0.0
    peak_rss_mib: float = 0.0
    max_usage_mib: float = 0.0
    failcnt: int = 0
    oom_kills: int = 0
    samples: int = 0

    def sample(self) -> None:
        usage = _read_int(self.cgroup / "memory.usage_in_bytes")
        stat = _stat(self.cgroup)
        working = usage - stat.get("total_inactive_file", 0)
        rss = stat.get("total_rss", 0) + stat.get("total_rss_huge", 0)
        self.peak_working_set_mib = max(self.peak_working_set_mib, working / MIB)
        self.peak_rss_mib = max(self.peak_rss_mib, rss / MIB)
        self.samples += 1

    def finish(self) -> None:
        """Read the kernel's own counters (the high-water mark, failures, OOM kills)."""
        self.limit_mib = _read_int(self.cgroup / "memory.limit_in_bytes") / MIB
        self.max_usage_mib = _read_int(self.cgroup / "memory.max_usage_in_bytes") / MIB
        self.failcnt = _read_int(self.cgroup / "memory.failcnt")
        self.oom_kills = oom_kills(self.cgroup)

    def as_record(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "limit_mib": round(self.limit_mib, 1),
            "max_usage_mib": round(self.max_usage_mib, 1),
            "peak_working_set_mib": round(self.peak_working_set_mib, 1),
            "peak_rss_mib": round(self.peak_rss_mib, 1),
            "failcnt": self.failcnt,
            "oom_kills": self.oom_kills,
            "samples": self.samples,
        }


@dataclass
class MemorySampler:
    """Samples each container's cgroup every ``period`` seconds in a thread (see the contract)."""

    containers: list[ContainerMemory]
    period: float = 1.0
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cgroup-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for c in self.containers:
                try:
                    c.sample()
                except OSError as exc:  # the container went: its restart is judged elsewhere
                    self.errors.append(f"{c.pod}: {exc}")
            self._stop.wait(self.period)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for c in self.containers:
            with contextlib.suppress(OSError):
                c.finish()


def restarts(pod: dict[str, Any]) -> list[tuple[str, int, str]]:
    """Each container's (name, restartCount, reason of its last termination or "")."""
    return [
        (
            s["name"],
            int(s.get("restartCount", 0)),
            str(((s.get("lastState") or {}).get("terminated") or {}).get("reason") or ""),
        )
        for s in pod["status"].get("containerStatuses", [])
    ]
