"""PodDisruptionBudgets as a drain meets them (kumaco.core.objects.disruptions), table and properties.

The tables pin each case of the module contract (which pods a drain evicts, when the
eviction API looks at a budget and when that budget refuses); the same decision is checked
against the real API server's eviction subresource in tests/e2e/test_pdbs.py. The
properties hold the incremental :class:`DisruptionIndex` to the batch :func:`refusals` over
random sequences of pod and budget events, and its "changed" answers to the truth.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.objects.disruptions import (
    MAX_DISRUPTED_PODS,
    Budget,
    DisruptionIndex,
    LabelSets,
    PodEntry,
    blamed,
    budget_of,
    pod_entry,
    refusals,
    refusals_of,
)
from tests.support.builders.kubeobjects import (
    DS,
    pdb,
    pod,
)


def refused(p: dict[str, Any], *budgets: dict[str, Any]) -> tuple[str, ...]:
    """The budgets refusing the eviction of pod ``p`` among ``budgets`` (() when evicted)."""
    entry = pod_entry(p)
    assert entry is not None
    if entry.view is None:
        return ()
    bs = [b for x in budgets if (b := budget_of(x)) is not None and b.namespace == entry.namespace]
    return blamed(entry.view, bs)


RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "db-1", "controller": True}


# ----------------------------------------------------------------------------- which pods


@pytest.mark.parametrize(
    ("why", "obj", "kept"),
    [
        ("a running pod of a ReplicaSet", pod(owner=RS), True),
        ("a pod without a controller (kured drains with --force)", pod(), True),
        ("phase Unknown: the eviction API looks at budgets", pod(phase="Unknown"), True),
        ("no phase at all", pod(phase=None), True),
        ("a DaemonSet's pod: drain skips it", pod(owner=DS), False),
        (
            "a DaemonSet owner that is not the controller",
            pod(owner={**DS, "controller": False}),
            True,
        ),
        (
            "a controller of kind DaemonSet in another group",
            pod(owner={**DS, "apiVersion": "extensions/v1beta1"}),
            True,
        ),
        (
            "a mirror pod: drain skips it",
            pod(annotations={"kubernetes.io/config.mirror": "x"}),
            False,
        ),
        ("Pending: deleted without a look at budgets", pod(phase="Pending"), False),
        ("Succeeded", pod(phase="Succeeded"), False),
        ("Failed", pod(phase="Failed"), False),
        ("terminating", pod(terminating=True), False),
        ("not scheduled", pod(node=None), False),
    ],
)
def test_which_pods_a_budget_may_refuse(why: str, obj: dict[str, Any], kept: bool) -> None:
    entry = pod_entry(obj)
    assert entry is not None and (entry.namespace, entry.name) == ("shop", "p")
    assert (entry.view is not None) is kept, why
    assert bool(refused(obj, pdb())) is kept, why


def test_pods_without_a_name_are_not_entries_and_odd_shapes_never_raise() -> None:
    assert pod_entry({"metadata": {"namespace": "x"}}) is None
    assert pod_entry("nope") is None
    assert budget_of({"metadata": {}}) is None
    odd = pod_entry(
        {
            "metadata": {"name": "x", "labels": {"a": 1}, "ownerReferences": "no"},
            "spec": {"nodeName": "n"},
            "status": {"conditions": "no"},
        }
    )
    assert odd is not None and odd.view is not None
    assert dict(odd.view.labels) == {} and odd.view.ready is False
    odd_budget = budget_of({"metadata": {"name": "b"}, "spec": "x", "status": {"disruptedPods": 3}})
    assert odd_budget is not None and odd_budget.selector is None


def test_equal_label_sets_are_one_object_within_a_store_and_bounded() -> None:
    sets = LabelSets(limit=1)
    a, b, c, d = (
        pod_entry(pod("a", labels={"app": "db", "x": "1"}), sets),
        pod_entry(pod("b", labels={"x": "1", "app": "db"}), sets),
        pod_entry(pod("c", labels={"app": "web"}), sets),
        pod_entry(pod("d", labels={"app": "web"}), sets),
    )
    views = [e.view for e in (a, b, c, d) if e is not None and e.view is not None]
    assert len(views) == 4
    assert views[0].labels is views[1].labels  # shared
    assert views[2].labels == views[3].labels and views[2].labels is not views[3].labels  # full
    other = pod_entry(pod("e", labels={"app": "db", "x": "1"}), LabelSets())
    assert other is not None and other.view is not None
    assert other.view.labels == views[0].labels and other.view.labels is not views[0].labels


# ----------------------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("why", "budget", "blocks"),
    [
        ("disruptionsAllowed 0", pdb(allowed=0), True),
        ("disruptionsAllowed 1", pdb(allowed=1), False),
        ("negative: refused (403)", pdb(allowed=-1), True),
        ("still being processed: observedGeneration behind", pdb(allowed=3, generation=2), True),
        ("observedGeneration caught up", pdb(allowed=3, generation=2, observed=2), False),
        ("too many disrupted pods", pdb(allowed=3, disrupted=MAX_DISRUPTED_PODS + 1), True),
        ("as many disrupted pods as allowed", pdb(allowed=3, disrupted=MAX_DISRUPTED_PODS), False),
        ("empty selector: every pod of the namespace", pdb(selector={}), True),
        ("null selector: no pod", pdb(selector="null"), False),
        ("another label", pdb(selector={"matchLabels": {"app": "web"}}), False),
        (
            "matchExpressions In",
            pdb(
                selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}
            ),
            True,
        ),
        (
            "matchExpressions NotIn",
            pdb(
                selector={
                    "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]
                }
            ),
            False,
        ),
        (
            "matchExpressions DoesNotExist on another key",
            pdb(selector={"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
            True,
        ),
        (
            "matchLabels and matchExpressions are ANDed",
            pdb(
                selector={
                    "matchLabels": {"app": "db"},
                    "matchExpressions": [{"key": "tier", "operator": "Exists"}],
                }
            ),
            False,
        ),
        (
            "an invalid selector matches no pod (as the eviction API)",
            pdb(selector={"matchExpressions": [{"key": "app", "operator": "Bad", "values": []}]}),
            False,
        ),
        ("a budget of another namespace", pdb(ns="other", selector={}), False),
        (
            "v1beta1's empty selector, as policy/v1 serves it: no pod",
            pdb(
                selector={
                    "matchExpressions": [
                        {
                            "key": "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match",
                            "operator": "Exists",
                        }
                    ]
                }
            ),
            False,
        ),
    ],
)
def test_when_a_budget_refuses_a_ready_pod(why: str, budget: dict[str, Any], blocks: bool) -> None:
    assert refused(pod(), budget) == (("shop/db",) if blocks else ()), why


def test_a_budget_without_status_refuses_as_not_yet_processed() -> None:
    fresh = {
        "metadata": {"name": "db", "namespace": "shop", "generation": 1},
        "spec": {"selector": {}},
    }
    assert refused(pod(), fresh) == ("shop/db",)


def test_a_pod_covered_by_two_budgets_is_refused_whatever_their_budgets() -> None:
    both = (pdb("a", allowed=5), pdb("b", selector={}, allowed=5))
    assert refused(pod(), *both) == ("shop/a", "shop/b")
    assert refused(pod(ready=False), *both) == ("shop/a", "shop/b")


@pytest.mark.parametrize(
    ("why", "budget", "blocks"),
    [
        ("IfHealthyBudget, the app healthy: evicted", pdb(current=3, desired=2), False),
        ("IfHealthyBudget, exactly healthy: evicted", pdb(current=2, desired=2), False),
        ("IfHealthyBudget, the app unhealthy: refused", pdb(current=1, desired=2), True),
        ("desiredHealthy 0: refused as a ready pod", pdb(current=0, desired=0), True),
        ("AlwaysAllow: evicted", pdb(current=0, desired=2, policy="AlwaysAllow"), False),
        ("IfHealthyBudget spelled out", pdb(current=1, desired=2, policy="IfHealthyBudget"), True),
    ],
)
def test_an_unready_pod(why: str, budget: dict[str, Any], blocks: bool) -> None:
    assert bool(refused(pod(ready=False), budget)) is blocks, why
    assert refused(pod(ready=True), budget) == ("shop/db",), "a ready pod takes from the budget"


def test_refusals_name_every_refusing_budget_per_node_sorted() -> None:
    objs = [
        pod("a", node="n1", labels={"app": "db"}),
        pod("b", node="n1", labels={"app": "web"}),
        pod("c", node="n2", labels={"app": "web"}),
        pod("d", node="n3", labels={"app": "db"}, ns="other"),
        pod("e", node="n4", labels={"app": "db"}, phase="Succeeded"),
    ]
    budgets = [pdb("db"), pdb("web", selector={"matchLabels": {"app": "web"}})]
    assert dict(refusals_of(objs, budgets)) == {"n1": ("shop/db", "shop/web"), "n2": ("shop/web",)}


# ----------------------------------------------------------------------------- the index

NAMES = st.sampled_from(("a", "b", "c", "d"))
NAMESPACES = st.sampled_from(("x", "y"))
LABELS = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(("db", "web")), "tier": st.just("1")}
)
SELECTORS = st.sampled_from(
    (
        None,
        {},
        {"matchLabels": {"app": "db"}},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]},
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "Exists"}],
        },
    )
)


@st.composite
def pod_events(draw: st.DrawFn) -> tuple[str, Any]:
    obj = pod(
        draw(NAMES),
        ns=draw(NAMESPACES),
        node=draw(st.sampled_from(("n1", "n2"))),
        labels=draw(LABELS),
        phase=draw(st.sampled_from(("Running", "Running", "Pending"))),
        ready=draw(st.booleans()),
    )
    return ("pod-deleted" if draw(st.integers(0, 4)) == 0 else "pod", obj)


@st.composite
def budget_events(draw: st.DrawFn) -> tuple[str, Any]:
    obj = pdb(
        draw(NAMES),
        ns=draw(NAMESPACES),
        selector=draw(SELECTORS) if draw(st.booleans()) else "null",
        allowed=draw(st.integers(-1, 2)),
        current=draw(st.integers(0, 3)),
        desired=draw(st.integers(0, 3)),
        policy=draw(st.sampled_from((None, "AlwaysAllow"))),
    )
    return ("budget-deleted" if draw(st.integers(0, 4)) == 0 else "budget", obj)


EVENTS = st.lists(st.one_of(pod_events(), budget_events()), max_size=40)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS)
def test_the_index_keeps_the_batch_answer_and_says_when_it_changed(
    events: list[tuple[str, Any]],
) -> None:
    index = DisruptionIndex()
    pods: dict[tuple[str, str], PodEntry] = {}
    budgets: dict[tuple[str, str], Budget] = {}
    sides: dict[str, tuple[Any, Any, Any, dict[tuple[str, str], Any]]] = {
        "pod": (pod_entry, index.put_pod, index.remove_pod, pods),
        "budget": (budget_of, index.put_budget, index.remove_budget, budgets),
    }
    for kind, obj in events:
        before = dict(index.refusals())
        side, _, deleted = kind.partition("-")
        trim, put, remove, held = sides[side]
        item = trim(obj)
        key = (item.namespace, item.name)
        if deleted:
            changed = remove(*key)
            held.pop(key, None)
        else:
            changed = put(item)
            held[key] = item
        truth = dict(refusals(pods.values(), budgets.values()))
        assert dict(index.refusals()) == truth
        assert changed == (truth != before)
        assert len(index) == sum(1 for p in pods.values() if p.view is not None)
    # A relist of either gives the same answer, and says whether it changed anything.
    fresh = DisruptionIndex()
    assert fresh.replace_budgets(budgets.values()) is False
    assert fresh.replace_pods(pods.values()) == bool(index.refusals())
    assert dict(fresh.refusals()) == dict(index.refusals())


@settings(max_examples=200, deadline=None)
@given(st.lists(pod_events(), max_size=12), st.lists(budget_events(), max_size=6), st.randoms())
def test_the_answer_does_not_depend_on_the_order_of_pods_or_budgets(
    ps: list[tuple[str, Any]], bs: list[tuple[str, Any]], rnd: Any
) -> None:
    pods = {(e.namespace, e.name): e for _k, o in ps if (e := pod_entry(o)) is not None}
    budgets = {(b.namespace, b.name): b for _k, o in bs if (b := budget_of(o)) is not None}
    one = refusals(pods.values(), budgets.values())
    shuffled_pods, shuffled_budgets = list(pods.values()), list(budgets.values())
    rnd.shuffle(shuffled_pods)
    rnd.shuffle(shuffled_budgets)
    assert refusals(shuffled_pods, shuffled_budgets) == one


def test_a_pod_blamed_anew_says_changed_only_when_its_node_is() -> None:
    index = DisruptionIndex()
    db, web = pdb("db", current=1), pdb("web", selector={"matchLabels": {"app": "web"}})
    for b in (db, web):
        index.put_budget(budget_of(b))  # type: ignore[arg-type]
    assert index.put_pod(pod_entry(pod("a"))) is True  # type: ignore[arg-type]
    # The same pod changes, and so does its blame's reading, not its node's budgets.
    assert index.put_pod(pod_entry(pod("a", ready=False))) is False  # type: ignore[arg-type]
    assert index.put_budget(budget_of(pdb("db", current=0))) is False  # type: ignore[arg-type]
    # A second pod adds a budget to n1; when the first one moves to it, db is gone.
    assert index.put_pod(pod_entry(pod("b", labels={"app": "web"}))) is True  # type: ignore[arg-type]
    assert dict(index.refusals()) == {"n1": ("shop/db", "shop/web")}
    assert index.put_pod(pod_entry(pod("a", labels={"app": "web"}))) is True  # type: ignore[arg-type]
    assert dict(index.refusals()) == {"n1": ("shop/web",)}
    assert index.remove_pod("shop", "a") is False
    assert index.remove_pod("shop", "b") is True and dict(index.refusals()) == {}
