"""Judges of the fleet rules (admission rate, one group at a time, spacing), on the audit log replayed in commit order.

Contract: pure functions over a :class:`~tests.support.judges.audit.CeilingVerdict`
(:func:`~tests.support.judges.audit.judge_ceiling`'s replay of every committed write of
the judged Nodes): :func:`changes_of` lists each Node's holding changes (an admission:
the condition became True; a release: it stopped being True) at the instant the server
received the write; :func:`most_within` is the most instants inside any window of a given
length (the admission rate's measure); :func:`groups_at_once` the most label values
among the holders after any write (one group at a time). Independent of kumaco's own
record (its messages): only the stored objects' statuses are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tests.support.judges.audit import CeilingVerdict


@dataclass(frozen=True)
class Change:
    """One Node starting (``admitted``) or ending its hold, at the server's receipt."""

    at: float
    node: str
    admitted: bool


def changes_of(verdict: CeilingVerdict) -> list[Change]:
    """Every admission and release of the replay, in commit order."""
    out: list[Change] = []
    before: set[str] = set()
    for step in verdict.steps:
        after = set(step.holding)
        out += (Change(step.received, n, True) for n in sorted(after - before))
        out += (Change(step.received, n, False) for n in sorted(before - after))
        before = after
    return out


def admissions(verdict: CeilingVerdict) -> list[float]:
    """When each admission was received, in commit order."""
    return [c.at for c in changes_of(verdict) if c.admitted]


def most_within(times: Sequence[float], seconds: float) -> int:
    """The most of ``times`` inside any window ``[t, t + seconds)``."""
    ordered = sorted(times)
    best = start = 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - seconds:
            start += 1
        best = max(best, end - start + 1)
    return best


def groups_at_once(verdict: CeilingVerdict, group_of: Mapping[str, str]) -> int:
    """The most distinct groups among the holders after any committed write."""
    return max((len({group_of[n] for n in s.holding}) for s in verdict.steps), default=0)
