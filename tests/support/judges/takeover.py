"""Window Events across a leader's takeover: announced once, whoever leads.

:func:`takeover_keeps_one_event` stops the leading replica with SIGTERM, waits for the
other to lead, rebuild and send its first pass's Event POSTs (:func:`event_posts`, from its
metrics), and asserts the window's Event of that reason exists exactly once
(:func:`events`).
"""

from __future__ import annotations

import http.client
import time
from typing import Any

from tests.support.env.harness import (
    Api,
    Kumaco,
    wait_for,
)
from tests.support.env.supervisor import wait_leader


def events(raw: Api, ns: str, window: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in raw.events(ns)
        if e.get("reason") == reason and (e.get("regarding") or {}).get("name") == window
    ]


def event_posts(k: Kumaco) -> float:
    """The Event POSTs ``k`` sent, whatever the answer (from its metrics)."""
    conn = http.client.HTTPConnection("127.0.0.1", k.metrics_port, timeout=2)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except OSError:
        return 0.0
    finally:
        conn.close()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("kumaco_api_requests_total{")
        and 'resource="events"' in line
        and 'verb="POST"' in line
    )


def takeover_keeps_one_event(
    raw: Api, ns: str, run: str, running: list[Kumaco], window: str, reason: str
) -> None:
    """SIGTERM the leader; once the other replica leads and has planned, still one Event."""
    # Start-up (1-4 s to the conditions measured, CATCH_UP_BOUND_S), with room for load.
    wait_for(lambda: all(k.ready() for k in running), 30, what="every replica ready")
    leader = wait_leader(raw, ns, run, 15)
    victim = next(k for k in running if leader.startswith(k.env["POD_NAME"] + "_"))
    other = next(k for k in running if k is not victim)
    assert victim.stop() == 0
    # SIGTERM releases the Lease: one retry period (1 s), 0.14-0.64 s measured (chaos_short).
    wait_leader(raw, ns, run, 10, not_=leader)
    wait_for(
        lambda: any("leading: view rebuilt" in m for m in other.log_messages()),
        10,  # the follower's caches are warm: a rebuild in memory, 10 s for a loaded machine
        what="the new leader's rebuild",
    )
    # Its WindowLoaded and its announcement of the same occurrence (both find the name
    # taken: 409), then a moment for anything else it would send.
    # Two Event POSTs of its first pass: 10 s is room for a loaded machine.
    wait_for(lambda: event_posts(other) >= 2, 10, what="the new leader's announcements")
    time.sleep(0.5)
    got = events(raw, ns, window, reason)
    assert len(got) == 1, f"{reason} {len(got)} times after a takeover: {got}"
