"""Selector requirements that can never hold together: a selector that matches no node.

Contract
--------
:func:`contradictions` takes the requirements of one selector (ANDed, as the server
ANDs them: a string's commas, a LabelSelector's ``matchLabels`` and
``matchExpressions``) and returns, per key in order, one sentence for each key whose
requirements no label set satisfies:

* the key must equal values no single value is (``zone=zone-a,zone=zone-b``, ``=``,
  ``==`` and ``in`` with disjoint sets): the sentence says the comma is AND and
  suggests ``zone in (zone-a,zone-b)``, the usual meaning of "a or b";
* every value it may have is one it must not have (``k=a,k!=a``, ``k in (a,b),k notin
  (a,b)``);
* it must exist and must not (``k,!k``, or ``k=a,!k``).

Only the set operators and existence are weighed (``gt``/``lt`` are left alone);
an empty list means nothing contradicts. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from kumaco.core.labels.requirements import (
    NEGATIVE_SET_OPS,
    NUMERIC_OPS,
    POSITIVE_SET_OPS,
    Operator,
    Requirement,
)

__all__ = ["contradictions"]


def _one_key(key: str, requirements: list[Requirement]) -> str:
    ops = {r.operator for r in requirements}
    shown = ",".join(str(r) for r in requirements)
    positive = [frozenset(r.values) for r in requirements if r.operator in POSITIVE_SET_OPS]
    must_exist = bool(ops & (POSITIVE_SET_OPS | NUMERIC_OPS | {Operator.EXISTS}))
    if must_exist and Operator.DOES_NOT_EXIST in ops:
        return f"{key} must exist and must not ({shown})"
    if not positive:
        return ""
    allowed = frozenset.intersection(*positive)
    if not allowed:
        every = sorted(frozenset.union(*positive))
        named = " and ".join(
            f"one of ({','.join(sorted(p))})" if len(p) > 1 else next(iter(p)) for p in positive
        )
        return (
            f"{key} cannot equal {named} at once (the comma is AND); for any of them, "
            f"write {key} in ({','.join(every)})"
        )
    excluded = frozenset(
        v for r in requirements if r.operator in NEGATIVE_SET_OPS for v in r.values
    )
    if allowed <= excluded:
        values = ",".join(sorted(allowed))
        be = f"one of ({values})" if len(allowed) > 1 else values
        return f"{key} must be {be} and must not be ({shown})"
    return ""


def contradictions(requirements: Iterable[Requirement]) -> list[str]:
    """One sentence per key whose requirements no label set satisfies (see the module)."""
    by_key: dict[str, list[Requirement]] = {}
    for r in requirements:
        by_key.setdefault(r.key, []).append(r)
    return [text for key, reqs in by_key.items() if (text := _one_key(key, reqs))]
