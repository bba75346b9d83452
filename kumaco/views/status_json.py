"""``kubectl kumaco status -o json|yaml``: the status report as a document for scripts.

Contract: pure; :func:`to_json` turns a :class:`~kumaco.views.status.StatusReport` into
a JSON-ready document (times RFC 3339, local times with their offset). Its shape is a
contract (docs/status.md); ``status --watch -o json`` prints one such document per change.
"""

from __future__ import annotations

from typing import Any

from kumaco.core.objects.nodes import Condition
from kumaco.core.planning.waiting import SHOWN
from kumaco.core.time.durations import SECOND
from kumaco.core.time.instants import format_instant
from kumaco.views.status import StatusReport
from kumaco.views.timeline import local_time


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
                    **({"daysOfMonth": w.days_text} if w.days else {}),
                    "duration": w.duration_text,
                    "freeze": w.freeze,
                    "maxInProgress": None if w.budget is None else str(w.budget),
                    "nodeSelector": w.selector_text,
                    "timeZone": zone,
                    **({"notBefore": w.not_before_text} if w.not_before_text else {}),
                    **({"notAfter": w.not_after_text} if w.not_after_text else {}),
                    "open": st.open,
                    "ended": st.ended,
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
            "ownedBy": n.owner,
            "bootID": n.boot_id,
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
        "namespaces": list(r.namespaces),
        "configMapSelector": r.configmap_selector,
        "nodeSelector": r.node_selector,
        "nodesInScope": r.nodes_in_scope,
        "conditions": {
            "underMaintenance": r.instance.under_maintenance,
            "inProgress": r.instance.in_progress,
        },
        "windows": windows,
        "nodes": nodes,
        "maintenancePlanned": [
            {"name": name, "message": c.message, "since": c.last_transition_time}
            for name, c in r.planned
        ],
        "leader": leader,
        "problems": list(r.problems),
        "waiting": {
            "count": len(r.waiters),
            "longest": [
                {
                    "name": w.name,
                    "since": format_instant(w.since),
                    "waitingSeconds": max(0, r.at - w.since) // SECOND,
                    "reason": w.reason,
                }
                for w in r.waiters[:SHOWN]
            ],
        },
    }
