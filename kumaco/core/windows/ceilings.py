"""Ceilings: "at most N nodes" or "at most P percent of them", one syntax everywhere.

Contract: :func:`parse_ceiling` reads ``N`` (0 to 9,999,999) or ``P%`` (0% to
100%) and raises :class:`~kumaco.core.errors.InvalidInput` otherwise, with the
fix in the message. :meth:`Ceiling.limit` turns it into a number of nodes for a
population: a percentage is rounded down but never below 1, except ``0%``,
which like ``0`` admits nobody (a pause switch). The same syntax serves
``--max-in-progress``, ``--max-in-progress-per KEY=...`` and a window's
``maxInProgress``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kumaco.core.errors import InvalidInput, excerpt

_CEILING = re.compile(r"(0|[1-9][0-9]{0,6})(%?)")


@dataclass(frozen=True)
class Ceiling:
    """At most ``value`` nodes, or ``value`` percent of a population."""

    value: int
    percent: bool = False

    def limit(self, population: int) -> int:
        if not self.percent or self.value == 0:
            return self.value
        return max(1, self.value * population // 100)

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


def parse_ceiling(text: str) -> Ceiling:
    """Parse ``N`` or ``P%`` (0 <= P <= 100)."""
    m = _CEILING.fullmatch(text.strip())
    if not m:
        raise InvalidInput(
            f"{excerpt(text)} is not a count (e.g. 2) or a percentage (e.g. 10%); "
            "0 or 0% admits nobody"
        )
    value, percent = int(m.group(1)), bool(m.group(2))
    if percent and value > 100:
        raise InvalidInput(f"{excerpt(text)}: a percentage must be between 0% and 100%")
    return Ceiling(value, percent)
