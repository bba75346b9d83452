"""The store of what ``--respect-pdbs`` watches: pods and PodDisruptionBudgets, trimmed.

Contract: :class:`BudgetStore` keeps a :class:`~kumaco.core.objects.disruptions.DisruptionIndex`
behind one lock, fed by two reflectors -- every Pod and every PodDisruptionBudget of the
cluster (:meth:`pods_sink`, :meth:`budgets_sink`: each the one
:class:`~kumaco.kube.store.Store`, both on that lock, keeping their objects in that
index) -- and calls ``on_change`` only when some node's refusing budgets changed, or
once when both are first listed: a pod scheduled, ready or gone, or a budget whose status
moved, wakes the controller only if a node's answer moves with it. :meth:`refusals` is
the planner's input (an immutable snapshot, safe without the lock). A pod is kept only
while a budget may refuse its eviction (:func:`~kumaco.core.objects.disruptions.pod_entry`); what
kumaco never reads of a pod or budget is dropped at once. No I/O, no clock. Only created
with ``--respect-pdbs``: without it nothing is watched and nothing is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kumaco.core.objects.disruptions import (
    Budget,
    DisruptionIndex,
    LabelSets,
    PodEntry,
    Refusals,
    budget_of,
    pod_entry,
)
from kumaco.kube.store import Store, Tuning

PAGE_SIZE = 100

#: Pods are large (a few KB of JSON each, ~10x that decoded) and a LIST page is decoded
#: whole: smaller pages keep the start-up's peak memory down (docs/benchmarks.md). They are
#: listed by a streaming list: a LIST of every pod of a large cluster takes minutes, longer
#: than the API server keeps its watch history while they churn (docs/design.md).
PODS = Tuning(page_size=PAGE_SIZE, streamed=True)


class _Pods:
    """The pod store's keeping: its pods in the shared index; a change moves an answer."""

    def __init__(self, index: DisruptionIndex) -> None:
        self.index = index

    def replace(self, items: list[PodEntry]) -> bool:
        return self.index.replace_pods(items)

    def put(self, item: PodEntry) -> bool:
        return self.index.put_pod(item)

    def remove(self, item: PodEntry) -> bool:
        return self.index.remove_pod(item.namespace, item.name)


class _Budgets:
    """The budget store's keeping: its budgets in the shared index; a change moves an answer."""

    def __init__(self, index: DisruptionIndex) -> None:
        self.index = index

    def replace(self, items: list[Budget]) -> bool:
        return self.index.replace_budgets(items)

    def put(self, item: Budget) -> bool:
        return self.index.put_budget(item)

    def remove(self, item: Budget) -> bool:
        return self.index.remove_budget(item.namespace, item.name)


class BudgetStore:
    """Pods and PodDisruptionBudgets for the planner (see the module contract)."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._lock = threading.Lock()
        self._index = DisruptionIndex()
        self._on_change = on_change
        labels = LabelSets()
        self._pods: Store[PodEntry] = Store(
            lambda obj: pod_entry(obj, labels),
            _Pods(self._index),
            on_change,
            on_synced=self._listed,
            lock=self._lock,
            tuning=PODS,
        )
        self._budgets: Store[Budget] = Store(
            budget_of, _Budgets(self._index), on_change, on_synced=self._listed, lock=self._lock
        )

    def _listed(self) -> None:
        """One collection listed for the first time, nothing changed: wake once both are."""
        if self.synced:
            self._on_change()

    @property
    def pods_synced(self) -> threading.Event:
        return self._pods.synced

    @property
    def budgets_synced(self) -> threading.Event:
        return self._budgets.synced

    @property
    def synced(self) -> bool:
        return self.pods_synced.is_set() and self.budgets_synced.is_set()

    def refusals(self) -> Refusals:
        """Node name -> the budgets that would refuse draining it now."""
        with self._lock:
            return self._index.refusals()

    def __len__(self) -> int:
        """The pods kept (those a budget may refuse)."""
        with self._lock:
            return len(self._index)

    def pods_sink(self) -> Store[PodEntry]:
        return self._pods

    def budgets_sink(self) -> Store[Budget]:
        return self._budgets
