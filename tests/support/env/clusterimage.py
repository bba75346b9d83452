"""The real nodes' one local image, written as an OCI archive without a registry or an engine.

Contract. :func:`ensure_node_image` returns ``(reference, archive)``: an OCI image layout
tarball (``oci-layout``, ``index.json``, blobs) in kumaco's cache, keyed by its inputs (the
busybox binary's hash and this recipe), holding Debian's static busybox
(``busybox-static``) as ``/bin/busybox`` with its applets as symlinks, and as entrypoint
``/bin/sleep 2147483647``. It serves as the containerd ``sandbox_image`` (a pod's pause
container: anything that sleeps for ever; containerd stops a sandbox with SIGKILL) and as
the image of the test workloads (``sh``, ``httpd``, ``ps``...). The index names the image
with ``io.containerd.image.name``, which ``ctr images import`` honours. The layer is an
uncompressed tar with fixed times and owners, so the same inputs give the same digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

from tests.support.env.controlplane import cache_dir

BUSYBOX = Path("/bin/busybox")
APPLETS = [
    "sh",
    "cat",
    "echo",
    "sleep",
    "true",
    "false",
    "ls",
    "ps",
    "id",
    "kill",
    "mkdir",
    "rm",
    "touch",
    "test",
    "env",
    "hostname",
    "httpd",
    "wget",
    "nc",
    "date",
    "grep",
    "head",
    "tail",
    "wc",
    "uname",
    "mount",
]
ENTRYPOINT = ["/bin/sleep", "2147483647"]
RECIPE = "1"  # bump when the layout below changes


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(busybox: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime, info.linkname = kind, mode, 0, link
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)

        for d in ("bin", "tmp", "etc", "proc", "sys", "dev", "var", "var/www"):
            add(d, tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755)
        add("bin/busybox", tarfile.REGTYPE, 0o755, busybox)
        for applet in APPLETS:
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox")
        add("etc/passwd", tarfile.REGTYPE, 0o644, b"root:x:0:0:root:/:/bin/sh\n")
        add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\n")
        add("var/www/index.html", tarfile.REGTYPE, 0o644, b"ok\n")
    return buf.getvalue()


def ensure_node_image() -> tuple[str, Path]:
    """The image's reference and its OCI archive (built once per inputs; see the contract)."""
    if not BUSYBOX.exists():
        raise RuntimeError(f"{BUSYBOX} is missing: install busybox-static (hack/test-deps.sh)")
    busybox = BUSYBOX.read_bytes()
    key = hashlib.sha256(busybox + RECIPE.encode() + json.dumps(APPLETS).encode()).hexdigest()
    ref = f"localhost/kumaco-node-base:{key[:16]}"
    archive = cache_dir() / "image" / "node-base" / f"{key[:16]}.oci.tar"
    if archive.exists():
        return ref, archive
    layer = _layer(busybox)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ENTRYPOINT, "Env": ["PATH=/bin"], "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [_digest(layer)]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _digest(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": _digest(layer),
                    "size": len(layer),
                }
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
                    "digest": _digest(manifest),
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": ref,
                        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1],
                    },
                }
            ],
        },
        sort_keys=True,
    ).encode()
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + f".{os.getpid()}.tmp")
    with tarfile.open(tmp, "w") as tar:
        files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": index}
        for blob in (layer, config, manifest):
            files[f"blobs/sha256/{_digest(blob)[7:]}"] = blob
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(archive)
    return ref, archive
