"""Dated windows end to end: ``kumaco run`` on the real API server, with a one-shot ``startTime``
and a ``notAfter``.

A one-shot window (one RFC 3339 ``startTime`` with an offset, a few seconds ahead) opens
its nodes once and closes them once; then kumaco reports it ended: one ``WindowExpired``
Event on its ConfigMap, ``kumaco_windows_ended`` 1 on kumaco's metrics, ``ended`` in
``kubectl kumaco status`` and a warning from ``kubectl kumaco windows`` and ``kumaco
validate``. A cron window whose ``notAfter`` has passed never opens (beside it the same
schedule with a later ``notAfter`` does), and is reported ended the same way.

Each test asserts what the server shows (node conditions as a separate watcher saw them,
Events) and what the commands print; the boundaries are the machine's instants.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.env.harness import (
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    unique,
    wait_for,
)
from tests.support.env.plugin import kubectl, kumaco_cli
from tests.support.env.supervisor import scope_flags

#: The offsets the dates are written with: not UTC, so an offset misread shows as hours.
KOLKATA = dt.timezone(dt.timedelta(hours=5, minutes=30))
NEW_YORK_WINTER = dt.timezone(dt.timedelta(hours=-5))


def _controller(spawn: Callable[..., Kumaco], ns: str, run: str) -> Kumaco:
    k = spawn(*scope_flags(run, ns))
    wait_for(k.ready, 20, what="kumaco ready")  # start-up: 1-4 s measured (test_catch_up.py)
    return k


def _events(raw: Api, ns: str, cm: str) -> list[dict[str, Any]]:
    return [e for e in raw.events(ns) if e["regarding"]["name"] == cm]


def _reasons(raw: Api, ns: str, cm: str) -> list[str]:
    return sorted(str(e["reason"]) for e in _events(raw, ns, cm))


def _um_history(watcher: NodeWatcher, name: str) -> list[str]:
    """Each UnderMaintenance status the watcher saw ``name`` take, in order ("" = none yet)."""
    return [s for _t, n, ctype, s in list(watcher.changes) if n == name and ctype == UM]


def _status(kubeconfig: Path, ns: str, run: str, *output: str) -> str:
    proc = kubectl(
        "status",
        "--kubeconfig",
        str(kubeconfig),
        "-n",
        ns,
        "--deployment",
        "",
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--leader-election-id",
        run,
        *output,
    )
    return proc.stdout


def _validate(raw: Api, ns: str, name: str, tmp_path: Path) -> list[str]:
    """``kumaco validate -o json`` on the ConfigMap as the server returns it: its warnings."""
    doc = raw.request("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"kind": "ConfigMap", "apiVersion": "v1", **doc}))
    proc = kumaco_cli("validate", "-o", "json", str(path))
    assert proc.returncode == 0, proc.stderr  # an ended window is valid: a warning, exit 0
    ((verdict,),) = [json.loads(proc.stdout)]
    assert verdict["valid"] is True
    return [str(w) for w in verdict["warnings"]]


def _z(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_one_shot_window_opens_once_closes_once_then_is_reported_ended(
    raw: Api, spawn: Callable[..., Kumaco], kubeconfig_path: Path, tmp_path: Path
) -> None:
    run, ns = unique("once"), raw.namespace(unique("win"))
    nodes = [f"{run}-0", f"{run}-1"]
    for name in nodes:
        raw.node(name, {RUN_LABEL: run})
    # 10 s ahead: kumaco's start-up (1-4 s measured under load, test_catch_up.py) ends first.
    opens = dt.datetime.fromtimestamp(int(time.time()) + 10, dt.UTC)
    closes = opens + dt.timedelta(seconds=4)
    start = opens.astimezone(KOLKATA).isoformat()  # 2026-12-04T18:10:05+05:30
    raw.window(ns, "once", {"startTime": start, "duration": "4s", "nodeSelector": ""})

    with NodeWatcher(raw, run) as watcher:
        k = _controller(spawn, ns, run)
        assert time.time() < opens.timestamp(), "kumaco started after the window opened"
        wait_for(
            lambda: all(condition_status(raw.conditions(n), UM) == "False" for n in nodes),
            10,  # the first pass follows readiness at once: 10 s is room for a loaded machine
            what="the first pass's conditions",
        )
        assert k.metric("kumaco_windows_ended") == 0.0  # its occurrence is still to come
        assert "WindowExpired" not in _reasons(raw, ns, "once")
        wait_for(
            lambda: "WindowExpired" in _reasons(raw, ns, "once"),
            closes.timestamp() - time.time() + 10,  # the close, then one pass: 10 s of room
            interval=0.2,
            what="the WindowExpired Event",
        )

    for name in nodes:
        # Opened once and closed once: no flapping, nothing after the close.
        assert _um_history(watcher, name) == ["", "False", "True", "False"], name
        t_open = watcher.first(name, lambda c: condition_status(c, UM) == "True")
        assert t_open is not None
        t_close = watcher.first(name, lambda c: condition_status(c, UM) == "False", after=t_open)
        assert t_close is not None
        # On time at both ends (9 ms late at worst measured for cron windows,
        # test_controller.py's figure ``boundary``; 2 s is room for a loaded machine).
        assert 0 <= t_open - opens.timestamp() < 2.0, f"{name} opened {t_open - opens.timestamp()}"
        assert 0 <= t_close - closes.timestamp() < 2.0, f"{name} closed late: {t_close}"
        assert raw.conditions(name)[UM]["lastTransitionTime"] == _z(closes)

    # Each Event once: the occurrence's start and end, then the window's expiry.
    assert _reasons(raw, ns, "once") == [
        "WindowEnded",
        "WindowExpired",
        "WindowLoaded",
        "WindowStarted",
    ]
    (expired,) = [e for e in _events(raw, ns, "once") if e["reason"] == "WindowExpired"]
    assert expired["type"] == "Normal" and expired["action"] == "Close"
    assert not expired.get("series"), "posted once, never aggregated"
    posted = dt.datetime.fromisoformat(str(expired["eventTime"]).replace("Z", "+00:00"))
    assert posted >= closes, f"expired at {posted}, before the close at {closes}"
    assert expired["note"] == (
        f"window {ns}/once has ended: its one occurrence ({_z(opens)}) is over; it will never "
        "open again (kumaco does not delete ConfigMaps: delete it)"
    )
    assert k.metric("kumaco_windows_ended") == 1.0
    assert k.alive

    # The commands a user runs say so too.
    doc = json.loads(_status(kubeconfig_path, ns, run, "-o", "json"))
    (window,) = doc["windows"]
    assert (window["name"], window["valid"], window["open"], window["ended"]) == (
        "once",
        True,
        False,
        True,
    )
    assert window["opens"] is None
    table = _status(kubeconfig_path, ns, run)
    (row,) = [line for line in table.splitlines() if line.startswith(f"{ns}/once ")]
    assert "ended" in row.split() and "valid" not in row.split(), row
    windows = kubectl("windows", "--kubeconfig", str(kubeconfig_path), "-n", ns, "--deployment", "")
    assert f"{ns}/once has ended: its one occurrence ({_z(opens)}) is over" in windows.stderr
    assert _validate(raw, ns, "once", tmp_path) == [
        f"has ended: its one occurrence ({_z(opens)}) is over; it will never open again: "
        "delete its ConfigMap"
    ]
    # Nothing more was posted meanwhile: still exactly one WindowExpired.
    assert _reasons(raw, ns, "once").count("WindowExpired") == 1


def test_a_window_past_its_not_after_never_opens_and_is_reported_ended(
    raw: Api, spawn: Callable[..., Kumaco], kubeconfig_path: Path, tmp_path: Path
) -> None:
    run, ns = unique("bound"), raw.namespace(unique("win"))
    for i, pool in enumerate(["past", "past", "current"]):
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "pool": pool})
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    always = {"startTime": "* * * * *", "duration": "2m"}  # without dates: open at every instant
    not_after = (now - dt.timedelta(hours=1)).astimezone(NEW_YORK_WINTER).isoformat()
    raw.window(ns, "past", {**always, "nodeSelector": "pool=past", "notAfter": not_after})
    later = (now + dt.timedelta(days=1)).astimezone(NEW_YORK_WINTER).isoformat()
    raw.window(ns, "current", {**always, "nodeSelector": "pool=current", "notAfter": later})

    with NodeWatcher(raw, run) as watcher:
        k = _controller(spawn, ns, run)
        # The first pass writes the conditions, then posts the Events.
        wait_for(
            lambda: "WindowExpired" in _reasons(raw, ns, "past"),
            10,  # the first pass follows readiness at once: 10 s is room for a loaded machine
            interval=0.2,
            what="the WindowExpired Event",
        )
        watcher.wait_first(f"{run}-1", lambda c: condition_status(c, UM) == "False")
        watcher.wait_first(f"{run}-2", lambda c: condition_status(c, UM) == "True")

    for name in (f"{run}-0", f"{run}-1"):
        assert _um_history(watcher, name) == ["", "False"], name  # never opened
    assert _um_history(watcher, f"{run}-2") == ["", "True"]  # the same schedule, still in bounds
    assert _reasons(raw, ns, "past") == ["WindowExpired", "WindowLoaded"]
    assert _reasons(raw, ns, "current") == ["WindowLoaded", "WindowStarted"]
    (expired,) = [e for e in _events(raw, ns, "past") if e["reason"] == "WindowExpired"]
    assert expired["note"] == (
        f"window {ns}/past has ended: no occurrence starts before its notAfter {not_after} "
        f"({_z(now - dt.timedelta(hours=1))}); it will never open again (kumaco does not "
        "delete ConfigMaps: delete it)"
    )
    assert k.metric("kumaco_windows_ended") == 1.0
    assert k.metric("kumaco_window_open") == 1.0  # "current" alone (the sum of both series)

    doc = json.loads(_status(kubeconfig_path, ns, run, "-o", "json"))
    windows = {w["name"]: w for w in doc["windows"]}
    assert windows["past"]["ended"] is True and windows["past"]["open"] is False
    assert windows["past"]["notAfter"] == not_after
    assert windows["current"]["ended"] is False and windows["current"]["open"] is True
    assert [w for w in _validate(raw, ns, "past", tmp_path) if "has ended" in w] == [
        f"has ended: no occurrence starts before its notAfter {not_after} "
        f"({_z(now - dt.timedelta(hours=1))}); it will never open again: delete its ConfigMap"
    ]
