"""PodDisruptionBudgets as a drain meets them: which nodes a drain would be refused on now.

Contract: pure (no I/O, no clock); never raises on malformed objects.

What a drain evicts (kubectl's drain helper, ``k8s.io/kubectl/pkg/drain/filters.go``, as
kured and kubectl drain ``--ignore-daemonsets --delete-emptydir-data --force`` run it):
every pod bound to the node except a mirror pod (annotation ``kubernetes.io/config.mirror``)
and a pod whose controller is an ``apps/v1`` DaemonSet (an orphaned DaemonSet pod, which
``--force`` evicts, is counted as skipped too: kumaco does not read DaemonSets).

When the eviction API refuses one of them because of a budget (``EvictionREST.Create`` of
``pkg/registry/core/pod/storage/eviction.go``, Kubernetes v1.37): never for a pod that is
``Pending``, ``Succeeded`` or ``Failed`` or is terminating (``deletionTimestamp`` set) --
those are deleted without looking at budgets. Otherwise the budgets of the pod's namespace
whose ``spec.selector`` (``LabelSelectorAsSelector``: null selects no pod, ``{}`` every pod
of the namespace, an invalid selector no pod) matches its labels decide:

* none: evicted;
* more than one: refused whatever their budgets (the eviction API does not support it);
* one, and the pod is not Ready: evicted when the budget's ``unhealthyPodEvictionPolicy`` is
  ``AlwaysAllow``, or when ``status.currentHealthy >= status.desiredHealthy > 0``;
  otherwise as a Ready pod;
* one, and the pod is Ready: refused when ``status.observedGeneration`` is behind
  ``metadata.generation`` (the budget is still being processed), ``status.disruptionsAllowed``
  is 0 or less, or ``status.disruptedPods`` holds more than 2000 entries; evicted otherwise.

:func:`pod_entry` and :func:`budget_of` trim a Pod and a PodDisruptionBudget to what that
decision reads (:class:`PodView`, :class:`Budget`); a pod whose eviction never looks at a
budget has no view. :func:`blamed` is the decision for one pod, :func:`refusals` for a set
of pods and budgets: node name -> the budgets (``namespace/name``, sorted) that refuse
evicting one of its pods now. :class:`DisruptionIndex` keeps the same answer up to date
pod by pod and budget by budget, saying whether it changed (the controller wakes only
then); its answer equals :func:`refusals` of what it holds.

Kept per pod: its node, its labels (equal label sets share one object: the pods of a
ReplicaSet have the same ones) and whether it is Ready -- a few hundred bytes with its
name (docs/benchmarks.md, "PodDisruptionBudgets").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from sys import intern
from types import MappingProxyType
from typing import Any

from kumaco.core.errors import InvalidInput
from kumaco.core.labels.node_selector import label_selector_of
from kumaco.core.labels.requirements import Operator
from kumaco.core.labels.selectors import Selector

MIRROR = "kubernetes.io/config.mirror"
#: The eviction API refuses while a budget's ``status.disruptedPods`` is larger than this.
MAX_DISRUPTED_PODS = 2000
#: Phases whose pods are deleted without a look at budgets (``canIgnorePDB``).
_IGNORED_PHASES = frozenset(("Pending", "Succeeded", "Failed"))
_EQUAL = frozenset((Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN))

#: node name -> the budgets that refuse evicting one of its pods now (``namespace/name``).
Refusals = Mapping[str, tuple[str, ...]]
NO_REFUSALS: Refusals = MappingProxyType({})
#: A node's refusing budgets while the pods and PodDisruptionBudgets are not listed yet (a
#: new leader's start-up): no budget's name, as a budget's is ``namespace/name``.
NOT_LISTED: tuple[str, ...] = ("(not listed yet)",)


def not_listed(nodes: Iterable[str]) -> Refusals:
    """Every one of ``nodes`` refused: what is known before the first LIST of both."""
    return MappingProxyType(dict.fromkeys(nodes, NOT_LISTED))


_EMPTY: Mapping[str, str] = MappingProxyType({})


class LabelSets:
    """Equal label maps as one shared read-only object (pods of one app share theirs).

    Bounded (``limit`` distinct sets; past it a map is returned unshared); one per store.
    """

    def __init__(self, limit: int = 1 << 16) -> None:
        self._sets: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self._limit = limit

    def shared(self, labels: Mapping[str, str]) -> Mapping[str, str]:
        """A read-only label map equal to ``labels``, the same object for equal maps."""
        if not labels:
            return _EMPTY
        key = tuple(sorted(labels.items()))
        found = self._sets.get(key)
        if found is None:
            found = MappingProxyType({intern(k): intern(v) for k, v in key})
            if len(self._sets) < self._limit:
                self._sets[key] = found
        return found


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod whose eviction a budget may refuse: its node, labels and readiness."""

    node: str
    labels: Mapping[str, str]
    ready: bool


@dataclass(frozen=True, slots=True)
class PodEntry:
    """A trimmed Pod: its namespace and name, and its view (None: no budget can refuse it)."""

    namespace: str
    name: str
    view: PodView | None


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget as the eviction API reads it.

    ``selector`` None: it selects no pod. ``refuses``: an eviction that reaches its
    budget is refused now. ``spares_unready``: a pod that is not Ready is evicted
    without taking from it.
    """

    namespace: str
    name: str
    selector: Selector | None
    refuses: bool
    spares_unready: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)


def _meta(obj: object) -> tuple[Mapping[str, Any], str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    return meta, intern(namespace) if isinstance(namespace, str) else "", name


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _skipped_by_drain(meta: Mapping[str, Any]) -> bool:
    """A mirror pod, or one whose controller is an apps/v1 DaemonSet (see the contract)."""
    if MIRROR in _map(meta.get("annotations")):
        return True
    owners = meta.get("ownerReferences")
    for ref in owners if isinstance(owners, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref.get("kind") == "DaemonSet" and ref.get("apiVersion") == "apps/v1"
    return False


def _ready(status: Mapping[str, Any]) -> bool:
    conditions = status.get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def pod_entry(obj: object, label_sets: LabelSets | None = None) -> PodEntry | None:
    """Trim a Pod (decoded JSON); None when it has no name (see the module contract).

    ``label_sets``: where equal label maps are shared (a store's; else a fresh one).
    """
    found = _meta(obj)
    if found is None:
        return None
    meta, namespace, name = found
    spec, status = _map(_map(obj).get("spec")), _map(_map(obj).get("status"))
    node = spec.get("nodeName")
    if (
        not isinstance(node, str)
        or not node
        or meta.get("deletionTimestamp") is not None
        or status.get("phase") in _IGNORED_PHASES
        or _skipped_by_drain(meta)
    ):
        return PodEntry(namespace, name, None)
    raw = _map(meta.get("labels"))
    labels = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}
    shared = (label_sets or LabelSets()).shared(labels)
    return PodEntry(namespace, name, PodView(intern(node), shared, _ready(status)))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def budget_of(obj: object) -> Budget | None:
    """Trim a PodDisruptionBudget (decoded JSON, policy/v1); None when it has no name."""
    found = _meta(obj)
    if found is None:
        return None
    meta, namespace, name = found
    spec, status = _map(_map(obj).get("spec")), _map(_map(obj).get("status"))
    try:
        selector = label_selector_of(spec.get("selector"))
    except InvalidInput:
        selector = None  # the eviction API: an invalid selector matches no pod
    disrupted = status.get("disruptedPods")
    refuses = (
        _int(status.get("observedGeneration")) < _int(meta.get("generation"))
        or _int(status.get("disruptionsAllowed")) <= 0
        or (isinstance(disrupted, Mapping) and len(disrupted) > MAX_DISRUPTED_PODS)
    )
    desired = _int(status.get("desiredHealthy"))
    spares = spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or (
        desired > 0 and _int(status.get("currentHealthy")) >= desired
    )
    return Budget(namespace, name, selector, refuses, spares)


def blamed(pod: PodView, budgets: Iterable[Budget]) -> tuple[str, ...]:
    """The budgets that refuse evicting ``pod`` now (``budgets``: those of its namespace)."""
    return decided(pod, [b for b in budgets if b.covers(pod.labels)])


def decided(pod: PodView, covering: Sequence[Budget]) -> tuple[str, ...]:
    """:func:`blamed`, given the budgets that cover ``pod``."""
    if len(covering) > 1:
        return tuple(sorted(b.key for b in covering))
    if not covering:
        return ()
    budget = covering[0]
    if (not pod.ready and budget.spares_unready) or not budget.refuses:
        return ()
    return (budget.key,)


class _Covering:
    """The budgets covering a label set, worked out once per set of the values they read.

    A selector reads only the label keys its requirements name, so pods that agree on
    those keys (the replicas of one application; a StatefulSet's pods differ only in a
    label no budget selects on) cost one evaluation. And a budget requiring some
    ``key=value`` (``matchLabels``, or ``In`` one value) is tried only on label sets with
    that pair: an application's labels are tried against its own budget, not against
    every budget of its namespace.
    """

    def __init__(self, budgets: Iterable[Budget]) -> None:
        self.anchored: dict[tuple[str, str], list[Budget]] = {}
        self.floating: list[Budget] = []
        keys: set[str] = set()
        for b in budgets:
            if b.selector is None:
                continue  # selects no pod
            keys.update(r.key for r in b.selector.requirements)
            anchor = next(
                (
                    (r.key, r.values[0])
                    for r in b.selector.requirements
                    if r.operator in _EQUAL and len(r.values) == 1
                ),
                None,
            )
            if anchor is None:
                self.floating.append(b)
            else:
                self.anchored.setdefault(anchor, []).append(b)
        self.keys = tuple(sorted(keys))
        self._memo: dict[tuple[str | None, ...], tuple[Budget, ...]] = {}

    def __call__(self, labels: Mapping[str, str]) -> tuple[Budget, ...]:
        seen = tuple(labels.get(k) for k in self.keys)
        hit = self._memo.get(seen)
        if hit is None:
            tried = [*self.floating]
            for pair in labels.items():
                tried += self.anchored.get(pair, ())
            hit = self._memo[seen] = tuple(b for b in tried if b.covers(labels))
        return hit


def refusals(pods: Iterable[PodEntry], budgets: Iterable[Budget]) -> Refusals:
    """Node name -> the budgets refusing an eviction of one of its pods now (sorted)."""
    by_namespace: dict[str, list[Budget]] = {}
    for b in budgets:
        by_namespace.setdefault(b.namespace, []).append(b)
    out: dict[str, set[str]] = {}
    for p in pods:
        if p.view is not None and (keys := blamed(p.view, by_namespace.get(p.namespace, ()))):
            out.setdefault(p.view.node, set()).update(keys)
    return MappingProxyType({node: tuple(sorted(keys)) for node, keys in sorted(out.items())})


class DisruptionIndex:
    """Pods and budgets by namespace, and each node's refusing budgets kept up to date.

    Each update returns whether some node's refusing budgets changed. Deduplicated by
    ``(namespace, name)``: a later entry replaces an earlier one.
    """

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, PodView]] = {}
        self._budgets: dict[str, dict[str, Budget]] = {}
        #: (namespace, name) -> the budgets refusing that pod (only pods with some).
        self._blame: dict[tuple[str, str], tuple[str, ...]] = {}
        #: node -> budget key -> how many of its pods that budget refuses.
        self._by_node: dict[str, dict[str, int]] = {}
        self._answer: Refusals | None = NO_REFUSALS

    # ------------------------------------------------------------------ bookkeeping

    def _count(self, node: str, keys: tuple[str, ...], step: int) -> None:
        """Add (``step`` 1) or take away (-1) a pod's blame from its node's counts."""
        counts = self._by_node.setdefault(node, {})
        for key in keys:
            n = counts.get(key, 0) + step
            if n > 0:
                counts[key] = n
            else:
                counts.pop(key, None)
        if not counts:
            del self._by_node[node]

    def _keys(self, nodes: Iterable[str]) -> dict[str, frozenset[str]]:
        return {n: frozenset(self._by_node.get(n, ())) for n in nodes}

    def _covering(self, namespace: str) -> _Covering:
        return _Covering(self._budgets.get(namespace, {}).values())

    def _judge(self, namespace: str, name: str, view: PodView, covering: _Covering) -> None:
        """(Re)compute one stored pod's blame and count it on its node."""
        old = self._blame.pop((namespace, name), ())
        if old:
            self._count(view.node, old, -1)
        keys = decided(view, covering(view.labels))
        if keys:
            self._blame[(namespace, name)] = keys
            self._count(view.node, keys, 1)

    def _settled(self, before: dict[str, frozenset[str]]) -> bool:
        """Whether the refusing budgets of the nodes in ``before`` changed since."""
        changed = self._keys(before) != before
        if changed:
            self._answer = None
        return changed

    # ------------------------------------------------------------------ updates

    def put_pod(self, entry: PodEntry) -> bool:
        """Store a pod (a view of None removes it)."""
        ns, name = entry.namespace, entry.name
        pods = self._pods.get(ns)
        old = pods.get(name) if pods is not None else None
        if old == entry.view:
            return False
        touched = {v.node for v in (old, entry.view) if v is not None}
        before = self._keys(touched)
        if old is not None:
            self._count(old.node, self._blame.pop((ns, name), ()), -1)
        if entry.view is None:
            assert pods is not None
            del pods[name]
            if not pods:
                del self._pods[ns]
        else:
            self._pods.setdefault(ns, {})[name] = entry.view
            self._judge(ns, name, entry.view, self._covering(ns))
        return self._settled(before)

    def remove_pod(self, namespace: str, name: str) -> bool:
        return self.put_pod(PodEntry(namespace, name, None))

    def _rescore(self, namespace: str, changed: Iterable[Budget | None] = ()) -> bool:
        """The pods of ``namespace`` judged again, whether some node's answer changed.

        Only the pods the ``changed`` budgets cover (in their old or new version), or
        every one when none is named.
        """
        pods = self._pods.get(namespace, {})
        selectors = [b for b in changed if b is not None]
        touched = _Covering(selectors)
        again = [(n, v) for n, v in pods.items() if not selectors or touched(v.labels)]
        before = self._keys({v.node for _n, v in again})
        covering = self._covering(namespace)
        for name, view in again:
            self._judge(namespace, name, view, covering)
        return self._settled(before)

    def put_budget(self, budget: Budget) -> bool:
        budgets = self._budgets.setdefault(budget.namespace, {})
        old = budgets.get(budget.name)
        if old == budget:
            return False
        budgets[budget.name] = budget
        return self._rescore(budget.namespace, (old, budget))

    def remove_budget(self, namespace: str, name: str) -> bool:
        budgets = self._budgets.get(namespace)
        old = budgets.pop(name, None) if budgets is not None else None
        if budgets is None or old is None:
            return False
        if not budgets:
            del self._budgets[namespace]
        return self._rescore(namespace, (old,))

    def replace_pods(self, entries: Iterable[PodEntry]) -> bool:
        """Every pod at once (a fresh LIST)."""
        before = self.refusals()
        self._pods, self._blame, self._by_node = {}, {}, {}
        for e in entries:
            if e.view is not None:
                self._pods.setdefault(e.namespace, {})[e.name] = e.view
        for ns, pods in self._pods.items():
            covering = self._covering(ns)
            for name, view in pods.items():
                self._judge(ns, name, view, covering)
        self._answer = None
        return self.refusals() != before

    def replace_budgets(self, budgets: Iterable[Budget]) -> bool:
        """Every budget at once (a fresh LIST)."""
        before = self.refusals()
        fresh: dict[str, dict[str, Budget]] = {}
        for b in budgets:
            fresh.setdefault(b.namespace, {})[b.name] = b
        touched = set(fresh) | set(self._budgets)
        self._budgets = fresh
        for ns in touched:
            self._rescore(ns)
        self._answer = None
        return self.refusals() != before

    # ------------------------------------------------------------------ answers

    def refusals(self) -> Refusals:
        """Node name -> its refusing budgets, sorted (an immutable snapshot)."""
        if self._answer is None:
            self._answer = MappingProxyType(
                {node: tuple(sorted(c)) for node, c in sorted(self._by_node.items())}
            )
        return self._answer

    def pods(self) -> Iterable[PodEntry]:
        """The pods held (those a budget may refuse)."""
        for ns, pods in self._pods.items():
            for name, view in pods.items():
                yield PodEntry(ns, name, view)

    def budgets(self) -> Iterable[Budget]:
        for budgets in self._budgets.values():
            yield from budgets.values()

    def __len__(self) -> int:
        """How many pods it holds."""
        return sum(len(p) for p in self._pods.values())


def refusals_of(pods: Iterable[object], budgets: Iterable[object]) -> Refusals:
    """:func:`refusals` of Pod and PodDisruptionBudget objects (decoded JSON)."""
    label_sets = LabelSets()
    entries = (e for o in pods if (e := pod_entry(o, label_sets)) is not None)
    return refusals(entries, (b for o in budgets if (b := budget_of(o)) is not None))
