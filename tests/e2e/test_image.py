"""The container image users run, built and run here: podman against the test control plane.

``hack/image.sh build`` builds the Dockerfile on the local Debian bases (cached by its
inputs: a warm run reuses the image), and the tests run that image with podman as a
kubelet would run the pod of ``kustomize/base``: ``--read-only`` (no tmpfs either), as
its numeric non-root user, every capability dropped, no privilege escalation, and the
ServiceAccount mounted the kubelet's way -- a TokenRequest token, the cluster CA and the
namespace at ``/var/run/secrets/kubernetes.io/serviceaccount``, with
``KUBERNETES_SERVICE_HOST``/``PORT`` set (the API server listens on 127.0.0.1 and its
certificate is valid for it; ``--network host`` reaches it). The ServiceAccount has
exactly the base's RBAC, rendered from ``kustomize/base``. Proven:

* the containerised kumaco uses the in-cluster configuration (without the mount it
  cannot start) and does its whole job: the window opens, conditions flip, Events
  appear; ``podman stop`` (SIGTERM) ends it with exit 0 and the Lease released;
* two containers as leader and follower: killing the leader's container hands over
  within the lease bounds of the HA tests;
* the Deployment in ``kustomize/base`` and the image agree on the user, the read-only
  root, the entrypoint, the ports and the probes (``podman image inspect`` and a
  container run with the Deployment's own settings answering its probes);
* the image itself: OCI labels, no shell, no pip, only runtime dependencies (its venv is
  the wheel's files and their dependencies, bytecode precompiled, no unused asyncio
  client, and importing every kumaco module needs none of it), and the
  SBOM written next to the build.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

import kumaco
from tests.support.env import admin
from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import wait_for
from tests.support.env.image import build_image, run_hack
from tests.support.env.manifests import KUSTOMIZE, kubectl, one
from tests.support.env.podman import (
    SA_MOUNT,
    Container,
    mount_service_account,
    podman,
    port_in_use,
)
from tests.support.env.ports import free_port
from tests.support.judges.rbac import assert_no_forbidden

REPO = Path(__file__).resolve().parents[2]
UM = admin.UM
RUN_LABEL = admin.RUN_LABEL


# ------------------------------------------------------------------------------ the image


@pytest.fixture(scope="module")
def image() -> str:
    """``hack/image.sh build``: the image's reference (cold: about a minute; warm: < 1 s)."""
    ref, took, reused = build_image()
    print(f"image {ref}: hack/image.sh build {took:.1f}s ({'warm: reused' if reused else 'built'})")
    return ref


def inspect(image: str) -> dict[str, Any]:
    (info,) = json.loads(podman("image", "inspect", image).stdout)
    return dict(info)


# ----------------------------------------------------------------- cluster and credentials


@pytest.fixture
def cluster(
    control_plane: ControlPlane, api: client.ApiClient, kubeconfig_path: Path, tmp_path: Path
) -> Iterator[admin.Cluster]:
    c = admin.Cluster(control_plane, api, kubeconfig_path, tmp_path)
    try:
        yield c
    finally:
        c.cleanup()


@dataclass
class Install:
    """kustomize/base rendered into a test namespace: its RBAC applied, its Deployment."""

    ns: str
    run: str
    deployment: dict[str, Any]
    sa_dir: Path


def render_base(ns: str, tmp: Path) -> list[dict[str, Any]]:
    wrap = tmp / f"base-{ns}"
    wrap.mkdir()
    (wrap / "kustomization.yaml").write_text(
        yaml.safe_dump({"namespace": ns, "resources": [os.path.relpath(KUSTOMIZE / "base", wrap)]})
    )
    out = kubectl(None, "kustomize", str(wrap)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture
def install(cluster: admin.Cluster, tmp_path: Path) -> Install:
    run = uuid.uuid4().hex[:6]
    ns = cluster.namespace(f"kimg-{run}")
    docs = render_base(ns, tmp_path)
    rbac = admin.remap(
        [d for d in docs if d["kind"] not in ("Deployment", "NetworkPolicy")], {}, f"-{run}"
    )
    cluster.apply_for_real(rbac)
    return Install(
        ns=ns,
        run=run,
        deployment=one(docs, "Deployment"),
        sa_dir=mount_service_account(cluster, ns, "kumaco", tmp_path / "serviceaccount"),
    )


# ------------------------------------------------------------------------------ containers


@pytest.fixture
def containers(image: str, control_plane: ControlPlane) -> Iterator[Callable[..., Container]]:
    """Start containers of the image; all are removed after the test (logs shown on failure)."""
    started: list[Container] = []

    def start(
        name: str,
        args: Sequence[str] = (),
        *,
        sa_dir: Path | None,
        env: dict[str, str] | None = None,
        health_port: int | None = None,
        security: Sequence[str] | None = None,
        detach: bool = True,
    ) -> Container:
        name = f"{name}-{uuid.uuid4().hex[:6]}"
        cmd = [
            "run",
            "--name",
            name,
            "--pull=never",
            "--network=host",
            *(
                security
                if security is not None
                else [
                    "--read-only",
                    "--read-only-tmpfs=false",
                    "--user=65532:65532",
                    "--cap-drop=all",
                    "--security-opt=no-new-privileges",
                ]
            ),
            "-e",
            "KUBERNETES_SERVICE_HOST=127.0.0.1",
            "-e",
            f"KUBERNETES_SERVICE_PORT={control_plane.port}",
        ]
        if sa_dir is not None:
            cmd += ["-v", f"{sa_dir}:{SA_MOUNT}:ro"]
        for key, value in {"POD_NAME": name, **(env or {})}.items():
            cmd += ["-e", f"{key}={value}"]
        c = Container(name, health_port or 0)
        started.append(c)
        # Detached: podman returns once the container is created (seconds); 120 s for a hang.
        podman(*cmd, *(["-d"] if detach else []), image, *args, timeout=120, check=False)
        return c

    try:
        yield start
    finally:
        for c in started:
            print(f"--- container {c.name}:\n{c.logs()[-4000:]}")  # shown on failure
            podman("rm", "-f", "-t", "0", c.name, check=False)


def kumaco_flags(run: str, health: int, metrics: int, *extra: str) -> list[str]:
    return [
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--health-probe-bind-address",
        f"127.0.0.1:{health}",
        "--metrics-bind-address",
        f"127.0.0.1:{metrics}",
        "--log-format",
        "text",
        *extra,
    ]


def ports() -> tuple[int, int]:
    """A health and a metrics port for a container on the host network."""
    return free_port(), free_port()


def lease_holder(cluster: admin.Cluster, ns: str) -> str | None:
    with contextlib.suppress(client.ApiException):
        return str(
            client.CoordinationV1Api(cluster.api)
            .read_namespaced_lease("kumaco", ns)
            .spec.holder_identity
            or ""
        )
    return None


# ================================================================================== tests


def test_image_runs_in_cluster_with_the_base_rbac_and_does_its_whole_job(
    cluster: admin.Cluster,
    install: Install,
    containers: Callable[..., Container],
) -> None:
    ns, run = install.ns, install.run
    since = time.time()
    in_window = [cluster.node(f"kimg-{run}-{i}", {RUN_LABEL: run, "pool": "a"}) for i in range(2)]
    outside = cluster.node(f"kimg-{run}-2", {RUN_LABEL: run, "pool": "b"})
    cluster.core.create_namespaced_config_map(
        ns, admin.window("open", {**admin.OPEN_NOW, "nodeSelector": "pool=a"})
    )
    cluster.core.create_namespaced_config_map(ns, admin.window("broken", admin.INVALID))
    health, metrics = ports()

    # Without the ServiceAccount mount there are no credentials at all in the container:
    # kumaco stops at once (exit 1), so the run below can only be using the mount.
    bare = containers(
        "kumaco-nosa", kumaco_flags(run, health, metrics, "--namespaces", ns), sa_dir=None
    )
    # The container's start and kumaco's first check (not timed): 60 s for a loaded machine.
    wait_for(lambda: not bare.running(), 60, what="the container without credentials to exit")
    assert bare.state()["ExitCode"] == 1, bare.logs()
    assert "cannot load Kubernetes credentials" in bare.logs()

    # No POD_NAMESPACE and no --namespaces: the namespace, too, comes from the mount.
    t0 = time.monotonic()
    c = containers(
        "kumaco", kumaco_flags(run, health, metrics), sa_dir=install.sa_dir, health_port=health
    )
    for node in in_window:
        wait_for(
            lambda n=node: cluster.conditions(n).get(UM) == "True",
            60,  # the container's start (printed, not recorded), then kumaco's 1-4 s start-up
            what=f"{UM}=True on {node}",
        )
    print(f"container: window applied {time.monotonic() - t0:.1f}s after podman run")
    wait_for(
        lambda: (
            cluster.event_reasons(ns).get("open", set()) >= {"WindowLoaded", "WindowStarted"}
            and "WindowInvalid" in cluster.event_reasons(ns).get("broken", set())
        ),
        30,  # posted by the same first pass: room for a loaded machine
        what="WindowLoaded, WindowStarted and WindowInvalid Events",
    )
    # Written by that same first pass: 20 s for a loaded machine.
    wait_for(lambda: cluster.conditions(outside).get(UM) == "False", 20, what=f"{UM}=False outside")
    assert c.running(), c.logs()
    holder = lease_holder(cluster, ns)
    assert holder and holder.startswith(c.name), holder
    wait_for(lambda: c.get("/readyz") == 200, 20, what="/readyz")  # synced: it already wrote
    assert c.get("/healthz") == 200
    # It runs as the image's user and wrote nothing to its (read-only) root filesystem.
    top = podman("top", c.name, "user", "huser", "args").stdout
    assert "kumaco run" in top and "65532" in top.split("\n", 1)[1], top

    t0 = time.monotonic()
    code = c.stop()
    print(f"container: podman stop -> exit {code} in {time.monotonic() - t0:.1f}s")
    log = c.logs()
    assert code == 0, log
    assert_no_forbidden(cluster, ns, since, log)
    assert "Read-only file system" not in log and "Traceback" not in log, log
    assert lease_holder(cluster, ns) == "", "the Lease is released on SIGTERM"


def test_two_containers_hand_over_when_the_leaders_container_is_killed(
    cluster: admin.Cluster,
    install: Install,
    containers: Callable[..., Container],
) -> None:
    ns, run = install.ns, install.run
    since = time.time()
    nodes = [cluster.node(f"kimgha-{run}-{i}", {RUN_LABEL: run}) for i in range(2)]
    cluster.core.create_namespaced_config_map(
        ns, admin.window("open", {**admin.OPEN_NOW, "nodeSelector": ""})
    )
    lease, renew, retry = 4.0, 3.0, 1.0  # the HA tests' short form
    timings = [
        "--leader-elect-lease-duration",
        f"{lease}s",
        "--leader-elect-renew-deadline",
        f"{renew}s",
        "--leader-elect-retry-period",
        f"{retry}s",
    ]
    replicas = []
    for i in range(2):
        health, metrics = ports()
        replicas.append(
            containers(
                f"kumaco-{i}",
                kumaco_flags(run, health, metrics, *timings),
                sa_dir=install.sa_dir,
                env={"POD_NAMESPACE": ns},
                health_port=health,
            )
        )
    # Two containers starting side by side (not timed), a fresh Lease: 60 s for a loaded machine.
    leader_id = wait_for(lambda: lease_holder(cluster, ns), 60, what="a leader")
    (leader,) = [r for r in replicas if leader_id.startswith(r.name)]
    (follower,) = [r for r in replicas if r is not leader]
    # The leader's first pass (1-4 s after a process start, test_catch_up.py): 60 s for load.
    for node in nodes:
        wait_for(lambda n=node: cluster.conditions(n).get(UM) == "True", 60, what=f"{UM} on {node}")
    # Started with the leader, which has written its conditions by now: 30 s for load.
    wait_for(lambda: follower.get("/readyz") == 200, 30, what="the follower ready (warm caches)")

    t0 = time.monotonic()
    podman("kill", "--signal", "KILL", leader.name)
    new = wait_for(
        lambda: (h := lease_holder(cluster, ns)) and h != leader_id and h,
        lease + retry * 1.2 + 30,  # outlasts the bound asserted below, to report the time
        interval=0.05,
        what="the follower to take over",
    )
    took = time.monotonic() - t0
    print(f"containers: takeover {took:.2f}s after podman kill of the leader (lease {lease}s)")
    assert new.startswith(follower.name), new
    assert lease - renew < took <= lease + retry * 1.2 + 1.0, took
    assert leader.state()["ExitCode"] == 137  # SIGKILL: no clean exit, the Lease ran out
    # The new leader keeps the conditions, and a clean stop releases the Lease.
    for node in nodes:
        assert cluster.conditions(node).get(UM) == "True"
    assert follower.stop() == 0, follower.logs()
    assert lease_holder(cluster, ns) == ""
    assert_no_forbidden(cluster, ns, since, follower.logs())


def test_the_base_deployment_and_the_image_agree(
    cluster: admin.Cluster,
    install: Install,
    image: str,
    containers: Callable[..., Container],
) -> None:
    """User, read-only root, entrypoint, ports and probes: the Deployment as the image has them."""
    pod = install.deployment["spec"]["template"]["spec"]
    (spec,) = pod["containers"]
    sc = spec["securityContext"]
    config = inspect(image)["Config"]

    # The user: numeric and non-root in the image, the same in the Deployment.
    user, _, group = config["User"].partition(":")
    assert user.isdigit() and int(user) != 0 and group.isdigit(), config["User"]
    assert (sc["runAsUser"], sc["runAsGroup"]) == (int(user), int(group))
    assert pod["securityContext"]["runAsNonRoot"] is True and sc["runAsNonRoot"] is True
    # The entrypoint: the Deployment sets no command or args.
    assert config["Entrypoint"] == ["kumaco", "run"]
    assert not config.get("Cmd")
    assert "command" not in spec and "args" not in spec
    # The ports: exposed by the image, declared by the Deployment.
    exposed = {int(p.split("/")[0]) for p in config["ExposedPorts"]}
    assert exposed == {p["containerPort"] for p in spec["ports"]}
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]

    # A container with the Deployment's own settings: its securityContext, its environment
    # (downward API values filled in, as the kubelet does; the node selector an overlay
    # would add), no flags, so kumaco binds its defaults -- the ports the probes name.
    ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
    busy = [p for p in ports.values() if port_in_use(p)]
    assert not busy, f"ports {busy} of the Deployment are taken on this machine"
    security = [
        f"--user={sc['runAsUser']}:{sc['runAsGroup']}",
        *(["--read-only", "--read-only-tmpfs=false"] if sc["readOnlyRootFilesystem"] else []),
        *(["--cap-drop=all"] if sc["capabilities"] == {"drop": ["ALL"]} else []),
        *([] if sc["allowPrivilegeEscalation"] else ["--security-opt=no-new-privileges"]),
    ]
    downward = {"metadata.name": "kumaco-deploy", "metadata.namespace": install.ns}
    env = {
        e["name"]: e["value"] if "value" in e else downward[e["valueFrom"]["fieldRef"]["fieldPath"]]
        for e in spec["env"]
    }
    env["KUMACO_NODE_SELECTOR"] = f"{RUN_LABEL}={install.run}"
    node = cluster.node(f"kimgdep-{install.run}", {RUN_LABEL: install.run})
    c = containers("kumaco-deploy", sa_dir=install.sa_dir, env=env, security=security)

    def probe(name: str) -> int:
        http_get = spec[name]["httpGet"]
        return c.get(http_get["path"], ports[http_get["port"]])

    # The container's start and kumaco's caches (not timed): 60 s for a loaded machine.
    wait_for(lambda: probe("readinessProbe") == 200, 60, what="the readiness probe")
    assert probe("livenessProbe") == 200
    # Ready, then a fresh Lease and the first pass: 30 s for a loaded machine.
    wait_for(lambda: cluster.conditions(node).get(UM) == "False", 30, what=f"{UM} written")
    inspected = json.loads(podman("container", "inspect", c.name).stdout)[0]
    assert inspected["HostConfig"]["ReadonlyRootfs"] is True
    assert inspected["Config"]["User"] == f"{sc['runAsUser']}:{sc['runAsGroup']}"
    assert c.stop() == 0, c.logs()


@pytest.mark.artifact("the image built with buildah, inspected with podman")
def test_the_image_is_minimal_labelled_and_has_its_sbom(image: str) -> None:
    info = inspect(image)
    labels = info["Config"]["Labels"] or {}
    assert labels["org.opencontainers.image.version"] == kumaco.__version__
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.revision"] != "unknown"
    version = podman("run", "--rm", "--pull=never", "--entrypoint=kumaco", image, "--version")
    assert version.stdout.strip() == f"kumaco {kumaco.__version__}"
    # No shell at run time.
    sh = podman("run", "--rm", "--pull=never", "--entrypoint=sh", image, "-c", "true", check=False)
    assert sh.returncode != 0 and "executable file" in sh.stderr, (sh.returncode, sh.stderr)
    # Only runtime dependencies: the venv's distributions are exactly kumaco's requirements
    # and theirs, and Python imports no test tool or installer.
    probe = podman(
        "run",
        "--rm",
        "--pull=never",
        "--read-only",
        "--entrypoint=/opt/kumaco/bin/python",
        image,
        "-c",
        "import importlib.metadata as m, importlib.util as u, json;"
        "print(json.dumps({'dists': sorted(d.metadata['Name'].lower() for d in m.distributions()),"
        "'found': [n for n in ('pip', 'setuptools', 'pytest', 'croniter', 'hypothesis',"
        " 'kubernetes.aio') if u.find_spec(n)]}))",
    )
    found = json.loads(probe.stdout)
    assert found["found"] == [], found
    assert "kumaco" in found["dists"] and "kubernetes" in found["dists"]
    assert "croniter" not in found["dists"] and "pytest" not in found["dists"]
    # The SBOM next to the build: every distribution of the venv, with versions.
    sbom = json.loads((REPO / "dist" / "image" / "kumaco-image.cdx.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX"
    assert sbom["metadata"]["component"]["name"] == "kumaco"
    assert sbom["metadata"]["component"]["version"] == kumaco.__version__
    names = {c["name"].lower() for c in sbom["components"]}
    assert names == set(found["dists"]) - {"kumaco"}, names ^ set(found["dists"])
    assert all(c.get("version") for c in sbom["components"])
    built = json.loads((REPO / "dist" / "image" / "kumaco-image.json").read_text())
    assert built["image"] == image and built["id"] == info["Id"]
    print(
        f"image {image}: {info['Size'] / 1e6:.0f} MB, {len(names)} Python distributions in its SBOM"
    )


@pytest.fixture(scope="module")
def venv(image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's /opt/kumaco, copied out (``hack/image.sh export-venv``; no container runs)."""
    out = tmp_path_factory.mktemp("image-venv") / "kumaco"
    # Copies ~96 MB out of the local image (docs/image.json: venv_bytes): 300 s for a hang.
    run_hack("image.sh", "export-venv", image, str(out), timeout=300)
    return out


@pytest.mark.artifact("the image built with buildah, inspected with podman")
def test_the_image_venv_is_the_wheel_and_its_runtime_dependencies_only(venv: Path) -> None:
    """What hack/image-venv.sh made in the builder stage, as the image ships it."""
    (site,) = venv.glob("lib/python3.*/site-packages")
    # kumaco's own files are exactly the package's sources (and their bytecode): nothing
    # else of the tree reached the wheel.
    (dist_info,) = site.glob(f"kumaco-{kumaco.__version__}.dist-info")
    recorded = [line.split(",")[0] for line in (dist_info / "RECORD").read_text().splitlines()]
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "kumaco").rglob("*.py")}
    assert {r for r in recorded if r.startswith("kumaco/") and r.endswith(".py")} == sources
    top = {r.split("/")[0] for r in recorded if not r.startswith("..")}
    assert top == {"kumaco", dist_info.name}, top
    entry_points = (dist_info / "entry_points.txt").read_text()
    assert "kumaco = kumaco.cmd.cli:main" in entry_points
    assert "kubectl-kumaco = kumaco.cmd.kubectl:main" in entry_points
    # No installer in the venv, no test oracle.
    assert (venv / "bin" / "kumaco").exists()
    assert not list(venv.glob("bin/pip*")), "the runtime venv must not contain pip"
    assert not list(site.glob("pip")) and not list(site.glob("croniter*"))
    # Bytecode compiled at install time (the root filesystem is read-only at run time).
    for module in (REPO / "kumaco").rglob("*.py"):
        package = site / module.parent.relative_to(REPO)
        assert list((package / "__pycache__").glob(f"{module.stem}.cpython-*.pyc")), module
    # kubernetes/aio dropped, from disk and from the RECORD.
    assert (site / "kubernetes" / "client").is_dir()
    assert not (site / "kubernetes" / "aio").exists()
    (record,) = site.glob("kubernetes-*.dist-info/RECORD")
    assert "kubernetes/aio/" not in record.read_text()


@pytest.mark.artifact("the image built with buildah, inspected with podman")
def test_importing_all_of_kumaco_in_the_image_needs_no_asyncio_client(image: str) -> None:
    modules = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for p in (REPO / "kumaco").rglob("*.py")
        if p.name != "__main__.py"
    )
    probe = podman(
        "run",
        "--rm",
        "--pull=never",
        "--read-only",
        "--read-only-tmpfs=false",
        "--entrypoint=/opt/kumaco/bin/python",
        image,
        "-c",
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "import kubernetes.client, kubernetes.config, kubernetes.watch\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kubernetes.aio', 'aiohttp'))))",
    )
    assert probe.stdout.strip() == "[]", probe.stdout
