"""Window-opening latency, kumaco beside kured v2's own ``maintenance-scheduler``.

What is measured. One control plane (:class:`~tests.support.env.controlplane.ControlPlane`)
holds ``nodes`` realistic Nodes (:func:`~tests.support.env.controlplane.seed_nodes`), whose
kubelets are kwok (:class:`~tests.support.env.kwok.Kwok`) with the project's node Stages and
:class:`~tests.support.env.kwok.KwokSettings`' defaults, a kubelet's own: an unchanged node
reports status (``lastHeartbeatTime`` of its four kubelet conditions, a write to the Node)
every 300-330 s, its heartbeats spread over that period as in a running cluster; its Lease
(a separate object, not a Node change) is renewed every 10 s. Optionally
:class:`~tools.churn.Churn` adds the fleet's other writers (node-problem-detector
re-sending its conditions every 300 s, rare problems, relabelling, reboots, replacements).

A *phase* is one controller against every node: a window ConfigMap whose cron fires at
the next whole minute ``B`` at least ``lead`` seconds away (a future minute, so both
controllers open it as it opens, not as they start: kured's scheduler never opens a window
whose start lies before its own start, robfig/cron only fires on the schedule), lasting
``bound + margin`` seconds over every node. The controller starts, writes its start-up
conditions (``False``) to every node (its condition was first removed from every
node, :func:`clean`), then ``B`` passes; the phase ends when every node's
condition is ``True`` or ``bound`` seconds after ``B``, and the controller is stopped
(SIGTERM). A node's latency is from ``B`` to the instant a separate watcher
(:class:`~tests.support.env.harness.NodeWatcher`, the benchmark's lean one) received the event
with its condition ``True``. The two controllers run one after the other on the same nodes,
each with its own condition (kumaco ``kured.dev/UnderMaintenance``, kured
``kured.dev/under-maintenance-window``), so that one's writes never count for the other,
and never at the same time (a write of one would be a node change that wakes the other).

kured's scheduler (``/work/shared/third_party/README.md``) loads its windows at start, and
writes a node's conditions only when it reconciles that node, which it does when the node
changes (no periodic requeue): it opens a window on a node at the node's next change after
``B``, so its figure is the fleet's change rate. For the reader, each phase also counts the
nodes whose kubelet reported status (Ready's ``lastHeartbeatTime``) between ``B`` and the
end of the phase.

:func:`side_by_side` is the short form (CI): both controllers at one boundary, on disjoint
halves of the nodes (kumaco scoped to ``kumaco.test/pool`` pool-0/pool-1 by
``--node-selector``, kured's window selecting pool-2/pool-3), so that one boundary suffices
and kumaco's writes never touch a node kured's window covers.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.controlplane import (
    ControlPlane,
    ensure_assets,
    ensure_kwok,
    seed_nodes,
)
from tests.support.env.harness import UM, Api, ApiError, Kumaco, NodeWatcher, cron_at, next_boundary
from tests.support.env.kwok import Kwok, KwokSettings
from tests.support.env.ports import free_port
from tests.support.env.process import stop_process
from tests.support.judges.figures import commit_of
from tools.bench import busy_percent, converge, machine_busy, proc_stats
from tools.churn import Churn, ChurnRates

REPO = Path(__file__).resolve().parents[1]
KURED_UM = "kured.dev/under-maintenance-window"  # the prototype's internal/conditions/names.go
KURED_CM_NAMESPACE = "kube-system"  # its --cm-namespace default
KURED_CM_PREFIX = "kured-maintenance-"  # its --config-prefix default
KURED_CM_LABEL = "kured.dev/maintenance"  # its --cm-label-key default
KURED_LEASE = "maintenance-scheduler-leader-election.kured.dev"
KUMACO_NS = "kured-latency"
BIN_ENV = "KURED_V2_BIN"
FALLBACK_BIN = Path("/tmp/kured/kured-v2-prototype/bin")
POOL = "kumaco.test/pool"  # node_object's label, pool-0 .. pool-3


def log(msg: str) -> None:
    print(f"[kured-latency {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kured_bin() -> Path:
    """The directory of kured's programs: tests/support/env/kured.py's look-up when it works,
    else ``$KURED_V2_BIN``, else the prototype's source tree build.
    """
    with contextlib.suppress(Exception):
        from tests.support.env import kured

        found = kured.find_kured()
        if found is not None:
            return found
    env = os.environ.get(BIN_ENV)
    d = Path(env) if env else FALLBACK_BIN
    if not os.access(d / "maintenance-scheduler", os.X_OK):
        raise RuntimeError(f"no maintenance-scheduler in {d} (set {BIN_ENV})")
    return d


@dataclass(frozen=True)
class Settings:
    nodes: int = 1000
    #: Seconds after the opening instant during which a node's condition is waited for.
    bound: float = 180.0
    #: The "within" figure: nodes whose condition was True this many seconds after opening.
    within: float = 60.0
    #: The window lasts bound + margin seconds (it is still open when the phase ends).
    margin: float = 60.0
    #: Least seconds from a controller's start to the opening (its start-up must fit).
    lead: float | None = None  # default 20 + nodes / 20
    kwok: KwokSettings = field(default_factory=KwokSettings)
    #: Also measure both controllers again under this churn (None: only kwok's heartbeats).
    churn: ChurnRates | None = None

    @property
    def lead_seconds(self) -> float:
        return self.lead if self.lead is not None else 20 + self.nodes / 20


# ----------------------------------------------------------------------------- figures


def figures(latencies: Sequence[float], total: int, bound: float, within: float) -> dict[str, Any]:
    """Over all ``total`` nodes (a node not opened within ``bound`` counts as never):
    p50/p99/max by nearest rank, None when that rank was not reached within the bound.
    """
    lat = sorted(x for x in latencies if x <= bound)
    full = lat + [math.inf] * max(0, total - len(lat))

    def rank(p: float) -> float | None:
        if not full:
            return None
        v = full[max(0, math.ceil(p / 100 * len(full)) - 1)]
        return None if math.isinf(v) else round(v, 3)

    return {
        "nodes": total,
        "p50_s": rank(50),
        "p99_s": rank(99),
        "max_s": rank(100),
        f"within_{within:g}s": sum(1 for x in lat if x <= within),
        "within_bound": len(lat),
        "never_within_bound": total - len(lat),
        "first_s": round(lat[0], 3) if lat else None,
        "last_opened_s": round(lat[-1], 3) if lat else None,
        "percent_within_bound": round(100 * len(lat) / total, 1) if total else None,
    }


# ----------------------------------------------------------------------------- controllers


@dataclass
class Controller:
    """One controller of a phase: how to place its window, start and stop it."""

    name: str  # "kumaco" or "kured"
    condition: str
    nodes: set[str]
    place_window: Callable[[dt.datetime, float], None]
    start: Callable[[], int]  # returns the pid
    stop: Callable[[], None]
    alive: Callable[[], bool]


class Controllers:
    """Builds the two controllers against one control plane (their processes, windows)."""

    def __init__(self, cp: ControlPlane, workdir: Path, bin_dir: Path) -> None:
        self.cp = cp
        self.api = Api(cp)
        self.workdir = workdir
        self.bin = bin_dir
        self.kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
        self.api.namespace(KUMACO_NS)
        self.n = 0

    def _delete(self, path: str) -> None:
        with contextlib.suppress(ApiError):
            self.api.request("DELETE", path)

    def kumaco(self, nodes: set[str], pools: Sequence[str] | None = None) -> Controller:
        self.n += 1
        tag = f"kumaco-{self.n}"
        selector = f"{POOL} in ({','.join(pools)})" if pools else ""
        flags = ["--namespaces", KUMACO_NS, "--leader-election-namespace", KUMACO_NS]
        flags += ["--log-level", "warning"]
        if selector:
            flags += ["--node-selector", selector]
        proc = Kumaco(self.kubeconfig, flags, self.workdir / f"{tag}.log", name=tag, cwd=REPO)
        cm = f"/api/v1/namespaces/{KUMACO_NS}/configmaps/{tag}"

        def place(b: dt.datetime, seconds: float) -> None:
            data = {"startTime": cron_at(b), "duration": f"{seconds:g}s", "nodeSelector": selector}
            self.api.window(KUMACO_NS, tag, data)

        def start() -> int:
            self._delete(f"/apis/coordination.k8s.io/v1/namespaces/{KUMACO_NS}/leases/kumaco")
            return proc.start().pid

        def stop() -> None:
            with contextlib.suppress(AssertionError):
                proc.stop()
            self._delete(cm)

        return Controller("kumaco", UM, nodes, place, start, stop, lambda: bool(proc.alive))

    def kured(self, nodes: set[str], pools: Sequence[str] | None = None) -> Controller:
        self.n += 1
        tag = f"kured-{self.n}"
        name = f"{KURED_CM_PREFIX}{tag}"
        selector = (
            f"matchExpressions:\n- {{key: {POOL}, operator: In, values: [{', '.join(pools)}]}}\n"
            if pools
            else ""
        )
        cm = f"/api/v1/namespaces/{KURED_CM_NAMESPACE}/configmaps/{name}"
        holder: dict[str, subprocess.Popen[bytes]] = {}

        def place(b: dt.datetime, seconds: float) -> None:
            data = {"startTime": cron_at(b), "duration": f"{seconds:g}s", "nodeSelector": selector}
            self.api.window(KURED_CM_NAMESPACE, name, data, labels={KURED_CM_LABEL: tag})

        def start() -> int:
            self._delete(
                f"/apis/coordination.k8s.io/v1/namespaces/{KURED_CM_NAMESPACE}/leases/{KURED_LEASE}"
            )
            cmd = [
                str(self.bin / "maintenance-scheduler"),
                f"--kubeconfig={self.kubeconfig}",
                "--metrics-host=127.0.0.1",
                f"--metrics-port={free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                "--log-format=json",
            ]
            out = (self.workdir / f"{tag}.log").open("ab")
            env = {k: v for k, v in os.environ.items() if not k.startswith("KURED_")}
            env["TZ"] = "UTC"  # robfig/cron reads the schedule in local time
            holder["p"] = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            out.close()
            return holder["p"].pid

        def stop() -> None:
            stop_process(holder.get("p"), timeout=15)
            self._delete(cm)  # after it stopped: a change of its ConfigMaps makes it exit

        def alive() -> bool:
            p = holder.get("p")
            return p is not None and p.poll() is None

        return Controller("kured", KURED_UM, nodes, place, start, stop, alive)


# ----------------------------------------------------------------------------- one phase


def _heartbeats_between(api: Api, nodes: set[str], t0: float, t1: float) -> int:
    """Nodes whose Ready lastHeartbeatTime (kwok's status report) is in [t0, t1]."""
    doc = api.request("GET", "/api/v1/nodes")
    n = 0
    for node in doc.get("items") or []:
        if node["metadata"]["name"] not in nodes:
            continue
        for c in node.get("status", {}).get("conditions") or []:
            if c.get("type") == "Ready" and c.get("lastHeartbeatTime"):
                at = dt.datetime.fromisoformat(str(c["lastHeartbeatTime"]).replace("Z", "+00:00"))
                if int(t0) <= at.timestamp() <= t1:
                    n += 1
    return n


def clean(api: Api, ctype: str, nodes: set[str], workers: int = 8) -> None:
    """Remove condition ``ctype`` from every node (a strategic merge patch deleting it by
    type): an earlier phase's status never counts, and the watcher sees each start-up write.
    """
    body = {"status": {"conditions": [{"type": ctype, "$patch": "delete"}]}}

    def one(name: str) -> None:
        with contextlib.suppress(ApiError):  # a node the churn deleted
            api.request(
                "PATCH",
                f"/api/v1/nodes/{name}/status",
                body,
                "application/strategic-merge-patch+json",
            )

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, sorted(nodes)))


def phase(
    ctrls: Sequence[Controller],
    watcher: NodeWatcher,
    api: Api,
    s: Settings,
    gone: Callable[[], set[str]] = set,
    early_stop: bool = True,
) -> dict[str, Any]:
    """Run ``ctrls`` at one opening (see the module docstring); their figures by name."""
    for c in ctrls:
        clean(api, c.condition, c.nodes)
    b = next_boundary(s.lead_seconds)
    opening = b.timestamp()
    duration = s.bound + s.margin
    for c in ctrls:
        c.place_window(b, duration)
    res: dict[str, Any] = {}
    started: dict[str, float] = {}
    pids: dict[str, int] = {}
    busy0 = machine_busy()
    load0 = os.getloadavg()
    try:
        for c in ctrls:
            started[c.name] = time.time()
            pids[c.name] = c.start()
        log(f"{'+'.join(c.name for c in ctrls)} started; the window opens at {b:%H:%M:%S}")
        for c in ctrls:
            done = converge(
                watcher,
                c.condition,
                "False",
                c.nodes,
                started[c.name],
                max(1.0, opening - 1 - time.time()),
                gone,
            )
            res[c.name] = {
                "started_before_opening_s": round(opening - started[c.name], 1),
                "startup_s": None if done is None else round(done - started[c.name], 2),
                "startup_done_before_opening": done is not None and done < opening,
            }
            log(f"{c.name} start-up: {res[c.name]['startup_s']}s")
        cpu0 = {
            n: proc_stats(p)["cpu_seconds"] for n, p in pids.items() if Path(f"/proc/{p}").exists()
        }
        busy1 = machine_busy()
        pending = {c.name for c in ctrls}
        end = opening + s.bound
        while time.time() < end and pending:
            for c in ctrls:
                if c.name in pending and early_stop:
                    target = c.nodes - gone()
                    got = set_true(watcher, c.condition, target, started[c.name])
                    if target and got >= target:
                        pending.discard(c.name)
            time.sleep(0.5)
        t_end = min(time.time(), end)
        for c in ctrls:
            target = c.nodes - gone()
            lat = first_true(watcher, c.condition, target, started[c.name])
            early = [t for t in lat.values() if t < opening - 0.5]
            fig = figures(
                [t - opening for t in lat.values() if t >= opening - 0.5],
                len(target),
                s.bound,
                s.within,
            )
            fig["true_before_opening"] = len(early)
            fig["alive_at_end"] = c.alive()
            fig["kubelet_reports_in_phase"] = _heartbeats_between(api, target, opening, t_end)
            fig["phase_seconds_after_opening"] = round(t_end - opening, 1)
            if c.name in cpu0 and Path(f"/proc/{pids[c.name]}").exists():
                fig["cpu_seconds_after_opening"] = round(
                    proc_stats(pids[c.name])["cpu_seconds"] - cpu0[c.name], 2
                )
            res[c.name].update(fig)
            log(f"{c.name}: {fig}")
        res["opening"] = b.isoformat()
        res["machine_busy_percent_before_opening"] = busy_percent(busy0, busy1)
        res["machine_busy_percent_after_opening"] = busy_percent(busy1, machine_busy())
        res["load_before"] = [round(x, 2) for x in load0]
    finally:
        for c in ctrls:
            c.stop()
    return res


def first_true(watcher: NodeWatcher, ctype: str, nodes: set[str], since: float) -> dict[str, float]:
    """When each of ``nodes`` was first seen with ``ctype`` True after ``since``."""
    out: dict[str, float] = {}
    with watcher._lock:
        changes = list(watcher.changes)
    for t, n, k, st in changes:
        if t >= since and k == ctype and st == "True" and n in nodes and n not in out:
            out[n] = t
    return out


def set_true(watcher: NodeWatcher, ctype: str, nodes: set[str], since: float) -> set[str]:
    return set(first_true(watcher, ctype, nodes, since))


# ----------------------------------------------------------------------------- runs


def machine_facts(bin_dir: Path) -> dict[str, Any]:
    def first_line(*cmd: str) -> str:
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr) else ""

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    info = bin_dir.parent / "build-info.json"
    return {
        "nproc": os.cpu_count(),
        "machine": platform.machine(),
        "memory_gib": round(mem, 1),
        "python": platform.python_version(),
        "kube_apiserver": first_line(str(ensure_assets() / "kube-apiserver"), "--version"),
        "kwok": first_line(str(ensure_kwok()), "--version"),
        "kured_bin": str(bin_dir),
        "kured_build": info.read_text() if info.is_file() else None,
        "kured_source": "kured-v2-prototype c06d381 (branch SPLIT-IN-DIFFERENT-CLIS)",
    }


@contextlib.contextmanager
def cluster(s: Settings, workdir: Path) -> Iterator[tuple[ControlPlane, NodeWatcher, set[str]]]:
    """A control plane with ``s.nodes`` kwok-managed Nodes and the lean watcher."""
    cp = ControlPlane(ensure_assets(), log_dir=workdir / "controlplane")
    cp.start()
    try:
        seed_nodes(cp, s.nodes, heartbeat_spread=s.kwok.status_period, npd=s.churn is not None)
        names = {f"node-{i:05d}" for i in range(s.nodes)}
        with Kwok(cp, workdir / "kwok", s.kwok) as kwok:
            if s.kwok.lease_seconds:
                took = kwok.wait_leases(s.nodes, timeout=120 + s.nodes / 50)
                log(f"kwok manages {s.nodes} nodes after {took:.1f}s")
            # The benchmark's lean watcher (bench.lean_watcher), tracking both conditions.
            with NodeWatcher(Api(cp), track=(UM, KURED_UM), lean=True, log=log) as w:
                yield cp, w, names
    finally:
        cp.stop()


def run(s: Settings, workdir: Path) -> dict[str, Any]:
    """Both controllers, one after the other, quiet (kwok's heartbeats only) then with churn."""
    bin_dir = kured_bin()
    t0 = time.time()
    doc: dict[str, Any] = {
        "command": " ".join(["python", "hack/kured_latency.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "kumaco_commit": commit_of(),
        "machine": machine_facts(bin_dir),
        "settings": {
            "nodes": s.nodes,
            "bound_s": s.bound,
            "within_s": s.within,
            "window_seconds": s.bound + s.margin,
            "lead_s": s.lead_seconds,
            "kwok": asdict(s.kwok),
            "churn": None if s.churn is None else asdict(s.churn),
            "kumaco_condition": UM,
            "kured_condition": KURED_UM,
            "kured_flags": "defaults (--period 1m, --concurrency 1), TZ=UTC",
        },
        "runs": {},
    }
    with cluster(s, workdir) as (cp, watcher, names):
        api = Api(cp)
        ctl = Controllers(cp, workdir, bin_dir)
        passes: list[tuple[str, ChurnRates | None]] = [("quiet", None)]
        if s.churn is not None:
            passes.append(("churn", s.churn))
        for label, rates in passes:
            with contextlib.ExitStack() as stack:
                gone: Callable[[], set[str]] = set
                if rates is not None:
                    churn = stack.enter_context(Churn(cp, names, rates))
                    gone = churn.deleted
                out: dict[str, Any] = {}
                for make in (ctl.kumaco, ctl.kured):
                    c = make(names)
                    log(f"{label}: {c.name}")
                    r = phase([c], watcher, api, s, gone)
                    out[c.name] = r.pop(c.name)
                    out[c.name]["phase"] = r
                if rates is not None:
                    out["churn_actions"] = churn.counts(t0)
                doc["runs"][label] = out
    doc["watcher_relists"] = watcher.relists
    doc["wall_seconds"] = round(time.time() - t0, 1)
    doc["ratios"] = ratios(doc["runs"])
    return doc


def ratios(runs: dict[str, Any]) -> dict[str, Any]:
    """Kured against kumaco, per run: the share of nodes each opened within the bound, and
    kured's p50 and max over kumaco's when both reached them within the bound.
    """
    out: dict[str, Any] = {}
    for label, r in runs.items():
        k, q = r.get("kumaco") or {}, r.get("kured") or {}
        row: dict[str, Any] = {}
        if k.get("within_bound"):
            row["opened_within_bound_kured_over_kumaco"] = round(
                q.get("within_bound", 0) / k["within_bound"], 3
            )
        for key in ("p50_s", "max_s"):
            if k.get(key) and q.get(key):
                row[f"{key[:-2]}_kured_over_kumaco"] = round(q[key] / k[key], 1)
        out[label] = row
    return out


def table(doc: dict[str, Any]) -> str:
    """The Markdown table of docs/kured-v2-latency.md, every figure as the JSON holds it."""
    within = f"within_{doc['settings']['within_s']:g}s"
    bound = doc["settings"]["bound_s"]

    def cell(v: Any) -> str:
        return f"> {bound:g} s" if v is None else f"{v} s"

    rows = [
        "| cluster | controller | start-up | p50 | p99 | max | opened within "
        f"{doc['settings']['within_s']:g} s | opened within {bound:g} s | kubelet reports in the phase |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in doc["runs"].items():
        for name in ("kumaco", "kured"):
            f = r.get(name) or {}
            rows.append(
                f"| {label} | {name} | {f.get('startup_s')} s | {cell(f.get('p50_s'))} | "
                f"{cell(f.get('p99_s'))} | {cell(f.get('max_s'))} | {f.get(within)} of "
                f"{f.get('nodes')} | {f.get('within_bound')} of {f.get('nodes')} | "
                f"{f.get('kubelet_reports_in_phase')} |"
            )
    return "\n".join(rows)


def side_by_side(s: Settings, workdir: Path) -> dict[str, Any]:
    """The short form: both controllers at one opening, on disjoint halves (module docstring)."""
    bin_dir = kured_bin()
    with cluster(s, workdir) as (cp, watcher, names):
        api = Api(cp)
        ctl = Controllers(cp, workdir, bin_dir)
        pools_a, pools_b = ("pool-0", "pool-1"), ("pool-2", "pool-3")
        half_a = {n for n in names if f"pool-{int(n.split('-')[1]) % 4}" in pools_a}
        k = ctl.kumaco(half_a, pools_a)
        q = ctl.kured(names - half_a, pools_b)
        res = phase([k, q], watcher, api, s)
        res["watcher_relists"] = watcher.relists
        return res


def summary(doc: dict[str, Any]) -> str:
    return f"{table(doc)}\nratios: {doc['ratios']}"
