"""kured v2's scenario (a) as a record: kumaco or kured's own scheduler, on a fresh control plane.

Contract. :func:`fleet_record` runs scenario (a) of ``tests/e2e/test_kured_v2.py`` -- a
fleet of simulated machines with kured's real agents, some needing a reboot -- on a control
plane of its own, observed for a fixed time whatever happens (a reboot loop is counted, not
cut short), with kumaco (from any source tree) or kured's ``maintenance-scheduler`` as the
brain, and returns the judged figures (:func:`tests.support.judges.kured.summary`) with the
settings. :func:`scheduler_window` is the window in kured's scheduler's own format.
``hack/kured_before.py`` is its command line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from tests.support.env.controlplane import ControlPlane, ensure_assets, log
from tests.support.env.harness import RUN_LABEL, Api, Kumaco, unique
from tests.support.env.kured import (
    COUNT,
    OLDER_COUNT,
    AgentTimings,
    ensure_kured,
    fleet,
    go_duration,
    kumaco_flags,
    kured_audit_args,
    observe,
    window_open_for,
)
from tests.support.env.process import stop_process
from tests.support.env.supervisor import Timings
from tests.support.judges.kured import summary


def scheduler_window(run: str, start: dt.datetime, seconds: float) -> dict[str, Any]:
    """Kured's ``maintenance-scheduler`` window: a ConfigMap in kube-system named
    ``kured-maintenance-<run>``, labelled ``kured.dev/maintenance``, its ``nodeSelector`` a
    ``metav1.LabelSelector`` in YAML; it opens at ``start`` (a cron, minute resolution).
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"kured-maintenance-{run}",
            "namespace": "kube-system",
            "labels": {"kured.dev/maintenance": ""},
        },
        "data": {
            "startTime": f"{start.minute} {start.hour} * * *",
            "duration": go_duration(seconds),
            "nodeSelector": yaml.safe_dump({"matchLabels": {RUN_LABEL: run}}),
        },
    }


def fleet_record(
    workdir: Path,
    *,
    scheduler: str = "kumaco",
    kumaco_path: Path | None = None,
    seconds: float = 60.0,
    nodes: int = 6,
    needing: int = 5,
    ceiling: int = 2,
    timings: AgentTimings | None = None,
) -> dict[str, Any]:
    """Scenario (a) of tests/e2e/test_kured_v2.py on a control plane of its own, observed
    for ``seconds`` whatever happens (a reboot loop is counted, not cut short); the
    scheduler is kumaco (from ``kumaco_path``, a source tree, when given) or kured's own
    ``maintenance-scheduler``. Returns the :func:`summary` and the settings.
    """
    timings = timings or AgentTimings()
    bin_dir = ensure_kured()
    cp = ControlPlane(
        ensure_assets(), log_dir=workdir / "cp", apiserver_args=kured_audit_args(workdir / "cp")
    )
    cp.start()
    kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
    procs: list[Kumaco] = []
    sched: subprocess.Popen[bytes] | None = None
    try:
        run = unique("before")
        api = Api(cp)
        with fleet(cp, bin_dir, workdir / "fleet", run, timings) as f:
            names = [f"{run}-{i}" for i in range(nodes)]
            for i, n in enumerate(names):
                f.add(n, needs_reboot=i < needing)
            f.start_inhibitors(f"kumaco.test/blocker={run}")
            f.wait_booted()
            since = time.time()
            if scheduler == "kumaco":
                ns = api.namespace(f"{run}-windows")
                api.window(ns, "w", window_open_for(seconds + 120))
                fast = Timings(lease=4.0, renew=3.0, retry=1.0)
                env = {"PYTHONPATH": str(kumaco_path)} if kumaco_path else {}
                k = Kumaco(
                    kubeconfig,
                    kumaco_flags(
                        run, ns, ceiling, *fast.flags(), count=OLDER_COUNT if kumaco_path else COUNT
                    ),
                    workdir / "kumaco.log",
                    env,
                    cwd=kumaco_path,
                )
                procs.append(k.start())
            elif scheduler == "kured":
                now = dt.datetime.now(dt.UTC)
                start = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
                api.request(
                    "POST",
                    "/api/v1/namespaces/kube-system/configmaps",
                    scheduler_window(run, start, seconds + 120),
                )
                out = (workdir / "maintenance-scheduler.log").open("ab")
                sched = subprocess.Popen(
                    [
                        str(bin_dir / "maintenance-scheduler"),
                        f"--concurrency={ceiling}",
                        f"--period={go_duration(timings.daemon_period)}",
                        "--metrics-host=127.0.0.1",
                        "--metrics-port=0",
                        "--health-probe-bind-address=127.0.0.1:0",
                        "--debug",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "KUBECONFIG": str(kubeconfig)},
                    start_new_session=True,
                )
                out.close()
                log(f"kured's maintenance-scheduler: its window opens at {start:%H:%M:%S}")
                time.sleep(max(0.0, start.timestamp() - time.time()))
                since = time.time()
            else:
                raise ValueError(f"unknown scheduler {scheduler!r}")
            expected = {n: (1 if i < needing else 0) for i, n in enumerate(names)}
            outcome = observe(
                f,
                expected,
                timeout=seconds,
                quiet=seconds,  # never ends early: observed for `seconds`
                stop_on_excess=False,
                start=since,
            )
            result = summary(f, cp.audit_log, f"{run}-", outcome, since)
            # Time for the fleet: until the last node that needed a reboot was back up
            # from its first reboot (None: one never was).
            rl = f.log()
            firsts = [
                [e["time"] for e in rl.of("up", n) if e.get("n", 0) >= 1 and e["time"] >= since]
                for n, want in expected.items()
                if want
            ]
            result["fleet_done_s"] = (
                round(max(ups[0] for ups in firsts) - since, 2) if all(firsts) else None
            )
    finally:
        for k in procs:
            with contextlib.suppress(AssertionError):
                k.stop()
        stop_process(sched)
        cp.stop()
    result["most_reboots_of_a_node"] = max(result["reboots"].values())
    result["settings"] = {
        "scheduler": scheduler,
        "kumaco_path": str(kumaco_path) if kumaco_path else None,
        "seconds": seconds,
        "nodes": nodes,
        "needing_a_reboot": needing,
        "ceiling": ceiling,
    }
    return result
