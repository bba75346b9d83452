"""When to tell the maintenance manager that a window started or ended: once per occurrence.

Contract: :class:`Announcer` decides, from each plan, which ``WindowStarted``
and ``WindowEnded`` Events are due; it emits nothing itself and reads no clock
(``now`` is passed in), so the same sequence of plans and instants always gives
the same announcements. Its memory lasts one leadership term (:meth:`reset`
when leadership begins).

* A *run* is a maximal stretch of merged occurrences, named by its start
  instant; a run whose start lies beyond what kumaco follows back (a window
  that never closes) is named ``"unbounded"``. The Event's name carries the
  run, so a new leader repeating an announcement finds the name taken.
* A window seen open for a run not announced yet: ``WindowStarted`` (and, if
  a different run was announced before, ``WindowEnded`` for that one first).
* A window seen closed after its run was announced: ``WindowEnded``.
* After a takeover, a window seen closed for the first time whose last run
  ended within ``lookback`` before ``now`` (while nobody led) gets its
  ``WindowEnded`` once.
* A dated window that has ended (:meth:`Announcer.expired`): ``WindowExpired``, once.
* With ``--planned-lead`` (:meth:`Announcer.leads`): a maintenance window whose next
  run starts within the lead (:attr:`Plan.leads`) gets ``WindowPlanned`` for that run,
  once, named by the run's start as ``WindowStarted`` is -- so its lead beginning is
  announced once, also by a new leader (the name is taken).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kumaco.core.planning.policy import Plan
from kumaco.core.time.durations import format_go_duration
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.window import Window

STARTED, ENDED, PLANNED = "WindowStarted", "WindowEnded", "WindowPlanned"
#: A dated window whose dates leave no occurrence to come (:meth:`Window.ended`).
EXPIRED = "WindowExpired"
UNBOUNDED = "unbounded"


@dataclass(frozen=True)
class Announcement:
    """One Event due for one window: its reason, the run it is about, and its note."""

    window: str
    reason: str
    run: str
    note: str
    #: ``WindowEnded``: when the run ended (for its notification).
    end: int | None = None


class Announcer:
    """The memory of what this leadership term announced; see the module contract."""

    def __init__(self, lookback: int) -> None:
        self.lookback = lookback
        self._announced: dict[str, tuple[str, int | None]] = {}  # key -> (run, its end if known)
        self._caught_up: set[str] = set()
        self._planned: dict[str, int] = {}  # key -> the run start WindowPlanned announced
        self._expired: set[str] = set()

    def reset(self) -> None:
        """Forget everything: a new leadership term starts."""
        self._announced.clear()
        self._caught_up.clear()
        self._planned.clear()
        self._expired.clear()

    def leads(self, result: Plan) -> list[Announcement]:
        """The ``WindowPlanned`` announcements due for ``result`` (a plan with a planned lead)."""
        due: list[Announcement] = []
        for key, start in sorted(result.leads.items()):
            if self._planned.get(key) == start:
                continue
            self._planned[key] = start
            nodes = sum(
                1 for n in result.nodes if n.planned_start == start and key in n.planned_windows
            )
            note = (
                f"window {key} opens at {format_instant(start)}, within the "
                f"{format_go_duration(result.planned_lead)} lead: maintenance planned for "
                f"{nodes} node(s)"
            )
            due.append(Announcement(key, PLANNED, str(start), note))
        return due

    def step(self, result: Plan, windows: Mapping[str, Window], now: int) -> list[Announcement]:
        """The announcements due at ``now`` for ``result`` (the plan at ``now``)."""
        counts: dict[str, int] = {}
        for np in result.nodes:
            for key in (*np.windows, *np.freezes):
                counts[key] = counts.get(key, 0) + 1
        due: list[Announcement] = []
        for key, state in result.windows.items():
            w = windows.get(key)
            if w is None:
                continue
            announced = self._announced.get(key)
            if state.open:
                since = w.run_start(now)
                run = str(since) if since is not None else UNBOUNDED
                if announced is not None and announced[0] != run:
                    due.append(_ended(w, announced[0], announced[1] or now))
                if announced is None or announced[0] != run:
                    due.append(_started(w, since, state.closes, counts.get(key, 0), run))
                self._announced[key] = (run, state.closes)
            elif announced is not None:
                due.append(_ended(w, announced[0], announced[1] or now))
                del self._announced[key]
            elif key not in self._caught_up:
                due.extend(self._catch_up(w, now))
            self._caught_up.add(key)
        return due

    def expired(self, result: Plan, windows: Mapping[str, Window]) -> list[Announcement]:
        """``WindowExpired`` for each window of ``result`` that has ended, once per term.

        The loop names the Event by the ConfigMap's data, so a new leader finds it taken
        and a changed window (a later ``notAfter``) that ends again is announced again.
        """
        due: list[Announcement] = []
        for key, state in sorted(result.windows.items()):
            w = windows.get(key)
            if w is None or not state.ended or key in self._expired:
                continue
            self._expired.add(key)
            note = (
                f"window {key} has ended: {w.why_ended()}; it will never open again "
                "(kumaco does not delete ConfigMaps: delete it)"
            )
            due.append(Announcement(key, EXPIRED, "ended", note))
        return due

    def deleted(self, w: Window, now: int) -> Announcement | None:
        """The end of an announced run whose ConfigMap was deleted while it was open."""
        announced = self._announced.pop(w.key, None)
        if announced is None:
            return None
        run = announced[0]
        opened = format_instant(int(run)) if run.isdigit() else "(long ago)"
        note = (
            f"window {w.key} (opened at {opened}) ended early at {format_instant(now)}: "
            "the ConfigMap was deleted"
        )
        return Announcement(w.key, ENDED, run, note, now)

    def _catch_up(self, w: Window, now: int) -> list[Announcement]:
        """After a takeover: a run that ended while nobody led (at most once)."""
        last = None
        for iv in w.intervals(now - self.lookback, now):
            if now - self.lookback < iv.end <= now:
                last = iv
        return [] if last is None else [_ended(w, str(last.start), last.end)]


def _started(
    w: Window, since: int | None, closes: int | None, nodes: int, run: str
) -> Announcement:
    opened = format_instant(since) if since is not None else "(long ago)"
    until = format_instant(closes) if closes is not None else "no scheduled end"
    note = f"window {w.key} opened at {opened} for {nodes} node(s); closes at {until}"
    return Announcement(w.key, STARTED, run, note)


def _ended(w: Window, run: str, end: int) -> Announcement:
    opened = format_instant(int(run)) if run.isdigit() else "(long ago)"
    note = f"window {w.key} (opened at {opened}) ended at {format_instant(end)}"
    return Announcement(w.key, ENDED, run, note, end)
