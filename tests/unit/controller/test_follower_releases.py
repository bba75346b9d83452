"""A follower's one write (kumaco.controller.releases), at the kube seam.

The recording fake of :mod:`tests.support.builders.kubeseam` (every request in order, with its
payload). A replica that does not lead writes the release of a holder whose machine
rebooted -- exactly that: one PATCH of MaintenanceInProgress alone, the resourceVersion
the decision was taken on as its precondition, the instance's field manager, the message
the leader would write -- and nothing in any other state (a grant due, a window opening,
a timeout, a requirement cleared); a 409 is dropped and never retried. A new bootID wakes a
follower; with no holder it does not even plan.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kumaco.controller.loop import Controller
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.ceilings import parse_ceiling
from tests.support.builders import kubeseam
from tests.support.builders.kubeobjects import MANAGER, MIP, REQ, UM, cm, node, um_true
from tests.support.builders.kubeseam import GetNode, PatchNodeStatus, World, samples
from tests.support.builders.policies import policy_of

make = kubeseam.make  # the fixture: a controller over the recording fake

POLICY = policy_of(ceiling=parse_ceiling("1"), require=(REQ,), manager=MANAGER)
ADMITTED = (
    "in an open maintenance window with kured.dev/RebootRequired=True and not blocked; "
    "admitted on boot b1"
)


def holder(name: str, rv: str, boot: str, req: str = "True") -> dict[str, Any]:
    """A node holding MaintenanceInProgress since boot b1, now on ``boot``."""
    n = node(
        name,
        rv,
        kured_dev__UnderMaintenance="True",
        kured_dev__RebootRequired=req,
        MaintenanceInProgress="True",
    )
    um, _req, mip = n["status"]["conditions"]
    um.update(reason="MaintenanceWindowOpen", message=um_true())
    mip.update(reason="MaintenanceAllowed", message=ADMITTED)
    n["status"]["nodeInfo"] = {"bootID": boot}
    return n


def waiting(name: str, rv: str) -> dict[str, Any]:
    n = node(name, rv, kured_dev__RebootRequired="True")
    n["status"]["nodeInfo"] = {"bootID": f"{name}-boot"}
    return n


def follower(make: Any, nodes: list[dict[str, Any]], policy: Policy = POLICY, **kw: Any) -> Any:
    c, world, election, clock = make(nodes, [cm("w")], policy=policy, **kw)
    election.is_leader = False
    return c, world, election, clock


def leaders_writes(make: Any, nodes: list[dict[str, Any]], policy: Policy = POLICY) -> World:
    """What a leader writes in the same state (one pass)."""
    c, world, _e, _clock = make(nodes, [cm("w")], policy=policy)
    c.step()
    return world


def mip_of(write: PatchNodeStatus) -> dict[str, Any]:
    (c,) = [x for x in write.body["status"]["conditions"] if x["type"] == MIP]
    return dict(c)


def test_a_follower_writes_exactly_the_release_of_a_rebooted_holder(make: Any) -> None:
    nodes = [holder("a", "200", boot="b2"), waiting("b", "11")]
    c, world, _e, _clock = follower(make, nodes)
    c.step()
    (write,) = world.actions  # one request: the write, no read, no Event
    assert isinstance(write, PatchNodeStatus) and write.name == "a"
    assert write.field_manager == "kumaco"  # the instance's: the leader's own
    assert write.body["metadata"] == {"resourceVersion": "200"}
    (cond,) = write.body["status"]["conditions"]  # MaintenanceInProgress alone
    assert (cond["type"], cond["status"], cond["reason"]) == (MIP, "False", "MaintenanceFinished")
    assert "the node rebooted (boot b1 -> b2)" in cond["message"]
    # The same condition change a leader writes in this state (which also grants "b"
    # and writes UnderMaintenance: the follower does neither).
    lead = leaders_writes(make, [holder("a", "200", boot="b2"), waiting("b", "11")])
    (lead_a,) = [p for p in lead.patches() if p.name == "a"]
    assert mip_of(lead_a) == cond
    assert [(n, w.get(MIP)) for n, w in lead.writes()] == [
        ("a", ("False", "MaintenanceFinished")),
        ("b", ("True", "MaintenanceAllowed")),
    ]
    assert any(UM in w for _n, w in lead.writes())
    assert samples(c, "kumaco_follower_releases_total") == {
        (("result", "ok"),): 1.0,
        (("result", "conflict"),): 0.0,
        (("result", "error"),): 0.0,
        (("result", "unknown"),): 0.0,
    }
    # Stored through: the next pass sees the release and sends nothing.
    world.reset()
    c.step()
    assert world.calls() == []


def _timed_out() -> tuple[list[dict[str, Any]], Policy]:
    policy = policy_of(
        ceiling=parse_ceiling("1"),
        require=(REQ,),
        manager=MANAGER,
        in_progress_timeout=3600 * SECOND,
    )
    return [holder("a", "20", boot="b1"), waiting("b", "11")], policy


def _copy(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(n)) for n in nodes]


STATES = {
    # A holder on its admission boot, a second place free, a node waiting: a grant is due.
    "a grant due": (
        [holder("a", "20", boot="b1"), waiting("b", "11")],
        policy_of(ceiling=parse_ceiling("2"), require=(REQ,), manager=MANAGER),
    ),
    # A holder on its admission boot; a node without UnderMaintenance while the window is open.
    "a window opening": ([holder("a", "20", boot="b1"), node("c", "12")], POLICY),
    # Held since 2026-11-01, a month over the 1 h in-progress timeout: a revocation is due.
    "a timeout": _timed_out(),
    # The holder's required condition went False (same boot): a release the leader writes.
    "a requirement cleared": ([holder("a", "20", boot="b1", req="False")], POLICY),
}


@pytest.mark.parametrize("state", list(STATES))
def test_a_follower_writes_nothing_in_any_other_state(make: Any, state: str) -> None:
    nodes, policy = STATES[state]
    # The state needs writes: a leader makes some...
    assert leaders_writes(make, _copy(nodes), policy).patches()
    # ...a follower none.
    c, world, _e, _clock = follower(make, _copy(nodes), policy)
    c.step()
    c.step()
    assert world.calls() == []


def test_a_conflicting_release_is_dropped_and_never_retried(make: Any) -> None:
    c, world, _e, _clock = follower(make, [holder("a", "200", boot="b2"), waiting("b", "11")])

    def leader_wrote_first() -> None:  # the node changes while the follower's PATCH is in flight
        world.nodes["a"]["metadata"]["resourceVersion"] = "201"

    world.while_writing["a"] = [leader_wrote_first]
    c.step()
    assert world.calls() == [PatchNodeStatus("a")]  # the 409: no re-read, no retry
    c.step()
    c.step()
    assert world.calls() == [PatchNodeStatus("a")]  # nothing sent again on that version
    assert not [a for a in world.actions if isinstance(a, GetNode)]
    assert samples(c, "kumaco_follower_releases_total")[(("result", "conflict"),)] == 1.0
    assert samples(c, "kumaco_follower_releases_total")[(("result", "ok"),)] == 0.0


def test_a_follower_that_leads_again_writes_as_the_leader(make: Any) -> None:
    c, world, election, _clock = follower(make, [holder("a", "200", boot="b2")])
    election.is_leader = True
    c.follower_releases.step([], _clock[0])  # called while leading: it sends nothing
    assert world.calls() == []


def test_a_follower_plans_only_while_a_node_holds_maintenance_in_progress(make: Any) -> None:
    planned: list[int] = []

    def recording(*args: Any) -> Any:
        planned.append(1)
        return plan(*args)

    c, world, _e, _clock = follower(make, [waiting("a", "10")], planner=recording)
    c.step()
    assert planned == [] and world.calls() == []
    c2, _w2, _e2, _c2 = follower(make, [holder("a", "20", boot="b1")], planner=recording)
    c2.step()
    assert planned == [1]
    assert isinstance(c2, Controller)


def test_a_new_boot_wakes_a_follower_and_a_heartbeat_does_not(make: Any) -> None:
    c, world, _e, _clock = follower(make, [holder("a", "20", boot="b1")])
    c._wake.clear()
    c.nodes.apply("MODIFIED", c.nodes.trim(holder("a", "21", boot="b1")))  # only its version
    assert not c._wake.is_set()
    back = holder("a", "22", boot="b2")  # the machine came back with a new boot
    world.nodes["a"] = back
    c.nodes.apply("MODIFIED", c.nodes.trim(back))
    assert c._wake.is_set()
    c.step()
    assert world.writes() == [("a", {MIP: ("False", "MaintenanceFinished")})]
    assert world.patches()[0].body["metadata"] == {"resourceVersion": "22"}
