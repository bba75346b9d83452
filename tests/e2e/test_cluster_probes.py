"""kumaco's probes on real kubelets, and a leader whose API server connection goes dead.

Contract. One real cluster (two nodes, an audit log) with kumaco installed as a deployer
does (the delegated overlay + ``components/ha``: three replicas). What the Deployment's
probes ask and what each answer makes the kubelet do, on the real kubelet:

* ``/healthz`` (liveness: every 10 s, 3 failures -> the kubelet kills the container) is
  false only when the controller loop has not turned for ``RESYNC_SECONDS + 60`` s or
  the election loop for ``lease duration + 2 x retry period`` (19 s): a stuck process.
  A dead connection does not make it fail: every Lease request is bounded, so the
  election loop keeps turning.
* ``/readyz`` (readiness: every 5 s) is false until the node and window caches have
  been listed once, and never false again in that process.

The fault: the packets between the LEADER's pod (and, at the same time, one follower's)
and the API server silently dropped
(``iptables -j DROP`` in the FORWARD chain of its node's network namespace, both ways, by
the pod's address: no RST, no ICMP -- a half-open connection, as a dead link or a
firewall makes one; the kubelet's probes, from the node itself, still reach the pod).
What is judged: the leader's renewals time out, it stops acting at its renew deadline and
exits 4 (``leadership lost``); another replica takes the Lease once it expired (exactly
one holder at any time, from the audit log); the kubelet restarts the container (exit 4,
not a liveness kill); the new process cannot list, so ``/readyz`` answers 503 and the pod
is NotReady while ``/healthz`` answers 200 and the kubelet never kills it; once the fault
is healed the pod is Ready again by itself, restarted exactly once. The cut-off follower
stays Ready and alive throughout (neither probe sees a dead connection) and, once healed,
reads the Lease again by itself (it logs the new leader). No 403. The times (takeover,
exit, Ready again, the follower's first Lease read) are recorded as figures
``cluster_probes``.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.env.cluster import SERVICE_IP, Cluster, RealNode, audited_cluster
from tests.support.env.clusterdeploy import NAMESPACE, install_kumaco, kumaco_pods
from tests.support.env.harness import until
from tests.support.judges.audit import forbidden, lease_writes, two_holders_at_once
from tests.support.judges.figures import Figures

pytestmark = pytest.mark.real_server("the real cluster's kube-apiserver runs in its fixture")

KUMACO_SA = f"system:serviceaccount:{NAMESPACE}:kumaco"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/kumaco"
#: The base Deployment's lease timings (kumaco's defaults): duration, renew deadline, retry.
LEASE_S, RENEW_S, RETRY_S = 15.0, 10.0, 2.0
#: How long the fault is kept after the restart: past three liveness periods (3 x 10 s after
#: the 5 s initial delay), so that a liveness kill would have come.
HOLD_AFTER_RESTART_S = 40.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with audited_cluster(tmp_path_factory.mktemp("cluster-logs")) as c:
        yield c


@pytest.fixture(scope="module")
def installed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> float:
    """kumaco installed (delegated overlay + components/ha); returns when it was applied."""
    since = time.time()
    install_kumaco(cluster, tmp_path_factory.mktemp("deploy"))
    return since


def probe(node: RealNode, ip: str, path: str) -> int:
    """The status of ``GET http://IP:8081/PATH`` from the node's own network namespace, as
    the kubelet sends its probes (0: no answer within 3 s, the probes' timeout)."""
    code = (
        "import sys, urllib.request, urllib.error\n"
        "try:\n"
        f"    print(urllib.request.urlopen('http://{ip}:8081{path}', timeout=3).status)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
        "except OSError:\n"
        "    print(0)\n"
    )
    out = subprocess.run(
        ["nsenter", f"--net={node.netns()}", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return int(out.strip())


def blackhole(node: RealNode, pod_ip: str, on: bool) -> None:
    """Drop (or stop dropping) every packet between ``pod_ip`` and the API server's address,
    both ways, in the FORWARD chain of the pod's node (the pod's traffic to the hub)."""
    for rule in (["-s", pod_ip, "-d", SERVICE_IP], ["-s", SERVICE_IP, "-d", pod_ip]):
        command = ["iptables", "-I" if on else "-D", "FORWARD", *rule, "-j", "DROP"]
        subprocess.run(
            ["nsenter", f"--net={node.netns()}", *command],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )


def holder(cluster: Cluster) -> str:
    return str(cluster.get_json(LEASE)["spec"].get("holderIdentity") or "")


def ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )


def the_pod(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get_json(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def restarts(pod: dict[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses", []))


def test_the_probes_are_the_documented_ones_and_answer_on_every_replica(
    cluster: Cluster, installed: float
) -> None:
    """The rendered probes (docs/deploy.md "The base"), and each replica's answers as the
    kubelet gets them: 200 and 200 on a synced replica, leader or not."""
    deployment = cluster.get_json(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/kumaco")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    live, ready_probe = container["livenessProbe"], container["readinessProbe"]
    assert live["httpGet"] == {"path": "/healthz", "port": "health", "scheme": "HTTP"}
    assert (live["periodSeconds"], live["failureThreshold"], live["timeoutSeconds"]) == (10, 3, 3)
    assert live["initialDelaySeconds"] == 5
    assert ready_probe["httpGet"] == {"path": "/readyz", "port": "health", "scheme": "HTTP"}
    assert (ready_probe["periodSeconds"], ready_probe["failureThreshold"]) == (5, 3)
    nodes = {n.name: n for n in cluster.real}
    pods = kumaco_pods(cluster)
    assert len(pods) == 3
    for p in pods:
        node, ip = nodes[p["spec"]["nodeName"]], p["status"]["podIP"]
        assert probe(node, ip, "/healthz") == 200
        assert probe(node, ip, "/readyz") == 200
        assert probe(node, ip, "/livez") == 200
        assert probe(node, ip, "/nothing") == 404


def log_lines(cluster: Cluster, pod: str) -> list[dict[str, Any]]:
    """The JSON lines of ``pod``'s running container."""
    out = cluster.kubectl("-n", NAMESPACE, "logs", pod)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_leader_cut_from_the_api_server_hands_over_and_recovers(
    cluster: Cluster, installed: float, figures: Figures
) -> None:
    """The leader and one follower cut off at once (the third replica must take over);
    the leader exits and is restarted, NotReady until the heal; the follower stays Ready
    and alive, blind, and reads the Lease again by itself after the heal."""
    assert cluster.cp is not None
    leader = until(lambda: holder(cluster), 60, "a Lease holder")
    name = leader.rsplit("_", 1)[0]  # POD_NAME_<a suffix per process>
    pods = {p["metadata"]["name"]: p for p in kumaco_pods(cluster)}
    assert len(pods) == 3 and name in pods
    for p in pods.values():
        assert ready(p), p["status"]
    # Restarts counted from here (a replica may have restarted during the install).
    before = {n: restarts(p) for n, p in pods.items()}
    follower, spare = sorted(set(pods) - {name})
    nodes = {n.name: n for n in cluster.real}
    node, ip = nodes[pods[name]["spec"]["nodeName"]], pods[name]["status"]["podIP"]
    f_node, f_ip = nodes[pods[follower]["spec"]["nodeName"]], pods[follower]["status"]["podIP"]

    t_fault = time.time()
    blackhole(node, ip, on=True)
    blackhole(f_node, f_ip, on=True)
    print(f"fault: leader {name} ({ip} on {node.name}), follower {follower} ({f_ip})")

    # The Lease moves to the one replica left; the faulted leader exits and is restarted.
    new = until(
        lambda: (h := holder(cluster)) and h != leader and h, 120, "another replica's Lease"
    )
    t_takeover_seen = time.time()
    assert new.rsplit("_", 1)[0] == spare, (new, leader)

    def restarted() -> dict[str, Any] | None:
        p = the_pod(cluster, name)
        return p if restarts(p) > before[name] else None

    pod = until(restarted, 120, "the kubelet restarting the faulted leader")
    t_restart_seen = time.time()
    (status,) = pod["status"]["containerStatuses"]
    done = status["lastState"]["terminated"]
    assert done["exitCode"] == 4, done  # leadership lost (kumaco's own exit), not a kill
    previous = cluster.kubectl("-n", NAMESPACE, "logs", name, "--previous")
    assert "leadership lost" in previous, previous[-2000:]

    # While the fault lasts the new process cannot list: unready, yet alive. The follower,
    # synced before the fault, stays Ready and alive: neither probe sees a dead connection.
    pod = until(lambda: (p := the_pod(cluster, name)) and not ready(p) and p, 60, "NotReady")
    t_unready_seen = time.time()
    assert probe(node, ip, "/readyz") == 503
    assert probe(node, ip, "/healthz") == 200
    while time.time() < t_restart_seen + HOLD_AFTER_RESTART_S:
        time.sleep(2)
        pod, f_pod = the_pod(cluster, name), the_pod(cluster, follower)
        assert restarts(pod) == before[name] + 1, pod["status"]  # no liveness kill
        assert not ready(pod), pod["status"]
        assert restarts(f_pod) == before[follower] and ready(f_pod), f_pod["status"]
    assert (probe(node, ip, "/healthz"), probe(node, ip, "/readyz")) == (200, 503)
    assert (probe(f_node, f_ip, "/healthz"), probe(f_node, f_ip, "/readyz")) == (200, 200)

    blackhole(node, ip, on=False)
    blackhole(f_node, f_ip, on=False)
    t_heal = time.time()
    pod = until(lambda: (p := the_pod(cluster, name)) and ready(p) and p, 180, "Ready again")
    t_ready_again = time.time()
    assert restarts(pod) == before[name] + 1, pod["status"]
    assert probe(node, ip, "/readyz") == 200

    # The follower reads the Lease again by itself: it logs the new leader, after the heal
    # (it could not before: every request of its was dropped).
    def follower_saw_new_leader() -> float | None:
        seen = [
            line["time"]
            for line in log_lines(cluster, follower)
            if line.get("msg") == "leader observed" and line.get("leader") == new
        ]
        return _stamp(seen[0]) if seen else None

    f_seen = until(follower_saw_new_leader, 90, "the follower observing the new leader")
    assert f_seen > t_heal - 1, (f_seen, t_heal)
    assert restarts(the_pod(cluster, follower)) == before[follower]

    # The audit log: the faulted leader's last renew came before the fault, the takeover
    # only after its lease ran out, one holder at any time, and no 403.
    time.sleep(2)  # the audit log's last lines
    writes = lease_writes(cluster.cp.audit_log, installed)
    assert two_holders_at_once(writes) == []
    holders = [
        (ev.received, str(ev.response_object["spec"].get("holderIdentity") or "")) for ev in writes
    ]
    old = [t for t, h in holders if h == leader]
    assert old and max(old) < t_fault + 1, "the cut-off leader renewed after the fault"
    takeover = min(t for t, h in holders if h == new)
    assert takeover >= max(old) + LEASE_S - 1, (takeover, max(old))
    assert forbidden(cluster.cp.audit_log, KUMACO_SA, installed) == []
    # Fencing: the cut-off leader's process had ended (it stops writing at its renew
    # deadline, before that) when the new holder first wrote (finishedAt: whole seconds).
    exited = _stamp(done["finishedAt"])
    assert exited < takeover, (exited, takeover)

    measured = {
        "takeover_after_fault_s": round(takeover - t_fault, 1),
        "takeover_after_last_renew_s": round(takeover - max(old), 1),
        "exit_after_fault_s": round(exited - t_fault, 1),
        "exit_after_last_renew_s": round(exited - max(old), 1),
        "not_ready_seen_after_fault_s": round(t_unready_seen - t_fault, 1),
        "fault_s": round(t_heal - t_fault, 1),
        "ready_after_heal_s": round(t_ready_again - t_heal, 1),
        "follower_reads_lease_after_heal_s": round(f_seen - t_heal, 1),
        "restart_count": restarts(pod) - before[name],
        "follower_restart_count": restarts(the_pod(cluster, follower)) - before[follower],
        "exit_code": done["exitCode"],
    }
    print(f"measured: {json.dumps(measured)}")
    print(
        f"(takeover seen {t_takeover_seen - t_fault:.1f}s, restart seen "
        f"{t_restart_seen - t_fault:.1f}s after the fault)"
    )
    figures.record("cluster_probes", **measured)
    # Generous bounds (a loaded machine): the takeover comes within a lease duration and a
    # few retry periods of the last renew; the faulted leader is Ready, and the follower has
    # read the Lease, within 120 s of the heal.
    assert takeover - max(old) < LEASE_S + 30, measured
    assert t_ready_again - t_heal < 120, measured
    assert f_seen - t_heal < 120, measured


def _stamp(text: str) -> float:
    """An RFC 3339 UTC time (``...Z``) as a Unix time."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
