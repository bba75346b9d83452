"""Unavailable nodes and the ceilings' places, through the console scripts.

``kumaco convert``'s flags keep kured v1 rebooting past a node NotReady or cordoned for
another reason, while a node kumaco released that is still cordoned keeps its place
(``--count-released-unavailable``); ``kumaco plan``'s header counts the places taken by
nodes not in progress, in the table and in ``-o json``; ``kumaco forecast`` names the
nodes that take a place for good instead of promising a next chance. The rule's own cases
are in tests/unit/core/planning/test_planner.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.builders.cli import LABEL, NIGHTLY, REQ, cm, kumaco

KURED_REQ = "kured.dev/reboot-required"
KURED_MIP = "kured.dev/maintenance-in-progress"
AT = "2027-01-13T03:00:00Z"  # NIGHTLY is open 02:00-05:00


def node(
    name: str,
    req: str,
    *,
    ready: str = "True",
    cordoned: bool = False,
    released: str | None = None,
    req_type: str = KURED_REQ,
    mip_type: str = KURED_MIP,
) -> dict[str, Any]:
    """A node; ``released``: when kumaco released it (MaintenanceFinished)."""
    conditions = [
        {"type": req_type, "status": req, "lastTransitionTime": "2027-01-12T10:00:00Z"},
        {"type": "Ready", "status": ready, "lastTransitionTime": "2027-01-12T10:00:00Z"},
    ]
    if released is not None:
        conditions.append(
            {
                "type": mip_type,
                "status": "False",
                "reason": "MaintenanceFinished",
                "message": "maintenance finished: rebooted",
                "lastTransitionTime": released,
            }
        )
    out: dict[str, Any] = {
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "status": {"conditions": conditions},
    }
    if cordoned:
        out["spec"] = {"unschedulable": True}
    return out


def files(tmp_path: Path, nodes: list[dict[str, Any]]) -> list[str]:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    f = tmp_path / "nodes.json"
    f.write_text(json.dumps({"kind": "List", "items": nodes}))
    return ["--windows", str(w), "--nodes", str(f)]


def converted() -> list[str]:
    """The kumaco flags ``kumaco convert`` gives for kured v1 with its defaults."""
    done = kumaco("convert", "-o", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "--count-unavailable" not in doc["kumaco"]
    assert any(n.startswith("kured v1 kept rebooting past a node NotReady") for n in doc["notes"])
    return list(doc["kumaco"])


def test_converted_flags_keep_rebooting_past_an_unrelated_unavailable_node(
    tmp_path: Path,
) -> None:
    flags = converted()
    assert "--max-in-progress=1" in flags and "--count-released-unavailable=30m" in flags
    # One node asks; another is NotReady and a third cordoned, neither kumaco's doing.
    nodes = [
        node("a", "True"),
        node("down", "False", ready="False"),
        node("drained", "False", cordoned=True),
    ]
    done = kumaco("plan", *files(tmp_path, nodes), *flags, "--at", AT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"at {AT}; in progress 1 of at most 1"
    assert lines[2].split()[:4] == ["a", "true", "true", "MaintenanceAllowed"]
    # --count-unavailable would have stopped the fleet on them: the place is taken.
    every = [f for f in flags if not f.startswith("--count-released")] + ["--count-unavailable"]
    stopped = kumaco("plan", *files(tmp_path, nodes), *every, "--at", AT)
    assert stopped.stdout.splitlines()[0] == (
        f"at {AT}; in progress 0, 2 places taken by nodes not in progress (down, drained), "
        "of at most 1"
    )


def test_a_node_kumaco_released_still_cordoned_keeps_its_place_and_the_header_says_so(
    tmp_path: Path,
) -> None:
    flags = converted()
    # "rebooted" was released 5 minutes ago; kured's daemon has not uncordoned it yet.
    nodes = [
        node("a", "True"),
        node("rebooted", "False", cordoned=True, released="2027-01-13T02:55:00Z"),
        node("down", "False", ready="False"),
    ]
    args = ["plan", *files(tmp_path, nodes), *flags, "--at", AT]
    done = kumaco(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"at {AT}; in progress 0, 1 place taken by a node not in progress (rebooted), of at most 1"
    )
    assert lines[2].split()[:4] == ["a", "true", "false", "ConcurrencyCeilingReached"]
    doc = json.loads(kumaco(*args, "-o", "json").stdout)
    assert (doc["inProgress"], doc["placesTakenNotInProgress"]) == (0, ["rebooted"])
    assert doc["ceilings"][0] == {"name": "global", "limit": 1, "used": 1, "nodes": ["rebooted"]}
    # 30 minutes after its release (to the end of its second) it no longer counts.
    later = kumaco(*args[:-1], "2027-01-13T03:25:01Z", "-o", "json")
    doc = json.loads(later.stdout)
    assert (doc["inProgress"], doc["placesTakenNotInProgress"]) == (1, [])
    # Uncordoned, it takes no place at once.
    back = [nodes[0], node("rebooted", "False", released="2027-01-13T02:55:00Z"), nodes[2]]
    doc = json.loads(
        kumaco("plan", *files(tmp_path, back), *flags, "--at", AT, "-o", "json").stdout
    )
    assert (doc["inProgress"], doc["placesTakenNotInProgress"]) == (1, [])


def test_without_a_ceiling_the_json_has_no_places(tmp_path: Path) -> None:
    done = kumaco("plan", *files(tmp_path, [node("a", "True")]), "--at", AT, "-o", "json")
    doc = json.loads(done.stdout)
    assert (doc["inProgress"], doc["placesTakenNotInProgress"]) == (None, None)


def forecast(tmp_path: Path, nodes: list[dict[str, Any]], *flags: str) -> list[str]:
    return [
        "forecast",
        *files(tmp_path, nodes),
        *("--from", "2027-01-13T00:00:00Z", "--until", "2027-01-13T06:00:00Z"),
        *("--max-in-progress", "1", "--require-condition", REQ),
        *("--maintenance-duration", "30m", *flags),
    ]


def test_forecast_names_the_nodes_that_take_the_place_for_good(tmp_path: Path) -> None:
    plain = {"req_type": REQ, "mip_type": "MaintenanceInProgress"}
    nodes = [
        node("a", "True", **plain),
        node("b", "True", **plain),  # alike: the same answer
        node("down", "False", ready="False", **plain),
    ]
    done = kumaco(*forecast(tmp_path, nodes, "--count-unavailable"))
    assert done.returncode == 1, done.stderr  # not every node fits
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "NODE  ADMITTED  FINISHED  WINDOWS",
        "a     -         -         -",
        "b     -         -         -",
    ]
    assert lines[3] == "0 of 2 nodes finished; 2 did not fit: a, b"
    # No next chance is promised: the place is down's as long as it stays NotReady.
    assert lines[4] == (
        "no chance: a, b (ceiling global (at most 1) taken for good by down: not Ready or "
        "cordoned, counted by --count-unavailable, and a forecast keeps nodes as they are)"
    )
    assert not any(line.startswith("next chance") for line in lines)
    doc = json.loads(kumaco(*forecast(tmp_path, nodes, "--count-unavailable"), "-o", "json").stdout)
    assert doc["nextChance"] == {} and list(doc["noChance"]) == ["a", "b"]
    # Counting only the maintenance's own disruption, a and b are admitted in turn from 02:00.
    fits = kumaco(*forecast(tmp_path, nodes, "--count-released-unavailable", "30m"))
    assert "all 2 nodes finished by 2027-01-13T03:00:00Z" in fits.stdout.splitlines()


def test_forecast_still_promises_a_chance_when_the_place_is_free_then(tmp_path: Path) -> None:
    plain = {"req_type": REQ, "mip_type": "MaintenanceInProgress"}
    # Two nodes ask, one place, until 02:20: b's next chance is at once (a's place aside,
    # as before), since nothing unavailable stands in its way.
    nodes = [node("a", "True", **plain), node("b", "True", **plain)]
    args = forecast(tmp_path, nodes, "--count-unavailable")
    args[args.index("2027-01-13T06:00:00Z")] = "2027-01-13T02:20:00Z"
    done = kumaco(*args)
    assert done.returncode == 1, done.stderr
    assert "next chance: 2027-01-13T02:20:00Z (maintenance/w) for b" in done.stdout.splitlines()
