"""UnderMaintenance: which open windows cover which nodes at an instant, and what comes next.

Contract: pure. :func:`window_groups` evaluates every window at ``now`` once (its
state, the nodes in scope its selector matches, its next change);
:func:`under_maintenance_answers` gives each node in scope its desired
``UnderMaintenance`` condition (the open windows it is in, a freeze, or none) -- the
first half of :func:`kumaco.core.planning.planner.plan`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kumaco.core.objects.nodes import FALSE, TRUE, NodeSet
from kumaco.core.planning.policy import (
    FROZEN,
    NO_WINDOW,
    WINDOW_OPEN,
    Desired,
    Policy,
)
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.window import Window, WindowState


@dataclass
class OpenWindows:
    """The windows at ``now``: states, which open windows cover which nodes, what comes next."""

    states: dict[str, WindowState]
    matching: dict[str, int]
    selected: dict[str, frozenset[str]]
    groups: dict[tuple[str, ...], frozenset[str]]
    closes: dict[str, int | None]
    freeze: dict[str, bool]
    budgets: dict[str, Ceiling]
    next_change: int | None


def window_groups(
    windows: Iterable[Window], nodes: NodeSet, in_scope: frozenset[str], now: int
) -> OpenWindows:
    """Partition the nodes in scope by the tuple of open windows matching them.

    A few set operations per window instead of a per-node, per-window loop.
    """
    found = OpenWindows({}, {}, {}, {(): in_scope} if in_scope else {}, {}, {}, {}, None)
    for w in sorted(windows, key=lambda w: w.key):
        selected = w.selector.select(nodes.index) & in_scope
        state = w.state_at(now)
        found.states[w.key] = state
        found.matching[w.key] = len(selected)
        found.selected[w.key] = selected
        found.freeze[w.key] = w.freeze
        if w.budget is not None:
            found.budgets[w.key] = w.budget
        if not selected:
            continue
        nc = state.next_change
        if nc is not None and (found.next_change is None or nc < found.next_change):
            found.next_change = nc
        if not state.open:
            continue
        found.closes[w.key] = state.closes
        found.groups = refine(found.groups, w.key, selected)
    return found


def refine(
    groups: dict[tuple[str, ...], frozenset[str]], key: str, selected: frozenset[str]
) -> dict[tuple[str, ...], frozenset[str]]:
    """Split each group of nodes by window ``key``'s ``selected`` (adding ``key`` to theirs)."""
    refined: dict[tuple[str, ...], frozenset[str]] = {}
    for keys, members in groups.items():
        inside = members & selected
        if not inside:
            refined[keys] = members
            continue
        refined[(*keys, key)] = inside
        if len(inside) != len(members):
            refined[keys] = members - inside
    return refined


def _latest(ends: Sequence[int | None]) -> int | None:
    return None if any(e is None for e in ends) else max(e for e in ends if e is not None)


def _window_message(keys: Sequence[str], closes: int | None) -> str:
    noun = "window" if len(keys) == 1 else "windows"
    until = f"until {format_instant(closes)}" if closes is not None else "with no end in sight"
    return f"maintenance {noun} {', '.join(keys)} open {until}"


@dataclass(frozen=True, slots=True)
class UnderAnswer:
    """One node's UnderMaintenance answer: open windows and freezes, its close, its condition."""

    windows: tuple[str, ...]
    freezes: tuple[str, ...]
    closes: int | None
    desired: Desired


def under_maintenance_answers(ws: OpenWindows, policy: Policy) -> dict[str, UnderAnswer]:
    """Each node in scope's :class:`UnderAnswer` at the instant ``ws`` was taken."""
    um = policy.under_maintenance
    nothing = UnderAnswer(
        (), (), None, Desired(um, FALSE, NO_WINDOW, "no maintenance window is open for this node")
    )
    under: dict[str, UnderAnswer] = {}
    for keys, members in ws.groups.items():
        entry = nothing
        if keys:
            maint = tuple(k for k in keys if not ws.freeze[k])
            frozen = tuple(k for k in keys if ws.freeze[k])
            closes = _latest([ws.closes[k] for k in maint]) if maint else None
            if frozen:
                ends = _latest([ws.closes[k] for k in frozen])
                noun = "freeze" if len(frozen) == 1 else "freezes"
                until = (
                    f"until {format_instant(ends)}" if ends is not None else "with no end in sight"
                )
                desired = Desired(
                    um, FALSE, FROZEN, f"maintenance frozen by {noun} {', '.join(frozen)} {until}"
                )
            elif maint:
                desired = Desired(um, TRUE, WINDOW_OPEN, _window_message(maint, closes))
            else:
                desired = nothing.desired
            entry = UnderAnswer(maint, frozen, closes, desired)
        for name in members:
            under[name] = entry
    return under


# ----------------------------------------------------------------------------- plan
