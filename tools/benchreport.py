"""The benchmark's report: docs/benchmarks.md's tables, the targets at scale, and the SVG chart.

Contract: pure functions of the document ``hack/bench.py`` writes
(docs/benchmarks.json); :func:`write_markdown` keeps the hand-written
analysis after :data:`ANALYSIS`; :func:`chart` draws every scale's figures
on log-log axes, one panel per unit, as a self-contained SVG.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

ANALYSIS = "<!-- analysis: kept when hack/bench.py rewrites this file -->"
KUMACO_RESOURCES = ("nodes", "configmaps", "events", "leases")

Run = dict[str, Any]


def _get(r: Run, *path: str) -> Any:
    cur: Any = r
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def f(x: object, digits: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def split_counts(counts: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Split ``VERB resource[/sub]`` counts into kumaco's resources and everything else."""
    mine: dict[str, int] = {}
    others: dict[str, int] = {}
    for k, v in counts.items():
        parts = k.split()
        resource = parts[1].split("/")[0] if len(parts) > 1 else ""
        (mine if resource in KUMACO_RESOURCES else others)[k] = v
    return mine, others


def _fmt_counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.items())


def conflicts_per_opening(r: Run) -> list[int]:
    return [int(op["kumaco"].get("PATCH nodes/status 409", 0)) for op in r.get("openings", [])]


def marginal_bytes_per_node(runs: Sequence[Run], key: str = "leader") -> dict[int, int]:
    """RSS growth per added node between consecutive scales (start-up RSS), by the larger scale."""
    pts = [
        (r["nodes"], _get(r, "after_startup", key, "rss_mb"))
        for r in sorted(runs, key=lambda r: r["nodes"])
        if _get(r, "after_startup", key, "rss_mb") is not None
    ]
    return {
        n1: round((m1 - m0) * 2**20 / (n1 - n0))
        for (n0, m0), (n1, m1) in itertools.pairwise(pts)
        if n1 > n0
    }


# ----------------------------------------------------------------------------- targets


def targets(doc: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """The targets at scale (CPU, writes, memory, start-up, opening), judged from the runs; None when the scale was not measured."""
    runs = [r for r in doc["runs"] if "error" not in r or r.get("steady")]
    by_nodes = {r["nodes"]: r for r in runs}
    out: list[tuple[str, str, bool | None]] = []
    r5 = by_nodes.get(5000)
    steady = _get(r5, "steady") if r5 else None
    if steady:
        cpu = steady["cpu_percent"]["kumaco_total"]
        out.append(
            (
                "steady state, 5,000 nodes, default churn: leader + follower <= 10% of one core",
                f"{cpu:.2f}% (leader {steady['cpu_percent']['leader']:.2f}%, "
                f"follower {steady['cpu_percent']['follower']:.2f}%)",
                cpu <= 10,
            )
        )
        stray = (
            steady["kumaco"].get("PATCH nodes/status", 0) - steady["kumaco_writes_to_added_nodes"]
        )
        out.append(
            (
                "steady state, 5,000 nodes: zero writes (one per node the churn added) and zero LISTs",
                f"{stray} other writes, {steady['kumaco_writes_to_added_nodes']} to added nodes, "
                f"{sum(v for k, v in steady['kumaco'].items() if k.startswith('LIST'))} LISTs",
                stray == 0 and not any(k.startswith("LIST") for k in steady["kumaco"]),
            )
        )
    else:
        out.append(("steady state at 5,000 nodes", "not measured", None))
    r50 = by_nodes.get(50000)
    if r50 is not None and "error" not in r50:
        rss = r50["processes"]["leader"]["peak_rss_mb"]
        out.append(("50,000 nodes: leader RSS <= 600 MB", f"{rss} MB", rss <= 600))
        up = r50["startup"]["seconds_to_converge"]
        out.append(("50,000 nodes: start-up to converged <= 3 minutes", f"{up:.0f} s", up <= 180))
        ratio = r50.get("open_ratio_to_floor_kumaco_watching")
        alone = r50.get("open_ratio_to_floor")
        out.append(
            (
                "50,000 nodes: opening <= 1.3x the floor under the same conditions",
                f"{f(ratio)}x the floor with kumaco watching ({f(alone)}x the floor alone)",
                ratio is not None and ratio <= 1.3,
            )
        )
    else:
        why = "not measured" if r50 is None else f"failed: {r50['error']}"
        out.append(("50,000 nodes: leader RSS, start-up, opening", why, None))
    worst_ratio = 0.0
    multi = []
    for r in runs:
        for op in r.get("openings", []):
            worst_ratio = max(
                worst_ratio, op["kumaco"].get("PATCH nodes/status 409", 0) / max(1, op["nodes"])
            )
            if op["kumaco_max_writes_per_node"] > 1:
                multi.append(f"{r['nodes']}: {op['at']}")
        if (
            _get(r, "steady", "kumaco_max_writes_per_node")
            and r["steady"]["kumaco_max_writes_per_node"] > 1
        ):
            multi.append(f"{r['nodes']}: steady")
    out.append(
        (
            "every scale: at most one successful write per changed node",
            "held at every scale" if not multi else "; ".join(multi),
            not multi,
        )
    )
    out.append(
        (
            "every scale: no 409 storm (409s < 5% of the nodes of an opening)",
            f"worst opening: {100 * worst_ratio:.2f}% of its nodes",
            worst_ratio < 0.05,
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


# ----------------------------------------------------------------------------- markdown


def _living_caption(runs: list[dict[str, Any]]) -> str:
    """Which points of the chart are living clusters and which static ones."""

    def sizes(rs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['nodes']:,}" for r in rs) or "none"

    living = [r for r in runs if _get(r, "settings", "kwok") is not None]
    static = [r for r in runs if _get(r, "settings", "kwok") is None]
    return (
        f"Living clusters (kwok's kubelets and the churn): {sizes(living)} nodes; static "
        f"(nodes that never change by themselves): {sizes(static)} nodes. The chart joins "
        "them in one line, so a steady state that drops between the two kinds is the cluster "
        "falling quiet, not kumaco getting cheaper."
    )


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    runs = doc["runs"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {m['date']} on {m['machine']}; Python {m['python']}, {m['kube_apiserver']}, "
        f"{m['etcd']}, {m.get('kwok', 'kwok')}, kubernetes client {m['kubernetes_client']}. "
        "Everything (kube-apiserver, etcd, kwok, kumaco, the churn and the watcher) shares the "
        "machine, and the machine is shared with other work: compare the ratios measured in the "
        "same run, and see each run's load. Produced by `python hack/bench.py`; raw data in "
        "`docs/benchmarks.json`; the chart is `docs/images/bench-scale.svg`.",
        "",
        "![every figure against the number of nodes](images/bench-scale.svg)",
        "",
        _living_caption(runs),
        "",
        "## Runs and their conditions",
        "",
        "| nodes | kumaco commit | windows | kwok (status s / Lease s) | churn scale "
        "| load before -> after (1 min avg) | machine busy % | seeded in s | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        k = _get(r, "settings", "kwok")
        c = _get(r, "settings", "churn")
        kw = "-" if not k else f"{k['status_period']:g} / {k['lease_seconds']}"
        load0 = (r.get("load_before") or [None])[0]
        load1 = (r.get("load_after") or [None])[0]
        lines.append(
            f"| {r['nodes']} | {r.get('kumaco_commit') or '-'} | {r['windows']} | {kw} "
            f"| {'-' if not c else c['scale']} "
            f"| {f(load0)} -> {f(load1)} | {f(r.get('machine_busy_percent'), 1)} "
            f"| {f(r.get('seed_seconds'), 1)} | {r.get('error', '')} |"
        )
    lines += [
        "",
        "## Latency (seconds; as seen by a separate watcher, under the churn)",
        "",
        "| nodes | floor alone p50 | floor, kumaco watching p50 | start-up | open p50 | open p99 "
        "| open / floor alone | open / floor watching | close p50 | MaintenanceInProgress p50 "
        "| 409s per opening |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['nodes']} | {f(_get(r, 'floor_seconds', 'concurrent', 'p50'))} "
            f"| {f(_get(r, 'floor_seconds', 'concurrent_kumaco_watching', 'p50'))} "
            f"| {f(_get(r, 'startup', 'seconds_to_converge'))} "
            f"| {f(_get(r, 'open_seconds', 'p50'))} | {f(_get(r, 'open_seconds', 'p99'))} "
            f"| **{f(r.get('open_ratio_to_floor'))}** "
            f"| **{f(r.get('open_ratio_to_floor_kumaco_watching'))}** "
            f"| {f(_get(r, 'close_seconds', 'p50'))} | {f(_get(r, 'mip_seconds', 'p50'), 3)} "
            f"| {', '.join(map(str, conflicts_per_opening(r))) or '-'} |"
        )
    lines += [
        "",
        "## Steady state (no window changes; the cluster keeps living)",
        "",
        "CPU in % of one core over the period, RSS at its end. kumaco's requests come from the "
        "API server's audit log (user agent `kumaco/...`); the churn's actions from its own record.",
        "",
        "| nodes | seconds | leader CPU % | follower CPU % | together | leader RSS MB "
        "| follower RSS MB | kwok / kube-apiserver / etcd CPU % | kumaco's requests | churn "
        "| Ready heartbeat age p50 / max s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        s = r.get("steady")
        if not s:
            continue
        cpu = s["cpu_percent"]
        hb = s.get("heartbeat_age_seconds") or {}
        lines.append(
            f"| {r['nodes']} | {s['seconds']:.0f} | {cpu['leader']:.2f} | {cpu['follower']:.2f} "
            f"| **{cpu['kumaco_total']:.2f}** | {s['rss_mb']['leader']} | {s['rss_mb']['follower']} "
            f"| {f(cpu.get('kwok'), 1)} / {f(cpu.get('kube-apiserver'), 1)} / {f(cpu.get('etcd'), 1)} "
            f"| {_fmt_counts(s['kumaco']) or 'nothing'} | {_fmt_counts(s['churn']) or '-'} "
            f"| {f(hb.get('p50'), 0)} / {f(hb.get('max'), 0)} |"
        )
    lines += [
        "",
        "## One opening: what kumaco sent (audit log) and what it cost",
        "",
        "| nodes | opening at | nodes in scope | kumaco's requests | leader / follower CPU s | churn meanwhile |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        for op in r.get("openings", [])[:1]:
            lines.append(
                f"| {r['nodes']} | {op['at'][11:16]} | {op['nodes']} | {_fmt_counts(op['kumaco'])} "
                f"| {op['cpu_seconds']['leader']} / {op['cpu_seconds']['follower']} "
                f"| {_fmt_counts(op['churn']) or '-'} |"
            )
    lines += [
        "",
        "## Memory (peak RSS, MB)",
        "",
        "| nodes | leader | follower | kube-apiserver | etcd | kwok | leader RSS per added node (bytes) |",
        "|---|---|---|---|---|---|---|",
    ]
    per_node = marginal_bytes_per_node(runs)
    for r in runs:
        p = r.get("processes") or r.get("after_startup") or {}
        lines.append(
            f"| {r['nodes']} | {f(_get(p, 'leader', 'peak_rss_mb'))} | {f(_get(p, 'follower', 'peak_rss_mb'))} "
            f"| {f(_get(p, 'kube-apiserver', 'peak_rss_mb'))} | {f(_get(p, 'etcd', 'peak_rss_mb'))} "
            f"| {f(_get(p, 'kwok', 'peak_rss_mb'))} | {per_node.get(r['nodes'], '-')} |"
        )
    if "memory_per_node" in doc:
        mem = doc["memory_per_node"]
        lines += [
            "",
            f"In-process (`NodeStore` filled with {mem['nodes']} realistic nodes, tracemalloc): "
            f"**{mem['bytes_per_node']} bytes per node** kept, from {mem['json_bytes_per_node']} "
            "bytes of JSON each.",
        ]
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
    if "respect_pdbs" in doc:
        lines += respect_pdbs_section(doc["respect_pdbs"])
    lines += ["", "## Targets at scale", "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, met in targets(doc):
        verdict = "not measured" if met is None else ("yes" if met else "**no**")
        lines.append(f"| {target} | {measured} | {verdict} |")
    return "\n".join(lines) + "\n"


#: The rows of the ``--respect-pdbs`` table: label, key of each mode's result, and whether
#: their ratio means something (a cost) or not (a count, the machine's load).
PDB_ROWS = (
    ("ready: nodes and windows listed (s)", "ready_seconds", True),
    ("pods and budgets listed: admissions may start (s)", "pods_listed_seconds", False),
    ("start-up CPU (s)", "startup_cpu_seconds", True),
    ("steady CPU (% of one core)", "steady_cpu_percent", True),
    ("RSS at the end (MB)", "rss_mb", True),
    ("peak RSS (MB)", "peak_rss_mb", True),
    ("passes in the steady period", "steady_passes", False),
    ("machine busy in the steady period (%)", "machine_busy_percent", False),
)


def respect_pdbs_section(r: dict[str, Any]) -> list[str]:
    """What ``hack/bench.py --respect-pdbs NODES`` measured: both modes side by side."""
    s = r["settings"]
    work = r.get("seed_workload", {})
    lines = [
        "",
        "## PodDisruptionBudgets (`--respect-pdbs`)",
        "",
        f"`{r.get('command', 'python hack/bench.py --respect-pdbs')}`, {r['date']}, kumaco "
        f"{r.get('kumaco_commit', '?')}: {r['nodes']} kwok nodes running {work.get('pods', '?')} "
        f"pods ({s['pods_per_node']} per node, {s['daemonsets']} of them from DaemonSets) in "
        f"{s['namespaces']} namespaces, {r.get('budgets', '?')} PodDisruptionBudgets "
        f"({r.get('budgets_exhausted', '?')} with no disruption allowed). One kumaco leader "
        "without the flag, then one with it; during each steady period "
        f"({s['quiet_seconds']:g} s) the workload lives: "
        f"{s['pod_replacements_per_second']:g} pod replacements a second, one budget's "
        f"`disruptionsAllowed` flipping every {s['budget_flip_seconds']:g} s. Load "
        f"{f(r['load_before'][0])} -> {f(r.get('load_after', [None])[0])}.",
        "",
        "| | without | with | with / without |",
        "|---|---|---|---|",
    ]
    off, on = r.get("off", {}), r.get("on", {})
    for label, key, cost in PDB_ROWS:
        a, b = off.get(key), on.get(key)
        ratio = "-"
        if cost and isinstance(a, int | float) and a and isinstance(b, int | float):
            ratio = f(round(b / a, 2))
        lines.append(f"| {label} | {f(a) if a is not None else '-'} | {f(b)} | {ratio} |")
    mem, check = r.get("memory", {}), r.get("check", {})
    if mem:
        lines += [
            "",
            f"In-process (`BudgetStore`, {mem['pods']} realistic pods, tracemalloc): "
            f"**{mem['bytes_per_pod']} bytes per pod** kept, from {mem['json_bytes_per_pod']} "
            f"bytes of JSON each ({mem['pods_kept']} of the {mem['pods']} pods kept: the "
            "others no budget can refuse).",
        ]
    if check:
        lines += [
            "",
            f"Check: of {check['sample']} nodes that then asked for maintenance, the cluster's "
            f"budgets refused {check['sample_refused']}; kumaco refused exactly those "
            f"({len(check['disagreements'])} disagreements).",
        ]
    if "error" in r:
        lines += ["", f"The run failed: {r['error']}"]
    return lines


def write_markdown(path: Path, doc: dict[str, Any]) -> None:
    """Write the generated tables; keep any hand-written analysis after the marker."""
    kept = ""
    if path.exists():
        old = path.read_text()
        if ANALYSIS in old:
            kept = old[old.index(ANALYSIS) :]
    path.write_text(markdown(doc) + ("\n" + kept if kept else ""))


# ----------------------------------------------------------------------------- the chart

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")

Series = tuple[str, Callable[[Run], float | None]]

PANELS: tuple[tuple[str, str, tuple[Series, ...]], ...] = (
    (
        "Time",
        "seconds",
        (
            ("start-up", lambda r: _get(r, "startup", "seconds_to_converge")),
            ("opening p50", lambda r: _get(r, "open_seconds", "p50")),
            (
                "floor, kumaco watching",
                lambda r: _get(r, "floor_seconds", "concurrent_kumaco_watching", "p50"),
            ),
            ("floor alone", lambda r: _get(r, "floor_seconds", "concurrent", "p50")),
        ),
    ),
    (
        "Peak memory",
        "MB",
        (
            ("kumaco leader", lambda r: _get(r, "processes", "leader", "peak_rss_mb")),
            ("kumaco follower", lambda r: _get(r, "processes", "follower", "peak_rss_mb")),
            ("kube-apiserver", lambda r: _get(r, "processes", "kube-apiserver", "peak_rss_mb")),
            ("etcd", lambda r: _get(r, "processes", "etcd", "peak_rss_mb")),
            ("kwok", lambda r: _get(r, "processes", "kwok", "peak_rss_mb")),
        ),
    ),
    (
        "Steady-state CPU",
        "% of one core",
        (
            (
                "kumaco leader + follower",
                lambda r: _get(r, "steady", "cpu_percent", "kumaco_total"),
            ),
            ("kumaco follower", lambda r: _get(r, "steady", "cpu_percent", "follower")),
            ("kube-apiserver", lambda r: _get(r, "steady", "cpu_percent", "kube-apiserver")),
            ("kwok", lambda r: _get(r, "steady", "cpu_percent", "kwok")),
        ),
    ),
)


def _ticks(lo: float, hi: float) -> list[float]:
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if lo <= v <= hi:
                out.append(v)
    return out or [lo, hi]


def _label(v: float) -> str:
    if v >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def chart(doc: dict[str, Any]) -> str:
    """Every scale's figures, log-log, one panel per unit (an SVG document)."""
    runs = sorted((r for r in doc["runs"] if r.get("nodes")), key=lambda r: r["nodes"])
    w, h, left, right, top, bottom = 330, 300, 58, 12, 34, 120
    total_w = w * len(PANELS)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{h}" '
        f'viewBox="0 0 {total_w} {h}" font-family="sans-serif" font-size="11">',
        f'<rect width="{total_w}" height="{h}" fill="white"/>',
    ]
    xs = [r["nodes"] for r in runs] or [1000, 50000]
    x0, x1 = min(xs) / 1.3, max(xs) * 1.3
    for i, (title, unit, series) in enumerate(PANELS):
        ox = i * w
        pw, ph = w - left - right, h - top - bottom
        vals = [v for _n, get in series for r in runs if (v := get(r)) is not None and v > 0]
        y0, y1 = (min(vals) / 1.5, max(vals) * 1.5) if vals else (1.0, 10.0)

        def px(x: float, ox: int = ox, pw: int = pw) -> float:
            return (
                ox
                + left
                + pw * (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
            )

        def py(y: float, ph: int = ph, y0: float = y0, y1: float = y1) -> float:
            return (
                top + ph - ph * (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))
            )

        out.append(
            f'<text x="{ox + left}" y="20" font-weight="bold">{escape(title)} ({escape(unit)})</text>'
        )
        out.append(
            f'<rect x="{ox + left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>'
        )
        for t in _ticks(y0, y1):
            y = py(t)
            out.append(
                f'<line x1="{ox + left}" x2="{ox + left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
            )
            out.append(
                f'<text x="{ox + left - 4}" y="{y + 4:.1f}" text-anchor="end">{_label(t)}</text>'
            )
        for n in xs:
            x = px(n)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#eee"/>'
            )
            out.append(
                f'<text x="{x:.1f}" y="{top + ph + 14}" text-anchor="middle">{_label(n)}</text>'
            )
        out.append(
            f'<text x="{ox + left + pw / 2}" y="{top + ph + 28}" text-anchor="middle">nodes</text>'
        )
        for j, (name, get) in enumerate(series):
            color = COLORS[j % len(COLORS)]
            pts = [(px(r["nodes"]), py(v)) for r in runs if (v := get(r)) is not None and v > 0]
            if len(pts) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
                out.append(
                    f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
                )
            for x, y in pts:
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
            ly = top + ph + 46 + 14 * j
            out.append(
                f'<line x1="{ox + left}" x2="{ox + left + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>'
            )
            out.append(f'<text x="{ox + left + 24}" y="{ly}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_chart(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chart(doc))
