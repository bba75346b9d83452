"""How kumaco says when: distances in time and a window's next change, in one wording.

Contract: pure functions of their arguments (``now`` is passed in). Every view
-- ``kubectl kumaco status``, the timeline page, ``kumaco plan`` -- says "opens",
"closes", "closes after" and "in 2h5m" / "3m10s ago" through these, so the
words are the same everywhere.
"""

from __future__ import annotations

from kumaco.core.time.durations import SECOND
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.core.windows.window import Window, WindowState

NEVER_OPENS = "never opens (none within five years)"
ENDED = "ended (it will never open again: delete its ConfigMap)"
NEVER_CLOSES = "never closes (its occurrences follow each other without a gap)"


def relative(t: int, now: int) -> str:
    """``in 2h5m``, ``3m10s ago``, ``now``: a coarse human distance (two units at most)."""
    secs = abs(t - now) // SECOND  # towards zero, as the timestamps shown are truncated
    if secs == 0:
        return "now"
    days, rest = divmod(secs, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    units = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    first = next(i for i, (v, _u) in enumerate(units) if v)
    text = "".join(f"{v}{u}" for v, u in units[first : first + 2] if v)
    return f"in {text}" if t > now else f"{text} ago"


def when(text: str | None, now: int) -> str:
    """A timestamp from the API as ``2026-11-30T10:07:49Z (5m18s ago)``; ``-`` when absent."""
    t = parse_timestamp(text)
    if text is None or t is None:
        return "-" if text is None else text
    return f"{format_instant(t)} ({relative(t, now)})"


def followed(window: Window, state: WindowState, now: int) -> tuple[WindowState, bool]:
    """``state`` (the window's at ``now``) with its close, and whether it never closes.

    The controller follows a run for an hour or two (``closes`` None beyond that, with
    ``recheck``); a view says when the run really closes
    (:meth:`~kumaco.core.windows.window.Window.run_close`: the December freeze ``* * * 12
    *`` for ``1m`` closes on January 1st), or that it never closes.
    """
    if not state.open or state.closes is not None:
        return state, False
    close = window.run_close(now)
    if close is None:
        return state, True
    return WindowState(open=True, closes=close), False


def next_change(state: WindowState, never_closes: bool = False) -> tuple[str, int | None]:
    """A window's next change as a verb and its instant.

    ``("opens", t)``, ``("closes", t)``, ``("closes after", t)`` for a window open
    with no close within reach (its occurrences chain beyond what kumaco
    follows; ``t`` is when it looks again), :data:`NEVER_CLOSES` and None for an open
    window that ``never_closes`` (:meth:`~kumaco.core.windows.window.Window.never_closes`,
    asked by the caller, which has the window), :data:`ENDED` and None for a window whose
    dates leave no occurrence to come, or :data:`NEVER_OPENS` and None.
    """
    if state.open:
        if state.closes is not None:
            return "closes", state.closes
        if never_closes:
            return NEVER_CLOSES, None
        return "closes after", state.recheck
    if state.ended:
        return ENDED, None
    if state.opens is None:
        return NEVER_OPENS, None
    return "opens", state.opens


def next_change_text(state: WindowState, now: int, never_closes: bool = False) -> str:
    """``opens 2026-12-01T02:30:00Z (in 16h16m)``, as the status table shows it."""
    verb, t = next_change(state, never_closes)
    return verb if t is None else f"{verb} {format_instant(t)} ({relative(t, now)})"


def ended_text(w: Window) -> str:
    """``has ended: ...; it will never open again: delete its ConfigMap``: one line."""
    return f"has ended: {w.why_ended()}; it will never open again: delete its ConfigMap"


def waited(name: str, since: int, now: int, why: str) -> str:
    """``n3 (ConcurrencyCeilingReached) since 2026-11-30T10:07:49Z (2h5m ago)``: one waiter."""
    return f"{name} ({why}) since {format_instant(since)} ({relative(since, now)})"
