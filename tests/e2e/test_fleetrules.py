"""The fleet rules (admission rate, one group at a time, spacing) through ``kumaco run`` on the real control plane, with kured's stand-in.

* The admission rate (``--admission-rate 3/15s``) across what could make it undercount: a
  node admitted, released, admitted again and released inside the window, then a change
  of leader (SIGTERM, two replicas) -- the new leader reads the admissions from the
  cluster and holds the next node back until the oldest leaves the window. Judged from
  the audit log replayed in commit order and from the stand-in's own record of reboots.
* Spacing per node (``--node-min-interval 6s``): a node that asks again right after its
  maintenance says when it may be admitted, a new leader takes over meanwhile, and the
  node is admitted no sooner.
* One group at a time (``--one-group-at-a-time zone``): never two zones in maintenance
  at once (audit log), the zone of the oldest request first, each zone finished before
  the next; meanwhile ``kumaco_oldest_waiting_seconds`` and ``kubectl kumaco status``
  name the longest waiter.

Seconds-scale durations; the rules read no cron boundary, so no clock is shifted.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    Api,
    Kumaco,
    always,
    unique,
    wait_for,
)
from tests.support.env.supervisor import (
    Supervisor,
    Timings,
    scope_flags,
    wait_leader,
)
from tests.support.judges.audit import judge_ceiling
from tests.support.judges.consumer import Consumer
from tests.support.judges.fleet import admissions, changes_of, groups_at_once, most_within

#: Short lease timings (test_catch_up.py's): a SIGTERMed leader hands over in about 1 s.
FAST = Timings(lease=4.0, renew=3.0, retry=1.0)
#: A write's way from kumaco's clock to the server's receipt: the judges allow this much.
TRANSIT_S = 0.5
ZONE = "topology.kubernetes.io/zone"
#: The admission rate's window (s): long enough for two maintenances and a handover.
RATE_S = 15


def stamp(seconds_ago: float) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds_ago)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def hand_over(raw: Api, sup: Supervisor, ns: str, run: str) -> tuple[str, str]:
    """SIGTERM the leader and wait for another replica to lead: (old, new) identities."""
    old = wait_leader(raw, ns, run, 30)
    victim = sup.by_identity(old)
    assert victim is not None, old
    victim.stop()
    # A released Lease is taken within a retry period (1 s here); 20 s for a loaded machine.
    return old, wait_leader(raw, ns, run, 20, not_=old)


def reason(raw: Api, name: str) -> tuple[str, str]:
    c = raw.conditions(name).get(MIP, {})
    return str(c.get("reason", "")), str(c.get("message", ""))


def test_the_admission_rate_survives_a_second_admission_a_release_and_a_new_leader(
    raw: Api, replicas: Callable[..., Supervisor], control_plane: ControlPlane
) -> None:
    run, ns = unique("rate"), raw.namespace(unique("rate"))
    n0, n1, n2 = names = [f"{run}-{i}" for i in range(3)]
    raw.node(n0, {RUN_LABEL: run}, [{"type": REQUIRED, "status": "True"}])
    for n in (n1, n2):
        raw.node(n, {RUN_LABEL: run}, [{"type": REQUIRED, "status": "False"}])
    raw.window(ns, "all", always())
    flags = [
        *scope_flags(run, ns),
        "--max-in-progress",
        "3",
        "--require-condition",
        REQUIRED,
        "--admission-rate",
        f"3/{RATE_S}s",
        *FAST.flags(),
    ]
    with Consumer(raw, run, lambda _node: 1.0) as consumer:
        sup = replicas(run, flags)
        # n0: admitted, rebooted (1 s), released. Start-up and the first pass: 1-4 s
        # measured (test_catch_up.py); 30 s for a loaded machine.
        wait_for(lambda: n0 in consumer.finished(), 30, what=f"{n0}'s first maintenance")
        wait_for(lambda: reason(raw, n0)[0] == "MaintenanceFinished", 10, what="the release")
        # n0 asks again, then n1 and n2: two places left in the window (n0's first admission
        # counts, recorded in its release), taken by n0 (the oldest request) and n1.
        for n in names:
            raw.set_condition(n, REQUIRED, "True")
        # One pass per event (the first took 1-4 s); 10 s for a loaded machine.
        wait_for(lambda: reason(raw, n2)[0] == "AdmissionRateReached", 10, what="n2 held back")
        # Both maintenances done and released: n0 admitted twice, released twice.
        wait_for(
            lambda: (
                all(reason(raw, n)[0] == "MaintenanceFinished" for n in (n0, n1))
                and sum(1 for r in consumer.reboots if r.node == n0) == 2
            ),
            20,
            what="n0's second and n1's maintenance",
        )
        old, new = hand_over(raw, sup, ns, run)
        handed_over = time.time()
        # n2 waits for n0's first admission to leave the window; 40 s when loaded.
        wait_for(lambda: n2 in consumer.finished(), RATE_S + 40, what="n2 maintained")
    assert old != new
    verdict = judge_ceiling(control_plane.audit_log, f"{run}-", MIP)
    adm = admissions(verdict)
    assert len(adm) == 4, changes_of(verdict)  # n0 twice, n1, n2
    first, last = min(adm), max(adm)
    # The new leader led before the window let n2 go: it decided from the cluster.
    assert handed_over < first + RATE_S - 1, (handed_over - first, "the handover came too late")
    worst = most_within(adm, RATE_S - TRANSIT_S)
    starts = most_within([r.start for r in consumer.reboots], RATE_S - TRANSIT_S)
    print(
        f"rate 3/{RATE_S}s: at most {worst} admissions in any {RATE_S} s (audit), {starts} "
        f"reboots (stand-in); handover {handed_over - first:.2f}s and n2 "
        f"{last - first:.2f}s after the first admission"
    )
    assert worst <= 3 and starts <= 3, (adm, consumer.reboots)
    # No sooner than the first admission left the window, nor much later (a pass).
    assert RATE_S - TRANSIT_S <= last - first < RATE_S + 1 + 5, adm  # end of second; load
    assert {c.node for c in changes_of(verdict)} == set(names)


def test_spacing_per_node_holds_across_a_new_leader_and_says_until_when(
    raw: Api, replicas: Callable[..., Supervisor], control_plane: ControlPlane
) -> None:
    run, ns = unique("space"), raw.namespace(unique("space"))
    n0 = f"{run}-0"
    raw.node(n0, {RUN_LABEL: run}, [{"type": REQUIRED, "status": "True"}])
    raw.window(ns, "all", always())
    flags = [
        *scope_flags(run, ns),
        "--max-in-progress",
        "2",
        "--require-condition",
        REQUIRED,
        "--node-min-interval",
        "6s",
        *FAST.flags(),
    ]
    with Consumer(raw, run, lambda _node: 1.0) as consumer:
        sup = replicas(run, flags)
        # Start-up, the first pass and a 1 s reboot: 2-5 s; 30 s for a loaded machine.
        wait_for(lambda: n0 in consumer.finished(), 30, what="the first maintenance")
        wait_for(lambda: reason(raw, n0)[0] == "MaintenanceFinished", 10, what="the release")
        ended = str(raw.conditions(n0)[MIP]["lastTransitionTime"])
        raw.set_condition(n0, REQUIRED, "True")  # it asks again at once
        # 5 s for the pass that answers (one watch event away).
        wait_for(lambda: reason(raw, n0)[0] == "TooSoonAfterLastMaintenance", 5, what="too soon")
        end = dt.datetime.fromisoformat(ended.replace("Z", "+00:00")) + dt.timedelta(seconds=7)
        expected = (
            f"too soon after its last maintenance (ended {ended}): may be admitted from "
            f"{end.strftime('%Y-%m-%dT%H:%M:%SZ')} (--node-min-interval 6s)"
        )
        assert reason(raw, n0)[1] == expected
        old, new = hand_over(raw, sup, ns, run)
        # 6 s after the release, plus a pass; 30 s for a loaded machine.
        wait_for(
            lambda: sum(1 for r in consumer.reboots if r.node == n0) == 2,
            30,
            what="the second maintenance",
        )
        admitted = str(raw.conditions(n0)[MIP]["lastTransitionTime"])
    assert old != new
    # In kumaco's clock: its grant no earlier than the instant its message named.
    assert admitted >= end.strftime("%Y-%m-%dT%H:%M:%SZ"), (admitted, end)
    # By the server's receipts: the second admission at least 6 s after the release.
    moves = changes_of(judge_ceiling(control_plane.audit_log, f"{run}-", MIP))
    assert [c.admitted for c in moves] == [True, False, True], moves
    gap = moves[2].at - moves[1].at
    print(f"node-min-interval 6s: admitted again {gap:.2f}s after the release, across a handover")
    assert 6 - TRANSIT_S <= gap < 6 + 1 + 5, gap  # the end of the second, 5 s for load


def test_one_zone_at_a_time_the_oldest_request_first_and_the_longest_waiter_named(
    raw: Api,
    spawn: Callable[..., Kumaco],
    control_plane: ControlPlane,
    kubeconfig_path: Path,
) -> None:
    run, ns = unique("zones1"), raw.namespace(unique("zones1"))
    # Requests: zone b the oldest (3 h ago), then a (2 h), then c (1 h). kumaco wrote each
    # node's MaintenanceInProgress False long ago, so a wait counts from the request.
    asked = {"b": 3 * 3600, "a": 2 * 3600, "c": 3600}
    zone_of = {}
    for z, ago in asked.items():
        for i in range(2):
            name = f"{run}-{z}{i}"
            zone_of[name] = z
            raw.node(
                name,
                {RUN_LABEL: run, ZONE: z},
                [
                    {
                        "type": REQUIRED,
                        "status": "True",
                        "lastTransitionTime": stamp(ago - 60 * i),
                    },
                    {
                        "type": MIP,
                        "status": "False",
                        "reason": "NotUnderMaintenance",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    },
                ],
            )
    raw.window(ns, "all", always())
    flags = [
        *scope_flags(run, ns),
        "--max-in-progress",
        "4",
        "--require-condition",
        REQUIRED,
        "--one-group-at-a-time",
        ZONE,
    ]
    # Zone b's reboots take 6 s: time to look at the waiters meanwhile.
    with Consumer(raw, run, lambda n: 6.0 if zone_of[n] == "b" else 1.0) as consumer:
        k = spawn(*flags, name="zones1")
        wait_for(lambda: len(consumer.reboots) >= 2, 30, what="zone b admitted")
        t = time.time()
        # The longest waiter is a0 (asked 2 h ago); 10 s for the gauge of the next pass.
        gauge = wait_for(
            lambda: (v := k.metric("kumaco_oldest_waiting_seconds")) and v > 0 and v,
            10,
            what="kumaco_oldest_waiting_seconds",
        )
        assert 2 * 3600 <= gauge < 2 * 3600 + 60, gauge
        status = subprocess.run(
            [
                "kubectl",
                "kumaco",
                "status",
                "--kubeconfig",
                str(kubeconfig_path),
                "-n",
                ns,
                "--node-selector",
                f"{RUN_LABEL}={run}",
                "--leader-election-id",
                run,
                "--require-condition",
                REQUIRED,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,  # one read of the cluster (not timed): 60 s catches a hang
        )
        assert status.returncode == 0, status.stderr
        waiting = json.loads(status.stdout)["waiting"]
        looked = time.time() - t
        # 6 s: zone b still in maintenance when status answered (its reboots take 6 s).
        assert looked < 6, looked
        assert waiting["count"] == 4, waiting
        assert [w["name"] for w in waiting["longest"]] == [f"{run}-a0", f"{run}-a1", f"{run}-c0"]
        assert {w["reason"] for w in waiting["longest"]} == {"AnotherGroupInProgress"}
        # Zone b (6 s), then a and c (1 s each): 10 s; 40 s for a loaded machine.
        wait_for(lambda: len(consumer.finished()) == 6, 40, what="every node maintained")
        # The gauge drops to 0 once nobody waits (the pass after the last admission).
        wait_for(lambda: k.metric("kumaco_oldest_waiting_seconds") == 0, 10, what="no waiter")
    verdict = judge_ceiling(control_plane.audit_log, f"{run}-", MIP)
    assert groups_at_once(verdict, zone_of) == 1
    assert consumer.max_concurrent() <= 4 and consumer.max_concurrent(zone_of) == 2
    order = [zone_of[c.node] for c in changes_of(verdict) if c.admitted]
    assert order == ["b", "b", "a", "a", "c", "c"], order
