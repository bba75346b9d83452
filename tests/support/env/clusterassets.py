"""The binaries of a real cluster beside the control plane: kubelet, kube-controller-manager and
kube-scheduler, of the same Kubernetes release as the control plane's kube-apiserver.

Contract. :func:`ensure_cluster_assets` returns a directory holding the three binaries.
Look-up order as :mod:`tests.support.env.controlplane`: ``TEST_ASSET_KUBELET``,
``TEST_ASSET_KUBE_CONTROLLER_MANAGER``, ``TEST_ASSET_KUBE_SCHEDULER`` (all three, gathered
under one directory of symlinks); then ``$KUBEBUILDER_ASSETS`` when it holds all three; then
kumaco's cache, ``assets/kubernetes-<version>-node/``, ``<version>`` being the release the
control plane's kube-apiserver was built from (its ``build-info.json``; the key of the
cache, since the binaries are built from that release's module and nothing else); otherwise
they are built there with this machine's Go through the same wrapper module as
kube-apiserver (:func:`tests.support.env.controlplane.build_k8s_command`), one after the
other, each build's seconds written to ``build-info.json`` next to them (as kube-apiserver's).
A build goes to a temporary name first: an interrupted build leaves no partial directory.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tests.support.env.controlplane import (
    build_k8s_command,
    build_stamp,
    cache_dir,
    ensure_assets,
    log,
)

#: The node binaries, in build order (kubelet first: the longest, it warms Go's build cache).
COMMANDS = ("kubelet", "kube-controller-manager", "kube-scheduler")


def _complete(d: Path) -> bool:
    return all(os.access(d / c, os.X_OK) for c in COMMANDS)


def release_of(assets: Path) -> str:
    """The Kubernetes release of the control plane's ``assets`` (its build-info.json, else
    the version in the directory's name)."""
    info = assets / "build-info.json"
    if info.exists():
        return str(json.loads(info.read_text())["kubernetes"])
    name = assets.resolve().name  # kubernetes-v1.37.2-etcd-v3.6.16
    if name.startswith("kubernetes-v"):
        return name.split("-")[1]
    raise RuntimeError(f"cannot tell the Kubernetes release of {assets}; build the cache")


def find_cluster_assets(version: str) -> Path | None:
    """The directory of the three binaries from the environment or the cache, or None."""
    env = {c: os.environ.get(f"TEST_ASSET_{c.upper().replace('-', '_')}") for c in COMMANDS}
    if all(env.values()):
        d = cache_dir() / "assets" / "env-node"
        d.mkdir(parents=True, exist_ok=True)
        for c, target in env.items():
            link = d / c
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(Path(str(target)).resolve())
        return d
    kb = os.environ.get("KUBEBUILDER_ASSETS")
    if kb and _complete(Path(kb)):
        return Path(kb)
    d = cache_dir() / "assets" / f"kubernetes-{version}-node"
    return d if _complete(d) else None


def build_cluster_assets(version: str) -> Path:
    """Build the three binaries of ``version`` into the cache; their directory."""
    if shutil.which("go") is None:
        raise RuntimeError("the Go toolchain (go) is not on PATH; it is needed to build kubelet")
    root = cache_dir() / "assets"
    tmp = root / f".kubernetes-{version}-node.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    started = time.monotonic()
    info: dict[str, object] = {"kubernetes": version}
    for c in COMMANDS:
        t0 = time.monotonic()
        build_k8s_command(version, c, tmp / c)
        info[f"{c.replace('-', '_')}_build_seconds"] = round(time.monotonic() - t0, 1)
    info["total_seconds"] = round(time.monotonic() - started, 1)
    info.update(build_stamp())
    (tmp / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    d = root / f"kubernetes-{version}-node"
    shutil.rmtree(d, ignore_errors=True)
    tmp.replace(d)
    log(f"built {', '.join(COMMANDS)} {version} in {info['total_seconds']}s")
    return d


def ensure_cluster_assets(assets: Path | None = None) -> Path:
    """kubelet, kube-controller-manager and kube-scheduler of the control plane's release
    (``assets``: the control plane's directory, ensured when None), built if missing."""
    version = release_of(assets or ensure_assets())
    found = find_cluster_assets(version)
    if found is not None:
        return found
    log(f"no kubelet/kube-controller-manager/kube-scheduler {version}; building them (minutes)")
    return build_cluster_assets(version)
