"""The API server's audit log: the policy kumaco's tests run with, and what it shows.

The e2e session's control plane, the chaos run and the soak all start
kube-apiserver with :data:`AUDIT_POLICY` (:func:`audit_args`): every Lease
write with its request body (to know the holder) and every node-status write
with its metadata (to know the writer, from its user agent). From that log
:func:`audit_check` rebuilds the lease periods and judges every node-status
write kumaco made: each acquire or renew at time r makes its holder current
until r + leaseDurationSeconds, a release ends the writer's period; a write
overlaps when another replica's period was current, and is unfenced when it
falls outside its writer's own period.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.controlplane import ControlPlane, ensure_assets

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch"]
    resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
  - level: Request
    verbs: ["patch", "update", "create"]
    resources: [{group: "", resources: ["nodes/status"]}]
  - level: None
"""


def audit_args(workdir: Path) -> dict[str, str]:
    """kube-apiserver flags auditing with :data:`AUDIT_POLICY` into ``workdir/audit.log``.

    Writes the policy to ``workdir/audit-policy.yaml``. A :class:`ControlPlane`
    given these flags names the log in :attr:`ControlPlane.audit_log`.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    policy = workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    return {"audit-policy-file": str(policy), "audit-log-path": str(workdir / "audit.log")}


@contextlib.contextmanager
def audited_control_plane(workdir: Path) -> Iterator[tuple[ControlPlane, Path]]:
    """A started, audited control plane logging into ``workdir``, and its admin kubeconfig."""
    cp = ControlPlane(ensure_assets(), log_dir=workdir, apiserver_args=audit_args(workdir))
    cp.start()
    try:
        yield cp, cp.write_kubeconfig(workdir / "admin.kubeconfig")
    finally:
        cp.stop()


# ----------------------------------------------------------------------------- reading


def _timestamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class AuditEvent:
    """One audit event, the fields the tests judge (times in epoch seconds)."""

    stage: str
    received: float
    done: float
    user_agent: str
    code: int  # the response's status code; 0 when the event has none
    resource: str
    subresource: str
    namespace: str
    name: str
    request_object: dict[str, Any]  # decoded JSON; empty unless logged at Request or above

    @property
    def identity(self) -> str:
        """What the user agent names in parentheses: a kumaco replica's identity."""
        ua = self.user_agent
        return ua[ua.find("(") + 1 : ua.rfind(")")] if "(" in ua else ""

    @property
    def complete(self) -> bool:
        return self.stage == "ResponseComplete"


def _event(doc: dict[str, Any]) -> AuditEvent:
    ref = doc.get("objectRef") or {}
    return AuditEvent(
        stage=str(doc.get("stage", "")),
        received=_timestamp(doc["requestReceivedTimestamp"]),
        done=_timestamp(doc["stageTimestamp"]),
        user_agent=str(doc.get("userAgent", "")),
        code=int((doc.get("responseStatus") or {}).get("code", 0)),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        request_object=dict(doc.get("requestObject") or {}),
    )


def read_audit_log(path: Path, since: float = 0.0) -> list[AuditEvent]:
    """Every event received at or after ``since``; lines that are not an event are skipped."""
    out: list[AuditEvent] = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            ev = _event(json.loads(line))
            if ev.received >= since:
                out.append(ev)
    return out


# ----------------------------------------------------------------------------- judging


@dataclass
class WriteAudit:
    """kumaco's node-status writes as the audit log shows them, judged against the lease."""

    node_writes: int = 0
    writes_by_replica: dict[str, int] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)
    unfenced: list[str] = field(default_factory=list)


def audit_check(
    audit_log: Path,
    lease_ns: str,
    lease_name: str,
    node_prefix: str,
    lease_seconds: float,
    since: float,
    into: WriteAudit | None = None,
) -> WriteAudit:
    """Rebuild the lease periods from the audit log and check each kumaco node-status write.

    Only successful writes received since ``since`` count: Lease ``lease_ns/lease_name``
    writes, and status writes to nodes named ``node_prefix...`` by a ``kumaco/`` user
    agent. The verdict is filled into ``into`` (a fresh :class:`WriteAudit` if None).
    """
    result = into if into is not None else WriteAudit()
    periods: dict[str, list[list[float]]] = {}  # identity -> [[start, end], ...]
    writes: list[AuditEvent] = []
    for ev in read_audit_log(audit_log, since):
        if not ev.complete or ev.code >= 300:
            continue
        if ev.resource == "leases" and ev.name == lease_name and ev.namespace == lease_ns:
            spec = ev.request_object.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            if holder:
                duration = float(spec.get("leaseDurationSeconds") or lease_seconds)
                periods.setdefault(holder, []).append([ev.received, ev.received + duration])
            elif ev.identity in periods:  # a release ends the writer's current period
                for p in periods[ev.identity]:
                    p[1] = min(p[1], ev.received) if p[0] <= ev.received else p[1]
        elif (
            ev.resource == "nodes"
            and ev.subresource == "status"
            and ev.name.startswith(node_prefix)
            and ev.user_agent.startswith("kumaco/")
        ):
            writes.append(ev)
    result.node_writes = len(writes)
    for w in writes:
        identity, received, done, node = w.identity, w.received, w.done, w.name
        result.writes_by_replica[identity] = result.writes_by_replica.get(identity, 0) + 1
        for other, spans in periods.items():
            if other == identity:
                continue
            for start, end in spans:
                if start < done and received < end:
                    held = f"[{start:.3f}, {end:.3f})"
                    result.overlaps.append(
                        f"{identity} wrote {node} at {received:.3f} while {other} held {held}"
                    )
        own = periods.get(identity, [])
        if not any(start <= received and done < end for start, end in own):
            result.unfenced.append(
                f"{identity} wrote {node} at {received:.3f} outside its own lease period"
            )
    return result


def failed_writes(audit_log: Path, run: str, since: float) -> dict[str, int]:
    """kumaco's failed Lease/node-status writes about ``run``, by ``resource:status``."""
    counts: dict[str, int] = {}
    for ev in read_audit_log(audit_log, since):
        mentions_run = run in ev.user_agent or run in ev.name or run in ev.namespace
        if not (mentions_run and ev.complete and ev.user_agent.startswith("kumaco/")):
            continue
        if ev.code >= 300:
            key = f"{ev.resource or '?'}:{ev.code}"
            counts[key] = counts.get(key, 0) + 1
    return counts
