"""The judges of kured v2's fleet: what the API server's audit log says a run did.

Contract. :func:`judge_disruption` replays, in the server's commit order, every stored
Node of a fleet (the audit policy :data:`tests.support.env.kured.KURED_AUDIT_POLICY` logs
the daemon's cordons and uncordons with the stored object) and answers the most nodes
disrupted -- cordoned, or not ``Ready=True`` -- at once. :func:`admissions` lists when each
node's in-progress condition turned True (from :func:`tests.support.judges.audit.judge_ceiling`),
and :func:`summary` is the judged figures of a run: the machines' ground truth (their
reboot log) beside the audit log's replays and the agents' refused requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.kured import IN_PROGRESS, Fleet, Outcome
from tests.support.judges.audit import forbidden, judge_ceiling, read_audit_log


def _disrupted(node: Mapping[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable") is True:
        return True
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") != "True")
    return True


@dataclass
class Disruption:
    """:func:`judge_disruption`'s answer: the most nodes disrupted at once, and when."""

    max_disrupted: int = 0
    at: list[str] = field(default_factory=list)  # who, at the (first) maximum
    writes: int = 0


def judge_disruption(audit_log: Path, node_prefix: str, since: float = 0.0) -> Disruption:
    """Replay every stored Node of ``node_prefix...`` in commit order (resourceVersion):
    the most that were cordoned or not ``Ready=True`` at once (audit: KURED_AUDIT_POLICY)."""
    stored: list[tuple[int, str, dict[str, Any] | None]] = []
    for ev in read_audit_log(audit_log, since, contains=node_prefix):
        if not (ev.complete and ev.resource == "nodes" and ev.name.startswith(node_prefix)):
            continue
        if ev.code >= 300 or ev.verb not in ("create", "update", "patch", "delete"):
            continue
        obj = ev.response_object
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if ev.verb == "delete":
            stored.append((int(rv) if rv else 1 << 62, ev.name, None))
        elif obj.get("kind") == "Node" and rv:
            stored.append((int(rv), ev.name, obj))
    stored.sort(key=lambda s: s[0])
    state: dict[str, bool] = {}
    out = Disruption(writes=len(stored))
    for _rv, name, stored_node in stored:
        if stored_node is None:
            state.pop(name, None)
        else:
            state[name] = _disrupted(stored_node)
        n = sum(state.values())
        if n > out.max_disrupted:
            out.max_disrupted = n
            out.at = sorted(k for k, v in state.items() if v)
    return out


def admissions(audit_log: Path, node_prefix: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(when, node) of each write that turned the in-progress condition True, in commit order."""
    out: list[tuple[float, str]] = []
    held: dict[str, bool] = {}
    for s in judge_ceiling(audit_log, node_prefix, IN_PROGRESS, since).steps:
        now = s.node in s.holding
        if now and not held.get(s.node, False):
            out.append((s.received, s.node))
        held[s.node] = now
    return out


def summary(
    f: Fleet, audit_log: Path, node_prefix: str, outcome: Outcome, since: float
) -> dict[str, Any]:
    """The judged figures of one run: the ground truth and the audit log's replays."""
    rl = f.log()
    ceiling = judge_ceiling(audit_log, node_prefix, IN_PROGRESS, since)
    return {
        "reboots": outcome.reboots,
        "done": outcome.done,
        "seconds": round(outcome.seconds, 2),
        "excess": outcome.excess,
        "max_in_progress_audit": ceiling.max_holding,
        "max_disrupted_audit": judge_disruption(audit_log, node_prefix, since).max_disrupted,
        "max_down": rl.max_down(),
        "admissions": len(admissions(audit_log, node_prefix, since)),
        "agent_exits": len(rl.agent_exits()),
        "forbidden": [x for u in f.users() for x in forbidden(audit_log, u, since)],
        "timings": f.timings.as_dict(),
    }
