"""An inverted index over many objects' labels, for selecting in bulk.

Contract
--------
A :class:`LabelIndex` holds the labels of many objects (nodes) by name and
answers :meth:`LabelIndex.select` -- the names whose labels meet all of a
selector's requirements -- with exactly the names that filtering every object
with :meth:`kumaco.core.labels.requirements.Requirement.matches` would give, but
through set operations on posting sets (key -> value -> names) instead of a scan
per selector. Answers and frozen copies of posting sets are cached until the
labels involved change. Pure, in memory, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Final

from kumaco.core.labels.requirements import (
    NUMERIC_OPS,
    POSITIVE_SET_OPS,
    Operator,
    Requirement,
    compares,
)

__all__ = ["LabelIndex"]

_NameSet = set[str]
_NO_NAMES: Final[_NameSet] = set()
_NOBODY: Final[frozenset[str]] = frozenset()


class LabelIndex:
    """Inverted index over many objects' labels, for bulk selection.

    It maps key -> value -> names, so that :meth:`select` works by set
    operations instead of an O(objects) scan per selector; the names having a key
    at all are the union of its values' sets, made when a selector asks (a set per
    key of every node would be a third of the index's memory at 50,000 nodes).
    Frozen copies of the posting sets it hands out are cached until the key
    changes, so a burst of selections between updates copies each set at most
    once. It keeps each object's labels: a read-only mapping
    (``MappingProxyType``, as node views hold them) as given, anything else
    copied. It is not thread-safe.
    """

    __slots__ = ("_all", "_by_value", "_frozen_by_key", "_labels", "_names", "_selected")

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}
        self._names: _NameSet = set()
        self._by_value: dict[str, dict[str, _NameSet]] = {}
        self._all: frozenset[str] | None = None
        self._frozen_by_key: dict[str, dict[str | None, frozenset[str]]] = {}
        self._selected: dict[tuple[Requirement, ...], frozenset[str]] = {}

    def set(self, name: str, labels: Mapping[str, str]) -> None:
        """Index the object ``name`` with ``labels`` (see the class), replacing what it had."""
        self.discard(name)
        own = labels if isinstance(labels, MappingProxyType) else dict(labels)
        self._labels[name] = own
        self._selected.clear()
        self._names.add(name)
        self._all = None
        for key, value in own.items():
            self._by_value.setdefault(key, {}).setdefault(value, set()).add(name)
            self._frozen_by_key.pop(key, None)

    def discard(self, name: str) -> None:
        """Forget the object ``name``; nothing happens if it is not indexed."""
        own = self._labels.pop(name, None)
        if own is None:
            return
        self._selected.clear()
        self._names.discard(name)
        self._all = None
        for key, value in own.items():
            self._frozen_by_key.pop(key, None)
            buckets = self._by_value[key]
            bucket = buckets[value]
            bucket.discard(name)
            if not bucket:
                del buckets[value]
                if not buckets:
                    del self._by_value[key]

    def names(self) -> frozenset[str]:
        """Return the names of all indexed objects."""
        return self._everything()

    def labels(self, name: str) -> Mapping[str, str]:
        """Return the labels indexed for ``name``, read-only; KeyError if not indexed."""
        own = self._labels[name]
        return own if isinstance(own, MappingProxyType) else MappingProxyType(own)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything())

    def select(self, requirements: tuple[Requirement, ...]) -> frozenset[str]:
        """The names of the objects whose labels meet all of ``requirements`` (all if none).

        Computed by intersecting and subtracting posting sets (the cost grows with
        the sizes of the sets involved, not with the number of objects), and
        memoised until the labels change. :meth:`kumaco.core.labels.selectors.Selector.select`
        is the way in.
        """
        if not requirements:
            return self._everything()
        memo = self._selected
        found = memo.get(requirements)
        if found is None:
            found = memo[requirements] = self._select(requirements)
        return found

    def _select(self, requirements: tuple[Requirement, ...]) -> frozenset[str]:
        wanted: list[frozenset[str]] = []
        unwanted: list[_NameSet] = []
        for requirement in requirements:
            key, operator = requirement.key, requirement.operator
            if operator is Operator.EXISTS:
                wanted.append(self._frozen(key, None))
            elif operator is Operator.DOES_NOT_EXIST:
                unwanted.extend(self._by_value.get(key, {}).values())
            elif operator in NUMERIC_OPS:
                wanted.append(self._numeric(key, operator, requirement.bound))
            elif operator in POSITIVE_SET_OPS:
                wanted.append(self._having(key, requirement.values))
            else:
                unwanted.extend(self._buckets(key, requirement.values))
        if wanted:
            wanted.sort(key=len)
            result = wanted[0].intersection(*wanted[1:]) if len(wanted) > 1 else wanted[0]
        else:
            result = self._everything()
        if result and unwanted:
            result = result.difference(*unwanted)
        return result

    def _everything(self) -> frozenset[str]:
        if self._all is None:
            self._all = frozenset(self._names)
        return self._all

    def _frozen(self, key: str, value: str | None) -> frozenset[str]:
        """Names having label ``key`` (with ``value`` unless None), as a cached frozenset."""
        cached = self._frozen_by_key.setdefault(key, {})
        found = cached.get(value)
        if found is None:
            if value is None:
                found = _NOBODY.union(*self._by_value.get(key, {}).values())
            else:
                found = frozenset(self._by_value.get(key, {}).get(value, _NO_NAMES))
            cached[value] = found
        return found

    def _buckets(self, key: str, values: tuple[str, ...]) -> list[_NameSet]:
        """Collect the posting sets of ``key`` for those of ``values`` that occur."""
        buckets = self._by_value.get(key)
        if not buckets:
            return []
        return [buckets[value] for value in values if value in buckets]

    def _having(self, key: str, values: tuple[str, ...]) -> frozenset[str]:
        """Names whose label ``key`` has one of ``values``."""
        if len(values) == 1:
            return self._frozen(key, values[0])
        return _NOBODY.union(*self._buckets(key, values))

    def _numeric(self, key: str, operator: Operator, bound: int | None) -> frozenset[str]:
        """Names whose label ``key`` parses as an int64 beyond ``bound``."""
        buckets = self._by_value.get(key)
        if not buckets or bound is None:
            return _NOBODY
        return _NOBODY.union(
            *(names for value, names in buckets.items() if compares(value, operator, bound))
        )
