"""kumaco at scale on the real API server: latency against the physical floor, API cost, memory.

For each scale (nodes x windows) this starts a fresh control plane, seeds
realistic Nodes (~50 images, kubelet conditions, labels), declares windows in
3 namespaces and measures, with a separate watcher on its own connection:

* the floor: the same N node-status writes (a condition merged by type) sent
  by the simplest client there is -- pre-built strategic merge patches over
  keep-alive connections, sequentially and with kumaco's concurrency -- timed
  from its first request to the watcher seeing the last node changed;
* start-up: kumaco (a leader and a follower) from process start to every node
  carrying its conditions;
* openings and closings of a window covering every node (repeated): from the
  window's boundary to the watcher seeing the last node changed;
* MaintenanceInProgress: a RebootRequired condition appearing on one node,
  to MaintenanceInProgress=True on it;
* API cost by verb and resource from kube-apiserver's own
  ``apiserver_request_total``, for start-up, one opening, and a quiet period;
* kumaco's peak RSS and CPU seconds (leader and follower), from /proc.

Usage: ``python hack/bench.py`` (1,000 and 5,000 nodes x 10 and 100 windows;
writes docs/benchmarks.json and docs/benchmarks.md) or
``python hack/bench.py --nodes 100 --windows 5 --repeats 1 --quiet 20 --check``
(the small CI form: it asserts the count invariants and exits non-zero if
they do not hold). The planner micro-benchmark is ``--planner``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tests.support.controlplane import ControlPlane, ensure_assets, node_object, seed_nodes
from tests.support.harness import (
    MIP,
    REQUIRED,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    count_delta,
    request_counts,
    wait_for,
)

FLOOR = "bench.kumaco.dev/Floor"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the watcher


def lean_watcher(cp: ControlPlane) -> NodeWatcher:
    """The watcher that times kumaco and the floor alike: every node, no JSON decoding."""
    return NodeWatcher(Api(cp), track=(UM, MIP, FLOOR), lean=True, log=log)


# ----------------------------------------------------------------------------- the floor


def floor_writes(cp: ControlPlane, names: list[str], status: str, workers: int) -> float:
    """The simplest client: pre-built merge-by-type status patches over keep-alive connections."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = json.dumps(
        {
            "status": {
                "conditions": [
                    {
                        "type": FLOOR,
                        "status": status,
                        "reason": "Bench",
                        "message": "the floor",
                        "lastTransitionTime": stamp,
                        "lastHeartbeatTime": stamp,
                    }
                ]
            }
        }
    ).encode()
    local = threading.local()

    def write(name: str) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = cp.connection()
        conn.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            body=body,
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        )
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"floor write {name}: {resp.status}")

    t0 = time.time()
    if workers == 1:
        for n in names:
            write(n)
    else:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(write, names))
    return t0


# ----------------------------------------------------------------------------- processes


def proc_stats(pid: int) -> dict[str, float]:
    """A process's peak and current RSS (MB) and CPU seconds so far, from /proc."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    status = dict(line.split(":", 1) for line in lines if ":" in line)
    hwm = int(status["VmHWM"].split()[0])  # kB
    rss = int(status["VmRSS"].split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    return {
        "peak_rss_mb": round(hwm / 1024, 1),
        "rss_mb": round(rss / 1024, 1),
        "cpu_seconds": round(cpu, 2),
    }


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(counts: dict[tuple[str, str, str], float]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (verb, resource, sub), v in sorted(counts.items()):
        if sub.split(" ")[0].isdigit():  # a failed answer to the resource itself: "GET leases 404"
            out[f"{verb} {resource} {sub}"] = int(v)
        else:
            out[f"{verb} {resource}{'/' + sub if sub else ''}"] = int(v)
    return out


# ----------------------------------------------------------------------------- one scale


@dataclass
class Scale:
    """One benchmark configuration."""

    nodes: int
    windows: int
    repeats: int
    quiet: float
    concurrency: int = 16
    results: dict[str, Any] = field(default_factory=dict)


def window_times(start: dt.datetime, count: int) -> list[dt.datetime]:
    return [start + dt.timedelta(minutes=i) for i in range(count)]


def run_scale(sc: Scale, workdir: Path) -> dict[str, Any]:
    log(f"scale: {sc.nodes} nodes x {sc.windows} windows, {sc.repeats} openings")
    cp = ControlPlane(ensure_assets(), log_dir=workdir / "controlplane")
    cp.start()
    try:
        return _run_scale(sc, cp, workdir)
    finally:
        cp.stop()


def _run_scale(sc: Scale, cp: ControlPlane, workdir: Path) -> dict[str, Any]:
    api = Api(cp)
    kubeconfig = workdir / "admin.kubeconfig"
    cp.write_kubeconfig(kubeconfig)
    t0 = time.monotonic()
    seed_nodes(cp, sc.nodes)
    res: dict[str, Any] = {
        "nodes": sc.nodes,
        "windows": sc.windows,
        "seed_seconds": round(time.monotonic() - t0, 1),
    }
    names = {f"node-{i:05d}" for i in range(sc.nodes)}
    ordered = sorted(names)

    with lean_watcher(cp) as watcher:
        # ---- the floor, before kumaco exists (so nothing else competes)
        floors: dict[str, list[float]] = {"sequential": [], "concurrent": []}
        flips = 0
        for _ in range(max(2, sc.repeats)):
            for mode, workers in (("concurrent", sc.concurrency), ("sequential", 1)):
                status = "True" if flips % 2 == 0 else "False"  # every round changes every node
                flips += 1
                start = floor_writes(cp, ordered, status, workers)
                done = watcher.wait_all(FLOOR, status, names, start, 600)
                assert done is not None, "the floor writes never all showed"
                floors[mode].append(done - start)
                log(f"floor {mode}: {sc.nodes} writes seen in {done - start:.2f}s")
        res["floor_seconds"] = {
            m: {
                "p50": round(percentile(v, 50) or 0, 3),
                "p99": round(percentile(v, 99) or 0, 3),
                "runs": [round(x, 3) for x in v],
            }
            for m, v in floors.items()
        }

        # ---- windows: one measured window over every node, the rest realistic filler
        namespaces = [api.namespace(f"bench-{i}") for i in range(3)]
        boot_margin = 15 + sc.nodes / 25
        first_open = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=boot_margin)).replace(
            second=0, microsecond=0
        )
        first_open += dt.timedelta(minutes=1)
        opens = window_times(first_open, sc.repeats)
        by_hour: dict[int, list[int]] = {}
        for t in opens:
            by_hour.setdefault(t.hour, []).append(t.minute)
        measured = []
        for j, (hour, minutes) in enumerate(sorted(by_hour.items())):
            name = f"all-nodes-{j}"
            api.window(
                namespaces[0],
                name,
                {
                    "startTime": f"{','.join(map(str, minutes))} {hour} * * *",
                    "duration": "30s",
                    "nodeSelector": "",
                },
            )
            measured.append(name)
        selectors = [
            "topology.kubernetes.io/zone=zone-a",
            "kumaco.test/pool in (pool-1,pool-2)",
            "node.kubernetes.io/instance-type!=m6i.xlarge",
            "node-role.kubernetes.io/worker",
            "kubernetes.io/hostname in (node-00001,node-00002)",
            "topology.kubernetes.io/zone notin (zone-c)",
        ]
        for i in range(sc.windows - len(measured)):
            far = (first_open + dt.timedelta(hours=2 + i % 20)).hour
            api.window(
                namespaces[i % 3],
                f"w-{i:03d}",
                {
                    "startTime": f"{i % 60} {far} * * {i % 7}",
                    "duration": "1h",
                    "nodeSelector": selectors[i % len(selectors)],
                },
            )

        # ---- kumaco: a leader and a follower
        flags = [
            "--namespaces",
            ",".join(namespaces),
            "--leader-election-namespace",
            namespaces[0],
            "--max-in-progress",
            "10%",
            "--require-condition",
            REQUIRED,
            "--write-concurrency",
            str(sc.concurrency),
            "--log-level",
            "warning",
        ]
        before = request_counts(cp)
        started = time.time()
        leader = Kumaco(
            kubeconfig, flags, workdir / "leader.log", {"POD_NAME": "bench-leader"}, name="leader"
        ).start()
        wait_for(lambda: api.lease(namespaces[0], "kumaco") is not None, 60, what="a leader")
        follower = Kumaco(
            kubeconfig,
            flags,
            workdir / "follower.log",
            {"POD_NAME": "bench-follower"},
            name="follower",
        ).start()
        try:
            done = watcher.wait_all(UM, "False", names, started, 600)
            assert done is not None, "start-up did not converge"
            time.sleep(3)
            res["startup"] = {
                "seconds_to_converge": round(done - started, 2),
                "requests": summarize(count_delta(before, request_counts(cp))),
            }
            log(f"start-up converged in {done - started:.2f}s")

            # ---- the floor again while kumaco's two processes watch every node (as they
            # do during an opening): the same writes, now with the watch fan-out and
            # kumaco's event handling competing for the same cores. kumaco writes nothing.
            watched: list[float] = []
            for _ in range(2):
                status = "True" if flips % 2 == 0 else "False"
                flips += 1
                start = floor_writes(cp, ordered, status, sc.concurrency)
                done = watcher.wait_all(FLOOR, status, names, start, 600)
                assert done is not None, "the floor writes never all showed"
                watched.append(done - start)
                log(
                    f"floor concurrent, kumaco watching: {sc.nodes} writes seen in {watched[-1]:.2f}s"
                )
            res["floor_seconds"]["concurrent_kumaco_watching"] = {
                "p50": round(percentile(watched, 50) or 0, 3),
                "p99": round(percentile(watched, 99) or 0, 3),
                "runs": [round(x, 3) for x in watched],
            }
            time.sleep(3)

            # ---- repeated openings and closings, and a RebootRequired per opening
            open_lat, close_lat, mip_lat, node_open = [], [], [], []
            for k, t_open in enumerate(opens):
                time.sleep(max(0.0, t_open.timestamp() - 2 - time.time()))
                mark = request_counts(cp)
                b = t_open.timestamp()
                done = watcher.wait_all(UM, "True", names, b - 0.5, 120)
                assert done is not None, f"opening {k} did not converge"
                open_lat.append(done - b)
                node_open += [t - b for t in watcher.per_node(UM, "True", names, b - 0.5)]
                time.sleep(2)
                if k == 0:
                    res["opening_requests"] = summarize(count_delta(mark, request_counts(cp)))
                victim = ordered[(k * 7919) % len(ordered)]
                t_req = time.time()
                api.set_condition(victim, REQUIRED, "True")
                got = watcher.wait_all(MIP, "True", {victim}, t_req, 30)
                if got is not None:
                    mip_lat.append(got - t_req)
                c = b + 30
                done = watcher.wait_all(UM, "False", names, c - 0.5, 120)
                assert done is not None, f"closing {k} did not converge"
                close_lat.append(done - c)
                api.set_condition(victim, REQUIRED, "False")
                log(
                    f"opening {k + 1}/{len(opens)}: open {open_lat[-1]:.2f}s close {close_lat[-1]:.2f}s"
                    f" mip {mip_lat[-1] if mip_lat else float('nan'):.3f}s"
                )
            res["open_seconds"] = {
                "p50": percentile(open_lat, 50),
                "p99": percentile(open_lat, 99),
                "runs": open_lat,
            }
            res["close_seconds"] = {
                "p50": percentile(close_lat, 50),
                "p99": percentile(close_lat, 99),
                "runs": close_lat,
            }
            res["per_node_open_seconds"] = {
                "p50": percentile(node_open, 50),
                "p99": percentile(node_open, 99),
            }
            res["mip_seconds"] = {
                "p50": percentile(mip_lat, 50),
                "p99": percentile(mip_lat, 99),
                "runs": mip_lat,
            }
            floor = min(
                res["floor_seconds"]["concurrent"]["p50"], res["floor_seconds"]["sequential"]["p50"]
            )
            res["open_ratio_to_floor"] = (
                round((percentile(open_lat, 50) or 0) / floor, 3) if floor else None
            )
            fw = res["floor_seconds"]["concurrent_kumaco_watching"]["p50"]
            res["open_ratio_to_floor_kumaco_watching"] = (
                round((percentile(open_lat, 50) or 0) / fw, 3) if fw else None
            )
            res["close_ratio_to_floor"] = (
                round((percentile(close_lat, 50) or 0) / floor, 3) if floor else None
            )

            # ---- quiet
            time.sleep(5)
            quiet0 = request_counts(cp)
            log(f"quiet period: {sc.quiet:.0f}s")
            time.sleep(sc.quiet)
            res["quiet"] = {
                "seconds": sc.quiet,
                "requests": summarize(count_delta(quiet0, request_counts(cp))),
            }
            res["leader"] = proc_stats(leader.pid)
            res["follower"] = proc_stats(follower.pid)
        finally:
            for proc in (leader, follower):
                with contextlib.suppress(AssertionError):
                    proc.stop()
    return res


# ----------------------------------------------------------------------------- invariants


def check(res: dict[str, Any]) -> list[str]:
    """The count invariants: zero writes and LISTs when quiet; one write per changed node.

    ``apiserver_request_total`` also counts kube-apiserver's own loopback clients
    (e.g. its service-IP repair loop LISTs services every few minutes), so only
    the resources kumaco reads and writes are judged; Lease renewals are expected.
    """
    problems = []
    quiet = res["quiet"]["requests"]
    mine = ("nodes", "configmaps", "events")
    writes = {
        k: v
        for k, v in quiet.items()
        if k.split()[0] in ("PATCH", "PUT", "POST", "DELETE", "APPLY")
        and k.split()[1].split("/")[0] in mine
    }
    lists = {k: v for k, v in quiet.items() if k.startswith("LIST") and k.split()[1] in mine}
    if writes:
        problems.append(f"writes while quiet: {writes}")
    if lists:
        problems.append(f"LISTs while quiet: {lists}")
    n = res["nodes"]
    if res["startup"]["requests"].get("PATCH nodes/status") != n:
        problems.append(
            f"start-up wrote {res['startup']['requests'].get('PATCH nodes/status')} times for {n} nodes"
        )
    if res["opening_requests"].get("PATCH nodes/status") != n:
        problems.append(
            f"an opening wrote {res['opening_requests'].get('PATCH nodes/status')} times for {n} nodes"
        )
    return problems


# ----------------------------------------------------------------------------- planner


def planner_benchmark(nodes: int = 5000, windows: int = 100) -> dict[str, Any]:
    import random

    from kumaco.core.durations import SECOND
    from kumaco.core.nodes import NodeSet, node_view
    from kumaco.core.planner import Ceiling, Policy, plan
    from kumaco.core.windows import Window, parse_window

    rng = random.Random(1)
    views = [node_view(node_object(i, rng)) for i in range(nodes)]
    nodeset = NodeSet(v for v in views if v is not None)
    sels = [
        "",
        "topology.kubernetes.io/zone=zone-a",
        "kumaco.test/pool in (pool-1,pool-2)",
        "node.kubernetes.io/instance-type!=m6i.xlarge",
        "node-role.kubernetes.io/worker",
        "kubernetes.io/hostname in (node-00001,node-00002)",
    ]
    now = int(dt.datetime(2026, 12, 1, 12, 30, tzinfo=dt.UTC).timestamp()) * SECOND
    policy = Policy(ceiling=Ceiling(10, True), require=(REQUIRED,))
    out: dict[str, Any] = {"nodes": nodes, "windows": windows}
    starts: list[tuple[str, Callable[[int], str]]] = [
        ("realistic", lambda i: f"{i % 60} {i % 24} * * *"),
        ("all_open", lambda i: "* * * * *"),
    ]
    for label, start in starts:
        specs = [
            {"startTime": start(i), "duration": "2h", "nodeSelector": sels[i % len(sels)]}
            for i in range(windows)
        ]

        def parsed(specs: list[dict[str, str]] = specs) -> list[Window]:
            ws = [parse_window("maint", f"w{i}", d) for i, d in enumerate(specs)]
            return [w for w in ws if isinstance(w, Window)]

        ws = parsed()
        warm = min(timeit.repeat(partial(plan, ws, nodeset, now, policy), number=5, repeat=5)) / 5

        def cold(parsed: Callable[[], list[Window]] = parsed) -> None:
            nodeset.index._selected.clear()
            plan(parsed(), nodeset, now, policy)

        cold_t = min(timeit.repeat(cold, number=3, repeat=3)) / 3
        out[label] = {"warm_ms": round(warm * 1000, 1), "cold_ms": round(cold_t * 1000, 1)}
    return out


# ----------------------------------------------------------------------------- report


def machine() -> dict[str, Any]:
    kube = subprocess.run(
        [str(ensure_assets() / "kube-apiserver"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    etcd = subprocess.run(
        [str(ensure_assets() / "etcd"), "--version"], capture_output=True, text=True, check=False
    )
    import kubernetes

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB",
        "python": platform.python_version(),
        "kube_apiserver": kube.stdout.strip(),
        "etcd": etcd.stdout.splitlines()[0] if etcd.stdout else "",
        "kubernetes_client": kubernetes.__version__,
    }


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {m['date']} on {m['machine']}; Python {m['python']}, {m['kube_apiserver']}, {m['etcd']}, "
        f"kubernetes client {m['kubernetes_client']}. Everything (kube-apiserver, etcd, kumaco, the watcher) "
        "shares the 2 cores, so absolute times are noisy: compare the ratios, measured in the same run. "
        "Produced by `python hack/bench.py`; raw data in `docs/benchmarks.json`.",
        "",
        "## Latency (seconds; as seen by a separate watcher)",
        "",
        "| nodes | windows | floor (16 conns) p50 | floor (1 conn) p50 | open p50 | open p99 | ratio open/floor "
        "| floor, kumaco watching p50 | ratio to it | close p50 | close p99 "
        "| MaintenanceInProgress p50 / p99 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def f(x: object) -> str:
        return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)

    for r in doc["runs"]:
        fl = r["floor_seconds"]
        lines.append(
            f"| {r['nodes']} | {r['windows']} | {f(fl['concurrent']['p50'])} | {f(fl['sequential']['p50'])} "
            f"| {f(r['open_seconds']['p50'])} | {f(r['open_seconds']['p99'])} | **{f(r['open_ratio_to_floor'])}** "
            f"| {f(fl.get('concurrent_kumaco_watching', {}).get('p50'))} "
            f"| {f(r.get('open_ratio_to_floor_kumaco_watching'))} "
            f"| {f(r['close_seconds']['p50'])} | {f(r['close_seconds']['p99'])} "
            f"| {f(r['mip_seconds']['p50'])} / {f(r['mip_seconds']['p99'])} |"
        )
    lines += [
        "",
        "## API cost (from kube-apiserver's `apiserver_request_total`)",
        "",
        "Requests on the resources kumaco uses (nodes, configmaps, events, leases), by verb and "
        "resource. The counter also sees kube-apiserver's own loopback controllers and the "
        'benchmark\'s watcher and metrics scrapes; those are counted apart ("others") and listed '
        "in `docs/benchmarks.json`. Lease GET/PUT are the leader's and followers' renewals.",
        "",
        "| nodes | windows | phase | kumaco's resources | others |",
        "|---|---|---|---|---|",
    ]
    for r in doc["runs"]:
        phases = (
            ("start-up", r["startup"]["requests"]),
            ("one opening", r["opening_requests"]),
            (f"quiet {int(r['quiet']['seconds'])} s", r["quiet"]["requests"]),
        )
        for name, counts in phases:
            mine, others = split_counts(counts)
            lines.append(
                f"| {r['nodes']} | {r['windows']} | {name} | {_fmt_counts(mine) or 'nothing'} "
                f"| {sum(others.values())} |"
            )
    lines += [
        "",
        "## Resources (kumaco processes, from /proc)",
        "",
        "| nodes | windows | leader peak RSS MB | leader CPU s | follower peak RSS MB | follower CPU s "
        "| start-up s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["runs"]:
        lines.append(
            f"| {r['nodes']} | {r['windows']} | {r['leader']['peak_rss_mb']} | {r['leader']['cpu_seconds']} "
            f"| {r['follower']['peak_rss_mb']} | {r['follower']['cpu_seconds']} "
            f"| {r['startup']['seconds_to_converge']} |"
        )
    if "planner" in doc:
        p = doc["planner"]
        lines += [
            "",
            f"## Planner micro-benchmark ({p['nodes']} nodes x {p['windows']} windows, in-process)",
            "",
            "| windows | warm (ms) | cold: parse + plan (ms) |",
            "|---|---|---|",
            f"| realistic mix | {p['realistic']['warm_ms']} | {p['realistic']['cold_ms']} |",
            f"| all 100 open | {p['all_open']['warm_ms']} | {p['all_open']['cold_ms']} |",
        ]
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, met in targets(doc):
        lines.append(f"| {target} | {measured} | {'yes' if met else '**no**'} |")
    return "\n".join(lines) + "\n"


KUMACO_RESOURCES = ("nodes", "configmaps", "events", "leases")


def split_counts(counts: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Split ``VERB resource[/sub]`` counts into kumaco's resources and everything else."""
    mine: dict[str, int] = {}
    others: dict[str, int] = {}
    for k, v in counts.items():
        parts = k.split()
        resource = parts[1].split("/")[0] if len(parts) > 1 else ""
        (mine if resource in KUMACO_RESOURCES else others)[k] = v
    return mine, others


def targets(doc: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The issue's targets, judged from the measurements (largest scale for latency and RSS)."""
    out: list[tuple[str, str, bool]] = []
    big = [r for r in doc["runs"] if r["nodes"] == max(x["nodes"] for x in doc["runs"])]
    for r in big:
        ratio = r["open_ratio_to_floor"]
        out.append(
            (
                f"window-open latency <= 1.25x the floor ({r['nodes']} x {r['windows']})",
                f"{ratio:.2f}x" if ratio is not None else "-",
                ratio is not None and ratio <= 1.25,
            )
        )
        out.append(
            (
                f"leader RSS <= 150 MB ({r['nodes']} x {r['windows']})",
                f"{r['leader']['peak_rss_mb']} MB",
                r["leader"]["peak_rss_mb"] <= 150,
            )
        )
    problems = [p for r in doc["runs"] for p in check(r)]
    out.append(
        (
            "quiet: zero writes and zero LISTs; one write per changed node at start-up and opening",
            "all scales" if not problems else "; ".join(problems),
            not problems,
        )
    )
    if "planner" in doc:
        p = doc["planner"]
        worst = max(p["realistic"]["warm_ms"], p["all_open"]["warm_ms"])
        out.append(
            (
                f"planner <= 50 ms ({p['nodes']} nodes x {p['windows']} windows)",
                f"{p['realistic']['warm_ms']} ms realistic, {p['all_open']['warm_ms']} ms all open",
                worst <= 50,
            )
        )
    return out


ANALYSIS = "<!-- analysis: kept when hack/bench.py rewrites this file -->"


def write_markdown(path: Path, doc: dict[str, Any]) -> None:
    """Write the generated tables; keep any hand-written analysis after the marker."""
    kept = ""
    if path.exists():
        old = path.read_text()
        if ANALYSIS in old:
            kept = old[old.index(ANALYSIS) :]
    path.write_text(markdown(doc) + ("\n" + kept if kept else ""))


def _fmt_counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.items())


def run_benchmarks(
    nodes: list[int],
    windows: list[int],
    repeats: int,
    quiet: float,
    output: Path,
    markdown_path: Path,
    check_only: bool,
) -> int:
    """``python hack/bench.py``: every scale (nodes x windows) on its own control plane.

    Unless ``check_only``, adds the planner micro-benchmark and writes ``output``
    (JSON) and ``markdown_path``. Prints the document; 1 if an invariant broke.
    """
    doc: dict[str, Any] = {"machine": machine(), "runs": []}
    problems: list[str] = []
    for n in nodes:
        for w in windows:
            with tempfile.TemporaryDirectory(prefix="kumaco-bench-") as tmp:
                res = run_scale(Scale(n, w, repeats, quiet), Path(tmp))
            doc["runs"].append(res)
            problems += [f"{n}x{w}: {p}" for p in check(res)]
            log(json.dumps(res)[:2000])
    if not check_only:
        doc["planner"] = planner_benchmark()
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(doc, indent=2) + "\n")
        write_markdown(markdown_path, doc)
    for problem in problems:
        log(f"INVARIANT BROKEN: {problem}")
    print(json.dumps(doc, indent=2))
    return 1 if problems else 0
