"""kured v2's agents as pods on real kubelets, rebooting real nodes one at a time.

The real cluster of ``tests/support/env/cluster.py`` (two real nodes, each kubelet +
containerd under the fixture's own PID 1 in PID, mount and network namespaces of its own),
audited with ``KURED_AUDIT_POLICY``. The prototype's agents from a local image
(``tests/support/env/kuredpods.py``) imported into both nodes: the detector and the
reboot-daemon (hostPID, ``--reboot-method=signal``) as DaemonSets, the inhibitors as a
Deployment, bound to the RBAC of the prototype's own manifests. kumaco is installed as
docs/deploy.md tells a kured v2 user: hack/image.sh's image imported into the nodes and
``kustomize/overlays/kured`` (the agents' condition names, ``--max-in-progress 1``,
``--count-released-unavailable 30m``; two replicas, one per node) applied with ``kubectl apply
--server-side -k`` -- so each drain also evicts a kumaco replica, through kumaco's own
PodDisruptionBudget, and the maintenance survives its leader moving. A workload Deployment of two replicas spread over both nodes
(``DoNotSchedule``) has a PodDisruptionBudget ``minAvailable: 1``; its readiness probe
waits 15 s, so that the second node's drain meets the budget while the first node's
replacement replica is not yet Ready: the daemon must wait for it through the eviction API.

Judged from the fixture's reboot log (every SIGRTMIN+5 a node's PID 1 handled), the audit
log (kumaco's in-progress holders, the nodes cordoned or not Ready, the evictions and the
agents' and kumaco's refused requests) and a watcher of the workload's Ready replicas:
each real node rebooted exactly once, never both at once, NotReady then Ready with the new
bootID and its agents' pods back, the budget never broken, both nodes schedulable again and
kumaco's two replicas Ready at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.env.cluster import Cluster, audited_cluster, leftovers
from tests.support.env.clusterdeploy import install_kumaco
from tests.support.env.harness import Api, wait_for
from tests.support.env.kured import (
    IN_PROGRESS,
    INHIBITED,
    REBOOT_REQUIRED,
    UNSCHEDULABLE_ANNOTATION,
    ensure_kured,
    kured_audit_args,
    window_open_for,
)
from tests.support.env.kuredpods import (
    AGENT_LABEL,
    PROGRAMS,
    agent_manifests,
    ensure_kured_image,
    max_rebooting,
    node_reboots,
    write_sentinel,
)
from tests.support.judges.audit import forbidden, judge_ceiling, read_audit_log
from tests.support.judges.figures import Figures
from tests.support.judges.kured import judge_disruption

pytestmark = pytest.mark.real_server("the real cluster's kube-apiserver runs in its fixture")

AGENTS_NS = "kured"
KUMACO_NS = "kumaco-system"  # kustomize/overlays/kured (single-namespace)
KUMACO_SA = f"system:serviceaccount:{KUMACO_NS}:kumaco"
WORKLOAD_NS = "shop"
# Measured 48 s from the window to both settled on a quiet machine; room for a loaded one.
SETTLE_TIMEOUT = 420
READINESS_DELAY = 15  # seconds: the replacement replica is unready while the next drain starts


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("cluster-kured-logs")
    with audited_cluster(logs, kured_audit_args(logs / "audit")) as c:
        yield c
    # The reboots' containers, mounts and cgroups went with the cluster. (A namespace freed
    # by the stop may give its inode number to one another test makes at once -- seen: a
    # simulated machine of test_kured_v2 "in the cluster's mnt ns"; leftovers() skips a
    # process that started after the stop, see Trace.stopping_since.)
    assert leftovers(c.trace) == []


def _epoch(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def get(api: Api, path: str) -> dict[str, Any]:
    return dict(api.request("GET", path))


def apply(cluster: Cluster, docs: list[dict[str, Any]]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    proc = subprocess.run(
        ["kubectl", f"--kubeconfig={cluster.kubeconfig()}", "apply", "-f", "-"],
        input=body,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def ready(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions", [])
    )


def workload(image: str) -> list[dict[str, Any]]:
    labels = {"app": "web"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOAD_NS}},
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": WORKLOAD_NS},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": WORKLOAD_NS},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "kubernetes.io/hostname",
                                "whenUnsatisfiable": "DoNotSchedule",
                                "labelSelector": {"matchLabels": labels},
                            }
                        ],
                        "containers": [
                            {
                                "name": "web",
                                "image": image,
                                "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
                                "readinessProbe": {
                                    "httpGet": {"path": "/index.html", "port": 8080},
                                    "initialDelaySeconds": READINESS_DELAY,
                                    "periodSeconds": 1,
                                },
                            }
                        ],
                    },
                },
            },
        },
    ]


class ReadyWatcher:
    """Polls the workload's pods every 0.25 s: the fewest Ready (and not terminating) seen."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pods = get(self.api, f"/api/v1/namespaces/{WORKLOAD_NS}/pods?labelSelector=app%3Dweb")
            self.samples.append((time.time(), sum(ready(p) for p in pods["items"])))
            self._stop.wait(0.25)

    def __enter__(self) -> ReadyWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def test_kured_v2_pods_reboot_each_real_node_once_within_the_budget(
    cluster: Cluster, tmp_path: Path, figures: Figures
) -> None:
    t_start = time.time()
    api = Api(cluster.cp)  # type: ignore[arg-type]
    assert cluster.cp is not None
    bin_dir = ensure_kured()
    image, archive = ensure_kured_image(bin_dir)
    t0 = time.monotonic()
    for node in cluster.real:
        node.import_image(archive)
    imported = time.monotonic() - t0
    names = [n.name for n in cluster.real]
    boot0 = {n: get(api, f"/api/v1/nodes/{n}")["status"]["nodeInfo"]["bootID"] for n in names}
    first = node_reboots(cluster)
    assert {e["node"]: e["boot_id"] for e in first.of("boot")} == boot0, "the fixture's boot IDs"
    assert len(set(boot0.values())) == 2
    for node in cluster.real:
        write_sentinel(node)

    apply(cluster, agent_manifests(bin_dir, image, AGENTS_NS))
    apply(cluster, workload(cluster.image_ref))

    def agents_ready() -> bool:
        pods = get(api, f"/api/v1/namespaces/{AGENTS_NS}/pods")["items"]
        per = [
            (p["metadata"]["labels"].get(AGENT_LABEL), p["spec"].get("nodeName"))
            for p in pods
            if ready(p)
        ]
        daemonsets = {(a, n) for a, n in per if a != "reboot-inhibitors"}
        return len(daemonsets) == 4 and any(a == "reboot-inhibitors" for a, _ in per)

    t0 = time.monotonic()
    wait_for(agents_ready, 180, 0.5, "the agents' pods Ready on both nodes")
    agents_up = time.monotonic() - t0

    def web_ready() -> list[dict[str, Any]]:
        pods = get(api, f"/api/v1/namespaces/{WORKLOAD_NS}/pods?labelSelector=app%3Dweb")["items"]
        ok = [p for p in pods if ready(p)]
        return ok if len(ok) == 2 else []

    pods = wait_for(web_ready, 120, 0.5, "both web replicas Ready")
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(names)

    def agents_restarted() -> list[str]:
        """The DaemonSets' pods not Ready or not running since their node's last boot."""
        log = node_reboots(cluster)
        wrong = []
        for p in get(api, f"/api/v1/namespaces/{AGENTS_NS}/pods")["items"]:
            if p["metadata"]["labels"].get(AGENT_LABEL) == "reboot-inhibitors":
                continue
            ups = log.of("up", p["spec"]["nodeName"])
            statuses = p["status"].get("containerStatuses") or [{}]
            started = (statuses[0].get("state", {}).get("running") or {}).get("startedAt")
            if not ready(p) or not ups or not started or _epoch(started) < int(ups[-1]["time"]):
                wrong.append(f"{p['metadata']['name']} started {started}")
        return wrong

    def conditions(n: str) -> dict[str, dict[str, Any]]:
        node = get(api, f"/api/v1/nodes/{n}")
        return {c["type"]: c for c in node["status"].get("conditions", [])}

    wait_for(
        lambda: all(
            (conditions(n).get(REBOOT_REQUIRED) or {}).get("status") == "True"
            and INHIBITED in conditions(n)
            for n in names
        ),
        60,
        0.5,
        "the detector's reboot-required=True and the inhibitors' report on both nodes",
    )

    t0 = time.monotonic()
    install_kumaco(cluster, tmp_path, resources=("overlays/kured",), components=())
    kumaco_up = time.monotonic() - t0
    since = time.time()
    api.window(KUMACO_NS, "w", window_open_for(600))
    try:
        with ReadyWatcher(api) as watcher:

            def settled() -> bool:
                log = node_reboots(cluster)
                loop = {n: len(log.of("reboot", n)) for n in names}
                assert max(loop.values()) <= 1, f"a reboot loop: {loop}"
                if any(len(log.of("up", n)) < 1 for n in names):
                    return False
                for n in names:
                    node = get(api, f"/api/v1/nodes/{n}")
                    conds = {c["type"]: c for c in node["status"].get("conditions", [])}
                    up = log.of("up", n)[-1]
                    req = conds.get(REBOOT_REQUIRED) or {}
                    if (
                        (conds.get("Ready") or {}).get("status") != "True"
                        or node["status"]["nodeInfo"]["bootID"] != up["boot_id"]
                        or node["spec"].get("unschedulable")
                        or (conds.get(IN_PROGRESS) or {}).get("status") == "True"
                        or req.get("status") != "False"
                    ):
                        return False
                return bool(web_ready()) and agents_ready() and not agents_restarted()

            wait_for(
                settled, SETTLE_TIMEOUT, 1.0, "both nodes rebooted, back, uncordoned and settled"
            )
            total = time.time() - since
            time.sleep(6)  # two detector periods: no further reboot
    finally:
        print(cluster.kubectl("-n", KUMACO_NS, "get", "pods", "-o", "wide", check=False))
    # kumaco itself, drained off each node in turn, is back: both replicas Ready.
    cluster.kubectl(
        "-n", KUMACO_NS, "rollout", "status", "deployment/kumaco", "--timeout=120s", timeout=140
    )
    log = node_reboots(cluster)
    reboots = {n: len(log.of("reboot", n)) for n in names}
    assert reboots == dict.fromkeys(names, 1), reboots
    assert max_rebooting(log) == 1
    # Each node came back with the new boot ID, which its Node reports; the sentinel gone.
    # down_s: the signal to the kubelet's start again (the fixture's reboot).
    durations = {}
    for n in names:
        (r,) = log.of("reboot", n)
        (up,) = log.of("up", n)
        assert r["old_boot_id"] == boot0[n] and up["boot_id"] == r["new_boot_id"] != boot0[n]
        assert up["sentinel"] is False
        obj = get(api, f"/api/v1/nodes/{n}")
        assert obj["status"]["nodeInfo"]["bootID"] == r["new_boot_id"]
        assert not obj["spec"].get("unschedulable"), obj["spec"]
        assert UNSCHEDULABLE_ANNOTATION not in obj["metadata"].get("annotations", {})
        durations[n] = round(up["time"] - r["time"], 2)
    # Its agents' pods back: each DaemonSet pod's container started after its node's boot.
    assert agents_restarted() == [], agents_restarted()
    # From the audit log, in commit order: one in progress at a time, one node disrupted
    # (cordoned or not Ready) at a time, and each node NotReady then Ready with its new boot.
    audit = cluster.cp.audit_log
    ceiling = judge_ceiling(audit, "kumaco-real-", IN_PROGRESS, since)
    assert ceiling.max_holding == 1, ceiling
    disruption = judge_disruption(audit, "kumaco-real-", since)
    assert disruption.max_disrupted == 1, disruption
    back_ready: dict[str, float] = {}
    for n in names:
        states = [
            (
                {c["type"]: c["status"] for c in ev.response_object["status"]["conditions"]}.get(
                    "Ready"
                ),
                ev.response_object["status"]["nodeInfo"]["bootID"],
                ev.received,
            )
            for ev in read_audit_log(audit, since, contains=n)
            if ev.complete
            and ev.resource == "nodes"
            and ev.name == n
            and ev.code < 300
            and ev.response_object.get("kind") == "Node"
        ]
        new_boot = log.of("reboot", n)[0]["new_boot_id"]
        not_ready = [i for i, (r, _b, _t) in enumerate(states) if r != "True"]
        assert not_ready, f"{n} never NotReady in the audit log"
        back = [t for r, b, t in states[not_ready[0] :] if (r, b) == ("True", new_boot)]
        assert back, states
        back_ready[n] = round(back[0] - log.of("reboot", n)[0]["time"], 2)
        # The kubelet itself saw the reboot: its Rebooted event names the new boot ID.
        events = get(
            api, f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{n}"
        )["items"]
        rebooted = [e for e in events if e["reason"] == "Rebooted"]
        assert rebooted and new_boot in rebooted[-1]["message"], [e["reason"] for e in events]
    # The budget: never fewer than minAvailable Ready, and the drains went through the
    # eviction API (the second one refused at least once while the replacement was unready).
    assert len(watcher.samples) > 10, watcher.samples
    fewest = min(c for _t, c in watcher.samples)
    assert fewest >= 1, [s for s in watcher.samples if s[1] < 1][:5]
    daemon = f"system:serviceaccount:{AGENTS_NS}:reboot-daemon"
    evictions = [
        ev
        for ev in read_audit_log(audit, since, contains="eviction")
        if ev.complete
        and ev.subresource == "eviction"
        and ev.namespace == WORKLOAD_NS
        and ev.user == daemon
    ]
    granted = [ev for ev in evictions if ev.code < 300]
    refused = [ev for ev in evictions if ev.code == 429]
    assert len(granted) == 2, [(ev.name, ev.code) for ev in evictions]
    assert refused, "the budget never held a drain back"
    deletes = [
        ev
        for ev in read_audit_log(audit, since, contains=WORKLOAD_NS)
        if ev.complete
        and ev.resource == "pods"
        and ev.verb == "delete"
        and ev.user == daemon
        and not ev.subresource
    ]
    assert deletes == [], "the daemon deleted a pod instead of evicting it"
    for sa in PROGRAMS:
        assert forbidden(audit, f"system:serviceaccount:{AGENTS_NS}:{sa}", since) == []
    assert forbidden(audit, KUMACO_SA, since) == []
    # kumaco's own replicas were drained through the eviction API too (its budget).
    kumaco_evicted = [
        ev
        for ev in read_audit_log(audit, since, contains="eviction")
        if ev.complete
        and ev.subresource == "eviction"
        and ev.namespace == KUMACO_NS
        and ev.user == daemon
        and ev.code < 300
    ]
    assert kumaco_evicted, "no kumaco replica was on a drained node"
    holders = {
        ev.response_object.get("spec", {}).get("holderIdentity")
        for ev in read_audit_log(audit, since, contains="leases")
        if ev.resource == "leases"
        and ev.namespace == KUMACO_NS
        and ev.name == "kumaco"
        and ev.verb in ("create", "update", "patch")
        and ev.complete
        and ev.code < 300
    }
    figures.record(
        "cluster_kured",
        down_s=sorted(durations.values()),
        back_ready_s=sorted(back_ready.values()),
        total_s=round(total, 1),
        image_import_s=round(imported, 1),
        agents_ready_s=round(agents_up, 1),
        evictions_refused=len(refused),
        fewest_ready=fewest,
        whole_test_s=round(time.time() - t_start, 1),
        kumaco_install_s=round(kumaco_up, 1),
        kumaco_evictions=len(kumaco_evicted),
        lease_holders=len(holders - {None, ""}),
    )
    print(
        f"reboots: down {durations} s, Ready with the new boot {back_ready} s, total {total:.1f} s, import {imported:.1f} s, "
        f"agents Ready {agents_up:.1f} s, evictions refused {len(refused)}, kumaco installed "
        f"in {kumaco_up:.1f} s, its replicas evicted {len(kumaco_evicted)}, "
        f"Lease holders {len(holders - {None, ''})}"
    )
