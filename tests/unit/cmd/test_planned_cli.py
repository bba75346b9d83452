"""``--planned-lead`` through the installed ``kumaco`` script (advance notice), hand-computed.

Last, ``kubectl kumaco status``'s report of the nodes whose ``MaintenancePlanned`` is True.

The world: a nightly window (02:00 UTC for 3h) on zone ``a``; a freeze from 01:00 to 02:30 on
the frozen node of zone ``a``; a node of zone ``b`` no window selects. With a 1h lead:

* 01:15 -- ``a1`` is planned for 02:00 (within 01:15 + 1h); ``a2``'s 02:00 falls in its
  freeze and its thaw (02:30) is beyond the lead; ``b1`` has nothing.
* 01:30 -- ``a2``'s thaw at 02:30 is exactly at the end of the lead: planned.
* 02:00 -- ``a1`` is under maintenance: no longer planned; ``a2`` still waits for 02:30.
* 02:30 -- ``a2`` is under maintenance: nothing is planned.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kumaco.cmd.statusreport import status_report
from kumaco.core.objects.nodes import node_view
from kumaco.core.planning.instance import Instance
from kumaco.views.status import Snapshot, format_report
from kumaco.views.status_json import to_json
from tests.support.builders.cli import LABEL, REQ, cm, kumaco

NIGHTLY = {"startTime": "0 2 * * *", "duration": "3h", "nodeSelector": "zone=a"}
FREEZE = {
    "startTime": "0 1 * * *",
    "duration": "90m",
    "nodeSelector": "zone=a,frozen",
    "freeze": "true",
}


def world(tmp_path: Path) -> list[str]:
    w = tmp_path / "windows.yaml"
    items = [cm("nightly", NIGHTLY, labels={LABEL: ""}), cm("storage", FREEZE, labels={LABEL: ""})]
    w.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    n = tmp_path / "nodes.yaml"
    nodes = [
        {"metadata": {"name": "a1", "labels": {"zone": "a"}}},
        {"metadata": {"name": "a2", "labels": {"zone": "a", "frozen": ""}}},
        {"metadata": {"name": "b1", "labels": {"zone": "b"}}},
    ]
    n.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return ["plan", "--windows", str(w), "--nodes", str(n)]


def planned(args: list[str], at: str, *more: str) -> dict[str, tuple[bool, str | None]]:
    done = kumaco(*args, "--at", at, "--planned-lead", "1h", *more, "-o", "json")
    assert done.returncode == 0, done.stderr
    return {
        n["name"]: (n["maintenancePlanned"], n["plannedStart"])
        for n in json.loads(done.stdout)["nodes"]
    }


def test_plan_json_names_each_nodes_planned_start(tmp_path: Path) -> None:
    args = world(tmp_path)
    assert planned(args, "2027-01-13T01:15:00Z") == {
        "a1": (True, "2027-01-13T02:00:00Z"),
        "a2": (False, None),
        "b1": (False, None),
    }
    assert planned(args, "2027-01-13T01:30:00Z") == {
        "a1": (True, "2027-01-13T02:00:00Z"),
        "a2": (True, "2027-01-13T02:30:00Z"),
        "b1": (False, None),
    }
    assert planned(args, "2027-01-13T02:00:00Z") == {
        "a1": (False, None),
        "a2": (True, "2027-01-13T02:30:00Z"),
        "b1": (False, None),
    }
    assert planned(args, "2027-01-13T02:30:00Z") == {
        "a1": (False, None),
        "a2": (False, None),
        "b1": (False, None),
    }
    # The lead's end is in the lead: 00:59:59 is one second too early for 02:00.
    assert planned(args, "2027-01-13T00:59:59Z")["a1"] == (False, None)
    assert planned(args, "2027-01-13T01:00:00Z")["a1"] == (True, "2027-01-13T02:00:00Z")
    # With a ceiling the fields are the same and beside the admission's.
    with_ceiling = planned(args, "2027-01-13T01:15:00Z", "--max-in-progress", "1")
    assert with_ceiling["a1"] == (True, "2027-01-13T02:00:00Z")


def test_without_the_lead_the_fields_say_not_planned(tmp_path: Path) -> None:
    done = kumaco(*world(tmp_path), "--at", "2027-01-13T01:15:00Z", "-o", "json")
    assert done.returncode == 0, done.stderr
    for n in json.loads(done.stdout)["nodes"]:
        assert (n["maintenancePlanned"], n["plannedStart"]) == (False, None)
    text = kumaco(*world(tmp_path), "--at", "2027-01-13T01:15:00Z").stdout
    assert "PLANNED" not in text and "planned" not in text


def test_plan_text_has_a_planned_column(tmp_path: Path) -> None:
    done = kumaco(*world(tmp_path), "--at", "2027-01-13T01:15:00Z", "--planned-lead", "1h")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "at 2027-01-13T01:15:00Z; maintenance planned 1h0m0s ahead\n"
        "NODE  UNDER-MAINTENANCE  IN-PROGRESS  PLANNED               REASON                   "
        "WINDOWS                      DETAIL\n"
        "a1    false              -            2027-01-13T02:00:00Z  NoMaintenanceWindowOpen  "
        "-                            -\n"
        "a2    false              -            -                     MaintenanceFrozen        "
        "maintenance/storage(freeze)  -\n"
        "b1    false              -            -                     NoMaintenanceWindowOpen  "
        "-                            -\n"
    )


def test_the_lead_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUMACO_PLANNED_LEAD", "1h")
    done = kumaco(*world(tmp_path), "--at", "2027-01-13T01:15:00Z", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nodes"][0]["plannedStart"] == "2027-01-13T02:00:00Z"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--planned-lead", "1d"],
            '--planned-lead: unknown unit "d" in duration "1d" (e.g. 90s, 10m, 1h30m)',
        ),
        (["--planned-lead=-1h"], "--planned-lead: must not be negative"),
        (
            ["--planned-condition", "bad type!"],
            "--planned-condition: 'bad type!' is not a condition type",
        ),
        (
            ["--planned-condition", "MaintenanceInProgress"],
            "--planned-condition: 'MaintenanceInProgress' is also --in-progress-condition; "
            "each condition kumaco writes needs a type of its own",
        ),
        (
            ["--planned-condition", "kured.dev/UnderMaintenance"],
            "--planned-condition: 'kured.dev/UnderMaintenance' is also "
            "--under-maintenance-condition",
        ),
    ],
)
def test_bad_planned_flags_are_usage_errors_naming_the_flag(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    done = kumaco(*world(tmp_path), *flags)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("kumaco plan: " + message), done.stderr


def test_the_forecast_is_the_same_with_a_lead(tmp_path: Path) -> None:
    args = world(tmp_path)
    nodes = tmp_path / "needing.yaml"
    needing = [
        {
            "metadata": {"name": name, "labels": {"zone": "a"}},
            "status": {"conditions": [{"type": REQ, "status": "True"}]},
        }
        for name in ("a1", "a3")
    ]
    nodes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": needing}))
    forecast = [
        "forecast",
        "--windows",
        args[2],
        "--nodes",
        str(nodes),
        "--from",
        "2027-01-13T00:00:00Z",
        "--until",
        "2027-01-13T06:00:00Z",
        "--maintenance-duration",
        "1h",
        "--max-in-progress",
        "1",
        "--require-condition",
        REQ,
    ]
    plain = kumaco(*forecast, "-o", "json")
    lead = kumaco(*forecast, "--planned-lead", "2h", "-o", "json")
    assert plain.returncode == lead.returncode == 0, (plain.stderr, lead.stderr)
    assert json.loads(lead.stdout) == json.loads(plain.stdout)
    assert [n["admitted"] for n in json.loads(lead.stdout)["nodes"]] == [
        "2027-01-13T02:00:00Z",
        "2027-01-13T03:00:00Z",
    ]


def test_kubectl_kumaco_status_lists_the_planned_nodes() -> None:
    """The status report's small addition: the nodes whose MaintenancePlanned is True."""
    at = 1_796_094_000 * 10**9 - 1800 * 10**9  # 2026-12-01T02:30:00Z
    scope = Instance(lease_namespace="maintenance", field_manager="kumaco/kumaco")
    message = "maintenance window maintenance/nightly starts at 2026-12-01T03:00:00Z"
    views = [
        node_view(
            {
                "metadata": {"name": name},
                "status": {
                    "conditions": [
                        {
                            "type": "MaintenancePlanned",
                            "status": status,
                            "reason": "MaintenanceWindow"
                            if status == "True"
                            else "NoMaintenancePlanned",
                            "message": message if status == "True" else "-",
                            "lastTransitionTime": "2026-12-01T02:00:00Z",
                        }
                    ]
                },
            }
        )
        for name, status in (("w1", "True"), ("w2", "False"))
    ]
    snapshot = Snapshot(
        (), tuple(v for v in views if v is not None), None, namespaces=("maintenance",)
    )
    r = status_report(snapshot, scope, at)
    assert [name for name, _c in r.planned] == ["w1"]
    text = format_report(r)
    assert "MAINTENANCE PLANNED (MaintenancePlanned=True): 1\n" in text
    assert f"w1    2026-12-01T02:00:00Z (30m ago)  {message}\n" in text
    assert to_json(r)["maintenancePlanned"] == [
        {"name": "w1", "message": message, "since": "2026-12-01T02:00:00Z"}
    ]
    # Renamed with --planned-condition; nothing shown when no node has it.
    other = status_report(snapshot, replace(scope, planned="example.com/Soon"), at)
    assert other.planned == () and "MAINTENANCE PLANNED" not in format_report(other)
    assert to_json(other)["maintenancePlanned"] == []
