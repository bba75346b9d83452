"""kwok with kumaco's own Stages on the real API server: heartbeats, reboots, a stopped kubelet.

The benchmark's living cluster rests on these behaviours: a heartbeat moves
only ``lastHeartbeatTime`` of the kubelet's conditions (a foreign condition
written the way kumaco writes it survives it, as do labels); a reboot takes a
node NotReady and back with a new bootID; a label stops a node's kubelet.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import RUN_LABEL, UM, Api, unique, wait_for
from tests.support.env.kwok import REBOOT, REBOOT_UNTIL, STOPPED, Kwok, KwokSettings


def _node(raw: Api, name: str) -> dict[str, Any]:
    node: dict[str, Any] = raw.request("GET", f"/api/v1/nodes/{name}")
    return node


def _conds(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in node["status"]["conditions"]}


def _heartbeat(raw: Api, name: str) -> str:
    return str(_conds(_node(raw, name))["Ready"]["lastHeartbeatTime"])


def _when_ready(raw: Api, name: str, status: str, timeout: float) -> dict[str, Any]:
    """The node once its Ready condition has ``status``."""

    def node() -> dict[str, Any] | None:
        n = _node(raw, name)
        return n if _conds(n)["Ready"]["status"] == status else None

    return wait_for(node, timeout, what=f"{name} Ready={status}")


def test_kwok_stages_heartbeat_reboot_and_stop(
    control_plane: ControlPlane, raw: Api, tmp_path: Path
) -> None:
    run = unique("kwok")
    names = [f"{run}-{i}" for i in range(3)]
    for n in names:
        raw.node(n, {RUN_LABEL: run, "kubernetes.io/hostname": n})
    beat, rebooting, stopped = names
    raw.set_condition(beat, UM, "True", "2026-02-01T00:00:00Z", reason="Window")
    settings = KwokSettings(
        status_period=2, lease_seconds=0, parallelism=2, scope=f"{RUN_LABEL}={run}"
    )
    with Kwok(control_plane, tmp_path / "kwok", settings):
        # The nodes' heartbeat is from 2026-01-01: due at once, then every 2-2.2 s.
        first = wait_for(
            lambda: (
                _heartbeat(raw, beat)
                if not _heartbeat(raw, beat).startswith("2026-01-01")
                else None
            ),
            30,  # due at once: kwok's start (not timed) with room for a loaded machine
            what="the first heartbeat",
        )
        # One 2-2.2 s period (timestamps in whole seconds): 15 s is about 7 periods.
        wait_for(lambda: _heartbeat(raw, beat) > first, 15, what="the next heartbeat")
        node = _node(raw, beat)
        conds = _conds(node)
        assert conds[UM]["status"] == "True"
        assert conds[UM]["lastHeartbeatTime"] == "2026-02-01T00:00:00Z", "a foreign condition moved"
        assert conds["Ready"]["status"] == "True"
        assert conds["Ready"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
        assert node["metadata"]["labels"] == {RUN_LABEL: run, "kubernetes.io/hostname": beat}

        # A reboot of 3 s: NotReady with a deadline, then Ready with a new bootID.
        boot_id = _node(raw, rebooting)["status"].get("nodeInfo", {}).get("bootID", "")
        raw.request(
            "PATCH",
            f"/api/v1/nodes/{rebooting}",
            {"metadata": {"annotations": {REBOOT: "3s"}}},
            "application/merge-patch+json",
        )
        down = _when_ready(raw, rebooting, "False", 15)  # kwok's watch sees the annotation
        assert REBOOT_UNTIL in down["metadata"]["annotations"]
        t_down = dt.datetime.now(dt.UTC)
        up = _when_ready(raw, rebooting, "True", 20)  # the 3 s reboot, then the Stage's write
        # At least 2 s: the 3 s reboot, less 1 s for this poll seeing NotReady late.
        assert (dt.datetime.now(dt.UTC) - t_down).total_seconds() >= 2
        assert up["status"]["nodeInfo"]["bootID"] not in ("", boot_id)
        assert REBOOT not in up["metadata"].get("annotations", {})
        assert REBOOT_UNTIL not in up["metadata"].get("annotations", {})

        # A stopped kubelet: no heartbeat for well over a period.
        raw.label(stopped, STOPPED, "true")
        time.sleep(settings.status_period * 1.1 + 1)  # a heartbeat already due may still land

        def beats(n: int) -> None:  # n heartbeats of the running node: n periods or more
            for _ in range(n):
                seen = _heartbeat(raw, beat)
                # One 2-2.2 s period: 15 s is about 7 periods.
                wait_for(lambda seen=seen: _heartbeat(raw, beat) > seen, 15, what="a heartbeat")

        # On a loaded machine kwok may see the label late (a CI run saw one more heartbeat
        # of the stopped node 4 s after the first look): the stopped node must, within
        # five tries, go two heartbeats of the running node without one of its own.
        tries = []
        for _ in range(5):
            beats(1)
            frozen = _heartbeat(raw, stopped)
            beats(2)
            tries.append((frozen, _heartbeat(raw, stopped)))
            if tries[-1][0] == tries[-1][1]:
                break
        assert tries[-1][0] == tries[-1][1], f"the stopped node kept beating: {tries}"
