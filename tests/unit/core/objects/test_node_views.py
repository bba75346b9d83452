"""Compact node views: equal to what they were, but nodes share their strings and owner maps."""

from __future__ import annotations

import json
import random

from kumaco.core.objects.nodes import Sharing, node_view
from tests.support.builders.policies import policy_of
from tests.support.env.controlplane import node_object

OWNED = ("kured.dev/UnderMaintenance",)


def _decoded(i: int) -> dict:  # type: ignore[type-arg]
    node = node_object(i, random.Random(i), npd=True)
    node["metadata"]["managedFields"] = [
        {
            "manager": "kumaco/kumaco",
            "operation": "Update",
            "time": "2026-12-01T00:00:00Z",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {'k:{"type":"kured.dev/UnderMaintenance"}': {"f:status": {}}}
                }
            },
        }
    ]
    decoded: dict = json.loads(json.dumps(node))  # type: ignore[type-arg]
    return decoded


def test_views_of_separately_decoded_nodes_share_their_strings_and_owner_maps() -> None:
    sharing = Sharing()
    a, b = (
        node_view(_decoded(3), OWNED, sharing=sharing),
        node_view(_decoded(6), OWNED, sharing=sharing),
    )
    assert a is not None and b is not None
    zone = "topology.kubernetes.io/zone"
    assert a.labels[zone] == b.labels[zone] == "zone-a"
    assert a.labels[zone] is b.labels[zone]
    key_a = next(k for k in a.labels if k == zone)
    key_b = next(k for k in b.labels if k == zone)
    assert key_a is key_b
    ca, cb = a.conditions["Ready"], b.conditions["Ready"]
    assert ca.message is cb.message and ca.reason is cb.reason and ca.status is cb.status
    assert ca.last_transition_time is cb.last_transition_time
    assert a.owners == {"kured.dev/UnderMaintenance": "kumaco/kumaco"}
    assert a.owners is b.owners


def test_sharing_is_owned_by_its_caller_and_off_shares_nothing_but_changes_no_value() -> None:
    """No module-level table: views made with different Sharings share no owner map, and
    ``Sharing(interning=False)`` (the levers' "off") keeps what was decoded, equal views."""
    on_a, on_b = Sharing(), Sharing()
    a = node_view(_decoded(3), OWNED, sharing=on_a)
    b = node_view(_decoded(6), OWNED, sharing=on_b)
    assert a is not None and b is not None and a.owners == b.owners and a.owners is not b.owners
    off = Sharing(interning=False)
    decoded = [_decoded(3), _decoded(6)]
    plain = [node_view(d, OWNED, sharing=off) for d in decoded]
    assert plain[0] is not None and plain[1] is not None
    assert plain[0] == a and plain[1] == b
    assert plain[0].owners is not plain[1].owners
    zone = "topology.kubernetes.io/zone"
    assert plain[0].labels[zone] is decoded[0]["metadata"]["labels"][zone]  # not interned
    assert a.labels[zone] is b.labels[zone]


def test_a_node_store_shares_owner_maps_across_its_views_and_through_its_writes() -> None:
    from kumaco.controller.stores import NodeStore
    from kumaco.core.objects.nodes import Condition

    store = NodeStore(owned=OWNED, manager="kumaco/kumaco")
    objs = [_decoded(i) for i in (3, 6)]
    for i, obj in enumerate(objs):
        obj["metadata"]["resourceVersion"] = str(10 + i)
    store.replace([store.trim(o) for o in objs])
    names = [o["metadata"]["name"] for o in objs]
    written = Condition("kured.dev/UnderMaintenance", "True", "InsideWindow")
    assert store.put_written(names[0], "20", [written])
    with store.read() as (nodes, _rv):
        views = [nodes.get(n) for n in names]
        assert views[0] is not None and views[1] is not None
        assert views[0].owners is views[1].owners  # the write-through shares the same map


def test_a_compact_view_equals_the_node() -> None:
    obj = _decoded(7)
    view = node_view(obj, OWNED)
    assert view is not None
    assert dict(view.labels) == obj["metadata"]["labels"]
    assert {t: c.status for t, c in view.conditions.items()} == {
        c["type"]: c["status"] for c in obj["status"]["conditions"]
    }


def test_a_controller_store_keeps_only_what_its_planner_reads_and_wakes_only_for_that() -> None:
    from kumaco.controller.stores import NodeStore, planner_conditions

    policy = policy_of(require=("kured.dev/RebootRequired",), block=("kured.dev/RebootInhibited",))
    keep = planner_conditions(policy)
    assert keep == {
        policy.under_maintenance,
        policy.in_progress,
        "kured.dev/RebootRequired",
        "kured.dev/RebootInhibited",
    }
    assert "Ready" in planner_conditions(policy_of(count_unavailable=True))
    woken: list[int] = []
    store = NodeStore(on_change=lambda: woken.append(1), keep=keep)
    obj = _decoded(9)
    obj["metadata"]["resourceVersion"] = "10"
    store.replace([store.trim(obj)])
    woken.clear()
    with store.read() as (nodes, _rv):
        view = nodes.get(obj["metadata"]["name"])
        assert view is not None and set(view.conditions) == set()  # only the planner's kept
    # node-problem-detector reports a problem: not the planner's business, nobody wakes
    conds = obj["status"]["conditions"]
    next(c for c in conds if c["type"] == "KernelDeadlock")["status"] = "True"
    obj["metadata"]["resourceVersion"] = "11"
    store.apply("MODIFIED", store.trim(obj))
    assert woken == []
    # kured asks for a reboot: the planner must look again
    conds.append(
        {"type": "kured.dev/RebootRequired", "status": "True", "reason": "R", "message": ""}
    )
    obj["metadata"]["resourceVersion"] = "12"
    store.apply("MODIFIED", store.trim(obj))
    assert woken == [1]
