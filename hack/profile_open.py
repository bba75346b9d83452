#!/usr/bin/env python3
"""Where kumaco's CPU goes during one window opening over every node (py-spy; not in CI).

``python hack/profile_open.py [--nodes 5000] [--no-follower]`` starts its own
control plane, seeds N realistic nodes, runs a kumaco leader (and a follower),
opens one window over every node at the next minute boundary, and samples both
processes with ``py-spy record`` (``pip install -e ".[profile]"``) for 25 s
from just before the boundary. It prints the opening's latency as a separate
watcher saw it, each process's CPU seconds during the opening, and the top
frames by self time and by inclusive time (kumaco's own frames). Raw py-spy
output stays in ``--workdir`` (default ``artifacts/profile``).

The numbers are for explaining the benchmark (docs/benchmarks.md), not for
asserting anything: everything shares the machine's cores.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hack.bench import LeanWatcher, proc_stats
from tests.support.controlplane import ControlPlane, ensure_assets, seed_nodes
from tests.support.harness import Api, Kumaco


def summarize(raw: Path, top: int) -> list[str]:
    """Top frames of a py-spy ``raw`` (collapsed stacks) file, by self and inclusive samples."""
    total: collections.Counter[str] = collections.Counter()
    self_: collections.Counter[str] = collections.Counter()
    n = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        c = int(count)
        n += c
        frames = stack.split(";")
        for f in set(frames):
            total[f] += c
        self_[frames[-1]] += c
    out = [f"{n} samples; top self time:"]
    out += [f"  {c / n:6.1%} {f[:150]}" for f, c in self_.most_common(top)]
    out.append("top inclusive time (kumaco's frames):")
    out += [f"  {c / n:6.1%} {f[:150]}" for f, c in total.most_common(200) if "kumaco" in f][:top]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--no-follower", action="store_true")
    p.add_argument("--workdir", type=Path, default=Path("artifacts/profile"))
    p.add_argument("--top", type=int, default=15)
    a = p.parse_args()
    if shutil.which("py-spy") is None:
        print('py-spy is missing: pip install -e ".[profile]"', file=sys.stderr)
        return 2
    a.workdir.mkdir(parents=True, exist_ok=True)
    cp = ControlPlane(ensure_assets(), log_dir=a.workdir / "controlplane")
    cp.start()
    procs: list[Kumaco] = []
    try:
        seed_nodes(cp, a.nodes)
        api = Api(cp)
        ns = api.namespace("profile")
        kubeconfig = a.workdir / "admin.kubeconfig"
        cp.write_kubeconfig(kubeconfig)
        names = {f"node-{i:05d}" for i in range(a.nodes)}
        margin = 30 + a.nodes / 100
        boundary = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=margin)).replace(
            second=0, microsecond=0
        ) + dt.timedelta(minutes=1)
        api.window(
            ns,
            "all",
            {
                "startTime": f"{boundary.minute} {boundary.hour} * * *",
                "duration": "40s",
                "nodeSelector": "",
            },
        )
        flags = ["--namespaces", ns, "--leader-election-namespace", ns, "--log-level", "warning"]
        flags += ["--max-in-progress", "10%", "--require-condition", "kured.dev/RebootRequired"]
        roles = ["leader"] if a.no_follower else ["leader", "follower"]
        with LeanWatcher(cp) as watcher:
            for role in roles:
                procs.append(
                    Kumaco(kubeconfig, flags, a.workdir / f"{role}.log", {"POD_NAME": role}).start()
                )
                time.sleep(5)  # the first one started leads
            print(f"window opens at {boundary:%H:%M:%S}Z", flush=True)
            while time.time() < boundary.timestamp() - 3:
                time.sleep(0.5)
            before = {r: proc_stats(k.proc.pid) for r, k in zip(roles, procs, strict=True)}
            spy = ["py-spy", "record", "-d", "25", "-r", "200", "--nonblocking", "-f", "raw"]
            spies = [
                subprocess.Popen(
                    [*spy, "-p", str(k.proc.pid), "-o", str(a.workdir / f"{r}.raw")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for r, k in zip(roles, procs, strict=True)
            ]
            done = watcher.wait_all("um", "True", names, boundary.timestamp() - 0.5, 120)
            after = {r: proc_stats(k.proc.pid) for r, k in zip(roles, procs, strict=True)}
            if done is None:
                print("the opening did not converge within 120 s")
            else:
                print(f"opening: every node seen True {done - boundary.timestamp():.2f}s after")
            for r in roles:
                cpu = after[r]["cpu_seconds"] - before[r]["cpu_seconds"]
                print(
                    f"{r}: {cpu:.2f} CPU s during the opening, peak RSS {after[r]['peak_rss_mb']} MB"
                )
            for s in spies:
                s.wait()
            for r in roles:
                print(f"--- {r}: " + "\n".join(summarize(a.workdir / f"{r}.raw", a.top)))
    finally:
        for k in procs:
            k.stop()
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
