"""docs/deploy.md's quick start, run as written against the real kube-apiserver.

The quick start's shell blocks are read from docs/deploy.md (each follows a
``<!-- quickstart: NAME -->`` marker) and run with ``bash -euo pipefail`` exactly as
written, in a directory where ``kumaco`` holds this checkout's manifests, with this
checkout's console scripts first on ``PATH``, ``KUBECONFIG`` the test API server's and
``REGISTRY=localhost/quickstart``: ``overlay`` (the user's kustomization with the
``images:`` override, applied server-side), ``window`` (the window file, ``kumaco
``validate``, the apply), ``watch`` (``kubectl kumaco status``), ``upgrade``,
``uninstall`` (the test does the namespace controller's part: the test API server runs
no controller manager) and ``conditions``. What cannot run here has a stand-in, as the document
says: ``cli`` (the test environment's console scripts), ``image`` and ``upgrade-image``
(``hack/image.sh build`` on the local bases, tagged as the quick start names the
image), ``rollout`` (no kubelet: the image runs in podman as the Deployment's pod --
its environment, securityContext and ServiceAccount token -- as tests/e2e/test_image.py
runs it, restarted when kumaco exits 3 on a window change, as the kubelet would). Proven: the Deployment names the image of the ``images:`` override; the
window opens on the node; ``kubectl kumaco status`` with no flag finds the window, the
node and the leader through the Deployment; the upgrade moves the image; the uninstall
leaves nothing of kumaco, and the conditions block removes kumaco's conditions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.env import admin
from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import Api, wait_for
from tests.support.env.image import build_image
from tests.support.env.manifests import kubectl
from tests.support.env.podman import SA_MOUNT, Container, mount_service_account, podman, port_in_use

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "deploy.md"
VENV_BIN = Path(sys.executable).parent
REGISTRY = "localhost/quickstart"
UM = "kured.dev/UnderMaintenance"
cluster = admin.cluster  # the fixture: admin access, everything removed at the end


def block(name: str) -> str:
    """The shell block after ``<!-- quickstart: NAME -->`` in docs/deploy.md."""
    m = re.search(rf"<!-- quickstart: {name} -->\n```sh\n(.*?)```\n", DOC.read_text(), re.S)
    assert m, f"docs/deploy.md has no quick-start block {name!r}"
    return m.group(1)


class Shell:
    """Runs the quick start's blocks as a user would, in ``work/kumaco`` (the clone)."""

    def __init__(self, tmp: Path, kubeconfig: Path) -> None:
        work = tmp / "work"
        # The clone: what the blocks run read of it is kustomize/ (a copy of this
        # checkout's: ``..`` of a linked directory would lead out of ``work``).
        shutil.copytree(REPO / "kustomize", work / "kumaco" / "kustomize", symlinks=True)
        self.cwd = work / "kumaco"
        self.work = work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KUMACO_")}
        self.env.update(
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
            KUBECONFIG=str(kubeconfig),
            REGISTRY=REGISTRY,
        )

    def run(self, name: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block(name)],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,  # each block is a few kubectl calls (not timed): 300 s for a hang
            check=False,
        )
        print(f"--- quickstart {name}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        assert done.returncode == 0, f"quick start block {name!r} failed:\n{done.stderr}"
        return done


def deployment(cluster: admin.Cluster) -> dict[str, Any]:
    got = kubectl(
        cluster.kubeconfig, "get", "deployment", "kumaco", "-n", "kumaco-system", "-o", "json"
    )
    return dict(json.loads(got.stdout))


def run_as_its_pod(
    image: str, d: dict[str, Any], sa_dir: Path, cp: ControlPlane, name: str
) -> Container:
    """The image as the kubelet would run the Deployment's pod (no flags: its env only)."""
    pod = d["spec"]["template"]["spec"]
    (spec,) = pod["containers"]
    sc = spec["securityContext"]
    downward = {"metadata.name": name, "metadata.namespace": d["metadata"]["namespace"]}
    env = {
        e["name"]: e["value"] if "value" in e else downward[e["valueFrom"]["fieldRef"]["fieldPath"]]
        for e in spec.get("env") or []
    }
    ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
    busy = [p for p in ports.values() if port_in_use(p)]
    assert not busy, f"ports {busy} of the Deployment are taken on this machine"
    cmd = [
        "run",
        "-d",
        "--name",
        name,
        "--pull=never",
        "--network=host",
        f"--user={sc['runAsUser']}:{sc['runAsGroup']}",
        "--read-only",
        "--read-only-tmpfs=false",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
        "-v",
        f"{sa_dir}:{SA_MOUNT}:ro",
        "-e",
        "KUBERNETES_SERVICE_HOST=127.0.0.1",
        "-e",
        f"KUBERNETES_SERVICE_PORT={cp.port}",
    ]
    for key, value in env.items():
        cmd += ["-e", f"{key}={value}"]
    podman(*cmd, image, *spec.get("args", []))
    return Container(name, ports["health"])


class Restarter:
    """The kubelet's part: restart the container when kumaco exits 3 (a window change).

    Counts the restarts; :meth:`stop` ends it. Any other exit is left alone (the test's
    assertions then fail with the container's log).
    """

    def __init__(self, container: Container) -> None:
        self.container, self.restarts = container, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            state = self.container.state()
            if not state["Running"] and state["ExitCode"] == 3:
                podman("start", self.container.name)
                self.restarts += 1

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(30)
        return self.restarts


class NamespaceController:
    """The namespace controller's part, which the test API server does not run.

    A namespace being deleted (``kubectl delete -k`` waits for it) is emptied of what
    kumaco and the API server left there (Leases, Events, ConfigMaps) and finalized.
    """

    NAMESPACES = ("kumaco-system", "maintenance")

    def __init__(self, cp: ControlPlane) -> None:
        self.api = Api(cp)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            for ns in self.NAMESPACES:
                status, found = self.api.try_request("GET", f"/api/v1/namespaces/{ns}")
                if status != 200 or not found["metadata"].get("deletionTimestamp"):
                    continue
                for collection in (
                    f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
                    f"/apis/events.k8s.io/v1/namespaces/{ns}/events",
                    f"/api/v1/namespaces/{ns}/configmaps",
                ):
                    self.api.try_request("DELETE", collection)
                found["spec"]["finalizers"] = []
                self.api.try_request("PUT", f"/api/v1/namespaces/{ns}/finalize", found)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


@pytest.fixture
def shell(tmp_path: Path, kubeconfig_path: Path) -> Iterator[Shell]:
    sh = Shell(tmp_path, kubeconfig_path)
    try:
        yield sh
    finally:  # whatever the test left: the quick start's own uninstall, again
        if (sh.work / "my-kumaco").exists():
            subprocess.run(
                ["kubectl", "delete", "-k", "../my-kumaco", "--ignore-not-found", "--wait=false"],
                cwd=sh.cwd,
                env=sh.env,
                capture_output=True,
                timeout=120,
                check=False,
            )


def test_the_quick_start_opens_a_window_as_written(
    cluster: admin.Cluster, shell: Shell, tmp_path: Path
) -> None:
    ref, took, reused = build_image()  # the stand-in for `image`: the local bases
    print(f"image {ref}: {took:.1f}s ({'reused' if reused else 'built'})")
    for tag in ("0.1.0", "0.2.0"):  # `image` and `upgrade-image`, without a registry
        podman("tag", ref, f"{REGISTRY}/kumaco:{tag}")
    node = cluster.node(f"quickstart-{uuid.uuid4().hex[:6]}", {"kubernetes.io/os": "linux"})

    shell.run("overlay")
    d = deployment(cluster)
    (spec,) = d["spec"]["template"]["spec"]["containers"]
    assert spec["image"] == f"{REGISTRY}/kumaco:0.1.0", "the images: override"
    assert d["spec"]["replicas"] == 2

    # `rollout`: the Deployment's pod, run by podman as the kubelet would run it.
    sa_dir = mount_service_account(cluster, "kumaco-system", "kumaco", tmp_path / "sa")
    pod_name = f"kumaco-quickstart-{uuid.uuid4().hex[:6]}"
    container = run_as_its_pod(spec["image"], d, sa_dir, cluster.cp, pod_name)
    kubelet = Restarter(container)
    try:
        # The container's start and kumaco's caches (not timed): 60 s for a loaded machine.
        wait_for(lambda: container.get("/readyz") == 200, 60, what="the pod ready")

        window = shell.run("window")
        assert window.stdout == "valid maintenance/first-window\n" + (
            "configmap/first-window serverside-applied\n"
        )
        # The new window makes kumaco exit 3 (2 s settle), the kubelet's stand-in restarts
        # it, and its first pass opens the window (1-4 s measured, test_catch_up.py): 60 s
        # for a loaded machine.
        wait_for(lambda: cluster.conditions(node).get(UM) == "True", 60, what=f"{UM} on {node}")

        watch = shell.run("watch")
        assert watch.stderr.startswith(
            "kubectl-kumaco status: settings of Deployment kumaco-system/kumaco: "
            "--namespaces=maintenance "
        ), watch.stderr
        out = watch.stdout
        assert "namespaces maintenance" in out.splitlines()[0], out
        (row,) = [line for line in out.splitlines() if line.startswith("maintenance/first-window")]
        assert re.search(r"\bvalid\s+UTC\s+yes\s+closes ", row), row
        assert re.search(rf"^{node}\s+maintenance/first-window\s", out, re.M), out
        assert re.search(rf"^LEADER \(Lease kumaco-system/kumaco\): {pod_name}_\w+$", out, re.M), (
            out
        )

        shell.run("upgrade")
        assert deployment(cluster)["spec"]["template"]["spec"]["containers"][0]["image"] == (
            f"{REGISTRY}/kumaco:0.2.0"
        )

        namespaces = NamespaceController(cluster.cp)
        try:
            shell.run("uninstall")
        finally:
            namespaces.stop()
    finally:
        restarts = kubelet.stop()
        container.stop()  # where the Deployment's deletion stops its pods
    # Restarted on each window change: the new window, then its deletion.
    assert restarts >= 2, restarts
    for kind, name, ns in (
        ("deployment", "kumaco", "kumaco-system"),
        ("clusterrole", "kumaco", ""),
        ("clusterrolebinding", "kumaco-viewer", ""),
        ("configmap", "first-window", "maintenance"),
    ):
        gone = kubectl(
            cluster.kubeconfig, "get", kind, name, *(["-n", ns] if ns else []), check=False
        )
        assert gone.returncode != 0 and "NotFound" in gone.stderr, (kind, name, gone.stdout)
    # The window was deleted before kumaco: it marked the node out of maintenance.
    assert cluster.conditions(node).get(UM) == "False"

    shell.run("conditions")
    assert UM not in cluster.conditions(node)
    assert "Ready" in cluster.conditions(node)  # the kubelet's own conditions stay
