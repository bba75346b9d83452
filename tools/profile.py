"""Where kumaco's CPU goes during one window opening over every node (py-spy; not in CI).

``python hack/profile_open.py [--nodes 5000] [--no-follower]`` starts its own
control plane, seeds N realistic nodes, runs a kumaco leader (and a follower),
opens one window over every node at the next minute boundary, and samples both
processes with ``py-spy record`` (``pip install -e ".[profile]"``) from just
before the boundary for 25 s or N/200 s, whichever is longer (the window lasts
N/50 s, at least 40 s, so it stays open through a slow opening). It prints the opening's latency as a separate
watcher saw it, each process's CPU seconds during the opening, and the top
frames by self time and by inclusive time (kumaco's own frames). Raw py-spy
output stays in ``--workdir`` (default ``artifacts/profile``).

The numbers are for explaining the benchmark (docs/benchmarks.md), not for
asserting anything: everything shares the machine's cores.
"""

from __future__ import annotations

import collections
import datetime as dt
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.env.controlplane import ControlPlane, ensure_assets, seed_nodes
from tests.support.env.harness import REQUIRED, UM, Api, Kumaco
from tools.bench import lean_watcher, proc_stats


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


def profile_opening(nodes: int, follower: bool, workdir: Path, top: int) -> int:
    """``python hack/profile_open.py``: the run of the module docstring; 2 without py-spy."""
    if shutil.which("py-spy") is None:
        print('py-spy is missing: pip install -e ".[profile]"', file=sys.stderr)
        return 2
    workdir.mkdir(parents=True, exist_ok=True)
    cp = ControlPlane(ensure_assets(), log_dir=workdir / "controlplane")
    cp.start()
    procs: list[Kumaco] = []
    try:
        seed_nodes(cp, nodes)
        api = Api(cp)
        ns = api.namespace("profile")
        kubeconfig = workdir / "admin.kubeconfig"
        cp.write_kubeconfig(kubeconfig)
        names = {f"node-{i:05d}" for i in range(nodes)}
        margin = 30 + nodes / 100
        boundary = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=margin)).replace(
            second=0, microsecond=0
        ) + dt.timedelta(minutes=1)
        api.window(
            ns,
            "all",
            {
                "startTime": f"{boundary.minute} {boundary.hour} * * *",
                "duration": f"{max(40, nodes // 50)}s",
                "nodeSelector": "",
            },
        )
        flags = ["--namespaces", ns, "--leader-election-namespace", ns, "--log-level", "warning"]
        flags += ["--max-in-progress", "10%", "--require-condition", REQUIRED]
        roles = ["leader", "follower"] if follower else ["leader"]
        with lean_watcher(cp) as watcher:
            for role in roles:
                procs.append(
                    Kumaco(kubeconfig, flags, workdir / f"{role}.log", {"POD_NAME": role}).start()
                )
                time.sleep(5)  # the first one started leads
            print(f"window opens at {boundary:%H:%M:%S}Z", flush=True)
            while time.time() < boundary.timestamp() - 3:
                time.sleep(0.5)
            before = {r: proc_stats(k.pid) for r, k in zip(roles, procs, strict=True)}
            sample = max(25, nodes // 200)
            spy = ["py-spy", "record", "-d", str(sample), "-r", "200", "--nonblocking", "-f", "raw"]
            spies = [
                subprocess.Popen(
                    [*spy, "-p", str(k.pid), "-o", str(workdir / f"{r}.raw")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for r, k in zip(roles, procs, strict=True)
            ]
            limit = max(120, nodes // 100)
            done = watcher.wait_all(UM, "True", names, boundary.timestamp() - 0.5, limit)
            after = {r: proc_stats(k.pid) for r, k in zip(roles, procs, strict=True)}
            if done is None:
                print(f"the opening did not converge within {limit} s")
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
                print(f"--- {r}: " + "\n".join(summarize(workdir / f"{r}.raw", top)))
    finally:
        for k in procs:
            k.stop()
        cp.stop()
    return 0
