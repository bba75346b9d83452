"""MaintenancePlanned: advance notice, ``--planned-lead`` before a window opens for a node.

Contract: pure (no I/O, no clock). With a lead ``L`` (:attr:`Policy.planned_lead` > 0),
:func:`lookahead` answers, at the instant ``now``, for each node in scope:

* ``MaintenancePlanned=True``, reason ``MaintenanceWindow``, when the node is not under
  maintenance now and becomes so at an instant ``s`` with ``now < s <= now + L``: a
  maintenance window matching it opens at ``s`` while no freeze matching it is open, or a
  freeze ends at ``s`` while such a window is open. ``s`` is the earliest such instant, its
  *planned start*; the message names the window(s) and ``s``. "Under maintenance" is
  exactly UnderMaintenance's meaning (:mod:`kumaco.core.planning.under_maintenance`), so the
  condition is True on ``[s - L, s)`` and False from ``s`` on.
* ``False``, reason ``NoMaintenancePlanned``, otherwise: while the node is under maintenance;
  when every start within the lead falls in a freeze (the message names the first such
  start and its freeze); when nothing puts it under maintenance within the lead.

The answer depends only on the windows' open intervals within ``[now, now + L]``, so it
changes by time alone only when ``now`` reaches a window's next opening or closing (the
planner's own next change) or when ``now + L`` reaches a maintenance window's opening or
a freeze's end: :attr:`Lookahead.next_change` is the earliest ``e - L`` for the first
such ``e`` after ``now + L`` of each window selecting nodes in scope, so the controller
wakes exactly when a lead begins (and when a thaw enters the lead). Messages
carry no clock that moves while nothing changes. :attr:`Lookahead.leads` gives each
maintenance window selecting nodes in scope its first run start within the lead (what
``WindowPlanned`` announces, :mod:`kumaco.controller.announce`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kumaco.core.objects.nodes import FALSE, TRUE
from kumaco.core.planning.policy import NOT_PLANNED, PLANNED_WINDOW, Desired, Policy
from kumaco.core.planning.under_maintenance import OpenWindows, UnderAnswer, refine
from kumaco.core.time.durations import format_go_duration
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.window import Interval, Window

#: The memo slots of the window states at the end of the lead and after the run there
#: (:meth:`Window.state_at`): each asked about the same instant pass after pass.
AHEAD, AFTER = "planned-lead", "planned-after"


@dataclass(frozen=True, slots=True)
class PlannedAnswer:
    """One node's MaintenancePlanned: the condition, its planned start and those windows."""

    desired: Desired
    start: int | None = None
    windows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lookahead:
    """Every node in scope's answer, each window's first opening in the lead, the next change."""

    answers: dict[str, PlannedAnswer]
    leads: dict[str, int]
    next_change: int | None


def _noun(keys: Sequence[str], one: str, many: str) -> str:
    return f"{one if len(keys) == 1 else many} {', '.join(keys)}"


def _inside(spans: Sequence[Interval], t: int) -> bool:
    return any(iv.start <= t < iv.end for iv in spans)


def _entering(w: Window, horizon: int) -> int | None:
    """The first instant after ``horizon`` that can change an answer when it enters the lead.

    A maintenance window's next run start (a planned start, a ``WindowPlanned``); a freeze's
    next run end (a thaw). A run chained beyond what a window state follows gives its
    ``recheck`` instead (looked at again then). None: the window never fires again.
    """
    st = w.state_at(horizon, AHEAD)
    if w.freeze:
        if not st.open:
            if st.opens is None:
                return None
            st = w.state_at(st.opens, AFTER)
        return st.closes if st.closes is not None else st.recheck
    if not st.open:
        return st.opens
    if st.closes is None:
        return st.recheck
    return w.state_at(st.closes, AFTER).opens


def _answer(
    keys: tuple[str, ...],
    spans: Mapping[str, tuple[Interval, ...]],
    freeze: Mapping[str, bool],
    now: int,
    policy: Policy,
) -> PlannedAnswer:
    """The answer for the nodes not under maintenance now that exactly ``keys`` select."""
    horizon = now + policy.planned_lead
    maint = [k for k in keys if not freeze[k]]
    frozen = [k for k in keys if freeze[k]]
    starts = {iv.start for k in maint for iv in spans[k] if now < iv.start <= horizon}
    thaws = {iv.end for k in frozen for iv in spans[k] if now < iv.end <= horizon}
    blocked: str | None = None
    for t in sorted(starts | thaws):
        open_ = [k for k in maint if _inside(spans[k], t)]
        covering = [k for k in frozen if _inside(spans[k], t)]
        if not open_:
            continue
        opening = [k for k in open_ if any(iv.start == t for iv in spans[k])]
        when = format_instant(t)
        if covering:
            if blocked is None and opening:
                blocked = (
                    f"maintenance {_noun(opening, 'window', 'windows')} "
                    f"{'starts' if len(opening) == 1 else 'start'} at {when} during "
                    f"{_noun(covering, 'freeze', 'freezes')}"
                )
            continue
        if opening:
            verb = "starts" if len(opening) == 1 else "start"
            message = f"maintenance {_noun(opening, 'window', 'windows')} {verb} at {when}"
        else:
            thawed = [k for k in frozen if any(iv.end == t for iv in spans[k])]
            message = (
                f"maintenance {_noun(open_, 'window', 'windows')} "
                f"{'puts' if len(open_) == 1 else 'put'} this node under maintenance at "
                f"{when}, when {_noun(thawed, 'freeze', 'freezes')} "
                f"{'ends' if len(thawed) == 1 else 'end'}"
            )
        return PlannedAnswer(
            Desired(policy.planned, TRUE, PLANNED_WINDOW, message), t, tuple(open_)
        )
    if blocked is None:
        blocked = (
            "no maintenance window puts this node under maintenance within "
            f"{format_go_duration(policy.planned_lead)}"
        )
    return PlannedAnswer(Desired(policy.planned, FALSE, NOT_PLANNED, blocked))


def lookahead(
    windows: Iterable[Window],
    ws: OpenWindows,
    under: Mapping[str, UnderAnswer],
    in_scope: frozenset[str],
    now: int,
    policy: Policy,
) -> Lookahead:
    """Each node in scope's MaintenancePlanned at ``now`` (see the module contract)."""
    lead = policy.planned_lead
    horizon = now + lead
    spans: dict[str, tuple[Interval, ...]] = {}
    leads: dict[str, int] = {}
    next_change: int | None = None
    for w in sorted(windows, key=lambda w: w.key):
        if not ws.selected.get(w.key):
            continue
        found = w.runs_within(now, horizon + 1)
        if found:
            spans[w.key] = found
        first = next((iv.start for iv in found if iv.start > now), None)
        if first is not None and not w.freeze:
            leads[w.key] = first
        after = _entering(w, horizon)
        if after is not None and (next_change is None or after - lead < next_change):
            next_change = after - lead
    groups: dict[tuple[str, ...], frozenset[str]] = {(): in_scope} if in_scope else {}
    for key, _found in sorted(spans.items()):
        groups = refine(groups, key, ws.selected[key])
    under_now = PlannedAnswer(
        Desired(policy.planned, FALSE, NOT_PLANNED, "this node is under maintenance now")
    )
    answers: dict[str, PlannedAnswer] = {}
    for keys, members in groups.items():
        answer: PlannedAnswer | None = None
        for name in members:
            if under[name].desired.status == TRUE:
                answers[name] = under_now
                continue
            if answer is None:
                answer = _answer(keys, spans, ws.freeze, now, policy)
            answers[name] = answer
    return Lookahead(answers, leads, next_change)
