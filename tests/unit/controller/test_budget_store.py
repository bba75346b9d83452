"""``--respect-pdbs`` in the controller: the pod and PDB store, and a pass planned with it.

The store (kumaco.controller.budgets) is fed as its two reflectors feed it; it wakes the
controller only when some node's refusing budgets change, so the churn of pods that no
budget covers (or of budgets that stay as they were) costs no pass. The controller, run
through the fake-kube harness of tests/support/builders/kubeseam.py, writes exactly the
conditions the planner decides with the store's answer -- and without the flag it keeps
no store and watches nothing more.
"""

from __future__ import annotations

import threading
from typing import Any

from kumaco.controller.budgets import PAGE_SIZE, BudgetStore
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.kube.reflector import Reflector
from tests.support.builders import kubeseam as harness
from tests.support.builders.kubeobjects import MANAGER, MIP, REQ, UM, cm, node, pdb, pod
from tests.support.builders.kubeseam import PatchNodeStatus
from tests.support.builders.policies import policy_of

make = harness.make


class Wakes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def synced_store(
    pods: list[dict[str, Any]], budgets: list[dict[str, Any]]
) -> tuple[BudgetStore, Wakes]:
    wakes = Wakes()
    store = BudgetStore(on_change=wakes)
    ps, bs = store.pods_sink(), store.budgets_sink()
    ps.replace([ps.trim(o) for o in pods])
    assert not store.synced and wakes.count == 0
    bs.replace([bs.trim(o) for o in budgets])
    assert store.synced
    return store, wakes


def test_the_store_wakes_once_synced_and_then_only_when_an_answer_changes() -> None:
    store, wakes = synced_store(
        [pod("a", node="n1"), pod("w", node="n2", labels={"app": "web"})], [pdb()]
    )
    assert wakes.count == 1 and dict(store.refusals()) == {"n1": ("shop/db",)}
    assert len(store) == 2
    ps, bs = store.pods_sink(), store.budgets_sink()
    # Churn no budget reads: an uncovered pod, a DaemonSet's pod, a covered pod on the
    # same node, the same budget again.
    ps.apply("ADDED", ps.trim(pod("w2", node="n3", labels={"app": "web"})))
    ps.apply(
        "ADDED",
        ps.trim(
            pod(
                "agent",
                node="n3",
                owner={
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "x",
                    "controller": True,
                },
            )
        ),
    )
    ps.apply("ADDED", ps.trim(pod("a2", node="n1")))
    bs.apply("MODIFIED", bs.trim(pdb()))
    assert wakes.count == 1
    # The budget allows a disruption: n1 is free.
    bs.apply("MODIFIED", bs.trim(pdb(allowed=1)))
    assert wakes.count == 2 and dict(store.refusals()) == {}
    bs.apply("MODIFIED", bs.trim(pdb(allowed=0)))
    assert wakes.count == 3 and dict(store.refusals()) == {"n1": ("shop/db",)}
    # One of the two covered pods goes: n1 is still refused; the second goes: free.
    ps.apply("DELETED", ps.trim(pod("a2", node="n1")))
    assert wakes.count == 3
    ps.apply("MODIFIED", ps.trim(pod("a", node="n1", phase="Succeeded")))
    assert wakes.count == 4 and dict(store.refusals()) == {}
    bs.apply("DELETED", bs.trim(pdb()))
    assert wakes.count == 4
    assert len(store) == 2  # w and w2; the DaemonSet's and the finished pod are not kept


POLICY = policy_of(manager=MANAGER, ceiling=parse_ceiling("1"), require=(REQ,), respect_pdbs=True)


def test_a_pass_writes_what_the_budgets_decide(make: Any) -> None:
    nodes = [
        node("a", "10", kured_dev__RebootRequired="True"),
        node("b", "11", kured_dev__RebootRequired="True"),
    ]
    nodes[1]["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-02T00:00:00Z"
    c, world, _e, _clock = make(nodes, [cm("w")], policy=POLICY)
    # Before the pods and budgets are listed the windows open and nobody is admitted.
    assert c.budgets is not None and not c.budgets.synced and c.synced
    c.step()
    early = dict(world.writes())
    assert early == {
        n: {UM: ("True", "MaintenanceWindowOpen"), MIP: ("False", "DisruptionBudgetExhausted")}
        for n in ("a", "b")
    }
    for p in world.patches():
        (m,) = [x for x in p.body["status"]["conditions"] if x["type"] == MIP]
        assert "not listed yet" in m["message"], m
    world.reset()
    c.budgets.pods_sink().replace([c.budgets.pods_sink().trim(pod("db-0", node="a"))])
    c.budgets.budgets_sink().replace([c.budgets.budgets_sink().trim(pdb())])
    assert c.budgets.synced
    c.step()
    writes = dict(world.writes())
    assert writes["a"][MIP] == ("False", "DisruptionBudgetExhausted")
    assert writes["b"][MIP] == ("True", "MaintenanceAllowed")
    (to_a,) = [p for p in world.patches() if p.name == "a"]
    (mip_a,) = [x for x in to_a.body["status"]["conditions"] if x["type"] == MIP]
    assert mip_a["message"] == "draining it now would be refused by PodDisruptionBudget shop/db"
    # The budget allows it now, but b holds the one place: a waits for the ceiling.
    world.reset()
    c.budgets.budgets_sink().apply("MODIFIED", c.budgets.budgets_sink().trim(pdb(allowed=1)))
    c.step()
    assert world.writes() == [("a", {MIP: ("False", "ConcurrencyCeilingReached")})]
    # b's budget goes to 0 while it holds its place: it is not revoked, nothing is written.
    world.reset()
    c.budgets.pods_sink().apply("ADDED", c.budgets.pods_sink().trim(pod("db-1", node="b")))
    c.budgets.budgets_sink().apply("MODIFIED", c.budgets.budgets_sink().trim(pdb(allowed=0)))
    c.step()
    assert [a for a in world.calls() if isinstance(a, PatchNodeStatus)] == [PatchNodeStatus("a")]
    assert world.writes() == [("a", {MIP: ("False", "DisruptionBudgetExhausted")})]


def test_without_the_flag_nothing_is_kept(make: Any) -> None:
    c, world, _e, _clock = make([node("a", "10")], [cm("w")], policy=policy_of(manager=MANAGER))
    assert c.budgets is None and c.synced
    c.step()
    assert world.writes() == [("a", {UM: ("True", "MaintenanceWindowOpen")})]


class Recording:
    """A collection that records the page size each LIST asked for."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items, self.pages = items, []

    def list_pages(self, page: int = 250, shrink: Any = None) -> Any:
        self.pages.append(page)
        return iter([(self.items, "7")])


def test_pods_are_listed_in_smaller_pages_than_other_objects() -> None:
    store = BudgetStore()
    pods, budgets = Recording([pod("a", node="n1")]), Recording([pdb()])
    Reflector(pods, store.pods_sink(), threading.Event(), name="pods")._relist()
    Reflector(budgets, store.budgets_sink(), threading.Event(), name="pdbs")._relist()
    assert (pods.pages, budgets.pages) == ([PAGE_SIZE], [250]) and PAGE_SIZE < 250
    assert store.synced and dict(store.refusals()) == {"n1": ("shop/db",)}
