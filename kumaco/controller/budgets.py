"""The store of what ``--respect-pdbs`` watches: pods and PodDisruptionBudgets, trimmed.

Contract: :class:`BudgetStore` keeps a :class:`~kumaco.core.disruptions.DisruptionIndex`
behind one lock, fed by two reflectors -- every Pod and every PodDisruptionBudget of the
cluster (:meth:`pods_sink`, :meth:`budgets_sink`: each a sink with ``trim``, ``replace``
and ``apply``) -- and calls ``on_change`` only when some node's refusing budgets changed:
a pod scheduled, ready or gone, or a budget whose status moved, wakes the controller
only if a node's answer moves with it. :meth:`refusals` is the planner's input (an
immutable snapshot, safe without the lock). A pod is kept only while a budget may refuse
its eviction (:func:`~kumaco.core.disruptions.pod_entry`); what kumaco never reads of a
pod or budget is dropped at once. No I/O, no clock. Only created with ``--respect-pdbs``:
without it nothing is watched and nothing is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kumaco.core.disruptions import (
    Budget,
    DisruptionIndex,
    LabelSets,
    PodEntry,
    Refusals,
    budget_of,
    pod_entry,
)

PAGE_SIZE = 100


class BudgetStore:
    """Pods and PodDisruptionBudgets for the planner (see the module contract)."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._lock = threading.Lock()
        self._index = DisruptionIndex()
        self._on_change = on_change
        self.pods_synced = threading.Event()
        self.budgets_synced = threading.Event()

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

    def _acted(self, changed: bool, synced: threading.Event) -> None:
        first = not synced.is_set()
        synced.set()
        if changed or (first and self.synced):
            self._on_change()

    def pods_sink(self) -> _PodSink:
        return _PodSink(self)

    def budgets_sink(self) -> _BudgetSink:
        return _BudgetSink(self)


class _PodSink:
    """The pod reflector's side of :class:`BudgetStore`."""

    #: Pods are large (a few KB of JSON each, ~10x that decoded) and a LIST page is decoded
    #: whole: smaller pages keep the start-up's peak memory down (docs/benchmarks.md).
    page_size = PAGE_SIZE
    #: Listed by a streaming list: a LIST of every pod of a large cluster takes minutes,
    #: longer than the API server keeps its watch history while they churn (docs/design.md).
    streamed = True

    def __init__(self, store: BudgetStore) -> None:
        self.store = store
        self._label_sets = LabelSets()

    def trim(self, obj: Mapping[str, Any]) -> PodEntry | None:
        return pod_entry(obj, self._label_sets)

    def replace(self, items: list[PodEntry | None]) -> None:
        s = self.store
        with s._lock:
            changed = s._index.replace_pods(e for e in items if e is not None)
        s._acted(changed, s.pods_synced)

    def apply(self, event_type: str | None, entry: PodEntry | None) -> None:
        if entry is None:
            return
        s = self.store
        with s._lock:
            if event_type == "DELETED":
                changed = s._index.remove_pod(entry.namespace, entry.name)
            else:
                changed = s._index.put_pod(entry)
        if changed:
            s._on_change()


class _BudgetSink:
    """The PodDisruptionBudget reflector's side of :class:`BudgetStore`."""

    def __init__(self, store: BudgetStore) -> None:
        self.store = store

    @staticmethod
    def trim(obj: Mapping[str, Any]) -> Budget | None:
        return budget_of(obj)

    def replace(self, items: list[Budget | None]) -> None:
        s = self.store
        with s._lock:
            changed = s._index.replace_budgets(b for b in items if b is not None)
        s._acted(changed, s.budgets_synced)

    def apply(self, event_type: str | None, budget: Budget | None) -> None:
        if budget is None:
            return
        s = self.store
        with s._lock:
            if event_type == "DELETED":
                changed = s._index.remove_budget(budget.namespace, budget.name)
            else:
                changed = s._index.put_budget(budget)
        if changed:
            s._on_change()
