"""kured v2's agents as pods on the real cluster's nodes: their image, manifests and record.

Contract. A test neighbour, never shipped.

*The image* (:func:`ensure_kured_image`). An OCI image layout tarball written without a
registry or an engine, as :mod:`tests.support.env.clusterimage` writes the nodes' base
image: the same busybox layer (same digest: containerd shares it), and a second layer with
the prototype's ``reboot-required-detector``, ``reboot-daemon`` and ``reboot-inhibitors``
(:data:`PROGRAMS`, static Go binaries of :func:`tests.support.env.kured.ensure_kured`'s
build) in ``/usr/local/bin``. Cached in kumaco's cache under ``image/kured-agents``, keyed by
the build's ``build-info.json``, the busybox binary and :data:`RECIPE`; named by
``io.containerd.image.name`` for ``ctr images import``. Layers are uncompressed tars with
fixed times and owners, written to disk as they are hashed (the binaries are ~200 MB).

*The manifests* (:func:`agent_manifests`). In namespace ``ns``: a ServiceAccount per agent
bound to exactly the ClusterRoles of the prototype's own manifests
(:func:`tests.support.env.kured.cluster_rules`), the detector and the daemon as DaemonSets,
the inhibitors as a one-replica Deployment -- each with ``KURED_NODE_ID`` from
``spec.nodeName`` and the in-cluster configuration the kubelet gives every pod. The
detector reads the sentinel ``/run/kured/reboot-required`` of its node (a hostPath: each
real node has its own tmpfs ``/run``, which its reboot replaces: :func:`write_sentinel`);
the daemon is ``hostPID`` so that ``--reboot-method=signal`` reaches its node's PID 1,
the fixture's ``cluster_node`` (its contract, "Reboots").

*The record* (:func:`node_reboots`, :func:`max_rebooting`). The nodes' reboot log, read
with :func:`tests.support.env.kured.reboot_log`, and the most nodes between a ``reboot``
and its ``up`` at once.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from tests.support.env import clusterimage
from tests.support.env.cluster import Cluster, RealNode
from tests.support.env.controlplane import cache_dir
from tests.support.env.kured import RebootLog, cluster_rules, go_duration, reboot_log

PROGRAMS = ("reboot-required-detector", "reboot-daemon", "reboot-inhibitors")
RECIPE = "1"  # bump when the layout below changes
SENTINEL_DIR = "/run/kured"  # on the node; the detector sees it as /sentinel
SENTINEL = f"{SENTINEL_DIR}/reboot-required"
AGENT_LABEL = "app.kubernetes.io/name"


def _digest_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest(), path.stat().st_size


def _agents_layer(bin_dir: Path, out: IO[bytes]) -> None:
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("usr", "usr/local", "usr/local/bin", "sentinel"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for program in PROGRAMS:
            src = bin_dir / program
            info = tarfile.TarInfo(f"usr/local/bin/{program}")
            info.mode, info.mtime, info.size = 0o755, 0, src.stat().st_size
            with src.open("rb") as f:
                tar.addfile(info, f)


def ensure_kured_image(bin_dir: Path) -> tuple[str, Path]:
    """The agents' image reference and OCI archive (built once per inputs: see the contract)."""
    busybox = clusterimage.BUSYBOX.read_bytes()
    info = (bin_dir.resolve().parent / "build-info.json").read_bytes()
    key = hashlib.sha256(
        busybox + info + RECIPE.encode() + json.dumps(PROGRAMS).encode()
    ).hexdigest()[:16]
    ref = f"localhost/kumaco-kured-agents:{key}"
    archive = cache_dir() / "image" / "kured-agents" / f"{key}.oci.tar"
    if archive.exists():
        return ref, archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as tmp:
        base = Path(tmp) / "base.tar"
        base.write_bytes(clusterimage._layer(busybox))
        agents = Path(tmp) / "agents.tar"
        with agents.open("wb") as f:
            _agents_layer(bin_dir, f)
        layers = [_digest_file(base), _digest_file(agents)]
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {"Env": ["PATH=/usr/local/bin:/bin"], "WorkingDir": "/"},
                "rootfs": {"type": "layers", "diff_ids": [d for d, _ in layers]},
            },
            sort_keys=True,
        ).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": clusterimage._digest(config),
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": d,
                        "size": n,
                    }
                    for d, n in layers
                ],
            },
            sort_keys=True,
        ).encode()
        index = json.dumps(
            {
                "schemaVersion": 2,
                "manifests": [
                    {
                        "mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "digest": clusterimage._digest(manifest),
                        "size": len(manifest),
                        "annotations": {
                            "io.containerd.image.name": ref,
                            "org.opencontainers.image.ref.name": key,
                        },
                    }
                ],
            },
            sort_keys=True,
        ).encode()
        part = archive.with_name(archive.name + f".{os.getpid()}.tmp")
        with tarfile.open(part, "w") as tar:
            small = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": index}
            for blob in (config, manifest):
                small[f"blobs/sha256/{clusterimage._digest(blob)[7:]}"] = blob
            for name, data in small.items():
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
                tar.addfile(ti, io.BytesIO(data))
            for path, (digest, size) in zip((base, agents), layers, strict=True):
                ti = tarfile.TarInfo(f"blobs/sha256/{digest[7:]}")
                ti.size, ti.mode, ti.mtime = size, 0o644, 0
                with path.open("rb") as f:
                    tar.addfile(ti, f)
        part.replace(archive)
    return ref, archive


# --------------------------------------------------------------------------- manifests


def _node_id_env() -> list[dict[str, Any]]:
    return [{"name": "KURED_NODE_ID", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]


def _pod_template(name: str, image: str, args: Sequence[str], **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "Never",
        "command": [f"/usr/local/bin/{name}"],
        "args": list(args),
        "env": _node_id_env(),
        "securityContext": {"readOnlyRootFilesystem": True},
    }
    mounts = spec.pop("volumeMounts", None)
    if mounts:
        container["volumeMounts"] = mounts
    return {
        "metadata": {"labels": {AGENT_LABEL: name}},
        "spec": {
            "serviceAccountName": name,
            "terminationGracePeriodSeconds": 2,
            "containers": [container],
            **spec,
        },
    }


def agent_manifests(
    bin_dir: Path,
    image: str,
    ns: str,
    *,
    detector_period: float = 3.0,
    daemon_period: float = 3.0,
    inhibitor_period: float = 1.0,
    blocking_selector: str = "kumaco.test/blocker=true",
) -> list[dict[str, Any]]:
    """The agents' objects in ``ns`` (see the contract), in the order to apply them."""
    rbac = "rbac.authorization.k8s.io/v1"
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    ]
    for sa in PROGRAMS:
        role = f"{ns}:{sa}"
        out += [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": ns},
            },
            {
                "apiVersion": rbac,
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": cluster_rules(bin_dir, f"{sa}.yaml"),
            },
            {
                "apiVersion": rbac,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
            },
        ]
    detector = _pod_template(
        "reboot-required-detector",
        image,
        [
            "--reboot-sentinel-file=/sentinel/reboot-required",
            f"--period={go_duration(detector_period)}",
            "--debug",
        ],
        volumes=[
            {
                "name": "sentinel",
                "hostPath": {"path": SENTINEL_DIR, "type": "DirectoryOrCreate"},
            }
        ],
        volumeMounts=[{"name": "sentinel", "mountPath": "/sentinel", "readOnly": True}],
    )
    daemon = _pod_template(
        "reboot-daemon",
        image,
        ["--reboot-method=signal", f"--period={go_duration(daemon_period)}", "--debug"],
        hostPID=True,
    )
    inhibitors = _pod_template(
        "reboot-inhibitors",
        image,
        [
            f"--blocking-pod-selector={blocking_selector}",
            f"--period={go_duration(inhibitor_period)}",
            "--debug",
        ],
    )
    for name, template in (("reboot-required-detector", detector), ("reboot-daemon", daemon)):
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"selector": {"matchLabels": {AGENT_LABEL: name}}, "template": template},
            }
        )
    out.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "reboot-inhibitors", "namespace": ns},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {AGENT_LABEL: "reboot-inhibitors"}},
                "template": inhibitors,
            },
        }
    )
    return out


# --------------------------------------------------------------------------- nodes


def write_sentinel(node: RealNode) -> Path:
    """The node's reboot sentinel, in its own ``/run`` (seen through its PID 1's root)."""
    path = Path(f"/proc/{node.pid1}/root{SENTINEL}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("*** System restart required ***\n")
    return path


def node_reboots(cluster: Cluster) -> RebootLog:
    """The real nodes' reboot log (cluster_node's ``boot``/``reboot``/``down``/``up``)."""
    return reboot_log(cluster.reboot_log)


def max_rebooting(log: RebootLog) -> int:
    """The most nodes between a ``reboot`` and the ``up`` of the same ``n`` at once (a
    reboot with no ``up`` yet lasts for ever)."""
    edges: list[tuple[float, int]] = []
    for r in log.of("reboot"):
        ups = [e["time"] for e in log.of("up", r["node"]) if e["n"] == r["n"]]
        edges += [(r["time"], 1), (ups[0] if ups else float("inf"), -1)]
    cur = best = 0
    for _t, d in sorted(edges):
        cur += d
        best = max(best, cur)
    return best
