"""The controller loop (kumaco.controller), unit-tested against a recording fake of the kube seam.

The seam is the typed API (:class:`kumaco.kube.resources.Resources`): a fake of it
(tests/support/builders/kubeseam.py) records every request the controller makes, in order, as a typed action
(``PatchNodeStatus("a", body, ...)``), as sample-controller's tests record a fake
clientset's actions; what such an action is on the wire is the real
:class:`~kumaco.kube.resources.KubeResources`'s (:func:`on_the_wire`). Each test
sets up a situation (nodes, windows, leadership, the clock), runs one pass
(``Controller.step``) and asserts the exact ordered writes and Events -- and that
nothing else was sent. Writes go one at a time
(``write_concurrency=1``) so their order is the order the controller chose.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from unittest.mock import create_autospec

import pytest

from kumaco.controller.loop import EXIT_CONFIG_CHANGED
from kumaco.controller.writer import Fenced
from kumaco.core.labels.selectors import parse_selector
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.kube.client import Kube
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.resources import KubeResources
from tests.support.builders import kubeseam
from tests.support.builders.kubeobjects import (
    BLOCK,
    MANAGER,
    MIP,
    NS,
    REQ,
    UM,
    cm,
    node,
    um_true,
)
from tests.support.builders.kubeseam import (
    CLOSED,
    OPEN,
    Action,
    CreateEvent,
    GetNode,
    ListConfigMaps,
    ListNodes,
    PatchNodeStatus,
    samples,
)
from tests.support.builders.policies import policy_of

STAMP_OPEN, STAMP_CLOSED = "2026-12-01T02:30:00Z", "2026-12-01T06:00:00Z"

make = kubeseam.make  # the fixture: a controller over the recording fake


def on_nodes(calls: list[Action], name: str | None = None) -> list[Action]:
    """The requests about one node (``name``), or about single nodes at all."""
    return [
        a
        for a in calls
        if isinstance(a, (GetNode, PatchNodeStatus)) and (name is None or a.name == name)
    ]


def on_the_wire(write: PatchNodeStatus) -> Any:
    """The request :class:`KubeResources` sends for ``write`` (recorded by a fake ``Kube``)."""
    kube = create_autospec(Kube, instance=True)
    assert write.field_manager is not None and write.timeout is not None
    KubeResources(kube).patch_node_status(
        write.name, write.body, field_manager=write.field_manager, timeout=write.timeout
    )
    (call,) = kube.request_raw.call_args_list
    return call


def test_a_new_leader_rebuilds_then_writes_conditions_then_announces(make: Any) -> None:
    c, world, _e, _clock = make(
        [node("a", "10", {"pool": "x"}), node("b", "11", {"pool": "x"}), node("c", "12")],
        [cm("w", "pool=x")],
    )
    c.step()
    assert world.calls() == [
        ListNodes(),
        ListConfigMaps(NS),
        PatchNodeStatus("a"),
        PatchNodeStatus("b"),
        PatchNodeStatus("c"),
        CreateEvent(NS),
        CreateEvent(NS),
    ]
    assert world.writes() == [
        ("a", {UM: ("True", "MaintenanceWindowOpen")}),
        ("b", {UM: ("True", "MaintenanceWindowOpen")}),
        ("c", {UM: ("False", "NoMaintenanceWindowOpen")}),
    ]
    assert world.events() == [
        (
            CreateEvent,
            "WindowStarted",
            "window maintenance/w opened at 2026-12-01T02:00:00Z for 2 node(s); closes at "
            "2026-12-01T05:00:00Z",
        ),
        (CreateEvent, "WindowLoaded", "window loaded: '0 2 * * *' (UTC) for 3h0m0s, nodes: pool=x"),
    ]


@pytest.mark.parametrize("overreach", [False, True], ids=["plan", "injected"])
def test_the_controller_writes_what_its_injected_planner_decides(
    make: Any, overreach: bool
) -> None:
    """The planner is a seam of the Controller (and of ``kumaco run``): the broken kumaco
    of tests/support/judges/violation.py grants one node more than the ceiling through it,
    with nothing patched; the default is the core's :func:`plan`."""
    from tests.support.judges.violation import overreaching_plan

    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    nodes = [node(n, str(10 + i), kured_dev__RebootRequired="True") for i, n in enumerate("abc")]
    c, world, _e, _clock = make(
        nodes, [cm("w")], policy=policy, planner=overreaching_plan if overreach else plan
    )
    c.step()
    granted = [name for name, conds in world.writes() if conds.get(MIP, ("",))[0] == "True"]
    assert granted == (["a", "b"] if overreach else ["a"])


def test_each_write_is_a_precondition_patch_of_the_changed_conditions_only(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10", Ready="True")], [cm("w")])
    c.step()
    (write,) = world.patches()
    method, path, query, body, content_type = on_the_wire(write).args
    assert (method, path, content_type) == (
        "PATCH",
        "/api/v1/nodes/a/status",
        "application/strategic-merge-patch+json",
    )
    assert query["fieldManager"] == "kumaco" and query["timeout"].endswith("s")
    assert body is write.body
    assert write.body == {
        "metadata": {"resourceVersion": "10"},
        "status": {
            "conditions": [
                {
                    "type": UM,
                    "status": "True",
                    "reason": "MaintenanceWindowOpen",
                    "message": um_true(),
                    "lastTransitionTime": STAMP_OPEN,
                    "lastHeartbeatTime": STAMP_OPEN,
                }
            ]
        },
    }


def test_an_unchanged_world_gets_no_request_at_all(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10"), node("b", "11")], [cm("w")])
    c.step()
    world.reset()
    c.step()
    c.step()
    assert world.calls() == []


def test_a_window_closing_writes_false_and_announces_the_end_once(make: Any) -> None:
    c, world, _e, clock = make([node("a", "10")], [cm("w")])
    c.step()
    world.reset()
    clock[0] = CLOSED
    c.step()
    assert world.writes() == [("a", {UM: ("False", "NoMaintenanceWindowOpen")})]
    assert world.events() == [
        (
            CreateEvent,
            "WindowEnded",
            "window maintenance/w (opened at 2026-12-01T02:00:00Z) ended at 2026-12-01T05:00:00Z",
        )
    ]
    world.reset()
    c.step()
    assert world.calls() == []


def test_revocations_are_written_before_grants(make: Any) -> None:
    # Ceiling 1: "a" holds MaintenanceInProgress but no longer needs it (its required
    # condition went False); "b" waits. The place goes to "b" only after "a" lost it.
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,))
    nodes = [
        node("a", "10", kured_dev__RebootRequired="False", MaintenanceInProgress="True"),
        node("b", "11", kured_dev__RebootRequired="True"),
    ]
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy)
    c.step()
    assert [(name, conds.get(MIP)) for name, conds in world.writes()] == [
        ("a", ("False", "MaintenanceFinished")),
        ("b", ("True", "MaintenanceAllowed")),
    ]


def test_no_grant_is_sent_when_a_revocation_conflicts(make: Any) -> None:
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,))
    nodes = [
        node("a", "10", kured_dev__RebootRequired="False", MaintenanceInProgress="True"),
        node("b", "11", kured_dev__RebootRequired="True"),
    ]
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy)
    world.refuse["a"] = ApiError(409, "Conflict", "the object has been modified")
    c.step()
    # a's write was refused (409): a is re-read, b is not granted in this pass.
    assert world.calls()[2:] == [
        PatchNodeStatus("a"),
        GetNode("a"),
        CreateEvent(NS),
        CreateEvent(NS),
    ]
    world.reset()
    c.step()  # the next pass (the controller woke itself) revokes, then grants
    assert [name for name, _ in world.writes()] == ["a", "b"]


def test_a_refused_write_is_not_resent_until_the_node_changes(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w")])
    world.refuse["a"] = ApiError(422, "Invalid", "status.conditions: Invalid value")
    c.step()
    world.reset()
    c.step()
    assert world.writes() == []
    # The node changes (a new resourceVersion): the write is tried again.
    changed = node("a", "20", {"new": "label"})
    c.nodes.apply("MODIFIED", c.nodes.trim(changed))
    world.nodes["a"] = changed
    c.step()
    assert world.writes() == [("a", {UM: ("True", "MaintenanceWindowOpen")})]


def test_a_fenced_leader_sends_nothing(make: Any) -> None:
    c, world, election, _clock = make([node("a", "10")], [cm("w")])
    election.deadline = None  # the lease deadline passed: no right to write
    with pytest.raises(Fenced):
        c.step()
    assert world.writes() == [] and world.events() == []


def test_a_follower_sends_nothing(make: Any) -> None:
    c, world, election, _clock = make([node("a", "10")], [cm("w")])
    election.is_leader = False
    c.step()
    c.step()
    assert world.calls() == []
    assert c.exit_code is None


def test_a_config_change_makes_the_leader_exit_once_it_settled_without_writing(
    make: Any,
) -> None:
    c, world, _e, clock = make([node("a", "10")], [cm("w"), cm("v", start="0 9 * * *")])
    c.step()
    world.reset()
    # A burst: three changes, 1.5 s apart, each within the 2 s settle time of the last.
    for i, start in enumerate(("0 4 * * *", "0 5 * * *", "0 6 * * *")):
        c.configmaps.sink(NS).apply("MODIFIED", c.configmaps.trim(cm("w", start=start)))
        look_again = c.step()
        assert look_again == clock[0] + 2 * SECOND + 1, i  # when the burst may be over
        assert c.exit_code is None
        world.monotonic[0] += 1.5
    c.configmaps.sink(NS).apply("DELETED", c.configmaps.trim(cm("v")))
    assert c.step() is not None and c.exit_code is None
    world.monotonic[0] += 2.0  # quiet for the settle time: one exit for the whole burst
    assert c.step() is None
    assert c.exit_code == EXIT_CONFIG_CHANGED
    assert world.calls() == []  # nothing written while the windows were changing


def test_a_change_undone_within_the_settle_time_does_not_exit(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w")])
    c.step()
    c.configmaps.sink(NS).apply("MODIFIED", c.configmaps.trim(cm("w", start="0 4 * * *")))
    c.step()
    c.configmaps.sink(NS).apply("MODIFIED", c.configmaps.trim(cm("w")))
    world.monotonic[0] += 5
    c.step()
    assert c.exit_code is None


def test_deleting_an_open_window_announces_its_early_end_before_the_exit(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w"), cm("v", start="0 9 * * *")])
    c.step()
    world.reset()
    c.configmaps.sink(NS).apply("DELETED", c.configmaps.trim(cm("w")))
    c.step()
    world.monotonic[0] += 2.0
    c.step()
    assert c.exit_code == EXIT_CONFIG_CHANGED
    assert world.events() == [
        (
            CreateEvent,
            "WindowEnded",
            "window maintenance/w (opened at 2026-12-01T02:00:00Z) ended early at "
            "2026-12-01T02:30:00Z: the ConfigMap was deleted",
        )
    ]
    assert world.writes() == []


def test_a_follower_adopts_a_config_change_without_exiting(make: Any) -> None:
    c, world, election, _clock = make([node("a", "10")], [cm("w")])
    election.is_leader = False
    c.step()
    c.configmaps.sink(NS).apply("MODIFIED", c.configmaps.trim(cm("w", start="0 4 * * *")))
    c.step()
    assert c.exit_code is None
    assert world.calls() == []


def test_an_invalid_window_gets_a_warning_event_and_touches_no_node(make: Any) -> None:
    bad = cm("typo", start="0 3 * * fry")
    c, world, _e, _clock = make(
        [node("a", "10", **{UM.replace("/", "__").replace(".", "_"): "True"})], [bad]
    )
    c.step()
    # The node's UnderMaintenance from a window that no longer exists is corrected.
    assert world.writes() == [("a", {UM: ("False", "NoMaintenanceWindowOpen")})]
    ((verb, reason, note),) = world.events()
    assert (verb, reason) == (CreateEvent, "WindowInvalid")
    assert note.startswith("window ignored: startTime: day of week:")


def test_a_takeover_after_a_window_ended_announces_the_end_it_missed(make: Any) -> None:
    # The window closed at 05:00 while nobody led; the new leader starts at 05:03.
    late = int(dt.datetime(2026, 12, 1, 5, 3, tzinfo=dt.UTC).timestamp()) * SECOND
    c, world, _e, _clock = make(
        [node("a", "10", kured_dev__UnderMaintenance="True")], [cm("w")], now=late
    )
    c.step()
    assert [r for _v, r, _n in world.events()] == ["WindowEnded", "WindowLoaded"]


def owned(obj: dict[str, Any], ctype: str, manager: str) -> dict[str, Any]:
    """The node with ``manager`` owning the status of condition ``ctype`` (managedFields)."""
    key = f'k:{{"type":"{ctype}"}}'
    obj["metadata"].setdefault("managedFields", []).append(
        {
            "manager": manager,
            "operation": "Update",
            "subresource": "status",
            "time": "2026-11-30T00:00:00Z",
            "fieldsV1": {"f:status": {"f:conditions": {key: {"f:status": {}, "f:type": {}}}}},
        }
    )
    return obj


def test_a_condition_owned_by_another_kumaco_instance_is_left_alone(make: Any) -> None:
    theirs = owned(node("a", "10", kured_dev__UnderMaintenance="False"), UM, "kumaco/region-b")
    by_hand = owned(node("b", "11", kured_dev__UnderMaintenance="False"), UM, "kubectl-edit")
    c, world, _e, _clock = make([theirs, by_hand], [cm("w")])
    c.step()
    # a: another instance's condition, not written; b: a person's edit, corrected.
    assert world.writes() == [("b", {UM: ("True", "MaintenanceWindowOpen")})]
    assert c.metrics.conflicts._value.get() == 1
    world.reset()
    c.step()
    assert world.writes() == []  # no flapping: still nothing written to a


def test_a_node_relabelled_out_of_scope_gets_under_maintenance_false(make: Any) -> None:
    policy = policy_of(scope=parse_selector("pool=x"), manager=MANAGER)
    c, world, _e, _clock = make([node("a", "10", {"pool": "x"})], [cm("w")], policy=policy)
    c.step()  # a is under maintenance, written by this instance
    world.reset()
    moved = json.loads(json.dumps(world.nodes["a"]))
    moved["metadata"]["labels"] = {"pool": "y"}
    owned(moved, UM, MANAGER)
    world.nodes["a"] = moved
    c.nodes.apply("DELETED", c.nodes.trim(moved))  # the watch's selector no longer matches
    c.step()
    assert world.calls() == [GetNode("a"), PatchNodeStatus("a")]
    assert world.writes() == [("a", {UM: ("False", "OutOfScope")})]
    assert len(c.nodes) == 0  # never stored: it is not in scope


def test_a_holder_leaving_the_scope_keeps_maintenance_in_progress(make: Any) -> None:
    policy = policy_of(
        scope=parse_selector("pool=x"), ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER
    )
    holder = node("a", "10", {"pool": "x"}, kured_dev__RebootRequired="True")
    c, world, _e, _clock = make([holder], [cm("w")], policy=policy)
    c.step()
    assert world.writes()[0][1][MIP] == ("True", "MaintenanceAllowed")
    world.reset()
    moved = json.loads(json.dumps(world.nodes["a"]))
    moved["metadata"]["labels"] = {"pool": "y"}
    owned(owned(moved, UM, MANAGER), MIP, MANAGER)
    world.nodes["a"] = moved
    c.nodes.apply("DELETED", c.nodes.trim(moved))
    c.step()
    (write,) = world.writes()
    assert write == ("a", {UM: ("False", "OutOfScope")})  # MaintenanceInProgress untouched


def test_a_deleted_node_is_only_read(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w")])
    c.step()
    world.reset()
    gone = world.nodes.pop("a")  # its GET answers 404
    c.nodes.apply("DELETED", c.nodes.trim(gone))
    c.step()
    assert world.calls() == [GetNode("a")]


# ----------------------------------------------------------------------------- write once


@pytest.mark.parametrize(
    "failure",
    [
        TransportError("PATCH: read timed out", silent=True),
        TransportError("PATCH: connection reset by peer"),
        ApiError(504, "Timeout", "the request may still be processing"),
        ApiError(500, "InternalError", "etcdserver: request timed out"),
    ],
    ids=["timeout", "reset-after-sending", "504", "500"],
)
def test_a_write_that_may_have_been_applied_is_never_resent_but_reread(
    make: Any, failure: Exception
) -> None:
    c, world, _e, _clock = make([node("a", "10"), node("b", "11")], [cm("w")])
    world.refuse["a"] = failure
    c.step()
    # One PATCH of "a" (its outcome unknown), then a GET of "a" to decide again; "b" as usual.
    assert on_nodes(world.calls(), "a") == [PatchNodeStatus("a"), GetNode("a")]
    assert samples(c, "kumaco_condition_writes_total")[(("result", "unknown"),)] == 1
    world.reset()
    c.step()  # the next pass decides again from what was read: here, write it
    assert world.writes() == [("a", {UM: ("True", "MaintenanceWindowOpen")})]


@pytest.mark.parametrize(
    "failure",
    [
        TransportError("PATCH: connection refused", sent=False),
        ApiError(429, "TooManyRequests", "rate limited", retry_after=0.0),
    ],
    ids=["not-sent", "429"],
)
def test_a_write_that_cannot_have_reached_the_server_is_retried(
    make: Any, failure: Exception
) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w")])
    world.refuse["a"] = failure
    c.step()
    assert on_nodes(world.calls(), "a") == [PatchNodeStatus("a"), PatchNodeStatus("a")]
    assert samples(c, "kumaco_condition_writes_total")[(("result", "ok"),)] == 1


def test_each_write_ends_before_the_fencing_deadline(make: Any) -> None:
    c, world, election, _clock = make([node("a", "10")], [cm("w")])
    election.deadline = world.monotonic[0] + 1.5  # 1.5 s of the lease term are left
    c.step()
    (write,) = world.patches()
    call = on_the_wire(write)
    assert write.timeout is not None and write.timeout <= 1.5
    assert call.kwargs["timeout"] == write.timeout
    assert call.args[2]["timeout"] == f"{int(call.kwargs['timeout'] * 1000)}ms"
    # With less than a second left, no write is even started: the next renewal is awaited.
    world.reset()
    world.nodes["a"] = node("a", "900")  # its conditions were removed meanwhile
    c.nodes.apply("MODIFIED", c.nodes.trim(world.nodes["a"]))
    election.deadline = world.monotonic[0] + 0.9
    with pytest.raises(Fenced):
        c.step()
    assert world.writes() == []


def test_a_batch_longer_than_one_lease_term_goes_on_under_each_renewal(make: Any) -> None:
    names = [f"n{i}" for i in range(5)]
    c, world, election, _clock = make([node(n, "10") for n in names], [cm("w")])
    world.write_seconds = 4.0  # five writes take 20 s: two renew deadlines
    election.renewing = lambda: world.monotonic[0] + 10.0  # renewed every moment
    c.step()
    assert [n for n, _ in world.writes()] == names
    # Each write's time ends at the deadline in force when it started, never later.
    for write in world.patches():
        assert write.timeout is not None and write.timeout <= 10.0


def test_a_lease_not_renewed_stops_the_batch_and_sends_nothing_after_its_deadline(
    make: Any,
) -> None:
    names = [f"n{i}" for i in range(5)]
    c, world, election, _clock = make([node(n, "10") for n in names], [cm("w")])
    world.write_seconds = 4.0
    election.deadline = world.monotonic[0] + 9.0  # no renewal from here on
    c.step()
    # Started at 0, 4 and 8 s (1 s of the term left); the fourth would start at 12 s.
    assert [n for n, _ in world.writes()] == names[:3]
    assert c._wake.is_set()  # not everything landed: look again
    world.reset()
    election.deadline = world.monotonic[0] + 10.0  # the next renewal
    c.step()
    assert [n for n, _ in world.writes()] == names[3:]


def test_a_heartbeat_between_the_decision_and_the_write_costs_no_conflict(make: Any) -> None:
    c, world, _election, _clock = make(
        [node("a", "10"), node("b", "11"), node("c", "12", {"zone": "x"})], [cm("w")]
    )

    def heartbeat(name: str, labels: Mapping[str, str] | None = None) -> Callable[[], None]:
        def deliver() -> None:  # the server stores it, the watch brings it to the store
            world.rv += 1
            fresh = node(name, str(world.rv), labels or world.nodes[name]["metadata"]["labels"])
            world.nodes[name] = fresh
            c.nodes.apply("MODIFIED", c.nodes.trim(fresh))

        return deliver

    # While "a" is written, kubelet reports "b" (nothing the planner reads changes) and
    # "c" is relabelled (what the decision was taken on changed).
    world.while_writing["a"] = [heartbeat("b"), heartbeat("c", {"zone": "y"})]
    c.step()
    assert on_nodes(world.calls()) == [
        PatchNodeStatus("a"),
        PatchNodeStatus("b"),  # carried the heartbeat's version: landed
        PatchNodeStatus("c"),  # carried the decision's: 409, read again
        GetNode("c"),
    ]
    assert samples(c, "kumaco_condition_writes_total")[(("result", "conflict"),)] == 1
    world.reset()
    c.step()  # decided again on what was read
    assert world.writes() == [("c", {UM: ("True", "MaintenanceWindowOpen")})]


# ----------------------------------------------------------------------------- metrics


def test_metrics_of_windows_leadership_and_the_config_on_a_follower(make: Any) -> None:
    c, _world, election, clock = make([node("a", "10")], [cm("w"), cm("later", start="0 9 * * *")])
    election.is_leader = False
    opens_at = int(dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC).timestamp())
    closes_at = int(dt.datetime(2026, 12, 1, 5, 0, tzinfo=dt.UTC).timestamp())
    # A follower wakes at the next window transition too, to keep its window gauges right.
    assert c.step() == closes_at * SECOND
    assert samples(c, "kumaco_window_open") == {
        (("namespace", NS), ("window", "w")): 1.0,
        (("namespace", NS), ("window", "later")): 0.0,
    }
    assert samples(c, "kumaco_window_next_transition_timestamp_seconds") == {
        (("namespace", NS), ("window", "w")): closes_at,
        (("namespace", NS), ("window", "later")): opens_at,
    }
    assert samples(c, "leader_election_master_status") == {(("name", "kumaco"),): 0.0}
    (before,) = samples(c, "kumaco_config_info")
    # A follower adopts a change: exactly one kumaco_config_info series, the new hash.
    c.configmaps.sink(NS).apply("DELETED", c.configmaps.trim(cm("later")))
    c.step()
    (after,) = samples(c, "kumaco_config_info")
    assert after != before
    assert samples(c, "kumaco_window_open") == {(("namespace", NS), ("window", "w")): 1.0}
    election.is_leader = True
    c.step()
    assert samples(c, "leader_election_master_status") == {(("name", "kumaco"),): 1.0}
    assert samples(c, "kumaco_nodes_under_maintenance") == {(): 1.0}
    assert clock[0] == OPEN


def test_a_reboot_releases_the_holder_before_its_report_and_the_place_goes_on(make: Any) -> None:
    # Ceiling 1: "a" holds MaintenanceInProgress, admitted on boot b1; it reboots (a new
    # bootID) while its RebootRequired still says True from before. The release is written
    # first, the grant to the waiting "b" after it, in the same pass; "a", whose True is
    # stale, is not admitted again, and nothing more is sent while nothing changes.
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    a = node("a", "10", kured_dev__RebootRequired="True", MaintenanceInProgress="True")
    a["status"]["nodeInfo"] = {"bootID": "b1"}
    a["status"]["conditions"][1]["message"] = (
        "in an open maintenance window with kured.dev/RebootRequired=True and not blocked; "
        "admitted on boot b1"
    )
    a["status"]["conditions"][1]["reason"] = "MaintenanceAllowed"
    b = node("b", "11", kured_dev__RebootRequired="True")
    b["status"]["nodeInfo"] = {"bootID": "c1"}
    c, world, _e, _clock = make([a, b], [cm("w")], policy=policy)
    c.step()
    assert [(n, w[MIP]) for n, w in world.writes() if MIP in w] == [
        ("b", ("False", "ConcurrencyCeilingReached"))
    ]
    world.reset()
    world.nodes["a"]["status"]["nodeInfo"] = {"bootID": "b2"}
    world.rv = 200
    world.nodes["a"]["metadata"]["resourceVersion"] = "200"
    c.nodes.apply("MODIFIED", c.nodes.trim(world.nodes["a"]))
    c.step()
    assert [(n, w.get(MIP)) for n, w in world.writes()] == [
        ("a", ("False", "MaintenanceFinished")),
        ("b", ("True", "MaintenanceAllowed")),
    ]
    (release, grant) = world.patches()
    (written,) = [x for x in release.body["status"]["conditions"] if x["type"] == MIP]
    assert "the node rebooted (boot b1 -> b2)" in written["message"]
    (granted,) = [x for x in grant.body["status"]["conditions"] if x["type"] == MIP]
    assert granted["message"].endswith("; admitted on boot c1")
    assert samples(c, "kumaco_releases_total") == {
        (("cause", "RequiredConditionCleared"),): 0.0,
        (("cause", "RebootObserved"),): 1.0,
        (("cause", "InProgressTimeout"),): 0.0,
    }
    world.reset()
    c.step()
    assert world.calls() == []


def test_maintenance_planned_within_the_lead_then_false_when_the_window_opens(make: Any) -> None:
    """Advance notice (MaintenancePlanned) on the seam: the third condition, its wake-ups and WindowPlanned once."""
    mp = "MaintenancePlanned"

    def at(text: str) -> int:
        return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND

    policy = policy_of(manager=MANAGER, planned_lead=3600 * SECOND)
    c, world, election, clock = make(
        [node("a", "10", {"pool": "x"}), node("b", "11")],
        [cm("w", "pool=x")],  # opens at 02:00
        now=at("2026-12-01T00:30:00+00:00"),
        policy=policy,
    )
    # Before the lead: False everywhere; the loop looks again when the lead begins.
    assert c.step() == at("2026-12-01T01:00:00+00:00")
    assert world.writes() == [
        ("a", {UM: ("False", "NoMaintenanceWindowOpen"), mp: ("False", "NoMaintenancePlanned")}),
        ("b", {UM: ("False", "NoMaintenanceWindowOpen"), mp: ("False", "NoMaintenancePlanned")}),
    ]
    world.reset()
    # The lead begins: a only, and WindowPlanned once; then the window's opening.
    clock[0] = at("2026-12-01T01:00:00+00:00")
    assert c.step() == at("2026-12-01T02:00:00+00:00")
    ((_name, conds),) = [(a.name, a.body["status"]["conditions"]) for a in world.patches()]
    assert [(x["type"], x["status"], x["reason"], x["message"]) for x in conds] == [
        (
            mp,
            "True",
            "MaintenanceWindow",
            "maintenance window maintenance/w starts at 2026-12-01T02:00:00Z",
        )
    ]
    assert [e[1:] for e in world.events() if e[1] == "WindowPlanned"] == [
        (
            "WindowPlanned",
            "window maintenance/w opens at 2026-12-01T02:00:00Z, within the 1h0m0s lead: "
            "maintenance planned for 1 node(s)",
        )
    ]
    (planned_event,) = [
        a
        for a in world.actions
        if isinstance(a, CreateEvent) and a.body["reason"] == "WindowPlanned"
    ]
    assert planned_event.body["action"] == "Plan"
    world.reset()
    clock[0] = at("2026-12-01T01:30:00+00:00")
    c.step()
    assert world.calls() == []  # nothing changed, nothing announced again
    # A new leadership term (a leader change) announces the same occurrence under the
    # same Event name: the API server answers 409, and it stays one Event.
    election.is_leader = False
    c.step()
    election.is_leader = True
    world.reset()
    c.step()
    (again,) = [
        a
        for a in world.actions
        if isinstance(a, CreateEvent) and a.body["reason"] == "WindowPlanned"
    ]
    assert again.body["metadata"]["name"] == planned_event.body["metadata"]["name"]
    world.reset()
    # The window opens: UnderMaintenance True and MaintenancePlanned False in one write.
    clock[0] = at("2026-12-01T02:00:00+00:00")
    c.step()
    assert world.writes() == [
        ("a", {UM: ("True", "MaintenanceWindowOpen"), mp: ("False", "NoMaintenancePlanned")})
    ]


# ----------------------------------------------------------------------------- dated windows


def test_a_one_shot_window_opens_closes_then_expires_once_and_counts_as_ended(make: Any) -> None:
    """A one-shot ``startTime`` over a run: WindowStarted, WindowEnded, then WindowExpired
    once (named by the ConfigMap's data, so a new term's repeat is the same Event), and
    ``kumaco_windows_ended`` from 0 to 1."""

    def at(text: str) -> int:
        return int(dt.datetime.fromisoformat(text).timestamp()) * SECOND

    once = cm("once", start="2026-12-01T03:00:00+01:00", duration="1h")  # 02:00Z-03:00Z
    c, world, election, clock = make([node("a", "10")], [once], now=at("2026-12-01T01:00:00Z"))
    # Before: closed, the loop looks again at the opening; nothing has ended.
    assert c.step() == at("2026-12-01T02:00:00Z")
    assert samples(c, "kumaco_windows_ended") == {(): 0.0}
    clock[0] = at("2026-12-01T02:00:00Z")
    assert c.step() == at("2026-12-01T03:00:00Z")
    assert samples(c, "kumaco_windows_ended") == {(): 0.0}  # open: not ended
    clock[0] = at("2026-12-01T03:00:00Z")
    assert c.step() is None  # nothing to come: no wake-up for this window
    assert samples(c, "kumaco_windows_ended") == {(): 1.0}
    for later in ("2026-12-01T03:00:01Z", "2026-12-02T03:00:00Z"):
        clock[0] = at(later)
        c.step()
    assert samples(c, "kumaco_windows_ended") == {(): 1.0}
    assert world.writes() == [
        ("a", {UM: ("False", "NoMaintenanceWindowOpen")}),
        ("a", {UM: ("True", "MaintenanceWindowOpen")}),
        ("a", {UM: ("False", "NoMaintenanceWindowOpen")}),
    ]
    assert world.events() == [
        (
            CreateEvent,
            "WindowLoaded",
            "window loaded: '2026-12-01T03:00:00+01:00' once (UTC) for 1h0m0s, nodes: every node in scope",
        ),
        (
            CreateEvent,
            "WindowStarted",
            "window maintenance/once opened at 2026-12-01T02:00:00Z for 1 node(s); closes at "
            "2026-12-01T03:00:00Z",
        ),
        (
            CreateEvent,
            "WindowEnded",
            "window maintenance/once (opened at 2026-12-01T02:00:00Z) ended at "
            "2026-12-01T03:00:00Z",
        ),
        (
            CreateEvent,
            "WindowExpired",
            "window maintenance/once has ended: its one occurrence (2026-12-01T02:00:00Z) is "
            "over; it will never open again (kumaco does not delete ConfigMaps: delete it)",
        ),
    ]
    (expired,) = [
        a
        for a in world.actions
        if isinstance(a, CreateEvent) and a.body["reason"] == "WindowExpired"
    ]
    assert (expired.body["action"], expired.body["type"]) == ("Close", "Normal")
    assert expired.body["regarding"]["name"] == "once"
    # A new term posts it again under the same name: the server's 409 keeps it one Event.
    election.is_leader = False
    c.step()
    election.is_leader = True
    world.reset()
    c.step()
    (again,) = [
        a
        for a in world.actions
        if isinstance(a, CreateEvent) and a.body["reason"] == "WindowExpired"
    ]
    assert again.body["metadata"]["name"] == expired.body["metadata"]["name"]
    assert samples(c, "kumaco_windows_ended") == {(): 1.0}


def test_a_bounded_window_past_its_not_after_never_opens_and_counts_as_ended(make: Any) -> None:
    past = cm("past", notAfter="2026-11-15")  # daily at 02:00 for 3h, until 2026-11-15
    c, world, _e, _clock = make([node("a", "10")], [past, cm("w")])  # at 02:30: w is open
    c.step()
    assert world.writes() == [("a", {UM: ("True", "MaintenanceWindowOpen")})]
    (um,) = [x for x in world.patches()[0].body["status"]["conditions"] if x["type"] == UM]
    assert um["message"] == um_true()  # w's, not past's
    posted = [
        (a.body["reason"], a.body["regarding"]["name"])
        for a in world.actions
        if isinstance(a, CreateEvent) and a.body["reason"] != "WindowLoaded"
    ]
    assert posted == [("WindowStarted", "w"), ("WindowExpired", "past")]
    assert next(n for _v, r, n in world.events() if r == "WindowExpired") == (
        "window maintenance/past has ended: no occurrence starts before its notAfter 2026-11-15 "
        "(2026-11-15T00:00:00Z); it will never open again (kumaco does not delete ConfigMaps: "
        "delete it)"
    )
    assert samples(c, "kumaco_windows_ended") == {(): 1.0}


# ----------------------------------------------------------------------------- convergence


def _two_step_planner(windows: Any, nodes: Any, now: int, policy: Policy, refusals: Any) -> Any:
    """A planner whose answer for "b" depends on what the last pass wrote on "a".

    While "a" holds MaintenanceInProgress it plans as if a condition nobody carries were
    required too: "a" is released and "b" kept out; only once "a" reads False does the
    real answer admit "b" -- a state reachable only through kumaco's own write, whose
    echo wakes nobody.
    """
    result = plan(windows, nodes, now, policy, refusals)
    a = nodes.get("a")
    if a is not None and a.is_true(MIP):
        return plan(windows, nodes, now, replace(policy, require=(REQ, "never")), refusals)
    return result


def test_a_pass_that_wrote_is_planned_again_until_nothing_is_left_to_write(make: Any) -> None:
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    a = node("a", "10", kured_dev__RebootRequired="False", MaintenanceInProgress="True")
    b = node("b", "11", kured_dev__RebootRequired="True")
    c, world, _e, _clock = make([a, b], [cm("w")], policy=policy, planner=_two_step_planner)
    # One wake-up: the first pass releases "a" and keeps "b" out; planned again from what
    # it wrote, without any event, the second admits "b"; the third writes nothing.
    c.settle()
    assert [(n, w[MIP][0]) for n, w in world.writes() if MIP in w] == [
        ("a", "False"),
        ("b", "False"),
        ("b", "True"),
    ]
    world.reset()
    c.settle()
    assert world.calls() == []  # a fixed point: nothing left to write


def test_a_planner_that_never_settles_is_stopped_logged_and_counted(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from kumaco.controller.loop import MAX_WRITING_PASSES

    flips = [0]

    def flapping(windows: Any, nodes: Any, now: int, policy: Policy, refusals: Any) -> Any:
        flips[0] += 1
        require = (REQ,) if flips[0] % 2 else (REQ, "never")
        return plan(windows, nodes, now, replace(policy, require=require), refusals)

    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    c, world, _e, _clock = make(
        [node("a", "10", kured_dev__RebootRequired="True")],
        [cm("w")],
        policy=policy,
        planner=flapping,
    )
    with caplog.at_level("WARNING", logger="kumaco.controller"):
        c.settle()
    assert flips[0] == MAX_WRITING_PASSES
    assert len([w for w in world.writes() if MIP in w[1]]) == MAX_WRITING_PASSES
    assert [r.message for r in caplog.records] == [
        "the plan did not settle: every pass wrote; waiting for the next event"
    ]
    assert samples(c, "kumaco_reconcile_pass_limit_total") == {(): 1.0}


_STAMPS = ("2026-11-01T00:00:00Z", "2026-12-01T02:10:00Z", "2026-12-01T02:29:59Z")
_MIP_STATES: tuple[tuple[str, str, str] | None, ...] = (
    None,
    ("True", "MaintenanceAllowed", "in an open maintenance window; admitted on boot b1"),
    ("True", "MaintenanceAllowed", "in an open maintenance window"),
    ("True", "KuredStartedMaintenance", "written by kured's own scheduler"),
    ("False", "ConcurrencyCeilingReached", "at most 1 in progress"),
    ("False", "MaintenanceFinished", "maintenance finished: the node rebooted (boot b1 -> b2)"),
    (
        "False",
        "MaintenanceFinished",
        "maintenance finished: the node rebooted (boot b1 -> b2); admitted again once "
        f"{REQ} is reported after the reboot; last reports: "
        f"{REQ}=True@{_STAMPS[0]}@{_STAMPS[1]}",
    ),
    ("False", "RequiredConditionNotMet", "required condition not True"),
)


def _random_node(draw: Any, name: str, rv: int) -> dict[str, Any]:
    from hypothesis import strategies as st

    conditions: list[dict[str, Any]] = []
    req = draw(st.sampled_from((None, "True", "False")))
    if req is not None:
        conditions.append(
            {
                "type": REQ,
                "status": req,
                "lastTransitionTime": draw(st.sampled_from(_STAMPS)),
                "lastHeartbeatTime": draw(st.sampled_from(_STAMPS)),
            }
        )
    if draw(st.booleans()):
        conditions.append({"type": BLOCK, "status": draw(st.sampled_from(("True", "False")))})
    if draw(st.booleans()):
        conditions.append({"type": "Ready", "status": draw(st.sampled_from(("True", "False")))})
    held = draw(st.sampled_from(_MIP_STATES))
    if held is not None:
        status, reason, message = held
        conditions.append(
            {
                "type": MIP,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": draw(st.sampled_from(_STAMPS)),
            }
        )
    doc: dict[str, Any] = {
        "metadata": {"name": name, "resourceVersion": str(rv), "labels": {}},
        "spec": {"unschedulable": draw(st.booleans())},
        "status": {"conditions": conditions},
    }
    boot = draw(st.sampled_from((None, "b1", "b2")))
    if boot is not None:
        doc["status"]["nodeInfo"] = {"bootID": boot}
    return doc


def test_the_state_run_writes_is_a_fixed_point_of_plan(make: Any) -> None:
    """For random states, what ``settle`` writes leads to a state ``plan`` leaves alone."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kumaco.core.objects.nodes import NodeSet, node_view
    from kumaco.core.planning.changes import changes
    from kumaco.core.windows.window import Window

    @st.composite
    def scenes(draw: Any) -> tuple[list[dict[str, Any]], Policy, int]:
        count = draw(st.integers(1, 5))
        nodes = [_random_node(draw, f"n{i}", 10 + i) for i in range(count)]
        policy = policy_of(
            ceiling=parse_ceiling(str(draw(st.integers(1, 3)))),
            require=draw(st.sampled_from(((), (REQ,)))),
            block=draw(st.sampled_from(((), (BLOCK,)))),
            release_delay=draw(st.sampled_from((0, 60 * SECOND))),
            in_progress_timeout=draw(st.sampled_from((None, 600 * SECOND))),
            count_unavailable=draw(st.booleans()),
            manager=MANAGER,
        )
        return nodes, policy, draw(st.sampled_from((OPEN, CLOSED)))

    @settings(max_examples=300, deadline=None)
    @given(scenes())
    def check(scene: tuple[list[dict[str, Any]], Policy, int]) -> None:
        nodes, policy, now = scene
        c, world, _e, _clock = make(
            json.loads(json.dumps(nodes)), [cm("w")], policy=policy, now=now
        )
        c.settle()
        assert samples(c, "kumaco_reconcile_pass_limit_total") == {(): 0.0}
        views = NodeSet(
            v for d in world.nodes.values() if (v := node_view(d, policy.owned)) is not None
        )
        windows = [p.result for p in c._parsed.values() if isinstance(p.result, Window)]
        assert len(windows) == 1
        result = plan(windows, views, now, policy)
        versions = {n: d["metadata"]["resourceVersion"] for n, d in world.nodes.items()}
        left = changes(result, views, versions, now, policy)
        assert list(left) == [], [(ch.name, ch.conditions) for ch in left]

    check()


def test_one_pass_reads_one_instant_whatever_the_clock_does_meanwhile(make: Any) -> None:
    """As kopf guards: a clock that moves on at every read, and still one pass decides,
    stamps and measures at one instant -- the plan, the metrics and every write agree."""
    policy = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
    seen: list[tuple[str, int]] = []

    def planner(windows: Any, nodes: Any, now: int, policy: Policy, refusals: Any) -> Any:
        seen.append(("plan", now))
        return plan(windows, nodes, now, policy, refusals)

    nodes = [node(n, str(10 + i), kured_dev__RebootRequired="True") for i, n in enumerate("ab")]
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy, planner=planner)
    reads = [0]

    def ticking() -> int:
        reads[0] += 1
        return OPEN + reads[0] * SECOND  # a second later at every read

    c.now_ns = ticking
    observe = c.metrics.observe_windows

    def observe_windows(entries: Any, now: int) -> int | None:
        seen.append(("metrics", now))
        return observe(entries, now)

    c.metrics.observe_windows = observe_windows  # type: ignore[method-assign]
    c.step()
    instants = {now for _what, now in seen}
    assert [w for w, _ in seen] == ["metrics", "plan"] and len(instants) == 1, seen
    (instant,) = instants
    stamp = dt.datetime.fromtimestamp(instant // SECOND, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    written = [
        c_["lastTransitionTime"]
        for p in world.patches()
        for c_ in p.body["status"]["conditions"]
        if "lastTransitionTime" in c_
    ]
    assert written and set(written) == {stamp}, (written, stamp)
