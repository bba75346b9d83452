"""No forgotten node (who waits for maintenance, since when) where people see it: the gauge, the status report.

``kumaco_oldest_waiting_seconds`` from a plan (the leader's view,
:meth:`kumaco.controller.metrics.Metrics.observe_waiting`) and ``kubectl kumaco status``'s
waiters from the conditions as written (:func:`kumaco.cmd.status.status_report` with the
required conditions kumaco runs with), text and JSON. The plugin against the real server
is in tests/e2e/test_fleetrules.py.
"""

from __future__ import annotations

from typing import Any

from kumaco.cmd.status import status_report
from kumaco.controller.metrics import Metrics
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.instance import Instance
from kumaco.core.planning.planner import plan
from kumaco.core.time.instants import parse_timestamp
from kumaco.core.windows.ceilings import Ceiling
from kumaco.views.status import Snapshot, format_report
from kumaco.views.status_json import to_json
from tests.support.builders.planning import window
from tests.support.builders.policies import policy_of

REQ, MIP, UM = "kured.dev/RebootRequired", "MaintenanceInProgress", "kured.dev/UnderMaintenance"
AT = parse_timestamp("2026-12-01T03:30:00Z") or 0


def node(name: str, asked: str, mip: tuple[str, str, str] | None, um: bool = True) -> Any:
    conditions: list[dict[str, str]] = [
        {"type": REQ, "status": "True", "lastTransitionTime": asked},
        {
            "type": UM,
            "status": "True" if um else "False",
            "lastTransitionTime": "2026-12-01T03:00:00Z",
        },
    ]
    if mip is not None:
        status, reason, ltt = mip
        conditions.append(
            {"type": MIP, "status": status, "reason": reason, "lastTransitionTime": ltt}
        )
    view = node_view({"metadata": {"name": name}, "status": {"conditions": conditions}})
    assert view is not None
    return view


NODES = (
    node("holder", "2026-11-01T00:00:00Z", ("True", "MaintenanceAllowed", "2026-12-01T03:00:00Z")),
    node(
        "w-old",
        "2026-11-20T00:00:00Z",
        ("False", "ConcurrencyCeilingReached", "2026-11-15T00:00:00Z"),
    ),
    node(
        "w-new", "2026-12-01T01:00:00Z", ("False", "AdmissionRateReached", "2026-11-15T00:00:00Z")
    ),
    node(
        "w-closed",
        "2026-11-25T00:00:00Z",
        ("False", "NotUnderMaintenance", "2026-11-15T00:00:00Z"),
        um=False,
    ),
    node(
        "blocked", "2026-11-01T00:00:00Z", ("False", "BlockedByCondition", "2026-11-15T00:00:00Z")
    ),
    node(
        "spaced",
        "2026-11-01T00:00:00Z",
        ("False", "TooSoonAfterLastMaintenance", "2026-11-30T00:00:00Z"),
    ),
    node(
        "w-last",
        "2026-11-29T00:00:00Z",
        ("False", "AnotherGroupInProgress", "2026-11-15T00:00:00Z"),
    ),
)


def test_the_gauge_is_the_longest_wait_of_the_plan_and_zero_when_none_waits() -> None:
    metrics = Metrics()
    policy = policy_of(ceiling=Ceiling(1), require=(REQ,))
    nodes = NodeSet(NODES[:2])
    result = plan([window("w")], nodes, AT, policy)
    metrics.observe_waiting(result, nodes, policy, AT)
    # w-old asked on 11-20 (kumaco wrote it False on 11-15): 11 days 3h30m.
    assert (
        metrics.registry.get_sample_value("kumaco_oldest_waiting_seconds")
        == 11 * 86400 + 3.5 * 3600
    )
    alone = NodeSet(NODES[:1])
    metrics.observe_waiting(plan([window("w")], alone, AT, policy), alone, policy, AT)
    assert metrics.registry.get_sample_value("kumaco_oldest_waiting_seconds") == 0


def test_status_names_the_longest_waiters_from_the_conditions_as_written() -> None:
    snapshot = Snapshot((), NODES, None, namespaces=("maintenance",))
    instance = Instance(lease_namespace="maintenance", field_manager="kumaco/kumaco")
    r = status_report(snapshot, instance, AT, require=(REQ,))
    assert [(w.name, w.reason) for w in r.waiters] == [
        ("w-old", "ConcurrencyCeilingReached"),
        ("w-closed", "NotUnderMaintenance"),
        ("w-last", "AnotherGroupInProgress"),
        ("w-new", "AdmissionRateReached"),
    ]
    assert to_json(r)["waiting"] == {
        "count": 4,
        "longest": [
            {
                "name": "w-old",
                "since": "2026-11-20T00:00:00Z",
                "waitingSeconds": 11 * 86400 + 3 * 3600 + 1800,
                "reason": "ConcurrencyCeilingReached",
            },
            {
                "name": "w-closed",
                "since": "2026-11-25T00:00:00Z",
                "waitingSeconds": 6 * 86400 + 3 * 3600 + 1800,
                "reason": "NotUnderMaintenance",
            },
            {
                "name": "w-last",
                "since": "2026-11-29T00:00:00Z",
                "waitingSeconds": 2 * 86400 + 3 * 3600 + 1800,
                "reason": "AnotherGroupInProgress",
            },
        ],
    }
    assert (
        "WAITING FOR MAINTENANCE: 4; the longest: "
        "w-old (ConcurrencyCeilingReached) since 2026-11-20T00:00:00Z (11d3h ago), "
        "w-closed (NotUnderMaintenance) since 2026-11-25T00:00:00Z (6d3h ago), "
        "w-last (AnotherGroupInProgress) since 2026-11-29T00:00:00Z (2d3h ago)\n"
    ) in format_report(r)
    # Without the required conditions, only the nodes under maintenance that wait, each
    # since the later of its UnderMaintenance and MaintenanceInProgress transitions.
    bare = status_report(snapshot, instance, AT)
    assert [(w.name, w.since) for w in bare.waiters] == [
        ("w-last", parse_timestamp("2026-12-01T03:00:00Z")),
        ("w-new", parse_timestamp("2026-12-01T03:00:00Z")),
        ("w-old", parse_timestamp("2026-12-01T03:00:00Z")),
    ]
    nobody = status_report(Snapshot((), NODES[:1], None), instance, AT, require=(REQ,))
    assert "WAITING" not in format_report(nobody)
    assert to_json(nobody)["waiting"] == {"count": 0, "longest": []}
