"""Soak: three kumaco replicas for 30 minutes on the real control plane, windows flipping every minute.

Not part of CI. ``python hack/soak.py [--minutes 30]`` starts its own audited
control plane (``tests.support.judges.audit.audited_control_plane``), twelve nodes in two
groups and two windows:

* ``minutely`` -- ``* * * * *`` for ``30s`` on group a (open :00-:30 of every minute);
* ``even-minutes`` -- ``*/2 * * * *`` for ``20s`` (or ``25s`` after an edit)
  on group b (open :00-:20 of every even minute);

with a ceiling of 2 and ``kured.dev/RebootRequired=True`` on three nodes of
each group. Three replicas run under ``tests.support.env.supervisor.Supervisor`` (an exited
replica is restarted after 0.5 s, as the kubelet would) with the production
lease timings (15 s / 10 s / 2 s). During the run:

* a window ConfigMap is edited every 2-5 minutes (its ``description``, or the
  duration of ``even-minutes`` between ``20s`` and ``25s``), at second 3-10 of
  a minute: the leader exits 3 and is restarted -- by design;
* the leader (read from the Lease) is killed every 3-5 minutes, alternately
  SIGKILL and SIGTERM, at second 31-34 of a minute, so that even a SIGKILL
  takeover (at most lease duration + retry period) completes before the next
  window boundary at :00.

Every 10 s the soak samples each replica and checks the nodes.

Correctness, at every check: each node's ``kured.dev/UnderMaintenance``
equals the window arithmetic of :mod:`kumaco.core.windows.window` (``Window.state_at``
and the selector) for the current instant, for the windows as last written;
within 2 s after a boundary the state before it is accepted too. The check
also runs the planner on the nodes as read (``MaintenanceInProgress`` must be
its fixed point, with the same 2 s allowance), a separate watcher records the
most nodes ever in progress at once (must be <= 2), and at the end the audit
log must show no overlapping or unfenced node-status writes
(``tests.support.judges.audit.audit_check``).

Resources, method: replicas restart (edits, kills), so growth is measured
per process. For every replica process the soak reads ``/proc/<pid>/status``
(VmRSS, Threads), counts ``/proc/<pid>/fd`` entries and those of them that are
sockets, and counts its ESTABLISHED TCP connections (socket inodes found in
``/proc/net/tcp``, ``tcp6``). A process's age comes from ``/proc/<pid>/stat``.
Its *baseline* is the median of its samples between ``--warmup`` (120 s) of
age and one minute later; its *end* is the median of its last six samples. It
is judged only if it lived ``--judge-after`` (6 min) beyond its warm-up. Pass: RSS end <=
baseline x 1.10; threads, fds, sockets and TCP connections at the end not above the
baseline's maximum -- for a process that led after its warm-up, plus what its pools may
still add on demand (the write pool, ``--write-concurrency`` = 16 threads, and one
keep-alive connection per thread: 16 + 8 connections). The longest-lived process, and the longest-lived
one that never led (whose pools never grow), are reported separately.

Output: ``artifacts/soak/result.json`` (``--output``) and a summary on stdout;
exit status 0 if every pass condition held, else 1.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import signal
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kumaco.core.labels.selectors import parse_selector
from kumaco.core.objects.nodes import NodeSet, NodeView, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.policies import policy_of
from tests.support.env.auditing import audited_control_plane
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    UM,
    Api,
    NodeWatcher,
    condition_status,
)
from tests.support.env.supervisor import (
    ReplicaFactory,
    Supervisor,
    Timings,
    leader_of,
    replica_flags,
)
from tests.support.judges.audit import WriteAudit, audit_check

SECOND = 1_000_000_000
CEILING = 2
GRACE = 2.0  # seconds after a boundary during which the previous state is accepted
WRITE_POOL = 16  # kumaco's default --write-concurrency
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------- /proc


@dataclass
class Sample:
    """One look at one process."""

    age: float
    rss_kb: int
    threads: int
    fds: int
    sockets: int
    tcp: int
    leader: bool


@dataclass
class Proc:
    """Everything sampled of one replica process."""

    pid: int
    name: str
    identity_prefix: str
    samples: list[Sample] = field(default_factory=list)
    exit_code: int | None = None


def _tcp_established_inodes() -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            next(f, None)
            for line in f:
                cols = line.split()
                if len(cols) > 9 and cols[3] == "01":
                    inodes.add(cols[9])
    return inodes


def _uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def sample(pid: int, leader: bool, established: set[str]) -> Sample | None:
    """Read one process's RSS, threads, fds, sockets and TCP connections; None if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
        fds = os.listdir(f"/proc/{pid}/fd")
        links = []
        for fd in fds:
            with contextlib.suppress(OSError):
                links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
    sockets = [link[8:-1] for link in links if link.startswith("socket:[")]
    return Sample(
        age=round(_uptime() - start_ticks / CLK_TCK, 1),
        rss_kb=int(fields["VmRSS"].split()[0]),
        threads=int(fields["Threads"].strip()),
        fds=len(fds),
        sockets=len(sockets),
        tcp=sum(1 for inode in sockets if inode in established),
        leader=leader,
    )


def judge(p: Proc, warmup: float, judge_after: float, write_pool: int) -> dict[str, Any] | None:
    """Baseline vs end for one process (see the module docstring); None if it lived too briefly."""
    life = p.samples[-1].age if p.samples else 0.0
    if life < warmup + judge_after:
        return None
    base = [s for s in p.samples if warmup <= s.age < warmup + 60]
    end = p.samples[-6:]
    if len(base) < 3:
        return None

    def med(xs: list[Sample], attr: str) -> float:
        return float(statistics.median(getattr(s, attr) for s in xs))

    # A leader's write pool (threads, one connection each) grows on demand up to its bound.
    led = any(s.leader for s in p.samples if s.age >= warmup)
    out: dict[str, Any] = {
        "pid": p.pid,
        "name": p.name,
        "lived_s": life,
        "led": any(s.leader for s in p.samples),
        "led_after_warmup": led,
        "rss_kb_baseline": med(base, "rss_kb"),
        "rss_kb_end": med(end, "rss_kb"),
        "rss_growth_pct": round(100 * (med(end, "rss_kb") / med(base, "rss_kb") - 1), 2),
    }
    ok = out["rss_growth_pct"] <= 10.0
    for attr in ("threads", "fds", "sockets", "tcp"):
        b, e = max(getattr(s, attr) for s in base), med(end, attr)
        allowance = (write_pool if attr == "threads" else write_pool + 8) if led else 0
        out[f"{attr}_baseline_max"] = b
        out[f"{attr}_end"] = e
        ok = ok and e <= b + allowance
    out["ok"] = ok
    return out


# ----------------------------------------------------------------------------- the soak


@dataclass
class Check:
    """One correctness check that failed."""

    at: str
    what: str


@dataclass(frozen=True)
class SoakOptions:
    """The soak's knobs (``hack/soak.py`` flags); seconds unless named otherwise."""

    minutes: float = 30.0
    warmup: float = 120.0  # of a process's life
    judge_after: float = 360.0  # judge a process only if it lived this long after its warm-up
    seed: int = 5683
    workdir: Path = Path("artifacts/soak")


class Soak:
    """The scenario of the module docstring; :meth:`run` returns the result document."""

    def __init__(self, args: SoakOptions) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.timings = Timings()
        self.procs: dict[int, Proc] = {}
        self.kills: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self.failures: list[Check] = []
        self.mip_failures: list[Check] = []
        self.checks = 0
        self.exits: Counter[str] = Counter()

    def windows_data(self) -> dict[str, dict[str, str]]:
        return {
            "minutely": {
                "startTime": "* * * * *",
                "duration": "30s",
                "nodeSelector": "grp=a",
            },
            "even-minutes": {
                "startTime": "*/2 * * * *",
                "duration": "20s",
                "nodeSelector": "grp=b",
            },
        }

    def run(self) -> dict[str, Any]:
        a = self.args
        a.workdir.mkdir(parents=True, exist_ok=True)
        with audited_control_plane(a.workdir) as (cp, kubeconfig):
            audit = cp.audit_log
            self.api = api = Api(cp)
            self.run_id = run = "soak"
            self.ns = ns = api.namespace("soak")
            self.names = names = [f"{run}-{i:02d}" for i in range(12)]
            for i, n in enumerate(names):
                group = "a" if i < 6 else "b"
                conds = (
                    [
                        {
                            "type": REQUIRED,
                            "status": "True",
                            "lastTransitionTime": f"2026-11-{i + 1:02d}T00:00:00Z",
                        }
                    ]
                    if i % 6 < 3
                    else []
                )
                api.node(n, {RUN_LABEL: run, "grp": group}, conds)
            self.data = self.windows_data()
            for name, data in self.data.items():
                api.window(ns, name, data)
            self.policy = policy_of(
                scope=parse_selector(f"{RUN_LABEL}={run}"),
                ceiling=Ceiling(CEILING),
                require=(REQUIRED,),
            )
            replicas = ReplicaFactory(
                kubeconfig, replica_flags(run, ns, CEILING, self.timings), a.workdir, run
            )
            started_wall = time.time()
            started = time.monotonic()
            end = started + a.minutes * 60
            sup = Supervisor(replicas, 3)
            self.sup = sup
            try:
                with NodeWatcher(api, run) as watcher:
                    self.loop(started, end)
                max_in_progress = watcher.max_count(lambda c: condition_status(c, MIP) == "True")
                # Exit codes of the replicas that ended during the soak (not the final SIGTERMs).
                self.exits = Counter(str(code) for code in replicas.exit_codes())
            finally:
                sup.stop()
            for k in replicas.made:
                if k.proc is not None and k.proc.pid in self.procs:
                    self.procs[k.proc.pid].exit_code = k.proc.returncode
            result = audit_check(audit, ns, run, f"{run}-", self.timings.lease, started_wall)
            return self.report(started_wall, sup.restarts, max_in_progress, result)

    def loop(self, started: float, end: float) -> None:
        next_tick = started + 5
        next_kill = started + self.rng.uniform(180, 300)
        next_edit = started + self.rng.uniform(120, 300)
        signals = [signal.SIGKILL, signal.SIGTERM]
        while time.monotonic() < end:
            now = time.monotonic()
            second = dt.datetime.now(dt.UTC).second
            if now >= next_kill and 31 <= second <= 34:
                self.kill(signals[len(self.kills) % 2])
                next_kill = time.monotonic() + self.rng.uniform(180, 300)
            elif now >= next_edit and 3 <= second <= 10:
                self.edit()
                next_edit = time.monotonic() + self.rng.uniform(120, 300)
            if now >= next_tick:
                self.tick(now - started)
                next_tick += 10
            time.sleep(0.2)

    # -- actions

    def leader(self) -> str:
        try:
            return leader_of(self.api, self.ns, self.run_id)
        except (OSError, RuntimeError):
            return ""

    def kill(self, sig: signal.Signals) -> None:
        old = self.leader()
        victim = self.sup.by_identity(old) if old else None
        if victim is None:
            return
        t0 = time.monotonic()
        victim.send(sig)
        new = ""
        while time.monotonic() - t0 < 60:
            new = self.leader()
            if new and new != old:
                break
            time.sleep(0.05)
        took = time.monotonic() - t0
        self.kills.append(
            {
                "at": _now(),
                "signal": sig.name,
                "from": old,
                "to": new,
                "takeover_s": round(took, 2),
            }
        )
        print(f"[soak] {_now()} {sig.name} {old} -> {new} in {took:.2f}s", flush=True)

    def edit(self) -> None:
        name = self.rng.choice(["minutely", "even-minutes"])
        data = dict(self.data[name])
        if name == "even-minutes" and self.rng.random() < 0.5:
            data["duration"] = "25s" if data["duration"] == "20s" else "20s"
            what = f"{name}: duration {data['duration']}"
        else:
            # The same nodes in other words: the data (and its hash) change, the window not.
            plain = self.windows_data()[name]["nodeSelector"]  # grp=a or grp=b
            group = plain.split("=")[1]
            data["nodeSelector"] = f"grp in ({group})" if data["nodeSelector"] == plain else plain
            what = f"{name}: nodeSelector {data['nodeSelector']}"
        self.api.edit_window(self.ns, name, data)
        self.data[name] = data
        self.edits.append({"at": _now(), "what": what})
        print(f"[soak] {_now()} edit {what}", flush=True)

    # -- every 10 s

    def tick(self, elapsed: float) -> None:
        self.sample_all()
        self.check()
        if int(elapsed) % 60 < 10:
            live = [
                self.procs[k.proc.pid]
                for k in self.sup.replicas.values()
                if k.proc is not None and k.proc.pid in self.procs
            ]
            rss = ", ".join(
                f"{p.name}:{p.samples[-1].rss_kb // 1024}MiB/{p.samples[-1].threads}t"
                for p in live[-3:]
            )
            print(
                f"[soak] {_now()} {elapsed / 60:.1f} min: {self.checks} checks, "
                f"{len(self.failures)} wrong, {len(self.mip_failures)} MIP off; "
                f"{len(self.kills)} kills, {len(self.edits)} edits, "
                f"{self.sup.restarts} restarts; {rss}",
                flush=True,
            )

    def sample_all(self) -> None:
        established = _tcp_established_inodes()
        leader = self.leader()
        for k in list(self.sup.replicas.values()):
            if k.proc is None or k.proc.poll() is not None:
                continue
            prefix = f"{k.env.get('POD_NAME', '')}_"
            s = sample(k.proc.pid, leader.startswith(prefix), established)
            if s is None:
                continue
            p = self.procs.setdefault(k.proc.pid, Proc(k.proc.pid, k.name, prefix))
            p.samples.append(s)

    def parsed_windows(self) -> list[Window]:
        out = []
        for name, data in self.data.items():
            w = parse_window(self.ns, name, data)
            assert isinstance(w, Window), w
            out.append(w)
        return out

    def check(self) -> None:
        try:
            nodes = list(self.api.nodes(self.run_id).values())
        except (OSError, RuntimeError) as exc:
            self.failures.append(Check(_now(), f"cannot read nodes: {exc}"))
            return
        t = time.time_ns()
        self.checks += 1
        windows = self.parsed_windows()
        views = [v for v in (node_view(n) for n in nodes) if v is not None]
        for v in views:
            expect_now = any(w.state_at(t).open and w.selector.matches(v.labels) for w in windows)
            expect_before = any(
                w.state_at(t - int(GRACE * SECOND)).open and w.selector.matches(v.labels)
                for w in windows
            )
            actual = v.is_true(UM)
            if actual not in (expect_now, expect_before):
                self.failures.append(
                    Check(_now(), f"{v.name}: UnderMaintenance {actual}, expected {expect_now}")
                )
        if not self._fixed_point(windows, views, t) and not self._fixed_point(
            windows, views, t - int(GRACE * SECOND)
        ):
            holders = sorted(v.name for v in views if v.is_true(MIP))
            self.mip_failures.append(
                Check(_now(), f"not the planner's answer; in progress {holders}")
            )
        in_progress = sum(1 for v in views if v.is_true(MIP))
        if in_progress > CEILING:
            self.failures.append(Check(_now(), f"{in_progress} nodes in progress"))

    def _fixed_point(self, windows: list[Window], views: list[NodeView], t: int) -> bool:
        result = plan(windows, NodeSet(views), t, self.policy)
        by_name = {v.name: v for v in views}
        for np in result.nodes:
            for d in np.desired:
                c = by_name[np.name].condition(d.type)
                if c is None or c.status != d.status:
                    return False
        return True

    # -- the result

    def report(
        self, started_wall: float, restarts: int, max_in_progress: int, audit: WriteAudit
    ) -> dict[str, Any]:
        a = self.args
        judged = [
            j for p in self.procs.values() if (j := judge(p, a.warmup, a.judge_after, WRITE_POOL))
        ]
        lived = sorted(self.procs.values(), key=lambda p: p.samples[-1].age if p.samples else 0)
        followers = [p for p in lived if not any(s.leader for s in p.samples)]

        def describe(p: Proc | None) -> dict[str, Any] | None:
            if p is None or not p.samples:
                return None
            first = next((s for s in p.samples if s.age >= a.warmup), p.samples[0])
            last = p.samples[-1]
            return {
                "pid": p.pid,
                "name": p.name,
                "lived_s": last.age,
                "led": any(s.leader for s in p.samples),
                "after_warmup": first.__dict__,
                "last": last.__dict__,
                "rss_growth_pct": round(100 * (last.rss_kb / first.rss_kb - 1), 2),
                "judged": judge(p, a.warmup, a.judge_after, WRITE_POOL),
            }

        takeovers: dict[str, list[float]] = {}
        for k in self.kills:
            takeovers.setdefault(k["signal"], []).append(k["takeover_s"])
        ok = (
            not self.failures
            and not self.mip_failures
            and max_in_progress <= CEILING
            and not audit.overlaps
            and not audit.unfenced
            and all(j["ok"] for j in judged)
            and bool(judged)
        )
        return {
            "date": dt.datetime.fromtimestamp(started_wall, dt.UTC).isoformat(timespec="seconds"),
            "minutes": a.minutes,
            "warmup_s": a.warmup,
            "replicas": 3,
            "nodes": len(self.names),
            "timings": asdict(self.timings),
            "checks": self.checks,
            "wrong_checks": [c.__dict__ for c in self.failures],
            "mip_not_fixed_point": [c.__dict__ for c in self.mip_failures],
            "max_in_progress_seen": max_in_progress,
            "kills": self.kills,
            "takeover_s": {
                s: {"n": len(v), "median": statistics.median(v), "max": max(v)}
                for s, v in takeovers.items()
            },
            "edits": self.edits,
            "restarts": restarts,
            "exit_codes_during_soak": dict(self.exits),
            "processes": len(self.procs),
            "judged_processes": judged,
            "longest_lived": describe(lived[-1] if lived else None),
            "longest_lived_follower": describe(followers[-1] if followers else None),
            "node_status_writes": audit.node_writes,
            "overlapping_writes": audit.overlaps[:10],
            "unfenced_writes": audit.unfenced[:10],
            "pass": ok,
        }


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%H:%M:%S")


def soak(options: SoakOptions, output: Path) -> int:
    """``python hack/soak.py``: run, write the result to ``output``, print a summary; 0 if passed."""
    result = Soak(options).run()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    judged = result["judged_processes"]
    summary = {
        "date": result["date"],
        "minutes": result["minutes"],
        "checks": result["checks"],
        "wrong_checks": len(result["wrong_checks"]),
        "mip_not_fixed_point": len(result["mip_not_fixed_point"]),
        "max_in_progress_seen": result["max_in_progress_seen"],
        "kills": len(result["kills"]),
        "takeover_s": result["takeover_s"],
        "edits": len(result["edits"]),
        "restarts": result["restarts"],
        "exit_codes_during_soak": result["exit_codes_during_soak"],
        "judged_processes": len(judged),
        "max_rss_growth_pct": max((j["rss_growth_pct"] for j in judged), default=None),
        "longest_lived": result["longest_lived"],
        "node_status_writes": result["node_status_writes"],
        "overlapping_writes": len(result["overlapping_writes"]),
        "unfenced_writes": len(result["unfenced_writes"]),
        "pass": result["pass"],
    }
    print(json.dumps(summary, indent=2))
    return 0 if result["pass"] else 1
