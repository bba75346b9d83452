"""What kumaco is doing in a cluster right now: the status report, from the planner's answer.

Contract
--------
* :func:`report` is pure and only arranges what it is given: a :class:`Snapshot`
  (what ``kubectl kumaco`` read -- window ConfigMaps, the nodes in scope, the
  Lease, what could not be read, and where it looked), the
  :class:`~kumaco.core.planning.instance.Instance` looked at, the windows parsed from the
  snapshot's ConfigMaps (:func:`kumaco.core.windows.configmaps.windows_of`), the
  planner's answer for them (:func:`kumaco.core.planning.planner.plan`, run by the
  command: the controller's own path) and an instant ``now`` (passed in; nothing
  here reads a clock) give a :class:`StatusReport`. So each window's state (open
  or closed at ``now`` and when that changes), the number of nodes in scope it
  selects, and the windows open for each node are exactly what the controller
  computes. Each node whose ``UnderMaintenance`` condition is True is listed with
  its ``MaintenanceInProgress`` condition *as kumaco wrote it* (reason
  ``BlockedByCondition``, ``RequiredConditionNotTrue``,
  ``ConcurrencyCeilingReached``... see :mod:`kumaco.core.planning.planner`) and since
  when, and with the other instance that owns one of its conditions
  (:func:`kumaco.core.planning.changes.written_by_another`); the Lease holder with whether
  its lease still runs (``renewTime + leaseDurationSeconds`` against ``now``); the nodes
  whose ``MaintenancePlanned`` (the instance's ``--planned-condition``) is True.
  A window open for longer than :mod:`kumaco.core.windows.window` follows its chained
  occurrences has no known close: it is reported as closing *after* the
  instant kumaco will look again (``closesAfter`` in JSON).
* :func:`format_report` renders it (an aligned table through :mod:`kumaco.views.table`,
  coloured only when asked); :func:`kumaco.views.status_json.to_json` its JSON for scripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kumaco.core.objects.lease import parse_lease
from kumaco.core.objects.nodes import TRUE, Condition, NodeSet, NodeView
from kumaco.core.planning.changes import written_by_another
from kumaco.core.planning.instance import Instance
from kumaco.core.planning.policy import HELD, Plan
from kumaco.core.planning.waiting import SHOWN, Waiter
from kumaco.core.time.durations import SECOND
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.windows.window import (
    ConfigMapErrors,
    FieldError,
    InvalidWindow,
    Window,
    WindowState,
)
from kumaco.views.table import Cell, aligned, paint
from kumaco.views.timeline import format_local
from kumaco.views.wording import followed, next_change, next_change_text, waited, when


@dataclass(frozen=True)
class Snapshot:
    """Raw reads: window ConfigMaps, nodes in scope (trimmed), the Lease; what failed; and where.

    ``namespaces`` and the selectors say where it looked: the ConfigMaps of those
    namespaces that ``configmap_selector`` selects, the nodes ``node_selector`` selects.
    """

    configmaps: tuple[Mapping[str, Any], ...]
    nodes: tuple[NodeView, ...] | None
    lease: Mapping[str, Any] | None
    problems: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    configmap_selector: str = DEFAULT_CONFIGMAP_SELECTOR
    node_selector: str = ""


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class WindowStatus(ConfigMapErrors):
    """One window ConfigMap at ``now``."""

    namespace: str
    name: str
    window: Window | None
    errors: tuple[FieldError, ...] = ()
    state: WindowState | None = None
    matching_nodes: int | None = None
    since: int | None = None  # start of the open run, when known


@dataclass(frozen=True)
class NodeStatus:
    """A node under maintenance, holding MaintenanceInProgress, or owned by another instance.

    Its conditions as written (None: not set).
    """

    name: str
    windows: tuple[str, ...]
    under_maintenance: Condition | None
    in_progress: Condition | None
    #: Another kumaco instance (field manager) that last wrote one of its conditions.
    owner: str | None = None
    #: ``status.nodeInfo.bootID`` (None: not reported, so a reboot cannot end its maintenance).
    boot_id: str | None = None

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
    instance: Instance
    #: Where it looked (:class:`Snapshot`).
    namespaces: tuple[str, ...]
    configmap_selector: str
    node_selector: str
    windows: tuple[WindowStatus, ...]
    nodes_in_scope: int | None
    nodes: tuple[NodeStatus, ...]
    leader: LeaderStatus | None
    problems: tuple[str, ...] = field(default=())
    context: str | None = None
    #: The nodes in scope whose advance notice (``MaintenancePlanned``, ``--planned-lead``)
    #: is True, with that condition.
    planned: tuple[tuple[str, Condition], ...] = ()
    #: The nodes waiting for maintenance, the longest first (:mod:`kumaco.core.planning.waiting`).
    waiters: tuple[Waiter, ...] = ()


def _leader(instance: Instance, lease: Mapping[str, Any] | None, now: int) -> LeaderStatus:
    if lease is None:
        return LeaderStatus(instance.lease_namespace, instance.lease_name, found=False)
    record = parse_lease(lease)
    renewed = parse_timestamp(record.renew_time)
    expires = renewed + record.duration * SECOND if renewed is not None else None
    return LeaderStatus(
        namespace=instance.lease_namespace,
        name=instance.lease_name,
        found=True,
        holder=record.holder,
        renew_time=record.renew_time,
        acquire_time=record.acquire_time,
        duration=record.duration,
        transitions=record.transitions,
        expires=expires,
        current=bool(record.holder) and expires is not None and now < expires,
    )


def report(
    snapshot: Snapshot,
    instance: Instance,
    entries: Sequence[Window | InvalidWindow],
    answer: Plan,
    now: int,
    context: str | None = None,
    waiting: Sequence[Waiter] = (),
) -> StatusReport:
    """The status at instant ``now`` (pure; see the module contract).

    ``entries`` are the windows of ``snapshot.configmaps``, ``answer`` the planner's
    answer for the valid ones and the snapshot's nodes at ``now``; ``waiting`` the nodes
    waiting for maintenance by their conditions as written, the longest first.
    """
    # The snapshot holds the nodes in scope only (the server applied --node-selector).
    nodes = NodeSet(snapshot.nodes or ())
    known = snapshot.nodes is not None
    windows = tuple(
        WindowStatus(
            e.namespace,
            e.name,
            e,
            state=answer.windows[e.key],
            matching_nodes=answer.matching.get(e.key) if known else None,
            since=e.run_start(now) if answer.windows[e.key].open else None,
        )
        if isinstance(e, Window)
        else WindowStatus(e.namespace, e.name, None, errors=e.errors)
        for e in entries
    )
    planned = {n.name: n for n in answer.nodes}
    under: list[NodeStatus] = []
    for node in sorted(nodes, key=lambda n: n.name):
        um, ip = node.condition(instance.under_maintenance), node.condition(instance.in_progress)
        others = {
            m
            for t in (instance.under_maintenance, instance.in_progress)
            if written_by_another(m := node.owners.get(t, ""), instance.field_manager)
        }
        if not (
            node.is_true(instance.under_maintenance) or node.is_true(instance.in_progress) or others
        ):
            continue
        np = planned.get(node.name)
        keys = (*np.windows, *np.freezes) if np is not None else ()
        under.append(
            NodeStatus(node.name, keys, um, ip, min(others) if others else None, node.boot_id)
        )
    return StatusReport(
        at=now,
        instance=instance,
        namespaces=snapshot.namespaces,
        configmap_selector=snapshot.configmap_selector,
        node_selector=snapshot.node_selector,
        windows=windows,
        nodes_in_scope=len(nodes) if known else None,
        nodes=tuple(under),
        leader=_leader(instance, snapshot.lease, now),
        problems=snapshot.problems,
        context=context,
        planned=tuple(
            (n.name, c)
            for n in sorted(nodes, key=lambda n: n.name)
            if (c := n.condition(instance.planned)) is not None and c.status == TRUE
        ),
        waiters=tuple(waiting),
    )


# ----------------------------------------------------------------------------- table


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
    zone = ws.window.zone_name
    st, never = followed(ws.window, ws.state, now)
    _verb, nxt = next_change(st, never)
    return [
        Cell(ws.key, "bold"),
        Cell("ended", "dim")
        if st.ended
        else Cell("freeze", "yellow")
        if ws.window.freeze
        else Cell("valid", "green"),
        Cell(zone),
        Cell("yes" if st.open else "no", "green+bold" if st.open else "dim"),
        Cell(next_change_text(st, now, never)),
        Cell("-" if nxt is None else format_local(nxt, zone)),
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
        # For a holder, SINCE says how long it has held MaintenanceInProgress.
        text = ip.reason + (
            f": {ip.message}" if ip.message and (not yes or ip.reason == HELD) else ""
        )
        if yes and n.boot_id is None:
            text += " (no bootID reported: only a required condition clearing ends it)"
        why = Cell(text, "" if yes else _REASON_STYLE.get(ip.reason, ""))
        since = Cell(when(ip.last_transition_time, now))
    if n.owner is not None:
        why = Cell(f"owned by {n.owner}: not written by this instance", "yellow")
    return [
        Cell(n.name, "bold"),
        Cell(",".join(n.windows) or "-"),
        Cell(when(n.under_maintenance.last_transition_time, now) if n.under_maintenance else "-"),
        state,
        since,
        why,
    ]


def format_report(r: StatusReport, color: bool = False) -> str:
    """The human-readable status: a header, then windows, nodes and the leader."""
    s = r.instance
    out: list[str] = []
    scope_text = f"nodes in scope: {r.nodes_in_scope if r.nodes_in_scope is not None else '?'}"
    if r.node_selector:
        scope_text += f" ({r.node_selector})"
    ctx = f"context {r.context}; " if r.context else ""
    out.append(
        paint(f"kumaco status at {format_instant(r.at)}", "bold", color)
        + f" ({ctx}namespaces {','.join(r.namespaces)}; {scope_text})\n\n"
    )
    out.append(paint(f"WINDOWS ({r.configmap_selector})", "cyan+bold", color) + "\n")
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
        paint(
            f"NODES UNDER MAINTENANCE ({s.under_maintenance}=True) OR IN PROGRESS",
            "cyan+bold",
            color,
        )
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
    if r.waiters:
        out.append(
            paint("WAITING FOR MAINTENANCE", "cyan+bold", color)
            + f": {len(r.waiters)}; the longest: "
            + ", ".join(waited(w.name, w.since, r.at, w.reason) for w in r.waiters[:SHOWN])
            + "\n"
        )
    out.append("\n")
    if r.planned:  # only with --planned-lead: nothing is shown without it
        out.append(
            paint(f"MAINTENANCE PLANNED ({s.planned}=True)", "cyan+bold", color)
            + f": {len(r.planned)}\n"
        )
        rows = [[Cell(h, "bold") for h in ("NODE", "SINCE", "MESSAGE")]]
        rows += [
            [Cell(name, "bold"), Cell(when(c.last_transition_time, r.at)), Cell(c.message)]
            for name, c in r.planned
        ]
        out.append(aligned(rows, color) + "\n")
    lead = r.leader
    if lead is not None:
        out.append(paint(f"LEADER (Lease {lead.key})", "cyan+bold", color) + ": ")
        if not lead.found:
            out.append(paint("no Lease: no kumaco replica has led with this id", "yellow", color))
        elif not lead.holder:
            out.append(paint("none (the Lease was released)", "yellow", color))
            if lead.renew_time:
                out.append(f"; last renewed {when(lead.renew_time, r.at)}")
        else:
            verdict = (
                paint("current", "green+bold", color)
                if lead.current
                else paint("expired: the holder stopped renewing", "red+bold", color)
            )
            until = f", until {format_instant(lead.expires)}" if lead.expires is not None else ""
            out.append(
                f"{paint(lead.holder, 'bold', color)}\n  renewed {when(lead.renew_time, r.at)}, "
                f"lease {lead.duration}s{until}: {verdict}"
            )
        out.append("\n")
    for p in r.problems:
        out.append(paint(f"error: {p}", "red", color) + "\n")
    return "".join(out)
