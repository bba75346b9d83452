"""Smoke tests of the real-cluster fixture (tests/support/env/cluster.py): real kubelets.

Two real nodes (kubelet + containerd each, in PID, mount and network namespaces of their
own) beside the test control plane, kube-controller-manager and kube-scheduler. What a
cluster must do before kumaco's deployment is judged on it: both nodes Ready at addresses
that exist only in the fixture's namespaces; a Deployment with a readiness probe Ready on
each node, its pods reaching the API server at the ``kubernetes`` Service's address and each
other across nodes; a hostPID pod seeing its node's PID 1 (the fixture's process, never the
machine's init). (The kubelet's back-off of a container that exits is shown on kumaco's own
exit 3: tests/e2e/test_cluster_lifecycle.py.) kumaco installed as a deployer
does, under Pod Security ``restricted``: the HA overlay with ``kubectl
apply --server-side -k``, then, the kustomize install deleted, the Helm chart with ``helm
install``, each judged the same way (every replica Running and Ready, one Lease holder at
a time, its PodDisruptionBudget counted, no 403, ``kubectl kumaco status``). README.md's
steps on ``hack/cluster.sh`` run as written (a cluster of their own): ``up``, the deployer's
overlay, ``down``, after which no process, mount, cgroup, namespace, directory or kernel
tunable is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.env.cluster import (
    HUB_ADDR,
    SERVICE_IP,
    Cluster,
    Trace,
    audited_cluster,
    cluster_pids,
    leftovers,
    node_addr,
)
from tests.support.env.clusterdeploy import NAMESPACE, install_kumaco, kumaco_pods
from tests.support.env.clusterimage import ensure_node_image
from tests.support.env.harness import until
from tests.support.env.helm import ensure_helm
from tests.support.env.image import REPO, build_image
from tests.support.judges.audit import forbidden, lease_writes, two_holders_at_once

pytestmark = pytest.mark.real_server("the real cluster's kube-apiserver runs in its fixture")
VENV_BIN = Path(sys.executable).parent
PSA = [f"pod-security.kubernetes.io/{m}" for m in ("enforce", "warn", "audit")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with audited_cluster(tmp_path_factory.mktemp("cluster-logs")) as c:
        yield c


def apply(cluster: Cluster, manifest: dict[str, Any]) -> None:
    proc = subprocess.run(
        ["kubectl", f"--kubeconfig={cluster.kubeconfig()}", "apply", "-f", "-"],
        input=json.dumps(manifest),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def pod(name: str, command: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "c", "image": ensure_node_image()[0], "command": ["sh", "-c", command]}
            ],
            **spec,
        },
    }


def test_both_real_nodes_ready_at_addresses_only_the_fixture_has(cluster: Cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in cluster.get_json("/api/v1/nodes")["items"]}
    assert sorted(nodes) == ["kumaco-real-1", "kumaco-real-2"]
    for i, name in enumerate(sorted(nodes), 1):
        status = nodes[name]["status"]
        ready = {c["type"]: c["status"] for c in status["conditions"]}
        assert ready["Ready"] == "True", status["conditions"]
        assert status["nodeInfo"]["kubeletVersion"] == "v1.37.2"
        assert status["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://1.6")
        internal = [a["address"] for a in status["addresses"] if a["type"] == "InternalIP"]
        assert internal == [node_addr(i)]
    # None of the cluster's addresses exists in the machine's own network namespace.
    mine = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    for addr in (HUB_ADDR, SERVICE_IP, node_addr(1), node_addr(2), "10.244."):
        assert f" {addr}" not in mine, mine


def test_a_deployment_with_a_readiness_probe_is_ready_on_each_node(cluster: Cluster) -> None:
    image = ensure_node_image()[0]
    apply(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "kubernetes.io/hostname",
                                "whenUnsatisfiable": "DoNotSchedule",
                                "labelSelector": {"matchLabels": {"app": "web"}},
                            }
                        ],
                        "containers": [
                            {
                                "name": "web",
                                "image": image,
                                "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
                                "readinessProbe": {
                                    "httpGet": {"path": "/index.html", "port": 8080},
                                    "periodSeconds": 1,
                                },
                            }
                        ],
                    },
                },
            },
        },
    )
    t0 = time.monotonic()

    def ready_pods() -> list[dict[str, Any]]:
        pods = cluster.get_json("/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")["items"]
        ok = [
            p
            for p in pods
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
        ]
        return ok if len(ok) == 2 else []

    pods = until(ready_pods, 120, "both replicas Ready")
    print(f"Deployment Ready on both nodes in {time.monotonic() - t0:.1f}s")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["kumaco-real-1", "kumaco-real-2"]
    # A pod reaches the API server at the kubernetes Service (no kube-proxy: the hub's
    # forwarder), and the other node's pod directly (the hub routes the pod networks).
    first, other = pods
    script = (
        'echo | nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" && echo api-ok; '
        f"wget -qO- http://{other['status']['podIP']}:8080/index.html"
    )
    out = cluster.kubectl("exec", first["metadata"]["name"], "--", "sh", "-c", script)
    assert out.split() == ["api-ok", "ok"], out


def test_a_host_pid_pod_sees_its_node_pid_1_not_the_machine_init(cluster: Cluster) -> None:
    node = cluster.real[0]
    apply(
        cluster,
        pod(
            "hostpid",
            "tr '\\0' ' ' < /proc/1/cmdline; echo; sleep 3600",
            hostPID=True,
            nodeName=node.name,
        ),
    )

    def logged() -> str:
        proc = subprocess.run(
            ["kubectl", f"--kubeconfig={cluster.kubeconfig()}", "logs", "hostpid"],
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.stdout.strip() if proc.returncode == 0 else ""

    seen = until(logged, 120, "the hostPID pod's output")
    expected = Path(f"/proc/{node.pid1}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert seen == expected.strip(), (seen, expected)
    assert "tests.support.env.cluster_node" in seen and str(node.dir) in seen
    machine_init = Path("/proc/1/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    assert seen != machine_init


def judge_kumaco(cluster: Cluster, namespace: str, replicas: int, ref: str, since: float) -> str:
    """kumaco as docs/deploy.md describes it running in ``namespace``: the namespace enforces
    Pod Security ``restricted``; every replica (``ref``) Running and Ready, spread over both
    nodes; one Lease holder at any time since ``since`` (the audit log's Lease writes); its
    PodDisruptionBudget counted by the disruption controller; no 403 for its ServiceAccount;
    ``kubectl kumaco status`` from the machine names the leader. Returns the leader."""
    labels = cluster.get_json(f"/api/v1/namespaces/{namespace}")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    pods = kumaco_pods(cluster, namespace)
    assert len(pods) == replicas
    for p in pods:
        assert p["status"]["phase"] == "Running", p["status"]
        ready = {c["type"]: c["status"] for c in p["status"]["conditions"]}
        assert ready["Ready"] == "True", p["status"]["conditions"]
        assert p["spec"]["containers"][0]["image"] == ref
    assert {p["spec"]["nodeName"] for p in pods} == {"kumaco-real-1", "kumaco-real-2"}
    names = {p["metadata"]["name"] for p in pods}
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/kumaco"

    def holder() -> str:
        return str(cluster.get_json(lease)["spec"].get("holderIdentity") or "")

    leader: str = until(holder, 60, "a Lease holder")
    assert leader.rsplit("_", 1)[0] in names  # POD_NAME_<a suffix per process>
    # Exactly one holder at any time: a new holder's first write comes after the previous
    # holder's lease expired or was released (a replica restarted under load may take over).
    assert cluster.cp is not None
    writes = lease_writes(cluster.cp.audit_log, since, namespace=namespace)
    assert writes, "kumaco wrote its Lease"
    assert two_holders_at_once(writes) == []
    pdb_path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/kumaco"
    assert cluster.get_json(pdb_path)["spec"]["maxUnavailable"] == 1

    def counted() -> dict[str, Any] | None:
        status: dict[str, Any] = cluster.get_json(pdb_path).get("status", {})
        return status if status.get("currentHealthy") == replicas else None

    status = until(counted, 60, f"the disruption controller counting {replicas} healthy replicas")
    assert status["expectedPods"] == replicas and status["disruptionsAllowed"] == 1
    user = f"system:serviceaccount:{namespace}:kumaco"
    assert forbidden(cluster.cp.audit_log, user, since) == []
    # `kubectl kumaco status` from the machine: the plugin reads the Deployment and the Lease.
    plugin = Path(sys.executable).with_name("kubectl-kumaco")
    proc = subprocess.run(
        [str(plugin), "status", f"--deployment={namespace}/kumaco"],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig())},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"LEADER (Lease {namespace}/kumaco): {leader}" in proc.stdout, proc.stdout
    assert "nodes in scope: 2" in proc.stdout, proc.stdout
    return leader


def test_kumaco_installed_as_a_deployer_does_runs_ha_under_restricted(
    cluster: Cluster, tmp_path: Path
) -> None:
    """docs/deploy.md's steps on real kubelets: the image of hack/image.sh imported into the
    nodes (no registry), a deployer's overlay -- the delegated layout, components/ha, the
    image through ``images:`` -- applied with ``kubectl apply --server-side -k``."""
    since = time.time()
    t0 = time.monotonic()
    ref = install_kumaco(cluster, tmp_path)
    print(f"kumaco imported, applied and its 3 replicas rolled out in {time.monotonic() - t0:.1f}s")
    judge_kumaco(cluster, NAMESPACE, 3, ref, since)


HELM_NAMESPACE = "kumaco-helm"
#: helm install's --timeout: past it (the Deployment not available), helm and the test fail.
HELM_WAIT_SECONDS = 120


def helm(cluster: Cluster, *args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        [str(ensure_helm()), "--kubeconfig", str(cluster.kubeconfig()), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_kumaco_installed_with_helm_runs_under_restricted(cluster: Cluster) -> None:
    """docs/deploy.md "With Helm" on real kubelets, as a deployer moving from kustomize to
    the chart does it: the kustomize install deleted first (the chart's cluster-scoped RBAC
    has the same names, and two instances would write the same node conditions), the
    release's namespace created and labelled ``restricted`` as the document says, and
    ``helm install --wait`` of charts/kumaco (its defaults: 2 replicas, windows in the
    release's namespace) with ``image.repository``/``image.tag`` naming hack/image.sh's
    image imported into the nodes. Judged as the kustomize install; uninstalled at the end."""
    t0 = time.monotonic()
    cluster.kubectl(
        "delete",
        "-k",
        str(REPO / "kustomize" / "overlays" / "delegated"),
        "--ignore-not-found",
        "--timeout=120s",
        timeout=150,
    )
    deleted = time.monotonic() - t0
    since = time.time()
    t0 = time.monotonic()
    ref, _, _ = build_image()  # imported by the kustomize install, unless this test runs alone
    if any(ref not in node.ctr("images", "ls", "-q").split() for node in cluster.real):
        cluster.import_podman_image(ref)
    imported = time.monotonic() - t0
    repository, tag = ref.rsplit(":", 1)
    cluster.kubectl("create", "namespace", HELM_NAMESPACE)
    cluster.kubectl("label", "namespace", HELM_NAMESPACE, *(f"{k}=restricted" for k in PSA))
    try:
        t0 = time.monotonic()
        helm(
            cluster,
            "install",
            "kumaco",
            str(REPO / "charts" / "kumaco"),
            "-n",
            HELM_NAMESPACE,
            f"--set=image.repository={repository}",
            f"--set-string=image.tag={tag}",
            "--wait",
            f"--timeout={HELM_WAIT_SECONDS}s",
        )
        print(
            f"kustomize install deleted in {deleted:.1f}s, image ready in {imported:.1f}s, "
            f"helm install --wait returned in {time.monotonic() - t0:.1f}s"
        )
        judge_kumaco(cluster, HELM_NAMESPACE, 2, ref, since)
    finally:
        helm(
            cluster,
            "uninstall",
            "kumaco",
            "-n",
            HELM_NAMESPACE,
            "--ignore-not-found",
            "--wait",
            "--timeout=120s",
        )
        cluster.kubectl("delete", "namespace", HELM_NAMESPACE, "--wait=false")


README = REPO / "README.md"
DOWN = "hack/cluster.sh down"


def readme_steps() -> tuple[str, str]:
    """The shell block after ``<!-- real-cluster -->`` in README.md, split before its line
    ``hack/cluster.sh down``: (up to the deploy, down)."""
    m = re.search(r"<!-- real-cluster -->\n```sh\n(.*?)```\n", README.read_text(), re.S)
    assert m, "README.md has no real-cluster block"
    before, down, after = m.group(1).partition(f"\n{DOWN}")
    assert down and "hack/cluster.sh up --kubeconfig" in before.split("\n", 1)[0], m.group(1)
    assert "\n" not in after.strip(), "nothing after down"
    return before + "\n", down.strip() + after


def test_the_readme_steps_on_hack_cluster_sh_and_down_leaves_nothing(tmp_path: Path) -> None:
    """README.md's steps on a real local cluster, run as written: ``hack/cluster.sh up``
    (a cluster of its own, its run directory in ``tmp_path``), the deployer's overlay naming
    the image ``up`` printed, ``kubectl apply --server-side -k``, the rollout and ``kubectl
    kumaco status``; kumaco's pods running on each node, their root filesystems mounted and
    their cgroups made; then ``hack/cluster.sh down``: nothing is left (no process, mount,
    cgroup, namespace, directory or kernel tunable), and ``hack/cluster.sh check`` agrees."""
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUMACO_CLUSTER_RUN=str(run_dir), PATH=f"{VENV_BIN}{os.pathsep}{env['PATH']}")

    def sh(script: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    steps, down_step = readme_steps()
    t0 = time.monotonic()
    kubeconfig: Path | None = None
    try:
        up = sh(steps, 900)
        print(f"the README's steps, up to kubectl kumaco status, took {time.monotonic() - t0:.1f}s")
        assert up.returncode == 0, up.stderr[-4000:]
        state = json.loads((run_dir / "state.json").read_text())
        kubeconfig = Path(state["kubeconfig"])
        assert "LEADER (Lease kumaco-system/kumaco): kumaco-" in up.stdout, up.stdout
        assert "nodes in scope: 2" in up.stdout, up.stdout
        trace = Trace.from_json(state["trace"])
        get_pods = ["kubectl", f"--kubeconfig={kubeconfig}", "-n", NAMESPACE, "get", "pods"]
        listed = subprocess.run(
            [*get_pods, "-o", "json"], capture_output=True, text=True, check=True
        )
        pods = json.loads(listed.stdout)["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        assert sorted(p["spec"]["nodeName"] for p in running) == ["kumaco-real-1", "kumaco-real-2"]
        assert all(p["spec"]["containers"][0]["image"] == state["image"] for p in running)
        pids = cluster_pids(trace)
        assert len(pids) >= 13  # control plane, nodes, shims, containers
        mounts = []
        for pid in pids:  # the nodes' PID 1s: the containers' mounts are in their namespaces
            with contextlib.suppress(OSError):
                if b"tests.support.env.cluster_node" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    text = Path(f"/proc/{pid}/mountinfo").read_text()
                    mounts += [m for m in text.splitlines() if "overlay" in m]
        assert mounts, "the containers' root filesystems are mounted in the nodes"
        cgroups = [
            p for name in trace.cgroups for p in Path("/sys/fs/cgroup/memory", name).rglob("*")
        ]
        assert cgroups, "the pods' cgroups exist"
    finally:
        t1 = time.monotonic()
        down = sh(down_step, 300)
        print(f"hack/cluster.sh down took {time.monotonic() - t1:.1f}s")
        if kubeconfig is not None and kubeconfig.parent.name.startswith("tmp."):
            shutil.rmtree(kubeconfig.parent)  # the README's mktemp -d
    assert down.returncode == 0, down.stderr[-4000:]
    trace = Trace.from_json(json.loads((run_dir / "trace.json").read_text()))
    assert leftovers(trace) == []
    check = sh("hack/cluster.sh check", 60)
    assert check.returncode == 0, check.stderr
