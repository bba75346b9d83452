"""What kumaco is doing in a cluster right now, read from the live API -- read-only.

Contract
--------
* :func:`gather` reads through :class:`Reader`, a facade over
  :class:`kumaco.kube.client.Kube` that can only ``GET`` one object or ``LIST`` a
  collection: the window ConfigMaps of each namespace (by label selector), the
  Nodes in scope (``--node-selector``, filtered by the server) and the leader
  election Lease. Nothing is ever written, so ``get``/``list`` on configmaps
  and nodes and ``get`` on leases are all the RBAC it needs. An API error on
  one read (403, say) is recorded in :attr:`Snapshot.problems` and the rest
  is still read; an unreachable server raises
  :class:`kumaco.kube.client.TransportError`.
* :func:`report` is pure: a :class:`Snapshot`, the condition names and an
  instant ``now`` (passed in; nothing here reads a clock) give a
  :class:`StatusReport`: each window ConfigMap valid or not (with the
  reason), open or closed at ``now`` and when that changes (UTC and the
  window's zone), how many nodes in scope it selects; each node whose
  ``UnderMaintenance`` condition is True, the windows open for it, its
  ``MaintenanceInProgress`` condition as kumaco wrote it (reason
  ``BlockedByCondition``, ``RequiredConditionNotTrue``,
  ``ConcurrencyCeilingReached``... see :mod:`kumaco.core.planner`) and since
  when; and the Lease holder with whether its lease still runs
  (``renewTime + leaseDurationSeconds`` against ``now``).
  A window open for longer than :mod:`kumaco.core.windows` follows its chained
  occurrences has no known close: it is reported as closing *after* the
  instant kumaco will look again (``closesAfter`` in JSON).
* :func:`to_json` and :func:`format_report` render it (JSON for scripts; an
  aligned table, coloured only when asked).

The default namespace comes from the kubeconfig context
(:func:`context_namespace`). Only :mod:`kumaco.kube.client` may import
``kubernetes``; until it offers the equivalent, the kubeconfig YAML is read
here with PyYAML, merging ``$KUBECONFIG`` files as kubectl does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kumaco.cmd.settings import DEFAULT_CONFIGMAP_SELECTOR, own_namespace
from kumaco.core.durations import SECOND
from kumaco.core.nodes import TRUE, Condition, NodeSet, NodeView, format_instant, node_view
from kumaco.core.nodes import parse_timestamp as _parse_timestamp
from kumaco.core.planner import IN_PROGRESS, UNDER_MAINTENANCE
from kumaco.core.windows import FieldError, InvalidWindow, Window, WindowState, parse_window
from kumaco.kube.client import ApiError, Kube
from kumaco.views.timeline import format_local, local_time, matching_counts

DEFAULT_NAMESPACE = "default"
DEFAULT_LEASE = "kumaco"


# ----------------------------------------------------------------------------- kubeconfig


def _kubeconfig_files(kubeconfig: str | None, env: Mapping[str, str]) -> list[Path]:
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path(env.get("HOME") or Path.home()) / ".kube" / "config"]


def context_namespace(
    kubeconfig: str | None, context: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The kubeconfig context's name and its namespace (None where unset or unreadable).

    The files are ``kubeconfig``, else ``$KUBECONFIG`` (merged as kubectl
    does: the first ``current-context`` and the first definition of a
    context win), else ``~/.kube/config``. ``context`` overrides the current one.
    """
    env = os.environ if env is None else env
    current: str | None = None
    contexts: dict[str, Mapping[str, Any]] = {}
    for path in _kubeconfig_files(kubeconfig, env):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if not isinstance(doc, Mapping):
            continue
        cur = doc.get("current-context")
        if current is None and isinstance(cur, str) and cur:
            current = cur
        for entry in doc.get("contexts") or ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                body = entry.get("context")
                contexts.setdefault(entry["name"], body if isinstance(body, Mapping) else {})
    name = context or current
    if name is None:
        return None, None
    ns = contexts.get(name, {}).get("namespace")
    return name, ns if isinstance(ns, str) and ns else None


def default_namespace(
    kubeconfig: str | None, context: str | None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """The context name and the namespace to use when none is given, as kubectl decides.

    Without ``--kubeconfig``, inside a pod (where :func:`kumaco.kube.client.load_configuration`
    uses the service account) it is the pod's namespace; otherwise the
    kubeconfig context's namespace; else ``default``.
    """
    env = os.environ if env is None else env
    if not kubeconfig and env.get("KUBERNETES_SERVICE_HOST"):
        own = own_namespace(env)
        if own:
            return None, own
    name, ns = context_namespace(kubeconfig, context, env)
    return name, ns or DEFAULT_NAMESPACE


# ----------------------------------------------------------------------------- reading


class Reader:
    """Read-only access: GET one object, LIST a collection. There is no way to write."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    def get(self, path: str) -> Any | None:
        """The object at ``path``, or None if it does not exist (404)."""
        try:
            return self._kube.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, label_selector: str = "") -> list[dict[str, Any]]:
        """Every item of a collection (paginated LIST)."""
        items, _rv = self._kube.list_all(path, label_selector)
        return items


@dataclass(frozen=True)
class Scope:
    """What to look at, and under which names."""

    namespaces: tuple[str, ...]
    configmap_selector: str = DEFAULT_CONFIGMAP_SELECTOR
    node_selector: str = ""
    under_maintenance: str = UNDER_MAINTENANCE
    in_progress: str = IN_PROGRESS
    lease_namespace: str = ""
    lease_name: str = DEFAULT_LEASE

    @property
    def lease_ns(self) -> str:
        return self.lease_namespace or self.namespaces[0]


@dataclass(frozen=True)
class Snapshot:
    """Raw reads: window ConfigMaps, nodes in scope (trimmed), the Lease; and what failed."""

    configmaps: tuple[Mapping[str, Any], ...]
    nodes: tuple[NodeView, ...] | None
    lease: Mapping[str, Any] | None
    problems: tuple[str, ...] = ()


def _api_problem(what: str, exc: ApiError) -> str:
    return f"cannot {what}: {exc.status} {exc.reason}: {exc.message}".rstrip(": ")


def list_window_configmaps(reader: Reader, scope: Scope) -> tuple[list[dict[str, Any]], list[str]]:
    """The window ConfigMaps of every namespace, and the namespaces that could not be read."""
    items: list[dict[str, Any]] = []
    problems: list[str] = []
    for ns in scope.namespaces:
        try:
            items += reader.list(f"/api/v1/namespaces/{ns}/configmaps", scope.configmap_selector)
        except ApiError as exc:
            problems.append(_api_problem(f"list ConfigMaps in namespace {ns}", exc))
    return items, problems


def list_nodes(reader: Reader, node_selector: str) -> list[NodeView]:
    """The nodes in scope (the server applies the selector), trimmed to views."""
    return [v for o in reader.list("/api/v1/nodes", node_selector) if (v := node_view(o))]


def gather(reader: Reader, scope: Scope) -> Snapshot:
    """Read everything :func:`report` needs (see the module contract)."""
    configmaps, problems = list_window_configmaps(reader, scope)
    nodes: tuple[NodeView, ...] | None = None
    try:
        nodes = tuple(list_nodes(reader, scope.node_selector))
    except ApiError as exc:
        problems.append(_api_problem("list nodes", exc))
    lease: Mapping[str, Any] | None = None
    path = f"/apis/coordination.k8s.io/v1/namespaces/{scope.lease_ns}/leases/{scope.lease_name}"
    try:
        lease = reader.get(path)
    except ApiError as exc:
        problems.append(_api_problem(f"get Lease {scope.lease_ns}/{scope.lease_name}", exc))
    return Snapshot(tuple(configmaps), nodes, lease, tuple(problems))


def window_entries(configmaps: Iterable[Mapping[str, Any]]) -> list[Window | InvalidWindow]:
    """Each ConfigMap (as the API returns it) parsed as the controller does, sorted by key."""
    entries: list[Window | InvalidWindow] = []
    for cm in configmaps:
        meta = cm.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        ns, name = meta.get("namespace"), meta.get("name")
        if not (isinstance(ns, str) and isinstance(name, str)):
            continue
        data = cm.get("data")
        entries.append(
            parse_window(
                ns,
                name,
                data if isinstance(data, Mapping) else None,
                has_binary_data=bool(cm.get("binaryData")),
            )
        )
    return sorted(entries, key=lambda e: (e.namespace, e.name))


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class WindowStatus:
    """One window ConfigMap at ``now``."""

    namespace: str
    name: str
    window: Window | None
    errors: tuple[FieldError, ...] = ()
    state: WindowState | None = None
    matching_nodes: int | None = None
    since: int | None = None  # start of the open run, when known

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def reason(self) -> str:
        return "; ".join(str(e) for e in self.errors)


@dataclass(frozen=True)
class NodeStatus:
    """A node under maintenance and its MaintenanceInProgress condition (None: not set)."""

    name: str
    windows: tuple[str, ...]
    under_maintenance: Condition
    in_progress: Condition | None

    @property
    def is_in_progress(self) -> bool:
        return self.in_progress is not None and self.in_progress.status == TRUE


@dataclass(frozen=True)
class LeaderStatus:
    """The leader election Lease as read."""

    namespace: str
    name: str
    found: bool
    holder: str = ""
    renew_time: str | None = None
    acquire_time: str | None = None
    duration: int = 0
    transitions: int = 0
    expires: int | None = None
    current: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class StatusReport:
    """Everything ``kubectl kumaco status`` shows."""

    at: int
    scope: Scope
    windows: tuple[WindowStatus, ...]
    nodes_in_scope: int | None
    nodes: tuple[NodeStatus, ...]
    leader: LeaderStatus | None
    problems: tuple[str, ...] = field(default=())
    context: str | None = None


def _leader(scope: Scope, lease: Mapping[str, Any] | None, now: int) -> LeaderStatus:
    if lease is None:
        return LeaderStatus(scope.lease_ns, scope.lease_name, found=False)
    spec = lease.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    holder = spec.get("holderIdentity")
    renew, acquire = spec.get("renewTime"), spec.get("acquireTime")
    try:
        duration = int(spec.get("leaseDurationSeconds") or 0)
        transitions = int(spec.get("leaseTransitions") or 0)
    except (TypeError, ValueError):
        duration, transitions = 0, 0
    renewed = _parse_timestamp(renew if isinstance(renew, str) else None)
    expires = renewed + duration * SECOND if renewed is not None else None
    holder_text = holder if isinstance(holder, str) else ""
    return LeaderStatus(
        namespace=scope.lease_ns,
        name=scope.lease_name,
        found=True,
        holder=holder_text,
        renew_time=renew if isinstance(renew, str) else None,
        acquire_time=acquire if isinstance(acquire, str) else None,
        duration=duration,
        transitions=transitions,
        expires=expires,
        current=bool(holder_text) and expires is not None and now < expires,
    )


def report(snapshot: Snapshot, scope: Scope, now: int, context: str | None = None) -> StatusReport:
    """The status at instant ``now`` (pure; see the module contract)."""
    entries = window_entries(snapshot.configmaps)
    valid = [e for e in entries if isinstance(e, Window)]
    nodes = NodeSet(snapshot.nodes or ())
    counts = matching_counts(valid, nodes) if snapshot.nodes is not None else {}
    states = {w.key: w.state_at(now) for w in valid}
    windows = tuple(
        WindowStatus(
            e.namespace,
            e.name,
            e,
            state=states[e.key],
            matching_nodes=counts.get(e.key),
            since=e.run_start(now) if states[e.key].open else None,
        )
        if isinstance(e, Window)
        else WindowStatus(e.namespace, e.name, None, errors=e.errors)
        for e in entries
    )
    open_windows = [w for w in valid if states[w.key].open]
    under: list[NodeStatus] = []
    for node in sorted(nodes, key=lambda n: n.name):
        um = node.condition(scope.under_maintenance)
        if um is None or um.status != TRUE:
            continue
        keys = tuple(w.key for w in open_windows if w.selector.matches(node.labels))
        under.append(NodeStatus(node.name, keys, um, node.condition(scope.in_progress)))
    return StatusReport(
        at=now,
        scope=scope,
        windows=windows,
        nodes_in_scope=len(nodes) if snapshot.nodes is not None else None,
        nodes=tuple(under),
        leader=_leader(scope, snapshot.lease, now),
        problems=snapshot.problems,
        context=context,
    )


# ----------------------------------------------------------------------------- JSON


def _local_iso(t: int | None, zone: str) -> str | None:
    return None if t is None else local_time(t, zone).isoformat()


def _instant(t: int | None) -> str | None:
    return None if t is None else format_instant(t)


def _condition_json(c: Condition | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "type": c.type,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "lastTransitionTime": c.last_transition_time,
    }


def to_json(r: StatusReport) -> dict[str, Any]:
    """The report as a JSON-ready document (times RFC 3339; local times with their offset)."""
    windows: list[dict[str, Any]] = []
    for ws in r.windows:
        doc: dict[str, Any] = {
            "namespace": ws.namespace,
            "name": ws.name,
            "valid": ws.window is not None,
        }
        if ws.window is None or ws.state is None:
            doc["errors"] = [{"key": e.key, "message": e.message} for e in ws.errors]
            doc["reason"] = ws.reason
        else:
            w, st, zone = ws.window, ws.state, ws.window.zone_name
            doc.update(
                {
                    "startTime": w.start_time,
                    "duration": w.duration_text,
                    "nodeSelector": w.selector_text,
                    "timeZone": zone,
                    "open": st.open,
                    "since": _instant(ws.since),
                    "closes": _instant(st.closes),
                    "closesLocal": _local_iso(st.closes, zone),
                    "closesAfter": _instant(st.recheck if st.open and st.closes is None else None),
                    "opens": _instant(st.opens),
                    "opensLocal": _local_iso(st.opens, zone),
                    "matchingNodes": ws.matching_nodes,
                }
            )
        windows.append(doc)
    nodes = [
        {
            "name": n.name,
            "windows": list(n.windows),
            "underMaintenance": _condition_json(n.under_maintenance),
            "inProgress": n.is_in_progress,
            "maintenanceInProgress": _condition_json(n.in_progress),
        }
        for n in r.nodes
    ]
    leader: dict[str, Any] | None = None
    if r.leader is not None:
        lead = r.leader
        leader = {
            "lease": lead.key,
            "found": lead.found,
            "holder": lead.holder or None,
            "acquireTime": lead.acquire_time,
            "renewTime": lead.renew_time,
            "leaseDurationSeconds": lead.duration,
            "leaseTransitions": lead.transitions,
            "expires": _instant(lead.expires),
            "current": lead.current,
        }
    return {
        "at": format_instant(r.at),
        "context": r.context,
        "namespaces": list(r.scope.namespaces),
        "configMapSelector": r.scope.configmap_selector,
        "nodeSelector": r.scope.node_selector,
        "nodesInScope": r.nodes_in_scope,
        "conditions": {
            "underMaintenance": r.scope.under_maintenance,
            "inProgress": r.scope.in_progress,
        },
        "windows": windows,
        "nodes": nodes,
        "leader": leader,
        "problems": list(r.problems),
    }


# ----------------------------------------------------------------------------- table

_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
}


@dataclass(frozen=True)
class Cell:
    """A table cell: its text and an optional style (a key of the ANSI style table)."""

    text: str
    style: str = ""


def _paint(text: str, style: str, color: bool) -> str:
    if not color or not style or not text:
        return text
    codes = ";".join(_STYLES[s] for s in style.split("+"))
    return f"\x1b[{codes}m{text}\x1b[0m"


def aligned(rows: Sequence[Sequence[Cell]], color: bool) -> str:
    """Left-aligned columns two spaces apart (as kubectl prints); styles only if ``color``."""
    if not rows:
        return ""
    widths = [max(len(r[i].text) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [
            _paint(c.text, c.style, color) + " " * (w - len(c.text))
            for c, w in zip(r, widths, strict=True)
        ]
        lines.append("  ".join(cells).rstrip() + "\n")
    return "".join(lines)


def relative(t: int, now: int) -> str:
    """``in 2h5m``, ``3m10s ago``, ``now``: a coarse human distance (two units at most)."""
    secs = abs(t - now) // SECOND  # towards zero, as the timestamps shown are truncated
    if secs == 0:
        return "now"
    days, rest = divmod(secs, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    units = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    first = next(i for i, (v, _u) in enumerate(units) if v)
    text = "".join(f"{v}{u}" for v, u in units[first : first + 2] if v)
    return f"in {text}" if t > now else f"{text} ago"


def _when(text: str | None, now: int) -> str:
    t = _parse_timestamp(text)
    if text is None or t is None:
        return "-" if text is None else text
    return f"{format_instant(t)} ({relative(t, now)})"


def _window_row(ws: WindowStatus, now: int) -> list[Cell]:
    if ws.window is None or ws.state is None:
        return [
            Cell(ws.key, "bold"),
            Cell("invalid", "red+bold"),
            Cell("-"),
            Cell("-"),
            Cell("-"),
            Cell("-"),
            Cell("-"),
            Cell(ws.reason, "red"),
        ]
    st, zone = ws.state, ws.window.zone_name
    nxt = st.next_change
    if nxt is None:
        change, local = "never opens (none within 5 years)", "-"
    else:
        # Open with no close in reach (occurrences chained beyond what is followed): a bound.
        verb = "opens" if not st.open else "closes" if st.closes is not None else "closes after"
        change = f"{verb} {format_instant(nxt)} ({relative(nxt, now)})"
        local = format_local(nxt, zone)
    return [
        Cell(ws.key, "bold"),
        Cell("valid", "green"),
        Cell(zone),
        Cell("yes" if st.open else "no", "green+bold" if st.open else "dim"),
        Cell(change),
        Cell(local),
        Cell("-" if ws.matching_nodes is None else str(ws.matching_nodes)),
        Cell(""),
    ]


_REASON_STYLE = {
    "BlockedByCondition": "red",
    "RequiredConditionNotTrue": "yellow",
    "ConcurrencyCeilingReached": "yellow",
}


def _node_row(n: NodeStatus, now: int) -> list[Cell]:
    ip = n.in_progress
    if ip is None:
        state = Cell("not set", "dim")
        why = Cell("no MaintenanceInProgress condition (kumaco runs without --max-in-progress?)")
        since = Cell("-")
    else:
        yes = ip.status == TRUE
        state = Cell(
            "yes" if yes else "no", "green+bold" if yes else _REASON_STYLE.get(ip.reason, "")
        )
        why = Cell(
            ip.reason + (f": {ip.message}" if ip.message and not yes else ""),
            "" if yes else _REASON_STYLE.get(ip.reason, ""),
        )
        since = Cell(_when(ip.last_transition_time, now))
    return [
        Cell(n.name, "bold"),
        Cell(",".join(n.windows) or "-"),
        Cell(_when(n.under_maintenance.last_transition_time, now)),
        state,
        since,
        why,
    ]


def format_report(r: StatusReport, color: bool = False) -> str:
    """The human-readable status: a header, then windows, nodes and the leader."""
    s = r.scope
    out: list[str] = []
    scope_text = f"nodes in scope: {r.nodes_in_scope if r.nodes_in_scope is not None else '?'}"
    if s.node_selector:
        scope_text += f" ({s.node_selector})"
    ctx = f"context {r.context}; " if r.context else ""
    out.append(
        _paint(f"kumaco status at {format_instant(r.at)}", "bold", color)
        + f" ({ctx}namespaces {','.join(s.namespaces)}; {scope_text})\n\n"
    )
    out.append(_paint(f"WINDOWS ({s.configmap_selector})", "cyan+bold", color) + "\n")
    if r.windows:
        head = [
            "WINDOW",
            "VALID",
            "ZONE",
            "OPEN",
            "NEXT CHANGE (UTC)",
            "IN WINDOW ZONE",
            "NODES",
            "REASON",
        ]
        rows = [[Cell(h, "bold") for h in head]] + [_window_row(w, r.at) for w in r.windows]
        out.append(aligned(rows, color))
    else:
        out.append("no window ConfigMap found\n")
    out.append("\n")
    out.append(
        _paint(f"NODES UNDER MAINTENANCE ({s.under_maintenance}=True)", "cyan+bold", color)
        + f": {len(r.nodes)}"
        + (
            f", {sum(n.is_in_progress for n in r.nodes)} with {s.in_progress}=True"
            if r.nodes
            else ""
        )
        + "\n"
    )
    if r.nodes:
        head = ["NODE", "WINDOWS", "UNDER MAINTENANCE SINCE", "IN PROGRESS", "SINCE", "REASON"]
        rows = [[Cell(h, "bold") for h in head]] + [_node_row(n, r.at) for n in r.nodes]
        out.append(aligned(rows, color))
    out.append("\n")
    lead = r.leader
    if lead is not None:
        out.append(_paint(f"LEADER (Lease {lead.key})", "cyan+bold", color) + ": ")
        if not lead.found:
            out.append(_paint("no Lease: no kumaco replica has led with this id", "yellow", color))
        elif not lead.holder:
            out.append(_paint("none (the Lease was released)", "yellow", color))
            if lead.renew_time:
                out.append(f"; last renewed {_when(lead.renew_time, r.at)}")
        else:
            verdict = (
                _paint("current", "green+bold", color)
                if lead.current
                else _paint("expired: the holder stopped renewing", "red+bold", color)
            )
            until = f", until {format_instant(lead.expires)}" if lead.expires is not None else ""
            out.append(
                f"{_paint(lead.holder, 'bold', color)}\n  renewed {_when(lead.renew_time, r.at)}, "
                f"lease {lead.duration}s{until}: {verdict}"
            )
        out.append("\n")
    for p in r.problems:
        out.append(_paint(f"error: {p}", "red", color) + "\n")
    return "".join(out)
