"""What only a kubelet shows of kumaco's lifecycle: window edits and a rollout restart.

One real cluster (tests/support/env/cluster.py: two real nodes) for the module, kumaco
installed from the HA overlay as docs/deploy.md tells a deployer
(:func:`~tests.support.env.clusterdeploy.install_kumaco`: the delegated layout and
components/ha, three replicas, default settings: ``--config-settle=2s``, Lease 15 s / 10 s
/ 2 s), windows in the namespace that layout watches (``maintenance``).

**Editing a window** (docs/deploy.md "Editing windows: exit 3, restarts and the opening
gap"). One window ConfigMap, there before kumaco starts, is edited four times within about
a minute (at least the issue's three; with three replicas leadership may move to a fresh
replica at each edit, and the fourth makes one container exit twice, so the kubelet's
back-off shows whoever leads); the last edit, a few seconds before a minute boundary,
moves the window's start to that minute. Judged: each edit makes the leader exit 3 (the
containers' terminated states: exactly one exit per edit, all code 3), the kubelet restarts
each (``restartCount``; a container's second restart waits out its back-off, at least 10 s,
and the kubelet says ``BackOff``), another replica takes the Lease after each edit, released
by the one that exited (the new leader had adopted the change: it does not exit for it
too), never two holders at once (the audit log's Lease writes), and the window
opens on both nodes within a generous bound of its start though its last edit moved the
leader a few seconds before it (the gap: ``UnderMaintenance``'s lastTransitionTime minus
the start).

**``kubectl rollout restart``** while that window is open and both nodes are
``UnderMaintenance=True``: every holder change during the rollout follows a release of the
old holder within a bound, never two holders at once, no successful write to a node's
status in the meantime sets ``UnderMaintenance`` or ``MaintenanceInProgress`` to anything
but the value it had (the stored objects of the audit log's node-status writes), their
lastTransitionTime unchanged, and three new replicas Ready at the end.

Each test records what it measured (section ``cluster_lifecycle`` of the figures,
docs/cluster-lifecycle.json is one run).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kumaco.core.planning.policy import IN_PROGRESS, UNDER_MAINTENANCE
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from tests.support.env.cluster import Cluster, audited_cluster
from tests.support.env.clusterdeploy import NAMESPACE, install_kumaco, kumaco_pods
from tests.support.env.harness import until
from tests.support.judges.audit import (
    AuditEvent,
    lease_writes,
    read_audit_log,
    two_holders_at_once,
)
from tests.support.judges.figures import Figures

pytestmark = pytest.mark.real_server("the real cluster's kube-apiserver runs in its fixture")

WINDOWS_NS = "maintenance"  # the namespace kustomize/overlays/delegated watches
WINDOW = "lifecycle"
EDITS = 4
SPACING_MIN = 8.0  # s between edits: settle (2 s) + release + a follower's retry (2 s), doubled
LAST_LEAD = 3.0  # s between the last edit and the window's start
SECTION = "cluster_lifecycle"
CONDITIONS = (UNDER_MAINTENANCE, IN_PROGRESS)
#: The bounds the tests assert (docs/deploy.md quotes them).
OPENING_GAP_BOUND = 30.0
HANDOVER_BOUND = 10.0
BACKOFF_MIN = 9.0  # the kubelet's first back-off is 10 s; the stamps are whole seconds


# ----------------------------------------------------------------------------- helpers


def stamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def apply(cluster: Cluster, manifest: dict[str, Any]) -> None:
    proc = subprocess.run(
        ["kubectl", f"--kubeconfig={cluster.kubeconfig()}", "apply", "-f", "-"],
        input=json.dumps(manifest),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def window(start: str, duration: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": WINDOW,
            "namespace": WINDOWS_NS,
            "labels": {DEFAULT_CONFIGMAP_SELECTOR: "true"},
        },
        "data": {"startTime": start, "duration": duration, "nodeSelector": ""},
    }


def node_conditions(cluster: Cluster) -> dict[str, dict[str, dict[str, Any]]]:
    """``{node: {condition type: condition}}`` for the real nodes."""
    return {
        n["metadata"]["name"]: {c["type"]: c for c in n["status"].get("conditions", [])}
        for n in cluster.get_json("/api/v1/nodes")["items"]
    }


def ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )


def pod_of(identity: str) -> str:
    """The pod a replica's identity names (``POD_NAME_<a suffix per process>``)."""
    return identity.rsplit("_", 1)[0]


@dataclass(frozen=True)
class Handover:
    """A change of the Lease's holder: from the old holder's release (or last renew)."""

    old: str
    new: str
    left: float  # the old holder's release, or its last write when it released nothing
    taken: float  # the new holder's first write
    released: bool

    @property
    def seconds(self) -> float:
        return self.taken - self.left


def handovers(writes: list[AuditEvent]) -> list[Handover]:
    """Every change of holder in the Lease's successful writes, in order."""
    out: list[Handover] = []
    holder, last, released_at = "", 0.0, None
    for ev in sorted(writes, key=lambda e: e.received):
        new = str((ev.response_object.get("spec") or {}).get("holderIdentity") or "")
        if not new:
            released_at = ev.received
            continue
        if holder and new != holder:
            left = released_at if released_at is not None else last
            out.append(Handover(holder, new, left, ev.received, released_at is not None))
        holder, last, released_at = new, ev.received, None
    return out


@dataclass
class Runs:
    """Every run of each kumaco container the pods' statuses showed, polled in a thread."""

    cluster: Cluster
    #: pod -> {(startedAt, finishedAt, exitCode)} of its terminated runs
    terminated: dict[str, set[tuple[str, str, int]]] = field(default_factory=dict)
    #: pod -> {startedAt} of every run seen running
    started: dict[str, set[str]] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    #: what the first poll saw: runs that ended before the scenario are not its exits
    before: set[tuple[str, str]] = field(default_factory=set)
    restarts_before: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        for p in kumaco_pods(self.cluster):
            name = p["metadata"]["name"]
            for s in p["status"].get("containerStatuses", []):
                self.restarts[name] = int(s.get("restartCount", 0))
                for state in (s.get("state", {}), s.get("lastState", {})):
                    if t := state.get("terminated"):
                        self.terminated.setdefault(name, set()).add(
                            (t["startedAt"], t["finishedAt"], int(t["exitCode"]))
                        )
                        self.started.setdefault(name, set()).add(t["startedAt"])
                    if r := state.get("running"):
                        self.started.setdefault(name, set()).add(r["startedAt"])

    def baseline(self) -> None:
        self.poll()
        self.before = {(pod, r[1]) for pod, runs in self.terminated.items() for r in runs}
        self.restarts_before = sum(self.restarts.values())

    def new_restarts(self) -> int:
        return sum(self.restarts.values()) - self.restarts_before

    def watch(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self.poll()
            except (AssertionError, OSError, ValueError):  # one missed poll: the next one
                continue

    def exits(self) -> list[tuple[str, float, int]]:
        """``(pod, finishedAt, exitCode)`` of every terminated run, in time order."""
        return sorted(
            (
                (pod, stamp(f), code)
                for pod, runs in self.terminated.items()
                for _, f, code in runs
                if (pod, f) not in self.before
            ),
            key=lambda e: e[1],
        )

    def delays(self) -> dict[str, list[float]]:
        """Per pod, each restart's delay: a run's finishedAt to the next run's startedAt."""
        out: dict[str, list[float]] = {}
        for pod, runs in self.terminated.items():
            starts = sorted(stamp(s) for s in self.started.get(pod, set()))
            for _, finished, _ in sorted(runs, key=lambda r: stamp(r[1])):
                if (pod, finished) in self.before:
                    continue
                after = [s for s in starts if s >= stamp(finished)]
                if after:
                    out.setdefault(pod, []).append(after[0] - stamp(finished))
        return out


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with audited_cluster(tmp_path_factory.mktemp("cluster-logs")) as c:
        yield c


@pytest.fixture(scope="module")
def kumaco(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, figures: Figures) -> str:
    """kumaco installed, with the window already there (its first look is the baseline)."""
    cluster.kubectl("create", "namespace", WINDOWS_NS)
    apply(cluster, window("0 0 1 1 *", "1h"))  # New Year's Day: not open during the test
    t0 = time.monotonic()
    ref = install_kumaco(cluster, tmp_path_factory.mktemp("deploy"))
    took = time.monotonic() - t0
    print(f"kumaco's 3 replicas rolled out in {took:.1f}s")
    figures.record(SECTION, install_seconds=round(took, 1))
    return ref


@dataclass
class EditRun:
    """What the edits did: the edit times, the window's start, the runs, the Lease."""

    edited: list[float]
    start: float
    runs: Runs
    since: float
    opened: dict[str, float]  # node -> UnderMaintenance's lastTransitionTime
    settled: float  # every exit seen and three Ready replicas again


@pytest.fixture(scope="module")
def edits(cluster: Cluster, kumaco: str) -> EditRun:
    """Four edits, the last moving the window's start to a minute boundary just after it."""
    assert cluster.cp is not None
    until(lambda: len([p for p in kumaco_pods(cluster) if ready(p)]) == 3, 120, "3 Ready replicas")
    runs = Runs(cluster)
    runs.baseline()
    since = time.time()
    # The window's start: the first minute boundary that leaves room for the edits.
    earliest = since + (EDITS - 1) * SPACING_MIN + LAST_LEAD
    start = float((int(earliest) // 60 + 1) * 60)
    spacing = (start - LAST_LEAD - since) / (EDITS - 1)
    when = dt.datetime.fromtimestamp(start, dt.UTC)
    watcher = threading.Thread(target=runs.watch, daemon=True)
    watcher.start()
    edited: list[float] = []
    try:
        for k in range(EDITS):
            time.sleep(max(0.0, since + k * spacing - time.time()))
            edited.append(time.time())
            last = k == EDITS - 1
            cron = f"{when.minute} {when.hour} * * *" if last else "0 0 1 1 *"
            apply(cluster, window(cron, "15m" if last else f"{61 + k}m"))
        print(
            f"edits at +{', +'.join(f'{t - since:.1f}' for t in edited)} s; "
            f"window starts at +{start - since:.1f} s ({when:%H:%M:%S}Z)"
        )

        def opened() -> dict[str, float]:
            conds = node_conditions(cluster)
            um = {n: c.get(UNDER_MAINTENANCE, {}) for n, c in conds.items()}
            if all(c.get("status") == "True" for c in um.values()):
                return {n: stamp(c["lastTransitionTime"]) for n, c in um.items()}
            return {}

        at = until(opened, max(0.0, start - time.time()) + 120, "the window open on both nodes")

        def settled() -> bool:
            pods = kumaco_pods(cluster)
            exits = runs.exits()
            return len(exits) >= EDITS and len(pods) == 3 and all(ready(p) for p in pods)

        # The last exit may wait out a back-off (10 s, or 20 s for a third exit).
        until(settled, 150, "an exit per edit and three Ready replicas again")
        runs.poll()
        done = time.time()
    finally:
        runs.stop.set()
        watcher.join()
    return EditRun(edited, start, runs, since, at, done)


# ----------------------------------------------------------------------------- the tests


def test_window_edits_exit_3_back_off_and_the_window_opens_on_time(
    cluster: Cluster, edits: EditRun, figures: Figures
) -> None:
    assert cluster.cp is not None
    runs = edits.runs
    exits = runs.exits()
    # One exit per edit, each kumaco's EXIT_CONFIG_CHANGED, and the kubelet restarted each.
    assert [code for _, _, code in exits] == [3] * EDITS, exits
    assert runs.new_restarts() == EDITS, runs.restarts
    for (_, finished, _), edited in zip(exits, edits.edited, strict=True):
        assert finished >= int(edited), (exits, edits.edited)
    delays = runs.delays()
    assert sum(len(d) for d in delays.values()) == EDITS, delays
    # A container's second exit waits out the kubelet's back-off.
    twice = {pod: d for pod, d in delays.items() if len(d) >= 2}
    assert twice, f"with {EDITS} exits over 3 replicas one exits twice: {delays}"
    for pod, d in twice.items():
        assert all(later >= BACKOFF_MIN for later in d[1:]), (pod, d)

    def back_off_event() -> list[dict[str, Any]]:
        events = cluster.get_json(f"/api/v1/namespaces/{NAMESPACE}/events")["items"]
        return [
            e for e in events if e["reason"] == "BackOff" and e["involvedObject"]["name"] in twice
        ]

    (event, *_) = until(back_off_event, 30, "the kubelet's BackOff Event")
    assert "Back-off restarting failed container" in event["message"], event

    # A follower takes the Lease after each edit, released by the leader that exits.
    writes = lease_writes(cluster.cp.audit_log, edits.since)
    assert two_holders_at_once(writes) == []
    moves = handovers(writes)
    per_edit: list[Handover] = []
    for k, edited in enumerate(edits.edited):
        nxt = edits.edited[k + 1] if k + 1 < EDITS else float("inf")
        mine = [h for h in moves if edited <= h.left < nxt]
        assert mine, (k, edited, moves)
        per_edit.append(mine[0])
    for h in per_edit:
        assert h.released, h
        assert h.seconds <= HANDOVER_BOUND, h
    exited = [pod for pod, _, _ in exits]
    assert [pod_of(h.old) for h in per_edit] == exited, (per_edit, exits)
    # The new holder is a follower (another pod, which adopted the change) or, should its
    # restart win the race, the exited pod's new process (recorded, not asserted: a race).
    by_followers = sum(pod_of(h.new) != pod_of(h.old) for h in per_edit)

    # The window opened on both nodes, late by no more than the bound.
    gaps = {node: t - edits.start for node, t in edits.opened.items()}
    assert sorted(gaps) == ["kumaco-real-1", "kumaco-real-2"]
    assert all(0 <= g <= OPENING_GAP_BOUND for g in gaps.values()), gaps
    first_write = opening_writes(cluster.cp.audit_log, edits.since)
    assert sorted(first_write) == sorted(gaps), first_write
    audit_gaps = {n: round(t - edits.start, 3) for n, t in first_write.items()}

    all_delays = sorted(round(x, 1) for d in delays.values() for x in d)
    figures.record(
        SECTION,
        edits=EDITS,
        edit_spacing_seconds=round(edits.edited[1] - edits.edited[0], 1),
        exits_code_3=len(exits),
        restart_count=runs.new_restarts(),
        restart_delays_seconds=all_delays,
        backoff_seconds=max(x for d in twice.values() for x in d[1:]),
        edit_to_release_seconds=[
            round(h.left - e, 2) for h, e in zip(per_edit, edits.edited, strict=True)
        ],
        edit_handover_seconds=[round(h.seconds, 3) for h in per_edit],
        edit_handover_max_seconds=round(max(h.seconds for h in per_edit), 3),
        edit_takeovers_by_followers=by_followers,
        edits_to_settled_seconds=round(edits.settled - edits.edited[0], 1),
        opening_gap_seconds=max(gaps.values()),
        opening_gap_audit_seconds=max(audit_gaps.values()),
        last_edit_before_start_seconds=round(edits.start - edits.edited[-1], 1),
    )
    print(
        f"exits {exits}; restart delays {delays}; handovers "
        f"{[round(h.seconds, 3) for h in per_edit]} s; opening gap {gaps} (lastTransitionTime), "
        f"{audit_gaps} (first write)"
    )


def opening_writes(audit_log: Path, since: float) -> dict[str, float]:
    """Per node, when the first successful status write setting UnderMaintenance True came."""
    out: dict[str, float] = {}
    for ev in read_audit_log(audit_log, since, contains="kumaco-real-"):
        if not status_write(ev) or ev.name in out:
            continue
        if stored_status(ev, UNDER_MAINTENANCE) == "True" and (
            requested_status(ev, UNDER_MAINTENANCE) == "True"
        ):
            out[ev.name] = ev.received
    return out


def status_write(ev: AuditEvent) -> bool:
    return (
        ev.complete
        and ev.code < 300
        and ev.resource == "nodes"
        and ev.subresource == "status"
        and ev.verb in ("create", "update", "patch")
        and ev.name.startswith("kumaco-real-")
    )


def _status_of(obj: dict[str, Any], condition: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == condition:
            return str(c.get("status"))
    return None


def stored_status(ev: AuditEvent, condition: str) -> str | None:
    return _status_of(ev.response_object, condition)


def requested_status(ev: AuditEvent, condition: str) -> str | None:
    return _status_of(ev.request_object, condition)


def test_rollout_restart_hands_over_without_two_leaders_or_a_flap(
    cluster: Cluster, edits: EditRun, figures: Figures
) -> None:
    assert cluster.cp is not None
    until(lambda: len([p for p in kumaco_pods(cluster) if ready(p)]) == 3, 120, "3 Ready replicas")
    before = node_conditions(cluster)
    for node, conds in before.items():
        assert conds[UNDER_MAINTENANCE]["status"] == "True", (node, conds)
    values = {
        node: {c: conds[c]["status"] if c in conds else None for c in CONDITIONS}
        for node, conds in before.items()
    }
    old = {p["metadata"]["name"] for p in kumaco_pods(cluster)}
    since = time.time()
    t0 = time.monotonic()
    cluster.kubectl("-n", NAMESPACE, "rollout", "restart", "deployment/kumaco")
    cluster.kubectl(
        "-n", NAMESPACE, "rollout", "status", "deployment/kumaco", "--timeout=240s", timeout=260
    )

    def three_new_ready() -> list[dict[str, Any]]:
        pods = kumaco_pods(cluster)
        fresh = [p for p in pods if p["metadata"]["name"] not in old and ready(p)]
        return pods if len(fresh) == 3 and len(pods) == 3 else []

    until(three_new_ready, 60, "three new Ready replicas and no old one")
    rollout_seconds = time.monotonic() - t0
    until(
        lambda: pod_of(lease_holder(cluster)) not in old and lease_holder(cluster),
        30,
        "a new replica holding the Lease",
    )
    until_t = time.time()

    writes = lease_writes(cluster.cp.audit_log, since)
    assert two_holders_at_once(writes) == []
    moves = [h for h in handovers(writes) if h.taken <= until_t]
    assert moves, "the Lease moved to a new replica"
    for h in moves:
        assert h.released, h
        assert h.seconds <= HANDOVER_BOUND, h

    # No flap: every node-status write in the meantime (kumaco's and the kubelets') left
    # both conditions as they were, and their last transitions are the same ones.
    judged = [
        ev
        for ev in read_audit_log(cluster.cp.audit_log, since, contains="kumaco-real-")
        if status_write(ev) and ev.received <= until_t
    ]
    flaps = [
        f"{ev.verb} {ev.name} by {ev.user_agent} at {ev.received:.3f}: {c} "
        f"{stored_status(ev, c)} (asked {requested_status(ev, c)}), was {values[ev.name][c]}"
        for ev in judged
        for c in CONDITIONS
        if stored_status(ev, c) != values[ev.name][c]
        or requested_status(ev, c) not in (None, values[ev.name][c])
    ]
    assert flaps == []
    after = node_conditions(cluster)
    for node, conds in before.items():
        for c in CONDITIONS:
            if c in conds:
                assert after[node][c]["status"] == conds[c]["status"], (node, c)
                transition = after[node][c]["lastTransitionTime"]
                assert transition == conds[c]["lastTransitionTime"], (node, c)
    kumaco_writes = [ev for ev in judged if ev.user_agent.startswith("kumaco/")]
    figures.record(
        SECTION,
        rollout_seconds=round(rollout_seconds, 1),
        rollout_handovers=len(moves),
        rollout_handover_seconds=[round(h.seconds, 3) for h in moves],
        rollout_handover_max_seconds=round(max(h.seconds for h in moves), 3),
        rollout_node_status_writes=len(judged),
        rollout_kumaco_node_status_writes=len(kumaco_writes),
        rollout_flaps=len(flaps),
    )
    print(
        f"rollout restart in {rollout_seconds:.1f}s; handovers "
        f"{[(pod_of(h.old), pod_of(h.new), round(h.seconds, 3)) for h in moves]}; "
        f"{len(judged)} node-status writes judged ({len(kumaco_writes)} by kumaco), no flap"
    )


def lease_holder(cluster: Cluster) -> str:
    lease = cluster.get_json(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/kumaco")
    return str(lease["spec"].get("holderIdentity") or "")
