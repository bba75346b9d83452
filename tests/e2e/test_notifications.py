"""Notifications (``--notify-url``) through ``kumaco run`` on the real control plane, with kured's stand-in.

* A window over three nodes, ceiling 1, two replicas, a loopback ``json://`` receiver:
  the messages for the window opened, each node admitted, each finished (with its boot
  change) and the window closed arrive once each, in that order, across a SIGTERM
  hand-over of the leader in the middle of the second node's reboot.
* An endpoint that accepts and never answers: the window's opening (``UnderMaintenance``
  written) is not later than in a run without notifications, and the notification is
  counted as failed (``kumaco_notifications_total{result="failed"}``) after the retries.
"""

from __future__ import annotations

import datetime as dt
import time
import urllib.request
from collections.abc import Callable

from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    always,
    cron_at,
    unique,
    wait_for,
)
from tests.support.env.supervisor import Supervisor, Timings, scope_flags, wait_leader
from tests.support.judges.consumer import Consumer, set_boot
from tests.support.judges.receivers import HttpReceiver

FAST = Timings(lease=4.0, renew=3.0, retry=1.0)
#: The stand-in's reboot (s): long enough to SIGTERM the leader in the middle of one.
REBOOT_S = 3.0


def window_closing_in(seconds: float) -> dict[str, str]:
    """A window open now (it began this minute) that closes ``seconds`` from now."""
    now = dt.datetime.now(dt.UTC)
    start = now.replace(second=0, microsecond=0)
    length = (now - start).total_seconds() + seconds
    return {"startTime": cron_at(start), "duration": f"{length:.3f}s", "nodeSelector": ""}


def told(rx: HttpReceiver) -> list[tuple[str, str]]:
    """(event, subject) of each message received, from its title ``kumaco (ID): EVENT SUBJECT``."""
    out = []
    for r in rx.bodies():
        _, event, subject = r.json()["title"].rsplit(" ", 2)
        out.append((event, subject))
    return out


def test_a_window_over_three_nodes_is_told_once_in_order_across_a_sigterm_hand_over(
    raw: Api, replicas: Callable[..., Supervisor]
) -> None:
    run, ns = unique("notify"), raw.namespace(unique("notify"))
    names = [f"{run}-{i}" for i in range(3)]
    for n in names:  # older requests first: node 0 is admitted first
        raw.node(n, {RUN_LABEL: run}, [{"type": REQUIRED, "status": "True"}])
        set_boot(raw, n, f"boot-0-{n}")
    raw.window(ns, "w", window_closing_in(30))
    with HttpReceiver() as rx, Consumer(raw, run, lambda _n: REBOOT_S, new_boot=True, clears=False):
        flags = [
            *scope_flags(run, ns),
            "--max-in-progress",
            "1",
            "--require-condition",
            REQUIRED,
            *FAST.flags(),
            "--notify-url",
            rx.url("json"),
            "--notify-on",
            "all",
        ]
        sup = replicas(run, flags, 2)
        # Start-up and the first pass: 1-4 s measured (test_catch_up.py); 30 s when loaded.
        wait_for(lambda: ("admitted", names[1]) in told(rx), 30 + 2 * REBOOT_S, what="n1 admitted")
        admitted_at = time.monotonic()
        old = wait_leader(raw, ns, run, 10)
        victim = sup.by_identity(old)
        assert victim is not None, old
        time.sleep(max(0.0, admitted_at + 1.5 - time.monotonic()))  # within n1's reboot
        victim.stop()
        new = wait_leader(raw, ns, run, 20, not_=old)
        window = f"{ns}/w"
        wait_for(lambda: ("window-closed", window) in told(rx), 60, what="the window closed")
        time.sleep(1.0)  # anything told twice would arrive now
        got = told(rx)
        bodies = [r.json()["message"] for r in rx.bodies()]
    assert old != new
    assert got == [
        ("window-opened", window),
        ("admitted", names[0]),
        ("finished", names[0]),
        ("admitted", names[1]),
        ("finished", names[1]),
        ("admitted", names[2]),
        ("finished", names[2]),
        ("window-closed", window),
    ], got
    assert f"for 3 node(s): {', '.join(names)}" in bodies[0]
    for i, n in enumerate(names):
        assert f"the node rebooted (boot boot-0-{n} -> " in bodies[2 + 2 * i], bodies[2 + 2 * i]
    conds = {n: raw.conditions(n).get(MIP, {}).get("reason") for n in names}
    assert set(conds.values()) == {"MaintenanceFinished"}, conds


def _failed(k: Kumaco) -> float:
    """``kumaco_notifications_total`` samples with ``result="failed"``, summed."""
    with urllib.request.urlopen(f"http://127.0.0.1:{k.metrics_port}/metrics", timeout=2) as r:
        text = r.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("kumaco_notifications_total{") and 'result="failed"' in line
    )


def _opening(raw: Api, spawn: Callable[..., Kumaco], *extra: str) -> tuple[float, Kumaco]:
    """Seconds from ``kumaco run``'s start to the open window's UnderMaintenance on a node."""
    run, ns = unique("notify-open"), raw.namespace(unique("notify-open"))
    node = f"{run}-0"
    raw.node(node, {RUN_LABEL: run}, [{"type": REQUIRED, "status": "True"}])
    raw.window(ns, "w", always())
    started = time.monotonic()
    k = spawn(*scope_flags(run, ns), *FAST.flags(), *extra, name=run)
    wait_for(
        lambda: raw.conditions(node).get(UM, {}).get("status") == "True", 30, what="the opening"
    )
    return time.monotonic() - started, k


def test_an_endpoint_that_never_answers_delays_no_opening_and_is_counted_failed(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    with HttpReceiver(silent=True) as hung:
        plain, k0 = _opening(raw, spawn)
        k0.stop()
        url = hung.url("json", query="cto=1&rto=1")
        notified, k = _opening(
            raw,
            spawn,
            "--notify-url",
            url,
            "--notify-on",
            "all",
            "--notify-flush-timeout",
            "1s",
        )
        hung.wait_for(1, timeout=10)
        # Three attempts of 1 s each with 1-2 s between them (the retry policy); 30 s
        # when loaded.
        wait_for(lambda: _failed(k) >= 1, 30, what="the failed notification counted")
        assert k.stop() == 0
    print(f"opening: {plain:.2f} s without notifications, {notified:.2f} s with a hung endpoint")
    # Start-up dominates both (1-4 s); the hung endpoint adds nothing to the opening.
    assert notified < plain + 2.0, (plain, notified)
