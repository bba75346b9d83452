#!/usr/bin/env python3
"""A real Kubernetes control plane (kube-apiserver + etcd) on loopback, for tests and demos.

Command-line contract (other tools script against it; keep it stable)::

    python hack/controlplane.py assets
        Ensure kube-apiserver and etcd exist, kwok (the kubelet simulator
        of the benchmarks; found through TEST_ASSET_KWOK, $KUBEBUILDER_ASSETS
        or the cache, built otherwise), helm (the Helm chart's tests; the same
        look-up with TEST_ASSET_HELM: tests/support/env/helm.py) and kured
        v2's prototype agents (the real-agents tests; found through
        TEST_ASSET_KURED_V2 or the cache, built from the shared archive
        otherwise: tests/support/env/kured.py) and the real cluster's kubelet,
        kube-controller-manager and kube-scheduler (the same release as
        kube-apiserver; tests/support/env/clusterassets.py);
        print the directory holding kube-apiserver and etcd (one line on
        stdout; progress on stderr).
    python hack/controlplane.py assets --only-control-plane
        The same for kube-apiserver and etcd alone (what ``up`` and the demo,
        hack/demo.sh, need): nothing else is looked up or built.
    python hack/controlplane.py up --kubeconfig PATH [--nodes N]
        Start etcd and kube-apiserver on free loopback ports, write an admin
        kubeconfig to PATH, optionally register N realistic Nodes, print
        ``ready``, and stay in the foreground until SIGTERM/SIGINT; then stop
        both processes and remove all temporary data.

The library (asset look-up and build, PKI, :class:`ControlPlane`, Node seeding)
is ``tests/support/env/controlplane.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.clusterassets import ensure_cluster_assets
from tests.support.env.controlplane import ensure_assets, ensure_kwok, log, serve
from tests.support.env.helm import ensure_helm


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="controlplane.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    assets_cmd = sub.add_parser(
        "assets",
        help="ensure kube-apiserver, etcd, kwok, helm, kured v2 and the real cluster's binaries; "
        "print kube-apiserver's directory",
    )
    assets_cmd.add_argument(
        "--only-control-plane",
        action="store_true",
        help="ensure kube-apiserver and etcd only (the demo's needs), nothing else",
    )
    up = sub.add_parser("up", help="run etcd + kube-apiserver on loopback until SIGTERM/SIGINT")
    up.add_argument(
        "--kubeconfig", required=True, type=Path, help="where to write the admin kubeconfig"
    )
    up.add_argument("--nodes", type=int, default=0, help="register N realistic Node objects")
    up.add_argument(
        "--apiserver-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra kube-apiserver flag (repeatable), e.g. audit-log-path=/tmp/audit.log",
    )
    args = parser.parse_args(argv)
    try:
        assets = ensure_assets()
        if args.cmd == "assets" and not args.only_control_plane:
            log(f"kwok: {ensure_kwok()}")
            log(f"helm: {ensure_helm()}")
            from tests.support.env.kured import ensure_kured  # its YAML needs the test extra

            log(f"kured v2 prototype: {ensure_kured()}")
            log(
                f"kubelet, kube-controller-manager, kube-scheduler: {ensure_cluster_assets(assets)}"
            )
    except RuntimeError as exc:
        log(str(exc))
        return 1
    if args.cmd == "assets":
        print(assets, flush=True)
        return 0
    extra = dict(a.split("=", 1) for a in args.apiserver_arg)
    return serve(assets, args.kubeconfig, args.nodes, extra)


if __name__ == "__main__":
    sys.exit(main())
