"""The API server's audit log and what it shows: the judges that replay it.

The e2e session's control plane, the chaos run and the soak all start kube-apiserver
with :data:`~tests.support.env.auditing.AUDIT_POLICY` (what it logs, and at which level:
:mod:`tests.support.env.auditing`): the Lease writes, and every Node write with the
object the server stored -- what the ceiling judge replays.

Three judges read that log:

:func:`audit_check` rebuilds the lease periods and judges every node-status
write kumaco made: each acquire or renew at time r makes its holder current
until r + leaseDurationSeconds, a release ends the writer's period; a write
overlaps when another replica's period was current, and is unfenced when it
falls outside its writer's own period -- except the one write a follower may make
(kumaco/controller/releases.py): outside its writer's period, a write of the
in-progress condition alone, not True, whose message is a release by an observed
reboot (:func:`kumaco.core.objects.boots.reboot_of`), is a follower's release, listed apart.

:func:`judge_ceiling` replays every successful write to a test's Nodes in the
order the server committed them (by the ``resourceVersion`` of the stored
object) and counts, after each one, the Nodes whose condition (by default
``MaintenanceInProgress``) is True: the exact number at every instant the
server knew, not a sample. Why the stored object and not the request body:
the audit event does not say which patch type a PATCH used (strategic merge
and JSON merge patches treat ``conditions`` differently), and its lines are
written when each response completes, not in commit order, so two
concurrent writes to different Nodes could be replayed in the wrong order; a
stored object with its revision has neither ambiguity. A successful write
without a stored object (a policy below RequestResponse) makes the judge
fail rather than guess. A write of unknown outcome that nothing later explains is
taken the way that can only over-count: an admission as held from its receipt
(``assumed``), a revocation as not applied (``unresolved``). :func:`assert_resolved`
is the one rule for the ``unresolved`` ones: a revocation passes only where the caller
says why an upper bound suffices.

:func:`forbidden` lists one identity's requests the server refused with 403;
:func:`node_reads` one client's LISTs and WATCHes of Nodes, in order, with the
resourceVersion each asked for (the relist after an expired watch).
:func:`lease_writes` reads one Lease's successful writes and :func:`two_holders_at_once`
lists every takeover that came while the previous holder's lease still ran (the real
cluster's "exactly one Lease holder").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kumaco.core.objects.boots import reboot_of

MIP = "MaintenanceInProgress"

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
    verb: str = ""
    user: str = ""
    response_object: dict[str, Any] = field(default_factory=dict)  # at RequestResponse
    uri: str = ""  # the request's URI, its query included (requestURI)

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
        verb=str(doc.get("verb", "")),
        user=str((doc.get("user") or {}).get("username", "")),
        response_object=dict(doc.get("responseObject") or {}),
        uri=str(doc.get("requestURI", "")),
    )


def read_audit_log(path: Path, since: float = 0.0, contains: str | None = None) -> list[AuditEvent]:
    """Every event received at or after ``since``; lines that are not an event are skipped.

    ``contains`` keeps only the lines holding that text (a cheap filter before decoding:
    the session's log holds every test's events).
    """
    out: list[AuditEvent] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if contains is not None and contains not in line:
                continue
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
    #: releases by an observed reboot written outside the writer's lease period
    follower_releases: list[str] = field(default_factory=list)


def _release_by_reboot(ev: AuditEvent, condition: str) -> bool:
    """A status write of ``condition`` alone, not True, released by an observed reboot."""
    conditions = (ev.request_object.get("status") or {}).get("conditions") or []
    if len(conditions) != 1 or not isinstance(conditions[0], dict):
        return False
    c = conditions[0]
    return (
        c.get("type") == condition
        and c.get("status") != "True"
        and reboot_of(str(c.get("message") or "")) is not None
    )


def audit_check(
    audit_log: Path,
    lease_ns: str,
    lease_name: str,
    node_prefix: str,
    lease_seconds: float,
    since: float,
    into: WriteAudit | None = None,
    condition: str = MIP,
) -> WriteAudit:
    """Rebuild the lease periods from the audit log and check each kumaco node-status write.

    Only successful writes received since ``since`` count: Lease ``lease_ns/lease_name``
    writes, and status writes to nodes named ``node_prefix...`` by a ``kumaco/`` user
    agent. The verdict is filled into ``into`` (a fresh :class:`WriteAudit` if None).
    ``condition`` is the in-progress condition (a follower's release writes it alone).
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
        own = periods.get(identity, [])
        fenced = any(start <= received and done < end for start, end in own)
        if not fenced and _release_by_reboot(w, condition):
            result.follower_releases.append(f"{identity} released {node} at {received:.3f}")
            continue
        for other, spans in periods.items():
            if other == identity:
                continue
            for start, end in spans:
                if start < done and received < end:
                    held = f"[{start:.3f}, {end:.3f})"
                    result.overlaps.append(
                        f"{identity} wrote {node} at {received:.3f} while {other} held {held}"
                    )
        if not fenced:
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


# ----------------------------------------------------------------------------- the ceiling


class AuditJudgeError(AssertionError):
    """The audit log cannot be judged: a write it holds does not say what the server stored."""


@dataclass(frozen=True)
class Step:
    """One successful write to a judged Node, and who held the condition right after it."""

    revision: int  # the stored object's resourceVersion: the server's commit order
    received: float
    node: str
    verb: str
    user_agent: str
    holding: tuple[str, ...]  # the judged Nodes whose condition was True after this write


@dataclass
class CeilingVerdict:
    """:func:`judge_ceiling`'s answer: every step, in commit order."""

    condition: str
    steps: list[Step] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # 5xx writes no later state explains
    #: unexplained 5xx admissions, counted as held from their receipt (an upper bound)
    assumed: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return len(self.steps)

    @property
    def max_holding(self) -> int:
        """The most Nodes that held the condition at once (0 for an empty log)."""
        return max((len(s.holding) for s in self.steps), default=0)

    def over(self, ceiling: int) -> list[str]:
        """Each write after which more than ``ceiling`` Nodes held the condition, described."""
        return [
            f"revision {s.revision}: {s.verb} {s.node} by {s.user_agent or '?'} left "
            f"{len(s.holding)} holding {self.condition} (ceiling {ceiling}): "
            + ", ".join(s.holding)
            for s in self.steps
            if len(s.holding) > ceiling
        ]


def _holds(node: dict[str, Any], condition: str) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == condition and c.get("status") == "True" for c in conditions)


def _requested(ev: AuditEvent, condition: str) -> str | None:
    """The status a status write asked ``condition`` to take, if it names it."""
    for c in (ev.request_object.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == condition:
            return str(c.get("status", ""))
    return None


def judge_ceiling(
    audit_log: Path,
    node_prefix: str,
    condition: str = MIP,
    since: float = 0.0,
    final: Mapping[str, bool] | None = None,
) -> CeilingVerdict:
    """Replay every successful write to the Nodes named ``node_prefix...`` in commit order.

    Creations, ``nodes/status`` writes (by anyone: kumaco, kured's stand-in, the test) and
    deletions count; writes to the Node itself cannot change its status (the API server
    keeps the stored status on such writes) and are not logged. After each write the
    verdict records which of these Nodes hold ``condition``. Raises
    :class:`AuditJudgeError` when a successful write carries no stored Node (the policy
    was not :data:`~tests.support.env.auditing.AUDIT_POLICY`): such a log cannot be judged exactly.

    A status write answered 5xx (a 504 when the request's ``timeout`` ran out, or the
    client went away) may still have been committed: the log then holds no stored
    object. Such a write of ``condition`` is resolved by what the server stored next for
    that Node -- the stored object of its next write that does not itself set
    ``condition``, or else ``final`` (whether each Node holds it at the end) -- and, when
    applied, replayed at the instant the server answered it. One that cannot be resolved
    is taken the way that can only over-count: an admission (asking ``condition`` True)
    as applied from the instant the server received it until the Node's next write
    (listed in :attr:`CeilingVerdict.assumed`: it can never hide a holder), anything else
    as not applied (listed in :attr:`CeilingVerdict.unresolved`).
    """
    writes: list[tuple[int, float, AuditEvent, dict[str, Any]]] = []
    maybe: list[AuditEvent] = []
    for ev in read_audit_log(audit_log, since, contains=node_prefix):
        if not (ev.complete and ev.resource == "nodes" and ev.name.startswith(node_prefix)):
            continue
        status_write = ev.subresource == "status" and ev.verb in ("create", "update", "patch")
        node_write = ev.subresource == "" and ev.verb in ("create", "delete")
        if not (status_write or node_write):
            continue
        stored = ev.response_object
        has_stored = stored.get("kind") == "Node" and bool(
            (stored.get("metadata") or {}).get("resourceVersion")
        )
        if ev.code >= 500 and status_write and not has_stored:
            if _requested(ev, condition) is not None:
                maybe.append(ev)
            continue
        if ev.code >= 300:
            continue
        if not has_stored:
            raise AuditJudgeError(
                f"{ev.verb} {ev.resource}/{ev.subresource} {ev.name} at {ev.received:.3f} "
                "has no stored Node in the audit log: log node writes at level "
                "RequestResponse (tests.support.env.auditing.AUDIT_POLICY)"
            )
        writes.append((int(stored["metadata"]["resourceVersion"]), ev.received, ev, stored))
    writes.sort(key=lambda w: (w[0], w[1]))
    verdict = CeilingVerdict(condition)
    applied: list[tuple[float, AuditEvent]] = []
    counted: set[int] = set()  # the assumed ones, by identity
    for ev in maybe:
        wanted = _requested(ev, condition) == "True"
        later = [w for w in writes if w[2].name == ev.name and w[1] > ev.received]
        seen: bool | None
        if later:
            nxt = later[0]
            seen = None if _requested(nxt[2], condition) is not None else _holds(nxt[3], condition)
        else:
            seen = None if final is None else final.get(ev.name)
        said = f"{ev.verb} {ev.name} by {ev.user_agent or '?'} answered {ev.code} at {ev.done:.3f}"
        if seen is None and wanted:
            verdict.assumed.append(f"{said}: counted as held from its receipt")
            applied.append((ev.received, ev))
            counted.add(id(ev))
        elif seen is None:
            verdict.unresolved.append(f"{said}: taken as not applied")
        elif seen == wanted:
            applied.append((ev.done, ev))
    state: dict[str, bool] = {}
    pending = sorted(applied, key=lambda a: a[0])
    last_revision = 0

    def replay_maybe(before: float) -> None:
        while pending and pending[0][0] < before:
            _, ev = pending.pop(0)
            state[ev.name] = _requested(ev, condition) == "True"
            holding = tuple(sorted(n for n, held in state.items() if held))
            how = "counted as applied from its receipt" if id(ev) in counted else "applied"
            verb = f"{ev.verb} (answered {ev.code}, {how})"
            verdict.steps.append(
                Step(last_revision, ev.received, ev.name, verb, ev.user_agent, holding)
            )

    for revision, received, ev, stored in writes:
        replay_maybe(received)
        if ev.verb == "delete":
            state.pop(ev.name, None)
        else:
            state[ev.name] = _holds(stored, condition)
        holding = tuple(sorted(n for n, held in state.items() if held))
        verdict.steps.append(Step(revision, received, ev.name, ev.verb, ev.user_agent, holding))
        last_revision = revision
    replay_maybe(float("inf"))
    return verdict


#: ``harmless`` for a caller that asserts the ceiling on the judge's count and compares a
#: watcher's count with it: an unresolved revocation only raises that count (never hides a
#: holder), and a count raised above the watcher's fails the comparison.
UPPER_BOUND = (
    "taken as not applied it only over-counts; the ceiling is asserted on that upper bound "
    "and a watcher's count is compared with it"
)

_UNRESOLVED = re.compile(r"^\S+ (?P<name>\S+) by .* answered \d+ at (?P<done>\d+\.\d{3}): ")


def unresolved_problems(
    verdict: CeilingVerdict, audit_log: Path | None = None, harmless: str = ""
) -> tuple[list[str], list[str]]:
    """``verdict.unresolved`` sorted into (problems, harmless ones): what may hide a holder.

    The judge took each unresolved write as not applied. One that asked the
    condition True (an admission) may then hide a holder the server had: always a
    problem. One that asked anything else (a revocation or release) can only make
    the replay over-count, so the verdict stays an upper bound: a problem too,
    unless ``harmless`` says why an upper bound is all the caller judges; it is
    then returned among the harmless ones, with that reason. What each write
    asked is read from ``audit_log`` (the log judged); without it, or when the
    write is not found there, it counts as an admission.
    """
    problems: list[str] = []
    accepted: list[str] = []
    for entry in verdict.unresolved:
        asked = None
        m = _UNRESOLVED.match(entry)
        if audit_log is not None and m is not None:
            for ev in read_audit_log(audit_log, contains=m["name"]):
                if (
                    ev.complete
                    and ev.name == m["name"]
                    and ev.subresource == "status"
                    and f"{ev.done:.3f}" == m["done"]
                    and ev.code >= 500
                ):
                    asked = _requested(ev, verdict.condition)
                    break
        if asked is None or asked == "True":
            what = "asked it True" if asked == "True" else "cannot tell what it asked"
            problems.append(f"{entry} ({what}: it may hide a holder of {verdict.condition})")
        elif not harmless:
            problems.append(
                f"{entry} (asked {verdict.condition}={asked}: an upper bound, but no caller "
                "said why that suffices)"
            )
        else:
            accepted.append(f"{entry} (asked {verdict.condition}={asked}; harmless: {harmless})")
    return problems, accepted


def assert_resolved(
    verdict: CeilingVerdict, audit_log: Path | None = None, harmless: str = ""
) -> list[str]:
    """Fail unless every write of unknown outcome was resolved (:func:`unresolved_problems`).

    Returns the unresolved revocations accepted as ``harmless``, each described with
    the reason (for the caller to print); ``[]`` when the judge resolved everything.
    """
    problems, accepted = unresolved_problems(verdict, audit_log, harmless)
    assert not problems, (
        f"the ceiling judge could not resolve {len(problems)} write(s) of unknown outcome "
        "and took them as not applied:\n" + "\n".join(problems)
    )
    return accepted


# ----------------------------------------------------------------------------- one identity


def node_reads(audit_log: Path, user_agent: str, since: float = 0.0) -> list[tuple[str, str]]:
    """The LISTs and WATCHes of Nodes by clients whose user agent starts with ``user_agent``.

    In the order the server received them, each once (a watch is logged when its response
    starts and again when it ends): ``(verb, resourceVersion)``, the resourceVersion the
    request asked for ("" when none). Needs a policy that logs them
    (:data:`tests.support.env.auditing.NODE_READS_POLICY`).
    """
    seen: dict[tuple[float, str], tuple[str, str]] = {}
    for ev in read_audit_log(audit_log, since, contains='"nodes"'):
        if ev.resource != "nodes" or ev.subresource or ev.name:
            continue
        if ev.verb not in ("list", "watch") or not ev.user_agent.startswith(user_agent):
            continue
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(ev.uri).query)
        seen[(ev.received, ev.uri)] = (ev.verb, query.get("resourceVersion", [""])[0])
    return [seen[k] for k in sorted(seen)]


def requests_of(audit_log: Path, user: str, since: float = 0.0) -> list[AuditEvent]:
    """Every completed request of ``user`` (e.g. ``system:serviceaccount:ns:kumaco``)."""
    return [
        ev
        for ev in read_audit_log(audit_log, since, contains=user)
        if ev.user == user and ev.complete
    ]


def forbidden(audit_log: Path, user: str, since: float = 0.0) -> list[str]:
    """``user``'s requests the API server refused with 403, described."""
    return [
        f"{ev.verb} {ev.resource}{'/' + ev.subresource if ev.subresource else ''} "
        f"{ev.namespace + '/' if ev.namespace else ''}{ev.name}: 403"
        for ev in requests_of(audit_log, user, since)
        if ev.code == 403
    ]


def two_holders_at_once(writes: list[AuditEvent]) -> list[str]:
    """The takeovers of a Lease, from its successful writes in order, that came while the
    previous holder's lease still ran (its last write + its duration, unless released)."""
    found: list[str] = []
    holder, until_t = "", 0.0
    for ev in sorted(writes, key=lambda e: e.received):
        spec = ev.response_object.get("spec") or {}
        new = str(spec.get("holderIdentity") or "")
        if not new:  # a release
            holder, until_t = "", 0.0
            continue
        if holder and new != holder and ev.received < until_t:
            found.append(
                f"{new} took the Lease at {ev.received:.3f} from {holder} (until {until_t:.3f})"
            )
        holder, until_t = new, ev.received + float(spec.get("leaseDurationSeconds") or 15)
    return found


def lease_writes(
    audit_log: Path, since: float, namespace: str = "kumaco-system", name: str = "kumaco"
) -> list[AuditEvent]:
    """The successful writes of the Lease ``namespace/name`` since ``since``."""
    return [
        ev
        for ev in read_audit_log(audit_log, since, contains="leases")
        if ev.resource == "leases"
        and ev.namespace == namespace
        and ev.name == name
        and ev.verb in ("create", "update", "patch")
        and ev.complete
        and ev.code < 300
    ]
