#!/usr/bin/env python3
"""Capture the real outputs shown in docs/status.md and docs/observability.md.

    python hack/capture_status.py > /tmp/status-transcript.md

Starts the test control plane, creates the documented scene (windows in namespace
``maintenance``, nine nodes, kured-style conditions), runs ``kumaco run`` until the
conditions have settled, then runs each documented ``kubectl kumaco`` command and
prints ``$ command`` followed by its output (standard error after standard output),
ready to paste. ``status --watch`` runs piped while kured (played here) reports
``worker-eu-1`` rebooted, and is stopped with SIGINT. Everything runs on loopback and
is removed afterwards.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.env.controlplane import ControlPlane, ensure_assets
from tests.support.env.harness import MIP, REQUIRED, UM, Api, Kumaco, condition_status, wait_for

NS = "maintenance"
SCENE = "kured.dev/RebootInhibited"


def transcript(kubeconfig: Path, *args: str, tail: int | None = None) -> str:
    done = subprocess.run(
        ["kubectl", "kumaco", *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out = done.stdout + done.stderr
    if tail is not None:
        out = "".join(out.splitlines(keepends=True)[-tail:])
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    return f"$ kubectl kumaco {shown}" + (f" | tail -{tail}" if tail else "") + "\n" + out


def watched(kubeconfig: Path, api: Api, *args: str) -> str:
    """``kubectl kumaco status --watch`` piped, while worker-eu-1's reboot is reported."""
    proc = subprocess.Popen(
        ["kubectl", "kumaco", "status", *args, "--watch", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    time.sleep(3)
    api.set_condition("worker-eu-1", REQUIRED, "False", reason="Rebooted", message="rebooted")
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    shown = " ".join(args)
    return f"$ kubectl kumaco status {shown} --watch | cat    # Ctrl-C after a while\n{out}"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cp = ControlPlane(ensure_assets(), log_dir=Path(tmp))
        cp.start()
        try:
            kubeconfig = cp.write_kubeconfig(Path(tmp) / "kc", namespace=NS)
            api = Api(cp)
            api.namespace(NS)
            now = dt.datetime.now(dt.UTC)
            eu_open = (now - dt.timedelta(minutes=6)).astimezone(dt.timezone(dt.timedelta(hours=1)))
            windows = {
                "eu-workers": {
                    "startTime": f"CRON_TZ=Europe/Berlin {eu_open.minute} {eu_open.hour} * * *",
                    "duration": "3h",
                    "nodeSelector": "pool=workers,zone=eu",
                },
                "db-nightly": {
                    "startTime": "30 2 * * *",
                    "duration": "90m",
                    "nodeSelector": "pool=db",
                },
                "us-workers": {
                    "startTime": "CRON_TZ=America/New_York 0 22 * * sat",
                    "duration": "6h",
                    "nodeSelector": "pool=workers,zone=us",
                },
                "year-end-freeze": {
                    "startTime": "0 0 20 12 *",
                    "duration": "336h",
                    "nodeSelector": "",
                    "freeze": "true",
                },
                "typo": {"startTime": "0 3 * * mon-fry", "duration": "1d", "nodeSelector": ""},
            }
            for name, data in windows.items():
                api.window(NS, name, data)
            nodes = {
                "worker-eu-1": ({"pool": "workers", "zone": "eu"}, [REQUIRED]),
                "worker-eu-2": ({"pool": "workers", "zone": "eu"}, [REQUIRED, SCENE]),
                "worker-eu-3": ({"pool": "workers", "zone": "eu"}, [REQUIRED]),
                "worker-eu-4": ({"pool": "workers", "zone": "eu"}, []),
                "db-1": ({"pool": "db"}, []),
                "db-2": ({"pool": "db"}, []),
                "worker-us-1": ({"pool": "workers", "zone": "us"}, []),
                "worker-us-2": ({"pool": "workers", "zone": "us"}, []),
                "worker-us-3": ({"pool": "workers", "zone": "us"}, []),
            }
            for i, (name, (labels, true)) in enumerate(nodes.items()):
                stamp = f"2026-11-2{i}T00:00:00Z"
                api.node(
                    name,
                    labels,
                    [{"type": t, "status": "True", "lastTransitionTime": stamp} for t in true],
                )
            flags = [
                "--namespaces",
                NS,
                "--leader-election-namespace",
                NS,
                "--max-in-progress",
                "1",
                "--require-condition",
                REQUIRED,
                "--block-condition",
                SCENE,
            ]
            k = Kumaco(
                kubeconfig, flags, Path(tmp) / "kumaco.log", {"POD_NAME": "kumaco-7d9f8b6c4-x2x5q"}
            ).start()
            wait_for(
                lambda: (
                    condition_status(api.conditions("worker-eu-1"), MIP) == "True"
                    and condition_status(api.conditions("worker-eu-4"), UM) == "True"
                ),
                60,
                what="the scene to settle",
            )
            time.sleep(2)
            parts = [
                transcript(kubeconfig, "status", "-n", NS),
                transcript(kubeconfig, "status", "-n", NS, "-o", "json"),
                transcript(
                    kubeconfig,
                    "windows",
                    "-n",
                    NS,
                    "--from",
                    now.strftime("%Y-%m-%dT00:00:00Z"),
                    "--until",
                    (now + dt.timedelta(days=3)).strftime("%Y-%m-%dT00:00:00Z"),
                ),
                transcript(
                    kubeconfig,
                    "plan",
                    "-n",
                    NS,
                    "--max-in-progress",
                    "1",
                    "--require-condition",
                    REQUIRED,
                    "--block-condition",
                    SCENE,
                ),
            ]
            parts.append(watched(kubeconfig, api, "-n", NS))
            k.stop()
            time.sleep(1)
            parts.append(transcript(kubeconfig, "status", "-n", NS, tail=1))
            print("\n".join(parts))
        finally:
            cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
