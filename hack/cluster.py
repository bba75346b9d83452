#!/usr/bin/env python3
"""A real local Kubernetes cluster for kumaco: the program behind ``hack/cluster.sh``.

Command-line contract (``hack/cluster.sh`` passes its arguments here)::

    cluster.py up --kubeconfig PATH [--nodes N] [--image REF]
        Ensure the binaries (kube-apiserver, etcd, kubelet, kube-controller-manager,
        kube-scheduler: built once, cached by their inputs), start the cluster of
        tests/support/env/cluster.py under a supervisor in the background (its pid, state
        and logs in the run directory), write an admin kubeconfig to PATH, import REF (the
        image hack/image.sh builds; hack/cluster.sh builds it) into every real node, and
        print REF as the LAST line of its output. Progress on stderr. Exit 1 when already up
        or when the cluster does not come up (its supervisor's log is printed).
    cluster.py image
        Print the imported image's reference again (exit 1 when no cluster is up).
    cluster.py down
        Stop the supervisor (SIGTERM): every process, mount, cgroup and namespace of the
        cluster goes, and its directory; a cluster whose supervisor died is removed from
        its trace (SIGKILL, cgroups, directory). Then list what is left (nothing, or exit 1).
    cluster.py check
        List the leftovers of the last cluster (exit 1 when there are any).
    cluster.py measure [--out FILE] [--idle SECONDS]
        In the foreground: a cluster up (the binaries already built), the seconds to both
        nodes Ready; then, after 30 s of settling, its idle RSS and CPU over SECONDS
        (default 60); then down, its seconds and leftovers. Written as JSON (with the
        command, the commit and the date) to FILE, default docs/cluster-figures.json.

The run directory is ``$KUMACO_CLUSTER_RUN`` (default ``/tmp/kumaco-cluster-run``):
``state.json`` (the supervisor's pid, the kubeconfig, the image, the API server's URL,
the cluster's trace), ``trace.json`` (kept after ``down`` for ``check``) and
``supervisor.log``; ``last-logs/`` holds the daemons' and the containers' logs of the last
cluster, copied when it stops. ``serve`` is the supervisor itself (``up`` starts it; not for people).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.cluster import Cluster, Trace, leftovers, reap
from tests.support.env.clusterassets import ensure_cluster_assets
from tests.support.env.controlplane import ensure_assets, log

RUN = Path(os.environ.get("KUMACO_CLUSTER_RUN") or "/tmp/kumaco-cluster-run")


def _state() -> dict[str, object] | None:
    path = RUN / "state.json"
    if not path.exists():
        return None
    state: dict[str, object] = json.loads(path.read_text())
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def serve(kubeconfig: Path, nodes: int, image: str) -> int:
    """The supervisor: the cluster up, the image imported, state.json written; until SIGTERM."""
    stopping: list[int] = []  # the handler only appends: no lock (kumaco/cmd/signals.py)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stopping.append(signum))
    shutil.rmtree(RUN / "last-logs", ignore_errors=True)  # the logs of this cluster only
    cluster = Cluster(nodes=nodes, keep_logs=RUN / "last-logs")
    (RUN / "trace.json").write_text(json.dumps(cluster.trace.to_json()))
    try:
        t0 = time.monotonic()
        cluster.start()
        (RUN / "trace.json").write_text(json.dumps(cluster.trace.to_json()))
        if image:
            log(
                f"{image} imported into every real node in {cluster.import_podman_image(image):.1f}s"
            )
        cluster.kubeconfig()
        assert cluster.cp is not None
        cluster.cp.write_kubeconfig(kubeconfig)
        state = {
            "pid": os.getpid(),
            "kubeconfig": str(kubeconfig),
            "image": image,
            "server": cluster.cp.url,
            "nodes": [n.name for n in cluster.real],
            "up_seconds": round(time.monotonic() - t0, 1),
            "trace": cluster.trace.to_json(),
        }
        tmp = RUN / "state.json.tmp"
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(RUN / "state.json")
        log(f"up in {state['up_seconds']}s: {cluster.cp.url}")
        while not stopping:
            time.sleep(0.2)
            for proc, name in (
                (cluster.kcm, "kube-controller-manager"),
                (cluster.scheduler, "kube-scheduler"),
            ):
                if proc is not None and proc.poll() is not None:
                    log(f"{name} exited with {proc.returncode}")
                    return 1
        return 0
    except Exception as exc:
        log(f"the cluster failed: {exc}")
        return 1
    finally:
        cluster.stop()
        (RUN / "trace.json").write_text(json.dumps(cluster.trace.to_json()))  # its stop time
        (RUN / "state.json").unlink(missing_ok=True)
        log("stopped; everything removed")


def up(kubeconfig: Path, nodes: int, image: str) -> int:
    state = _state()
    if state is not None and _alive(int(str(state["pid"]))):
        log(f"a cluster is already up (supervisor {state['pid']}); hack/cluster.sh down first")
        return 1
    RUN.mkdir(parents=True, exist_ok=True)
    (RUN / "state.json").unlink(missing_ok=True)
    ensure_cluster_assets(ensure_assets())
    t0 = time.monotonic()
    with (RUN / "supervisor.log").open("wb") as out:
        sup = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "serve",
                "--kubeconfig",
                str(kubeconfig.resolve()),
                "--nodes",
                str(nodes),
                "--image",
                image,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    while _state() is None:
        if sup.poll() is not None:
            sys.stderr.write((RUN / "supervisor.log").read_text()[-6000:])
            log(f"the cluster did not come up (supervisor exited {sup.returncode})")
            return 1
        time.sleep(0.5)
    log(f"cluster up in {time.monotonic() - t0:.1f}s (supervisor {sup.pid}, run dir {RUN})")
    log(f"kubeconfig: {kubeconfig}")
    print(image, flush=True)
    return 0


def down(timeout: float = 180) -> int:
    state = _state()
    if state is not None and _alive(pid := int(str(state["pid"]))):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if _alive(pid):
            log(f"the supervisor {pid} did not stop in {timeout}s")
            return 1
    elif state is None:
        log("no cluster is up")
    path = RUN / "trace.json"
    if path.exists():
        trace = Trace.from_json(json.loads(path.read_text()))
        # Only a cluster its supervisor never stopped is reaped (SIGKILL by its namespaces,
        # cgroups and directory); after a stop, what is left is listed, never killed.
        if trace.stopping_since is None and leftovers(trace):
            log("the last cluster was not stopped by its supervisor: removing what is left")
            reap(trace)
    return check()


def measure(out: Path, idle: float) -> int:
    """The figures of a warm cluster (see ``measure`` in the contract), as a record."""
    import datetime as dt

    from tests.support.env.cluster import usage

    repo = Path(__file__).resolve().parent.parent
    ensure_cluster_assets(ensure_assets())
    cluster = Cluster(nodes=2)
    try:
        cluster.start()
        time.sleep(30)
        idle_usage = usage(cluster.trace, idle)
    finally:
        t0 = time.monotonic()
        cluster.stop()
        down_seconds = time.monotonic() - t0
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    record = {
        "command": f"python hack/cluster.py measure --idle {idle:g}",
        "commit": commit,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "nodes": 2,
        "up_to_ready_seconds": cluster.timings["up_seconds"],
        "idle": idle_usage,
        "down_seconds": round(down_seconds, 1),
        "leftovers": len(leftovers(cluster.trace)),
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


def check() -> int:
    path = RUN / "trace.json"
    if not path.exists():
        return 0
    left = leftovers(Trace.from_json(json.loads(path.read_text())))
    for item in left:
        log(f"leftover: {item}")
    return 1 if left else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cluster.sh", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("up", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--kubeconfig", required=True, type=Path)
        p.add_argument("--nodes", type=int, default=2)
        p.add_argument("--image", default="")
    sub.add_parser("image")
    sub.add_parser("down")
    sub.add_parser("check")
    m = sub.add_parser("measure")
    m.add_argument("--out", type=Path, default=Path("docs/cluster-figures.json"))
    m.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args(argv)
    if args.cmd == "measure":
        return measure(args.out, args.idle)
    if args.cmd == "up":
        return up(args.kubeconfig, args.nodes, args.image)
    if args.cmd == "serve":
        return serve(args.kubeconfig, args.nodes, args.image)
    if args.cmd == "image":
        state = _state()
        if state is None:
            log("no cluster is up")
            return 1
        print(state["image"])
        return 0
    if args.cmd == "down":
        return down()
    return check()


if __name__ == "__main__":
    sys.exit(main())
