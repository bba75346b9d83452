"""One requirement of a label selector: its operator, what it matches, how it prints.

Contract
--------
A :class:`Requirement` is what apimachinery's ``labels.Requirement`` holds (``key``,
``operator``, sorted ``values``); :meth:`Requirement.matches` answers what
``Requirement.Matches`` answers for a label set (``!=`` and ``notin`` also match
a set without the key; ``gt``/``lt`` compare label values that parse as a Go
int64, strictly) and ``str()`` is ``Requirement.String()``. Requirements are
built only from validated input (:mod:`kumaco.core.labels.selectors`,
:mod:`kumaco.core.labels.node_selector`); nothing here validates. Pure, immutable,
hashable.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kumaco.core.golang.gostrconv import parse_int64

__all__ = [
    "NEGATIVE_SET_OPS",
    "NUMERIC_OPS",
    "POSITIVE_SET_OPS",
    "Operator",
    "Requirement",
    "compares",
]


class Operator(enum.StrEnum):
    """A requirement's operator, spelled as ``k8s.io/apimachinery/pkg/selection``."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


POSITIVE_SET_OPS: Final = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN})
NEGATIVE_SET_OPS: Final = frozenset({Operator.NOT_EQUALS, Operator.NOT_IN})
NUMERIC_OPS: Final = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key operator values`` condition of a selector, as the server holds it.

    ``values`` is sorted (and de-duplicated by
    :func:`kumaco.core.labels.selectors.parse_selector`); empty for exists/does-not-exist,
    one item for ``=``, ``==``, ``!=``, ``>``, ``<``.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    _value_set: frozenset[str] = field(init=False, repr=False, compare=False)
    #: The one value as a Go int64 (what ``gt``/``lt`` compare with), else None.
    bound: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_value_set", frozenset(self.values))
        bound = parse_int64(self.values[0]) if len(self.values) == 1 else None
        object.__setattr__(self, "bound", bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (``Requirement.Matches``)."""
        operator = self.operator
        if operator is Operator.EXISTS:
            return self.key in labels
        if operator is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels:
            return operator in NEGATIVE_SET_OPS
        value = labels[self.key]
        if operator in POSITIVE_SET_OPS:
            return value in self._value_set
        if operator in NEGATIVE_SET_OPS:
            return value not in self._value_set
        return compares(value, operator, self.bound)

    def __str__(self) -> str:
        operator = self.operator
        if operator is Operator.EXISTS:
            return self.key
        if operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if operator is Operator.IN or operator is Operator.NOT_IN:
            return f"{self.key} {operator.value} ({','.join(self.values)})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(operator, operator.value)
        return self.key + symbol + ",".join(self.values)


def compares(value: str, operator: Operator, bound: int | None) -> bool:
    """Whether label ``value``, read as a Go int64, is beyond ``bound`` (``gt``/``lt``)."""
    number = parse_int64(value)
    if number is None or bound is None:
        return False
    return number > bound if operator is Operator.GREATER_THAN else number < bound
