"""The fleet rules from outside: ``kumaco plan`` and ``kumaco forecast`` through the console script.

Hand-computed cases with their exact output (the reasoning beside each), the flags'
usage errors, and the environment variables of the new flags. The planner's own cases
are in tests/unit/core/planning/test_fleetrules.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.builders.cli import KUMACO, LABEL, NIGHTLY, REQ, cm, kumaco

MIP = "MaintenanceInProgress"
FLEET = [
    "--max-in-progress",
    "3",
    "--require-condition",
    REQ,
    "--admission-rate",
    "2/1h",
    "--one-group-at-a-time",
    "zone",
    "--node-min-interval",
    "6h",
]


def node(name: str, zone: str, asked: str, mip: dict[str, str] | None = None) -> dict[str, Any]:
    conditions = [{"type": REQ, "status": "True", "lastTransitionTime": asked}]
    if mip is not None:
        conditions.append({"type": MIP, **mip})
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": zone}},
        "status": {"conditions": conditions},
    }


def files(tmp_path: Path, nodes: list[dict[str, Any]]) -> list[str]:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))  # 02:00-05:00 daily
    f = tmp_path / "nodes.json"
    f.write_text(json.dumps({"kind": "List", "items": nodes}))
    return ["--windows", str(w), "--nodes", str(f)]


def forecast(tmp_path: Path, nodes: list[dict[str, Any]], until: str, *rules: str) -> list[str]:
    """``kumaco forecast`` from midnight to ``until`` on 2027-01-13: 2 at a time, 30 min each."""
    return [
        "forecast",
        *files(tmp_path, nodes),
        "--from",
        "2027-01-13T00:00:00Z",
        "--until",
        f"2027-01-13T{until}:00Z",
        "--max-in-progress",
        "2",
        "--require-condition",
        REQ,
        "--maintenance-duration",
        "30m",
        *rules,
    ]


#: At 03:00: a1 holds (admitted 02:10, zone a); b1's maintenance (admitted 02:00) ended at
#: 02:20 and it asks again; a2 (zone a) and c1 (zone c, the oldest request) ask.
CLUSTER = [
    node(
        "a1",
        "a",
        "2027-01-12T10:00:00Z",
        {
            "status": "True",
            "reason": "MaintenanceAllowed",
            "message": "in an open maintenance window with kured.dev/RebootRequired=True and "
            "not blocked; recent admissions: 2027-01-13T02:10:00Z",
            "lastTransitionTime": "2027-01-13T02:10:00Z",
        },
    ),
    node("a2", "a", "2027-01-12T12:00:00Z"),
    node(
        "b1",
        "b",
        "2027-01-13T02:40:00Z",
        {
            "status": "False",
            "reason": "MaintenanceFinished",
            "message": "maintenance finished: kured.dev/RebootRequired no longer True; "
            "recent admissions: 2027-01-13T02:00:00Z",
            "lastTransitionTime": "2027-01-13T02:20:00Z",
        },
    ),
    node("c1", "c", "2027-01-12T08:00:00Z"),
]


def test_plan_names_each_fleet_rule_hand_computed(tmp_path: Path) -> None:
    args = ["plan", *files(tmp_path, CLUSTER), *FLEET]
    # 03:00. Admissions in the last hour: a1 (02:10) and b1 (02:00, recorded in its release):
    # the rate 2/1h is full until 02:00 leaves the window, at the end of its second + 1h,
    # 03:00:01. b1's maintenance ended 02:20: not again before 08:20:01 (6h after the end
    # of that second). a1 holds in zone a: c1 (zone c) waits for its group's turn; a2 is in
    # zone a but the rate stops it.
    done = kumaco(*args, "--at", "2027-01-13T03:00:00Z")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "at 2027-01-13T03:00:00Z; in progress 1 of at most 3\n"
        "  one zone at a time: 1 of at most 4 (a1)\n"
        "  admissions per 1h0m0s: 2 of at most 2 (a1, b1)\n"
        "NODE  UNDER-MAINTENANCE  IN-PROGRESS  REASON                       WINDOWS        DETAIL\n"
        "a1    true               true         MaintenanceAllowed           maintenance/w  "
        "counts toward global,one zone at a time; no bootID: ends only when a required "
        "condition clears\n"
        "a2    true               false        AdmissionRateReached         maintenance/w  "
        "admissions per 1h0m0s full (held by a1,b1); until 2027-01-13T03:00:01Z\n"
        "b1    true               false        TooSoonAfterLastMaintenance  maintenance/w  "
        "until 2027-01-13T08:20:01Z\n"
        "c1    true               false        AnotherGroupInProgress       maintenance/w  "
        "one zone at a time full (held by a1)\n"
    )
    doc = json.loads(kumaco(*args, "--at", "2027-01-13T03:00:00Z", "-o", "json").stdout)
    rows = {n["name"]: n for n in doc["nodes"]}
    assert (rows["a2"]["rule"], rows["a2"]["reason"]) == ("AdmissionRateReached",) * 2
    assert rows["a2"]["message"] == "waiting: at most 2 nodes may start maintenance in any 1h0m0s"
    assert rows["a2"]["ceiling"] == {
        "name": "admissions per 1h0m0s",
        "limit": 2,
        "heldBy": ["a1", "b1"],
    }
    assert rows["b1"]["message"] == (
        "too soon after its last maintenance (ended 2027-01-13T02:20:00Z): may be admitted "
        "from 2027-01-13T08:20:01Z (--node-min-interval 6h0m0s); recent admissions: "
        "2027-01-13T02:00:00Z"
    )
    assert (rows["c1"]["rule"], rows["c1"]["ceiling"]["heldBy"]) == (
        "AnotherGroupInProgress",
        ["a1"],
    )
    assert rows["c1"]["message"] == "waiting: one zone at a time, and it is another zone's turn"
    # A second later b1's admission has left the window: a2 (zone a, in progress) starts,
    # and its grant records its own instant beside nothing older (02:10 is a1's, not a2's).
    later = json.loads(kumaco(*args, "--at", "2027-01-13T03:00:01Z", "-o", "json").stdout)
    rows = {n["name"]: n for n in later["nodes"]}
    assert (rows["a2"]["rule"], rows["a2"]["message"]) == (
        "MaintenanceAllowed",
        "in an open maintenance window with kured.dev/RebootRequired=True and not blocked; "
        "recent admissions: 2027-01-13T03:00:01.000000Z",  # a grant's own instant: exact
    )
    assert rows["c1"]["rule"] == "AnotherGroupInProgress"


def test_forecast_with_an_admission_rate_hand_computed(tmp_path: Path) -> None:
    nodes = [node(f"n{i}", "a", f"2027-01-12T0{i}:{30 if i == 0 else 0:02}:00Z") for i in range(4)]
    args = forecast(tmp_path, nodes, "05:00", "--admission-rate", "1/1h")
    # One admission an hour, each recorded exactly and counted from its instant: 02:00,
    # 03:00, 04:00 (no second added per wave: each admission is recorded exactly); n3's turn (05:00) comes as the
    # window closes (05:00, open on [02:00, 05:00)). A wait runs from the request (the
    # RebootRequired transition, the day before) to the admission or to --until: n1 01:00 ->
    # 03:00, n2 02:00 -> 04:00, n3 03:00 -> 05:00 (26h each, by name), n0 00:30 -> 02:00
    # (25h30m).
    done = kumaco(*args)
    assert done.returncode == 1, done.stderr
    assert done.stdout == (
        "NODE  ADMITTED              FINISHED              WINDOWS\n"
        "n0    2027-01-13T02:00:00Z  2027-01-13T02:30:00Z  maintenance/w\n"
        "n1    2027-01-13T03:00:00Z  2027-01-13T03:30:00Z  maintenance/w\n"
        "n2    2027-01-13T04:00:00Z  2027-01-13T04:30:00Z  maintenance/w\n"
        "n3    -                     -                     -\n"
        "3 of 4 nodes finished by 2027-01-13T04:30:00Z; 1 did not fit: n3\n"
        "next chance: 2027-01-14T02:00:00Z (maintenance/w) for n3\n"
        "longest waits from the request: n1 26h0m0s, n2 26h0m0s, n3 26h0m0s (not admitted)\n"
    )
    doc = json.loads(kumaco(*args, "-o", "json").stdout)
    assert doc["longestWaits"] == [
        {
            "name": "n1",
            "since": "2027-01-12T01:00:00Z",
            "admitted": "2027-01-13T03:00:00Z",
            "waitedSeconds": 93600,
        },
        {
            "name": "n2",
            "since": "2027-01-12T02:00:00Z",
            "admitted": "2027-01-13T04:00:00Z",
            "waitedSeconds": 93600,
        },
        {"name": "n3", "since": "2027-01-12T03:00:00Z", "admitted": None, "waitedSeconds": 93600},
    ]


def test_forecast_one_group_at_a_time_and_spacing_hand_computed(tmp_path: Path) -> None:
    spaced = node(
        "s1",
        "b",
        "2027-01-12T23:00:00Z",
        {
            "status": "False",
            "reason": "MaintenanceFinished",
            "message": "maintenance finished",
            "lastTransitionTime": "2027-01-12T22:00:00Z",
        },
    )
    nodes = [
        node("a1", "a", "2027-01-12T02:00:00Z"),
        node("a2", "a", "2027-01-12T03:00:00Z"),
        node("b1", "b", "2027-01-12T01:00:00Z"),
        spaced,
    ]
    args = forecast(
        tmp_path, nodes, "06:00", "--one-group-at-a-time", "zone", "--node-min-interval", "6h"
    )
    # 02:00: zone b goes first (s1's release is the latest maintenance, and b1 has the
    # oldest request); s1 is spaced until 04:00:01 (22:00 + 6h, from the end of its second).
    # 02:30: b1 done and zone b has no eligible node: zone a (a1's older request) takes both
    # places. 04:00:01: s1.
    done = kumaco(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "NODE  ADMITTED              FINISHED              WINDOWS\n"
        "b1    2027-01-13T02:00:00Z  2027-01-13T02:30:00Z  maintenance/w\n"
        "a1    2027-01-13T02:30:00Z  2027-01-13T03:00:00Z  maintenance/w\n"
        "a2    2027-01-13T02:30:00Z  2027-01-13T03:00:00Z  maintenance/w\n"
        "s1    2027-01-13T04:00:01Z  2027-01-13T04:30:01Z  maintenance/w\n"
        "all 4 nodes finished by 2027-01-13T04:30:01Z\n"
        "longest waits from the request: b1 25h0m0s, a1 24h30m0s, a2 23h30m0s\n"
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--admission-rate",
            "10",
            "--admission-rate: '10' is not N/DURATION: a count of at least 1, a slash and a Go "
            "duration (e.g. 10/1h)",
        ),
        ("--admission-rate", "5/1d", "--admission-rate: '5/1d': unknown unit \"d\" in duration"),
        ("--one-group-at-a-time", "a/b/c", "--one-group-at-a-time: 'a/b/c' is not a label key"),
        ("--node-min-interval=-1h", None, "--node-min-interval: must not be negative"),
    ],
)
def test_bad_fleet_flags_are_usage_errors_naming_the_flag(
    tmp_path: Path, flag: str, value: str | None, message: str
) -> None:
    done = kumaco("plan", *files(tmp_path, CLUSTER), flag, *([] if value is None else [value]))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("kumaco plan: " + message), done.stderr


def test_the_fleet_flags_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "KUMACO_ADMISSION_RATE": "2/1h",
        "KUMACO_ONE_GROUP_AT_A_TIME": "zone",
        "KUMACO_NODE_MIN_INTERVAL": "6h",
    }
    args = [*files(tmp_path, CLUSTER), "--max-in-progress", "3", "--require-condition", REQ]
    at = ["--at", "2027-01-13T03:00:00Z"]
    from_env = subprocess.run(
        [str(KUMACO), "plan", *args, *at], capture_output=True, text=True, env=env, check=False
    )
    assert from_env.returncode == 0, from_env.stderr
    assert from_env.stdout == kumaco("plan", *args, *FLEET[4:], *at).stdout
