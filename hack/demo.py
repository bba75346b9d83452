#!/usr/bin/env python3
"""kumaco, live: a real control plane, three replicas, one maintenance window, one leader kill.

Contract (``hack/demo.sh`` installs everything, then runs this; tests run it directly)::

    python hack/demo.py [--nodes N] [--duration S] [--kill-signal TERM|KILL|none]
                        [--no-color] [--keep] [--window S] [--lead S]
                        [--kill-after S] [--reboot-after S]

The scenario, how it ends, what it cleans up and the lines a script may rely
on: ``tools/demo.py``. Exit status: 0 after the scenario, --duration or
a stop signal; 1 when the set-up failed; 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Only the standard library at import time: --help works before the virtualenv exists.
from tools.demo import Demo, DemoOptions


def _signal_name(text: str) -> str:
    t = text.strip().upper().removeprefix("SIG")
    return "none" if t == "NONE" else t


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="hack/demo.py",
        description=(
            "kumaco live: a local kube-apiserver + etcd, N nodes, three kumaco replicas, a "
            "maintenance window that opens at the next minute, and a leader kill - in a live table."
        ),
        epilog=(
            "The demo ends a few seconds after the window closes (or with --keep on Ctrl-C), "
            "after --duration, or on Ctrl-C/SIGTERM; it leaves nothing running."
        ),
    )
    p.add_argument("--nodes", type=int, default=12, metavar="N", help="nodes (4-500; default 12)")
    p.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop after this long, from the start (the window is shortened to fit)",
    )
    p.add_argument(
        "--kill-signal",
        type=_signal_name,
        choices=("TERM", "KILL", "none"),
        default="TERM",
        help="signal for the leader: TERM (releases the Lease, ~2 s handover; default), "
        "KILL (the Lease expires, ~15 s) or none",
    )
    p.add_argument("--no-color", action="store_true", help="no colours (also NO_COLOR=1)")
    p.add_argument(
        "--keep",
        action="store_true",
        help="after the scenario keep the control plane and kumaco running until Ctrl-C",
    )
    p.add_argument(
        "--window", type=int, default=75, metavar="SECONDS", help="window length (default 75)"
    )
    p.add_argument(
        "--lead",
        type=int,
        default=20,
        metavar="SECONDS",
        help="the window opens this long after the set-up, on kumaco's shifted clock (default 20)",
    )
    p.add_argument(
        "--kill-after",
        type=float,
        default=20,
        metavar="SECONDS",
        help="kill the leader this long after the window opens (at most half the window; "
        "default 20)",
    )
    p.add_argument(
        "--reboot-after",
        type=float,
        default=25,
        metavar="SECONDS",
        help="simulated kured: clear RebootRequired of a node that has held "
        "MaintenanceInProgress this long (0: never; default 25)",
    )
    args = p.parse_args(argv)
    if not 4 <= args.nodes <= 500:
        p.error("--nodes must be between 4 and 500")
    if not 10 <= args.window <= 3600:
        p.error("--window must be between 10 and 3600 seconds")
    if not 5 <= args.lead <= 600:
        p.error("--lead must be between 5 and 600 seconds")
    if args.duration is not None and args.duration <= 0:
        p.error("--duration must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    options = DemoOptions(
        nodes=a.nodes,
        duration=a.duration,
        kill_signal=a.kill_signal,
        no_color=a.no_color,
        keep=a.keep,
        window=a.window,
        lead=a.lead,
        kill_after=a.kill_after,
        reboot_after=a.reboot_after,
    )
    return Demo(options).run()


if __name__ == "__main__":
    sys.exit(main())
