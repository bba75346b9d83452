"""kumaco at scale on the real API server, in a cluster that lives: latency against the floor, cost, memory.

For each scale (nodes x windows) this starts a fresh control plane, seeds
realistic Nodes (~50 images, a dozen labels, kubelet's and
node-problem-detector's conditions), and -- unless switched off -- makes the
cluster live: kwok plays every kubelet (status reports and node Leases,
:mod:`tests.support.env.kwok`) and :mod:`tools.churn` adds the fleet's
other writers (node-problem-detector, relabelling, reboots, replacements).
Then, with a separate watcher on its own connection, under that churn:

* the floor: the same N node-status writes (a condition merged by type) sent
  by the simplest client there is -- pre-built strategic merge patches over
  keep-alive connections with kumaco's concurrency -- timed from its first
  request to the watcher seeing the last node changed; measured alone (before
  kumaco starts) and again while kumaco's two processes watch every node;
* start-up: kumaco (a leader and a follower) from process start to every node
  carrying its conditions;
* the steady state: a quiet period with no window changing -- kumaco's CPU
  (% of one core) and RSS, and its requests (writes only to nodes the churn
  added, one each; no LIST);
* openings and closings of a window covering every node: from the window's
  boundary to the watcher seeing the last node changed; MaintenanceInProgress
  on one node that starts to need a reboot;
* the API server, etcd and kwok: CPU and peak RSS.

Every wait and the measured window are sized from the floor measured in the
same run (the window lasts several floors; openings are spaced by it; spare
openings absorb a slow start), so the benchmark finishes on a slow machine
and at 50,000 nodes. kumaco's own requests are counted from the API server's
audit log (by user agent): the server's request counter cannot tell them
from kwok's heartbeats.

Usage: ``python hack/bench.py`` (see its ``--help``); the CI short forms are
tests/e2e/test_bench_small.py. Results: docs/benchmarks.json and
docs/benchmarks.md (:mod:`tools.benchreport`).
"""

from __future__ import annotations

import bisect
import concurrent.futures
import contextlib
import datetime as dt
import gc
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import timeit
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tests.support.builders.policies import policy_of
from tests.support.env.auditing import audit_args
from tests.support.env.controlplane import (
    ControlPlane,
    ensure_assets,
    ensure_kwok,
    node_object,
    seed_nodes,
)
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    Shift,
    count_delta,
    request_counts,
    shift_before,
    wait_for,
)
from tests.support.env.kwok import Kwok, KwokSettings
from tests.support.judges.figures import commit_of
from tools.churn import Churn, ChurnRates

REPO = Path(__file__).resolve().parents[1]

FLOOR = "bench.kumaco.dev/Floor"
FLOOR_AGENT = "kumaco-bench-floor"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the watcher


def lean_watcher(cp: ControlPlane) -> NodeWatcher:
    """The watcher that times kumaco and the floor alike: every node, no JSON decoding."""
    return NodeWatcher(Api(cp), track=(UM, MIP, FLOOR), lean=True, log=log)


def converge(
    watcher: NodeWatcher,
    ctype: str,
    status: str,
    names: set[str],
    since: float,
    timeout: float,
    gone: Callable[[], set[str]] = set,
) -> float | None:
    """When the last of ``names`` (less those ``gone()``) reached ``status`` after ``since``.

    Reads only the watcher's changes recorded after ``since`` (they are in
    arrival order), so waiting over 50,000 nodes stays cheap. None on timeout.
    """
    deadline = time.time() + timeout
    with watcher._lock:
        idx = bisect.bisect_left(watcher.changes, since, key=lambda c: c[0])
    reached: dict[str, float] = {}
    while True:
        with watcher._lock:
            new = watcher.changes[idx:]
        idx += len(new)
        for t, n, k, s in new:
            if k == ctype and s == status and n in names and n not in reached:
                reached[n] = t
        target = names - gone()
        if target and all(n in reached for n in target):
            return max(reached[n] for n in target)
        if time.time() > deadline:
            return None
        time.sleep(0.2)


# ----------------------------------------------------------------------------- the floor


def floor_writes(cp: ControlPlane, names: list[str], status: str, workers: int) -> float:
    """The simplest client: pre-built merge-by-type status patches over keep-alive connections.

    Nodes deleted meanwhile (404) are skipped. Returns when the first request left.
    """
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
    headers = {"Content-Type": "application/strategic-merge-patch+json", "User-Agent": FLOOR_AGENT}

    def write(name: str) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = cp.connection()
        conn.request("PATCH", f"/api/v1/nodes/{name}/status", body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        if resp.status not in (200, 404):
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


def machine_busy() -> tuple[int, int]:
    """(all, idle) CPU ticks of the machine so far, from /proc/stat."""
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(v), v[3] + v[4]


def busy_percent(a: tuple[int, int], b: tuple[int, int]) -> float:
    """How busy the whole machine was between two :func:`machine_busy` samples (% of all cores)."""
    total, idle = b[0] - a[0], b[1] - a[1]
    return round(100 * (1 - idle / total), 1) if total else 0.0


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats(values: list[float]) -> dict[str, Any]:
    return {
        "p50": None if not values else round(percentile(values, 50) or 0, 3),
        "p99": None if not values else round(percentile(values, 99) or 0, 3),
        "runs": [round(v, 3) for v in values],
    }


def summarize(counts: dict[tuple[str, str, str], float]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (verb, resource, sub), v in sorted(counts.items()):
        if sub.split(" ")[0].isdigit():  # a failed answer to the resource itself: "GET leases 404"
            out[f"{verb} {resource} {sub}"] = int(v)
        else:
            out[f"{verb} {resource}{'/' + sub if sub else ''}"] = int(v)
    return out


# ----------------------------------------------------------------------------- kumaco's requests

#: Nodes and ConfigMaps at Metadata level (who, what, which object, the answer's code); the
#: Leases of kwok's kubelets (hundreds a second) not at all.
BENCH_AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    resources: [{group: "", resources: ["nodes", "nodes/status", "configmaps"]}]
  - level: None
"""


def bench_audit_args(workdir: Path) -> dict[str, str]:
    return audit_args(
        workdir,
        BENCH_AUDIT_POLICY,
        name="bench-audit-policy.yaml",
        extra={"audit-log-maxsize": "100000"},  # MB: not rotated at 100 MB (the default) mid-run
    )


@dataclass
class KumacoRequests:
    """kumaco's requests on nodes and ConfigMaps, read from the audit log by user agent.

    ``mark()`` is an instant; ``between(a, b)`` the requests received in between
    (across the log and any rotated part of it), as ``VERB resource[/sub][ code]``
    counts and, for successful node-status writes, the nodes written with how often.
    """

    path: Path

    def mark(self) -> float:
        time.sleep(1.0)  # the last answers of a phase reach the log
        return time.time()

    def _events(self, start: float, end: float) -> Iterator[dict[str, Any]]:
        files = sorted(self.path.parent.glob(self.path.stem + "*" + self.path.suffix))
        for path in files:
            if path.stat().st_mtime < start:
                continue  # a rotated part that ended before the phase
            with path.open("rb") as f:
                for line in f:
                    if b'"userAgent":"kumaco/' not in line:
                        continue
                    with contextlib.suppress(ValueError, KeyError):
                        ev = json.loads(line)
                        at = dt.datetime.fromisoformat(
                            ev["requestReceivedTimestamp"].replace("Z", "+00:00")
                        ).timestamp()
                        if start <= at <= end:
                            yield ev

    def between(self, start: float, end: float) -> dict[str, Any]:
        counts: dict[str, int] = {}
        by_who: dict[str, int] = {}
        written: dict[str, int] = {}
        for ev in self._events(start, end):
            verb, stage = ev.get("verb", ""), ev.get("stage", "")
            if stage != ("ResponseStarted" if verb == "watch" else "ResponseComplete"):
                continue
            ref = ev.get("objectRef") or {}
            code = int((ev.get("responseStatus") or {}).get("code") or 0)
            key = f"{verb.upper()} {ref.get('resource', '')}"
            if ref.get("subresource"):
                key += f"/{ref['subresource']}"
            if verb == "get" and ref.get("name"):
                key = key.replace("GET ", "GET one ")
            if not 200 <= code < 300:
                key += f" {code}"
            counts[key] = counts.get(key, 0) + 1
            if verb in ("list", "watch"):
                ua = str(ev.get("userAgent", ""))
                who = f"{key} by {ua[ua.find('(') + 1 : ua.rfind(')')]}"
                by_who[who] = by_who.get(who, 0) + 1
            if verb == "patch" and ref.get("subresource") == "status" and 200 <= code < 300:
                name = str(ref.get("name"))
                written[name] = written.get(name, 0) + 1
        return {"requests": dict(sorted(counts.items())), "written": written, "reads_by": by_who}


def terminated_watchers(cp: ControlPlane) -> float:
    """Node watchers the API server closed because they could not keep up, so far."""
    _status, body = cp.get("/metrics")
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in body.decode().splitlines()
        if line.startswith("apiserver_terminated_watchers_total{") and 'resource="nodes"' in line
    )


def node_writes(req: dict[str, Any]) -> int:
    return int(req["requests"].get("PATCH nodes/status", 0))


def conflicts(req: dict[str, Any]) -> int:
    return int(req["requests"].get("PATCH nodes/status 409", 0))


# ----------------------------------------------------------------------------- one scale


@dataclass
class Scale:
    """One benchmark configuration (see ``hack/bench.py --help`` for each knob)."""

    nodes: int
    windows: int
    repeats: int
    quiet: float
    concurrency: int = 16
    kwok: KwokSettings | None = None
    churn: ChurnRates | None = None
    #: Rounds of the floor alone and of the floor with kumaco watching.
    floor_rounds: int = 2
    #: Also time the floor over one connection (slow at large scales).
    sequential_floor: bool = False
    results: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """The measured window, sized from the floor: its duration, the openings, every wait.

    kumaco runs on a shifted wall clock (:class:`~tests.support.env.harness.Shift`): its first
    opening, a whole minute of kumaco's clock, comes exactly ``ready_in`` seconds after the
    plan instead of at the machine's next minute after that (up to a minute of waiting).
    :attr:`opens` are kumaco's times (what the crons name); :meth:`real` is when the
    machine reaches one.
    """

    floor: float
    duration: int  # seconds the measured window stays open
    spacing: int  # minutes between two openings
    opens: list[dt.datetime]
    wait: float  # the longest a convergence is waited for
    shift: Shift

    def real(self, t: dt.datetime) -> float:
        """The machine's Unix time at which kumaco's clock reads ``t``."""
        return t.timestamp() - self.shift.offset

    @staticmethod
    def size(floor: float, repeats: int, ready_in: float, spares: int = 3) -> Plan:
        """Openings after ``ready_in`` seconds; each opening has room for many floors.

        On the targets' slow reference machine the floor took 17-20 s alone and 44-51 s
        with kumaco watching (2.5x); on this shared machine, with kwok's Leases and
        other work, 24-28 s alone and 142 s watching (5.5x). The window stays open
        10 floors (+30 s) and an opening is waited for until shortly before it
        closes, so that the window never closes mid-opening; openings are spaced
        by the window and room for the closing.
        """
        duration = max(30, math.ceil(10 * floor + 30))
        spacing = max(1, math.ceil((duration + 5 * floor + 30) / 60))
        shift = shift_before(ready_in)
        opens = [shift.opens + dt.timedelta(minutes=i * spacing) for i in range(repeats + spares)]
        return Plan(floor, duration, spacing, opens, wait=duration - 10.0, shift=shift)

    def quiet_from(self, now: float, need: float) -> float:
        """The first machine time from ``now`` that has ``need`` seconds before the next
        opening of the plan less 10 s, outside any window of the plan (a window counted
        until 45 s after it closes, when the closing's writes are worked off).
        """
        start = now
        for t in self.opens:
            if start + need <= self.real(t) - 10:
                break
            start = max(start, self.real(t) + self.duration + 45)
        return start

    def schedules(self) -> list[str]:
        """Cron schedules (one per hour touched) firing at exactly :attr:`opens`."""
        by_hour: dict[tuple[int, int, int], list[int]] = {}
        for t in self.opens:
            by_hour.setdefault((t.month, t.day, t.hour), []).append(t.minute)
        return [
            f"{','.join(map(str, sorted(ms)))} {h} {d} {m} *"
            for (m, d, h), ms in sorted(by_hour.items())
        ]


def run_scale(sc: Scale, workdir: Path) -> dict[str, Any]:
    """One scale on its own control plane; the result so far even when a phase fails."""
    log(
        f"scale: {sc.nodes} nodes x {sc.windows} windows, {sc.repeats} openings, "
        f"kwok {'on' if sc.kwok else 'off'}, churn {'on' if sc.churn else 'off'}"
    )
    res: dict[str, Any] = {"nodes": sc.nodes, "windows": sc.windows}
    res["kumaco_commit"] = commit_of()
    res["settings"] = {
        "repeats": sc.repeats,
        "quiet_seconds": sc.quiet,
        "concurrency": sc.concurrency,
        "kwok": None if sc.kwok is None else vars(sc.kwok),
        "churn": None if sc.churn is None else vars(sc.churn),
    }
    res["load_before"] = [round(x, 2) for x in os.getloadavg()]
    busy0 = machine_busy()
    cp = ControlPlane(
        ensure_assets(), log_dir=workdir / "controlplane", apiserver_args=bench_audit_args(workdir)
    )
    cp.start()
    try:
        _run_scale(sc, cp, workdir, res)
    except Exception as exc:
        res["error"] = f"{type(exc).__name__}: {exc}"
        log(f"scale {sc.nodes} x {sc.windows} failed: {res['error']}")
    finally:
        res["load_after"] = [round(x, 2) for x in os.getloadavg()]
        res["machine_busy_percent"] = busy_percent(busy0, machine_busy())
        cp.stop()
    return res


def _run_scale(sc: Scale, cp: ControlPlane, workdir: Path, res: dict[str, Any]) -> None:
    api = Api(cp)
    audit = KumacoRequests(cp.audit_log)
    kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
    period = sc.kwok.status_period if sc.kwok else 0.0
    t0 = time.monotonic()
    seed_nodes(cp, sc.nodes, heartbeat_spread=period, npd=sc.churn is not None)
    res["seed_seconds"] = round(time.monotonic() - t0, 1)
    names = {f"node-{i:05d}" for i in range(sc.nodes)}
    others: dict[str, int] = {}  # process name -> pid, measured with kumaco's

    with contextlib.ExitStack() as stack:
        kwok: Kwok | None = None
        if sc.kwok is not None:
            kwok = stack.enter_context(Kwok(cp, workdir / "kwok", sc.kwok))
            others["kwok"] = kwok.pid
            if sc.kwok.lease_seconds:
                took = kwok.wait_leases(sc.nodes, timeout=120 + sc.nodes / 50)
                res["kwok_takeover_seconds"] = round(took, 1)
                log(f"kwok manages {sc.nodes} nodes (Leases) after {took:.1f}s")
        churn: Churn | None = None
        if sc.churn is not None:
            churn = stack.enter_context(Churn(cp, names, sc.churn))
        gone: Callable[[], set[str]] = churn.deleted if churn is not None else set
        assert cp.apiserver is not None and cp.etcd is not None
        others["kube-apiserver"], others["etcd"] = cp.apiserver.pid, cp.etcd.pid
        watcher = stack.enter_context(lean_watcher(cp))

        def present() -> list[str]:
            return sorted(names - gone())

        flips = 0

        def floor_round(what: str) -> float:
            nonlocal flips
            status = "True" if flips % 2 == 0 else "False"  # every round changes every node
            flips += 1
            start = floor_writes(cp, present(), status, sc.concurrency)
            done = converge(watcher, FLOOR, status, names, start, max(600.0, sc.nodes / 20), gone)
            assert done is not None, f"the floor writes never all showed ({what})"
            log(f"floor {what}: {sc.nodes} writes seen in {done - start:.2f}s")
            return done - start

        # ---- the floor, before kumaco exists, under the same churn
        alone = [floor_round("alone") for _ in range(sc.floor_rounds)]
        res["floor_seconds"] = {"concurrent": stats(alone)}
        if sc.sequential_floor:
            seq: list[float] = []
            for _ in range(sc.floor_rounds):
                status = "True" if flips % 2 == 0 else "False"
                flips += 1
                start = floor_writes(cp, present(), status, 1)
                done = converge(watcher, FLOOR, status, names, start, 1800, gone)
                assert done is not None, "the sequential floor never showed"
                seq.append(done - start)
            res["floor_seconds"]["sequential"] = stats(seq)
        floor = percentile(alone, 50) or 1.0

        # ---- the plan, from the floor: start-up, the floor again, the quiet period, then openings
        # Start-up is a LIST and N writes, the floor with kumaco watching the same writes:
        # each up to ~5 floors on a loaded machine; spare openings absorb the rest.
        ready_in = 20 + 5 * floor + sc.floor_rounds * 5 * floor + sc.quiet + 15
        plan = Plan.size(floor, sc.repeats, ready_in)
        res["plan"] = {
            "window_seconds": plan.duration,
            "spacing_minutes": plan.spacing,
            "opens": [t.isoformat() for t in plan.opens],  # kumaco's clock
            "clock_offset_seconds": round(plan.shift.offset, 3),
            "wait_seconds": plan.wait,
        }
        log(
            f"plan: window {plan.duration}s every {plan.spacing} min from "
            f"{plan.opens[0]:%H:%M}, waits up to {plan.wait:.0f}s"
        )
        namespaces = [api.namespace(f"bench-{i}") for i in range(3)]
        for j, schedule in enumerate(plan.schedules()):
            api.window(
                namespaces[0],
                f"all-nodes-{j}",
                {"startTime": schedule, "duration": f"{plan.duration}s", "nodeSelector": ""},
            )
        selectors = [
            "topology.kubernetes.io/zone=zone-a",
            "kumaco.test/pool in (pool-1,pool-2)",
            "node.kubernetes.io/instance-type!=m6i.xlarge",
            "node-role.kubernetes.io/worker",
            "kubernetes.io/hostname in (node-00001,node-00002)",
            "topology.kubernetes.io/zone notin (zone-c)",
        ]
        for i in range(sc.windows - len(plan.schedules())):
            far = (plan.opens[-1] + dt.timedelta(hours=2 + i % 20)).hour
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
        before, mark = request_counts(cp), audit.mark()
        started = time.time()

        def replica(name: str) -> Kumaco:
            """A replica on the plan's clock, run from the repository (where the shifted
            launcher's module is importable).
            """
            env = {"POD_NAME": f"bench-{name}"}
            log_path = workdir / f"{name}.log"
            launcher = plan.shift.launcher
            return Kumaco(kubeconfig, flags, log_path, env, name, launcher=launcher, cwd=REPO)

        leader = replica("leader").start()
        stack.callback(_stop, leader)
        wait_for(lambda: api.lease(namespaces[0], "kumaco") is not None, 120, what="a leader")
        follower = replica("follower").start()
        stack.callback(_stop, follower)
        pids = {"leader": leader.pid, "follower": follower.pid, **others}
        done = converge(watcher, UM, "False", names, started, max(600.0, plan.wait * 3), gone)
        assert done is not None, "start-up did not converge"
        res["startup"] = {
            "seconds_to_converge": round(done - started, 2),
            "requests": summarize(count_delta(before, request_counts(cp))),
            "kumaco": audit.between(mark, audit.mark())["requests"],
            "between": [round(mark, 1), round(time.time(), 1)],
        }
        log(f"start-up converged in {done - started:.2f}s")
        res["after_startup"] = {k: proc_stats(p) for k, p in pids.items()}

        # ---- the floor again while kumaco's two processes watch every node (as during an
        # opening): the same writes, with the watch fan-out and kumaco's event handling
        # competing for the same cores. kumaco writes nothing.
        watched = []
        for _ in range(sc.floor_rounds):
            if time.time() + 4 * floor > plan.real(plan.opens[0]) - 5:
                log("no time left for another floor round before the first opening")
                break
            watched.append(floor_round("with kumaco watching"))
        res["floor_seconds"]["concurrent_kumaco_watching"] = stats(watched)

        # ---- the steady state: no window changes, the cluster keeps living. It starts once
        # the leader has worked off what the floor rounds changed (its passes stop).
        # Start-up may have taken longer than planned (a loaded machine): the quiet period
        # then runs up to a later opening (the spares), and the earlier ones are skipped.
        # An opening too close to measure still opens (kumaco's crons do not know): the
        # quiet period ends 10 s before the next opening, whichever it is; when less than
        # half of it fits there, it waits until that opening's window has closed and its
        # closing is worked off. The leader's settling (never reached in a living cluster:
        # the churn keeps it passing) is cut short so that the quiet period fits.
        def next_open() -> float:
            ahead = [plan.real(t) for t in plan.opens if plan.real(t) > time.time()]
            return ahead[0] if ahead else math.inf

        time.sleep(max(0.0, plan.quiet_from(time.time(), sc.quiet / 2) - time.time()))
        limit = min(time.time() + 60, next_open() - 10 - sc.quiet)
        res["settled_seconds"] = round(settle(leader, until=limit), 1)
        quiet_until = min(time.time() + sc.quiet, next_open() - 10)
        t_q, counts_q, mark_q = time.time(), request_counts(cp), audit.mark()
        cpu_q, busy_q = {k: proc_stats(p) for k, p in pids.items()}, machine_busy()
        passes_q, watchers_q = _passes(leader), terminated_watchers(cp)
        log(f"steady state: {quiet_until - t_q:.0f}s")
        time.sleep(max(0.0, quiet_until - time.time()))
        t_q1, cpu_q1 = time.time(), {k: proc_stats(p) for k, p in pids.items()}
        kumaco_q = audit.between(mark_q, audit.mark())
        # A node added just before the quiet period may be written in it.
        added = churn.added(t_q - 60) if churn is not None else set()
        res["steady"] = {
            "seconds": round(t_q1 - t_q, 1),
            "between": [round(t_q, 1), round(t_q1, 1)],
            "cpu_percent": {
                k: round(
                    100 * (cpu_q1[k]["cpu_seconds"] - cpu_q[k]["cpu_seconds"]) / (t_q1 - t_q), 2
                )
                for k in pids
            },
            "rss_mb": {k: cpu_q1[k]["rss_mb"] for k in pids},
            "machine_busy_percent": busy_percent(busy_q, machine_busy()),
            "leader_passes": {k: round(v - passes_q[k], 3) for k, v in _passes(leader).items()},
            "requests": summarize(count_delta(counts_q, request_counts(cp))),
            "kumaco": kumaco_q["requests"],
            "kumaco_reads_by_replica": kumaco_q["reads_by"],
            "terminated_watchers": terminated_watchers(cp) - watchers_q,
            "kumaco_written_nodes": len(kumaco_q["written"]),
            "kumaco_writes_to_added_nodes": sum(
                v for n, v in kumaco_q["written"].items() if n in added
            ),
            "kumaco_max_writes_per_node": max(kumaco_q["written"].values(), default=0),
            "churn": churn.counts(t_q, t_q1) if churn is not None else {},
            "churn_failed_requests": churn.failures if churn is not None else 0,
            "heartbeat_age_seconds": heartbeat_ages(api, present()) if kwok is not None else None,
        }
        res["steady"]["cpu_percent"]["kumaco_total"] = round(
            res["steady"]["cpu_percent"]["leader"] + res["steady"]["cpu_percent"]["follower"], 2
        )
        log(f"steady state: {json.dumps(res['steady']['cpu_percent'])}")

        # ---- openings and closings, and a RebootRequired per opening
        open_lat: list[float] = []
        close_lat: list[float] = []
        mip_lat: list[float] = []
        node_open: list[float] = []
        res["openings"] = []
        for t_open in plan.opens:
            if len(open_lat) >= sc.repeats:
                break
            b = plan.real(t_open)
            if time.time() > b - 2:
                log(f"skipping the opening at {t_open:%H:%M}: not ready in time")
                continue
            time.sleep(max(0.0, b - 2 - time.time()))
            mark_o, counts_o = audit.mark(), request_counts(cp)
            cpu_o = {k: proc_stats(pids[k])["cpu_seconds"] for k in ("leader", "follower")}
            scope = set(present())
            done = converge(watcher, UM, "True", scope, b - 0.5, plan.wait, gone)
            assert done is not None, f"opening {len(open_lat)} did not converge in {plan.wait:.0f}s"
            open_lat.append(done - b)
            node_open += [t - b for t in watcher.per_node(UM, "True", scope - gone(), b - 0.5)]
            time.sleep(2)
            opened = audit.between(mark_o, audit.mark())  # before MaintenanceInProgress is asked
            victim = sorted(scope - gone())[(len(open_lat) * 7919) % len(scope - gone())]
            t_req = time.time()
            api.set_condition(victim, REQUIRED, "True")
            got = converge(watcher, MIP, "True", {victim}, t_req, 60)
            if got is not None:
                mip_lat.append(got - t_req)
            c = b + plan.duration
            res["openings"].append(
                {
                    "at": t_open.isoformat(),
                    "seconds": round(open_lat[-1], 3),
                    "between": [round(mark_o, 1), round(time.time(), 1)],
                    "nodes": len(scope),
                    "kumaco": opened["requests"],
                    "kumaco_written_nodes": len(opened["written"]),
                    "kumaco_max_writes_per_node": max(opened["written"].values(), default=0),
                    "requests": summarize(count_delta(counts_o, request_counts(cp))),
                    "cpu_seconds": {
                        k: round(proc_stats(pids[k])["cpu_seconds"] - cpu_o[k], 2)
                        for k in ("leader", "follower")
                    },
                    "churn": churn.counts(b, time.time()) if churn is not None else {},
                    "deleted": len(gone() & scope),
                }
            )
            api.set_condition(victim, REQUIRED, "False")
            if len(open_lat) < sc.repeats:  # the last window's closing is not waited for
                time.sleep(max(0.0, c - 2 - time.time()))
                done = converge(watcher, UM, "False", set(present()), c - 0.5, plan.wait, gone)
                assert done is not None, f"closing {len(close_lat)} did not converge"
                close_lat.append(done - c)
            log(
                f"opening {len(open_lat)}/{sc.repeats}: open {open_lat[-1]:.2f}s "
                f"close {close_lat[-1] if len(close_lat) == len(open_lat) else float('nan'):.2f}s, "
                f"409s {conflicts(opened)}, "
                f"mip {mip_lat[-1] if mip_lat else float('nan'):.3f}s"
            )
        res["open_seconds"] = stats(open_lat)
        res["close_seconds"] = stats(close_lat)
        res["per_node_open_seconds"] = {
            "p50": percentile(node_open, 50),
            "p99": percentile(node_open, 99),
        }
        res["mip_seconds"] = stats(mip_lat)
        fa, fw = floor, percentile(watched, 50)
        o = percentile(open_lat, 50)
        res["open_ratio_to_floor"] = round(o / fa, 3) if o and fa else None
        res["open_ratio_to_floor_kumaco_watching"] = round(o / fw, 3) if o and fw else None
        res["processes"] = {k: proc_stats(p) for k, p in pids.items()}
        res["terminated_watchers_total"] = terminated_watchers(cp)


def settle(leader: Kumaco, until: float, quiet: float = 10.0) -> float:
    """Wait until the leader ran no reconcile pass for ``quiet`` seconds (or ``until``)."""
    t0 = time.time()
    last, since = leader.metric("kumaco_reconcile_duration_seconds_count"), time.time()
    while time.time() < until:
        time.sleep(1)
        now = leader.metric("kumaco_reconcile_duration_seconds_count")
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            break
    return time.time() - t0


def _passes(leader: Kumaco) -> dict[str, float]:
    """The leader's reconcile passes so far, and the seconds they took (its own metrics)."""
    return {
        "count": leader.metric("kumaco_reconcile_duration_seconds_count") or 0.0,
        "seconds": leader.metric("kumaco_reconcile_duration_seconds_sum") or 0.0,
    }


def _stop(k: Kumaco) -> None:
    with contextlib.suppress(AssertionError):
        k.stop()


def heartbeat_ages(api: Api, names: list[str], sample: int = 100) -> dict[str, float] | None:
    """How old the Ready heartbeats of a sample of nodes are: kwok keeps up if below a period."""
    now = time.time()
    ages = []
    for name in random.Random(0).sample(names, min(sample, len(names))):
        with contextlib.suppress(RuntimeError):
            node = api.request("GET", f"/api/v1/nodes/{name}")
            for c in node["status"]["conditions"]:
                if c["type"] == "Ready":
                    at = dt.datetime.fromisoformat(c["lastHeartbeatTime"].replace("Z", "+00:00"))
                    ages.append(now - at.timestamp())
    if not ages:
        return None
    return {"p50": round(percentile(ages, 50) or 0, 1), "max": round(max(ages), 1)}


# ----------------------------------------------------------------------------- invariants


def check(res: dict[str, Any]) -> list[str]:
    """The count invariants, from the audit log: what kumaco itself sent.

    Steady state: no LIST, and no write except one to each node the churn
    added. Start-up and each opening: at most one successful write per node.
    """
    problems: list[str] = []
    if "error" in res:
        problems.append(res["error"])
    steady = res.get("steady")
    if steady is not None:
        lists = {k: v for k, v in steady["kumaco"].items() if k.startswith("LIST")}
        if lists:
            problems.append(f"LISTs while steady: {lists}")
        stray = node_writes({"requests": steady["kumaco"]}) - steady["kumaco_writes_to_added_nodes"]
        if stray:
            problems.append(f"{stray} writes to nodes that were not added while steady")
        if steady["kumaco_max_writes_per_node"] > 1:
            problems.append("a node was written more than once while steady")
    for op in res.get("openings", []):
        if op["kumaco_max_writes_per_node"] > 1:
            problems.append(f"opening {op['at']}: a node written more than once")
        # A write that timed out at the server (504) may have landed: its retry then meets a
        # 409, the re-read shows the condition written, and nothing more is sent.
        maybe = op["kumaco"].get("PATCH nodes/status 504", 0)
        if op["kumaco_written_nodes"] + maybe < op["nodes"] - op["deleted"]:
            problems.append(
                f"opening {op['at']}: {op['kumaco_written_nodes']} nodes written of {op['nodes']}"
            )
    startup = res.get("startup")
    if startup is not None and node_writes({"requests": startup["kumaco"]}) > res["nodes"] + 50:
        problems.append(f"start-up wrote {node_writes({'requests': startup['kumaco']})} times")
    return problems


# ----------------------------------------------------------------------------- a follower alone


def follower_probe(nodes: int, workdir: Path) -> dict[str, Any]:
    """A kumaco follower over ``nodes`` static realistic nodes: time to ready, its RSS, the servers'.

    The cheap way to see memory at a scale whose full run this machine cannot
    finish: a Lease held by someone else keeps kumaco a follower, so it only
    LISTs and watches every node (as the leader does before it writes).
    """
    cp = ControlPlane(ensure_assets(), log_dir=workdir / "controlplane")
    cp.start()
    try:
        t0 = time.monotonic()
        seed_nodes(cp, nodes, npd=True)
        out: dict[str, Any] = {"nodes": nodes, "seed_seconds": round(time.monotonic() - t0, 1)}
        out["load_before"] = [round(x, 2) for x in os.getloadavg()]
        api = Api(cp)
        ns = api.namespace("probe")
        api.window(ns, "far", {"startTime": "0 0 1 1 *", "duration": "1h", "nodeSelector": ""})
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        api.request(
            "POST",
            f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            {
                "metadata": {"name": "kumaco"},
                "spec": {
                    "holderIdentity": "someone-else",
                    "leaseDurationSeconds": 3600,
                    "acquireTime": now,
                    "renewTime": now,
                },
            },
        )
        kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
        flags = ["--namespaces", ns, "--leader-election-namespace", ns, "--log-level", "warning"]
        k = Kumaco(kubeconfig, flags, workdir / "follower.log", name="follower").start()
        try:
            t1 = time.time()
            wait_for(k.ready, 3600, interval=0.5, what="the follower ready (caches synced)")
            out["follower_ready_seconds"] = round(time.time() - t1, 1)
            time.sleep(10)
            assert cp.apiserver is not None and cp.etcd is not None
            out["processes"] = {
                "follower": proc_stats(k.pid),
                "kube-apiserver": proc_stats(cp.apiserver.pid),
                "etcd": proc_stats(cp.etcd.pid),
            }
        finally:
            _stop(k)
        out["load_after"] = [round(x, 2) for x in os.getloadavg()]
        return out
    finally:
        cp.stop()


# ----------------------------------------------------------------------------- micro-benchmarks


def memory_per_node(nodes: int = 5000) -> dict[str, Any]:
    """Bytes a kumaco process keeps per node: its NodeStore (as the controller configures it:
    the planner's conditions only) filled with realistic nodes.

    Measured with tracemalloc around building the store from the JSON the API
    server sends (so strings are not shared the way one in-process object would share them).
    """
    from kumaco.controller.stores import NodeStore, planner_conditions
    from kumaco.kube.wire import drop_images

    raws = [
        json.dumps(node_object(i, random.Random(i), npd=True), separators=(",", ":")).encode()
        for i in range(nodes)
    ]
    gc.collect()
    tracemalloc.start()
    store = NodeStore(
        owned=(UM, MIP), manager="kumaco", keep=planner_conditions(policy_of(require=(REQUIRED,)))
    )
    store.replace([store.trim(json.loads(drop_images(r))) for r in raws])
    gc.collect()
    kept, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "nodes": nodes,
        "bytes_per_node": round(kept / nodes),
        "json_bytes_per_node": round(sum(map(len, raws)) / nodes),
    }


def planner_benchmark(nodes: int = 5000, windows: int = 100) -> dict[str, Any]:
    from kumaco.core.objects.nodes import NodeSet, node_view
    from kumaco.core.planning.planner import plan
    from kumaco.core.time.durations import SECOND
    from kumaco.core.windows.ceilings import Ceiling
    from kumaco.core.windows.format import parse_window
    from kumaco.core.windows.window import Window

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
    policy = policy_of(ceiling=Ceiling(10, True), require=(REQUIRED,))
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


# ----------------------------------------------------------------------------- the run


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
    kwok = subprocess.run(
        [str(ensure_kwok()), "--version"], capture_output=True, text=True, check=False
    )
    import kubernetes

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB",
        "python": platform.python_version(),
        "kube_apiserver": kube.stdout.strip(),
        "etcd": etcd.stdout.splitlines()[0] if etcd.stdout else "",
        "kwok": kwok.stdout.strip(),
        "kubernetes_client": kubernetes.__version__,
    }


def keep_in_history(history: Path, runs: list[dict[str, Any]]) -> None:
    """Append ``runs`` (replaced in the benchmark's output by new ones) to ``history``."""
    doc: dict[str, Any] = (
        json.loads(history.read_text())
        if history.exists()
        else {
            "what": "Earlier runs of python hack/bench.py, replaced in docs/benchmarks.json "
            "by runs of later commits; kept because docs/benchmarks.md compares with them.",
            "runs": [],
        }
    )
    doc.setdefault("runs", []).extend(r for r in runs if r not in doc["runs"])
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text(json.dumps(doc, indent=1) + "\n")


def run_benchmarks(
    scales: list[Scale],
    output: Path,
    markdown_path: Path,
    chart_path: Path | None,
    *,
    check_only: bool = False,
    merge: bool = False,
    history: Path | None = None,
) -> int:
    """``python hack/bench.py``: every scale on its own control plane.

    Unless ``check_only``, writes ``output`` (JSON) after every scale -- a run
    that dies at 50,000 nodes keeps what it measured below -- and, at the end,
    the micro-benchmarks, ``markdown_path`` and the chart. With ``merge`` the
    runs already in ``output`` are kept unless re-measured (same nodes and
    windows); a run it replaces is appended to ``history`` (when given), so that
    the docs can still compare with it. Prints the document; 1 if an invariant broke.
    """
    from tools.benchreport import write_chart, write_markdown

    doc: dict[str, Any] = {"machine": machine(), "runs": []}
    if output.exists():  # measured on its own (hack/bench.py --respect-pdbs): kept
        kept = json.loads(output.read_text()).get("respect_pdbs")
        if kept is not None:
            doc["respect_pdbs"] = kept
    if merge and output.exists():
        old = json.loads(output.read_text())
        doc["runs"] = old.get("runs", [])
        doc.update({k: v for k, v in old.items() if k not in ("runs", "machine")})
    problems: list[str] = []

    def save() -> None:
        if check_only:
            return
        doc["runs"].sort(key=lambda r: (r["nodes"], r["windows"]))
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(doc, indent=2) + "\n")

    for sc in scales:
        # Kept (logs, audit log, kwok's config) for a look after the run; printed in the result.
        workdir = Path(tempfile.mkdtemp(prefix=f"kumaco-bench-{sc.nodes}-"))
        res = run_scale(sc, workdir)
        res["workdir"] = str(workdir)
        replaced = [r for r in doc["runs"] if (r["nodes"], r["windows"]) == (sc.nodes, sc.windows)]
        doc["runs"] = [r for r in doc["runs"] if r not in replaced]
        doc["runs"].append(res)
        if replaced and history is not None and not check_only:
            keep_in_history(history, replaced)
        problems += [f"{sc.nodes}x{sc.windows}: {p}" for p in check(res)]
        log(json.dumps(res)[:3000])
        save()
    if not check_only:
        doc["planner"] = planner_benchmark()
        doc["memory_per_node"] = memory_per_node()
        save()
        write_markdown(markdown_path, doc)
        if chart_path is not None:
            write_chart(chart_path, doc)
    for problem in problems:
        log(f"INVARIANT BROKEN: {problem}")
    print(json.dumps(doc, indent=2))
    return 1 if problems else 0
