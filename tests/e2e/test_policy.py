"""The maintenance policy on the real control plane: zone ceilings with a release delay, freezes, and a
forecast that agrees with reality.

* Three zones of four nodes, ``--max-in-progress 3 --max-in-progress-per
  topology.kubernetes.io/zone=1 --release-delay 5s``, a stand-in consumer
  rebooting each admitted node: a separate watcher never sees two nodes of one
  zone in progress nor more than three in all, and each zone's next node is
  admitted no sooner than 5 s after the previous one finished.
* A freeze window opening over an open maintenance window flips
  ``UnderMaintenance`` to False (``MaintenanceFrozen``) within a second, and back
  when the freeze ends.
* ``kubectl kumaco forecast`` before a window opens, then ``kumaco run`` and a
  consumer whose maintenances take exactly the forecast's duration: every node
  finishes within a second of the forecast.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    always,
    condition_status,
    cron_at,
    shift_before,
    unique,
    wait_for,
)
from tests.support.env.supervisor import scope_flags
from tests.support.judges.consumer import Consumer

ZONE = "topology.kubernetes.io/zone"


def test_zone_ceilings_and_a_release_delay_pace_the_maintenance(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run, ns = unique("zones"), raw.namespace(unique("zones"))
    zone_of: dict[str, str] = {}
    for z in "abc":
        for i in range(4):
            name = f"{run}-{z}{i}"
            zone_of[name] = z
            raw.node(name, {RUN_LABEL: run, ZONE: z}, [{"type": REQUIRED, "status": "True"}])
    raw.window(ns, "all", always())
    flags = [
        *scope_flags(run, ns),
        "--max-in-progress",
        "3",
        "--max-in-progress-per",
        f"{ZONE}=1",
        "--release-delay",
        "5s",
        "--require-condition",
        REQUIRED,
    ]
    with NodeWatcher(raw, run) as watcher, Consumer(raw, run, lambda _node: 2.0) as consumer:
        spawn(*flags, name="zones")
        # Per zone, four 2 s maintenances one after another with 5 s delays between: about
        # 25 s after the start-up (not recorded); 150 s for a loaded machine.
        wait_for(
            lambda: len(consumer.finished()) == len(zone_of), 150, what="every node maintained"
        )

        def in_progress(conds: dict[str, dict[str, object]]) -> bool:
            return condition_status(conds, MIP) == "True"

        assert watcher.max_count(in_progress) <= 3
        # Per zone, from the watcher's record: never two at once.
        held: dict[str, bool] = {}
        worst = 0
        for o in list(watcher.seen):
            held[o.name] = in_progress(o.conditions)
            for z in "abc":
                worst = max(worst, sum(1 for n, h in held.items() if h and zone_of.get(n) == z))
        assert worst == 1, worst
        assert consumer.max_concurrent(zone_of) == 1 and consumer.max_concurrent() <= 3
        # Per zone: the next admission no sooner than 5 s after the previous finish.
        admitted = {}
        for name in zone_of:
            at = watcher.first(name, in_progress)
            assert at is not None, name
            admitted[name] = at
        finished = consumer.finished()
        gaps = []
        for z in "abc":
            order = sorted((n for n in zone_of if zone_of[n] == z), key=admitted.__getitem__)
            for prev, nxt in itertools.pairwise(order):
                gaps.append(admitted[nxt] - finished[prev])
        print(
            f"zones: smallest gap between a finish and the zone's next admission {min(gaps):.2f}s"
        )
        assert min(gaps) >= 5.0 - 0.05, gaps  # seconds; the delay counts from the release


def test_a_freeze_over_an_open_window_takes_nodes_out_and_gives_them_back(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run, ns = unique("freeze"), raw.namespace(unique("freeze"))
    names = [f"{run}-{i}" for i in range(3)]
    for n in names:
        raw.node(n, {RUN_LABEL: run})
    raw.window(ns, "maintenance", always())
    # 12 s: start-up and the first pass (1-4 s, test_catch_up.py) come before the freeze.
    shift = shift_before(lead=12)  # kumaco's clock reaches the freeze's minute in 12 s
    opens = shift.opens
    raw.window(
        ns,
        "black-friday",
        {"startTime": cron_at(opens), "duration": "20s", "nodeSelector": "", "freeze": "true"},
    )
    spawn(*scope_flags(run, ns), name="freeze", shift=shift)
    wait_for(
        lambda: all(condition_status(raw.conditions(n), UM) == "True" for n in names),
        30,  # start-up and the first pass: 1-4 s measured (test_catch_up.py)
        what="under maintenance",
    )
    with NodeWatcher(raw, run) as watcher:
        boundary = shift.real  # the machine's instant of the freeze's opening
        # The freeze's opening + 30 s, to report a late one (asserted within 1 s below).
        done = watcher.wait_all(
            UM, "False", set(names), boundary - 0.5, boundary - time.time() + 30
        )
        assert done is not None, "the freeze did not take the nodes out"
        assert done - boundary < 1.0, done - boundary  # a boundary: 9 ms late (``boundary``)
        c = raw.conditions(names[0])[UM]
        assert c["reason"] == "MaintenanceFrozen" and f"{ns}/black-friday" in c["message"]
        # The freeze's end (20 s after it opened) + 40 s, to report a late one.
        back = watcher.wait_all(UM, "True", set(names), boundary + 19, boundary - time.time() + 60)
        assert back is not None, "the nodes did not come back when the freeze ended"
        assert back - (boundary + 20) < 1.0, back - (boundary + 20)  # a boundary, as above
        print(
            f"freeze: out {done - boundary:.3f}s after it opened, back {back - boundary - 20:.3f}s after it ended"
        )
    assert any(
        e.get("reason") == "WindowStarted" and "black-friday" in e["note"] for e in raw.events(ns)
    )


def test_the_forecast_agrees_with_reality(
    raw: Api, spawn: Callable[..., Kumaco], kubeconfig_path: Path
) -> None:
    run, ns = unique("fcast"), raw.namespace(unique("fcast"))
    names = [f"{run}-{i}" for i in range(5)]
    for i, n in enumerate(names):
        raw.node(
            n,
            {RUN_LABEL: run},
            [
                {
                    "type": REQUIRED,
                    "status": "True",
                    "lastTransitionTime": f"2026-11-0{i + 1}T00:00:00Z",
                }
            ],
        )
    # kumaco (the forecast and the controller alike) on a clock that reaches the window's
    # minute in 20 s; the forecast's instants are in that clock, the consumer's the machine's.
    # 20 s: the forecast's run and kumaco's start-up (1-4 s, test_catch_up.py) before it.
    shift = shift_before(lead=20)
    opens = shift.opens
    raw.window(ns, "tonight", {"startTime": cron_at(opens), "duration": "1h", "nodeSelector": ""})
    policy = [
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--max-in-progress",
        "2",
        "--require-condition",
        REQUIRED,
    ]
    now = shift.kumaco_now()
    forecast = subprocess.run(
        [
            "kubectl",
            "kumaco",
            "forecast",
            "--kubeconfig",
            str(kubeconfig_path),
            "-n",
            ns,
            "--from",
            now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "--until",
            (opens + dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "--maintenance-duration",
            "4s",
            *policy,
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,  # one read of the cluster and a plan (not timed): 60 s catches a hang
    )
    assert forecast.returncode == 0, forecast.stderr
    predicted = {n["name"]: n for n in json.loads(forecast.stdout)["nodes"]}
    assert set(predicted) == set(names)
    spawn(*scope_flags(run, ns)[:-2], *policy, name="fcast", shift=shift)
    with Consumer(raw, run, lambda _node: 4.0) as consumer:
        # The opening (20 s from the shift) and three rounds of 4 s at a ceiling of 2: about
        # 35 s (not recorded); 120 s for a loaded machine.
        wait_for(lambda: len(consumer.finished()) == len(names), 120, what="every node maintained")
        finished = consumer.finished()
    worst = 0.0
    for name, p in predicted.items():
        expected = (
            dt.datetime.fromisoformat(p["finished"].replace("Z", "+00:00")).timestamp()
            - shift.offset
        )
        worst = max(worst, abs(finished[name] - expected))
    print(f"forecast: every node finished within {worst:.2f}s of the forecast")
    # 1 s over three rounds, each a watch event, a pass and a write late (a handover took
    # 0.12 s, faults conflicts-409) plus the consumer's reaction.
    assert worst < 1.0, {n: (predicted[n]["finished"], finished[n]) for n in names}
