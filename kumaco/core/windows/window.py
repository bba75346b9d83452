"""Maintenance windows: a valid window, an invalid one, and when a window is open.

Contract
--------
A :class:`Window` is a valid window (:func:`kumaco.core.windows.format.parse_window`
makes one from a ConfigMap's ``data``, or an :class:`InvalidWindow` whose
:class:`FieldError` items name each bad key). :meth:`Window.state_at` answers
whether the window is open at an instant and until when (or when it opens),
:meth:`Window.intervals` and :func:`occurrences` list its open intervals in a
range, :meth:`Window.run_start` says when the run open at an instant began and
:meth:`Window.never_closes` whether it ever ends; every answer is a pure
function of the window and the instants asked about (memoised where that pays).

Time arithmetic is on integer nanoseconds since the Unix epoch (an
"instant"); nothing here reads a clock. An occurrence firing at ``s`` is open
on ``[s, s + duration)``; overlapping or touching occurrences of one window
merge into one open interval. The firings are robfig's, kept only on the window's
``daysOfMonth`` when it has them (:mod:`kumaco.core.windows.days_of_month`), always
asked through :meth:`Window._fire`. A run's end is the firing-by-firing follower's,
found with about two firings asked per day of the run (:meth:`Window._run_end`); a
run still chained a :data:`YEAR` after it began never closes.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kumaco.core.labels.selectors import Selector
from kumaco.core.time.durations import SECOND, format_go_duration
from kumaco.core.time.instants import format_instant
from kumaco.core.time.schedule import Schedule
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.days_of_month import next_on_days

#: How far ahead the controller follows a run (:meth:`Window.state_at`). At instant
#: ``t`` the run open at ``t`` is followed through its chained firings up to the end of
#: the UTC hour after ``t``'s hour: if it ends there (no firing chains on past that),
#: its end is reported (``closes``); if it is still chained to a later firing, the run
#: has "no end in sight" (``closes`` None) and the answer is looked at again
#: (``recheck``) at the next full hour. This keeps the answer a pure function of ``t``
#: -- the same for every instant of an hour.
HORIZON = 3600 * SECOND
#: How long a run may chain before it counts as never closing: a run still chained one
#: year after it began (:meth:`Window.intervals` with a ``lookahead``,
#: :meth:`Window.never_closes`) is open-ended. ``*/5 * * * *`` for ``10m`` and ``0 0 1 1
#: *`` for ``9000h`` chain forever; ``* * * 12 *`` for ``1m`` (44,640 chained firings)
#: ends on January 1st, found with about two firings asked per day of the run
#: (:meth:`Window._run_end`), however long the range asked.
YEAR = 365 * 24 * 3600 * SECOND
#: robfig's search horizon (``Next`` gives up five years ahead), a little short of it.
FIVE_YEARS = 5 * YEAR
#: How many jumps back (each up to one duration) to find where a run began;
#: past that its start is unknown (None).
MAX_WALK = 256
_MINUTE_S = 60
_DAY_S = 86400


@functools.lru_cache(maxsize=256)
def _blocks(
    hours: int, minutes: int, duration: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The minutes of a day a schedule fires at, in blocks that chain at ``duration``.

    Returns the first and the last minute of each block, and every minute (sorted
    tuples): consecutive firing minutes of a day more than ``duration`` apart start a
    new block. While the UTC offset stays the same, a schedule fires at every minute of
    a day its hour and minute fields match, or at none (robfig's day, month and weekday
    fields, and ``daysOfMonth``, choose whole days).
    """
    fires = [h * 60 + m for h in range(24) if hours >> h & 1 for m in range(60) if minutes >> m & 1]
    firsts, lasts = [], []
    for n, minute in enumerate(fires):
        if n == 0 or (minute - fires[n - 1]) * _MINUTE_S * SECOND > duration:
            firsts.append(minute)
            if n:
                lasts.append(fires[n - 1])
    if fires:
        lasts.append(fires[-1])
    return tuple(firsts), tuple(lasts), tuple(fires)


@dataclass(frozen=True)
class FieldError:
    """One problem with one key of a window ConfigMap."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


class ConfigMapErrors:
    """What a window ConfigMap's answers share: its ``namespace/name`` and its errors on one line.

    A mixin for frozen dataclasses with ``namespace``, ``name`` and ``errors`` fields.
    """

    namespace: str
    name: str
    errors: tuple[FieldError, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def reason(self) -> str:
        """All errors on one line, the first key first."""
        return "; ".join(str(e) for e in self.errors)


@dataclass(frozen=True)
class InvalidWindow(ConfigMapErrors):
    """A window ConfigMap that kumaco ignores, and why."""

    namespace: str
    name: str
    errors: tuple[FieldError, ...]


@dataclass(frozen=True)
class Interval:
    """A half-open span of time ``[start, end)`` in instants (ns).

    ``open_ended``: the run is still chained to further occurrences at ``end``
    (it does not close within the look-ahead it was followed for).
    """

    start: int
    end: int
    open_ended: bool = False

    def contains(self, t: int) -> bool:
        return self.start <= t < self.end


@dataclass(frozen=True)
class WindowState:
    """A window at one instant: open (until ``closes``) or closed (until ``opens``).

    Open: ``closes`` is when the run of merged occurrences ends, or None when
    that lies beyond the :data:`HORIZON`; then ``recheck`` is the instant to
    look again. Closed: ``opens`` is None when the schedule
    has no further firing within robfig's five-year horizon. Where the run
    began is a separate question: :meth:`Window.run_start`.
    """

    open: bool
    closes: int | None = None
    opens: int | None = None
    recheck: int | None = None
    #: Closed for good: its dates (a one-shot ``startTime``, ``notAfter``) leave no
    #: occurrence to come (:meth:`Window.ended`).
    ended: bool = False

    @property
    def next_change(self) -> int | None:
        """When the answer may change next (strictly after the instant asked about)."""
        if self.open:
            return self.closes if self.closes is not None else self.recheck
        return self.opens


@dataclass(frozen=True)
class Window:
    """A valid maintenance window."""

    namespace: str
    name: str
    schedule: Schedule
    duration: int
    selector: Selector
    start_time: str
    duration_text: str
    selector_text: str
    #: A change freeze: open, it takes nodes out of maintenance instead of into it.
    freeze: bool = False
    #: The window's own ceiling (``maxInProgress``), if any.
    budget: Ceiling | None = None
    #: ``daysOfMonth``: the days (bit ``d`` for day ``d``) an occurrence may start on, in
    #: the window's zone, with AND (:mod:`kumaco.core.windows.days_of_month`); 0: every day.
    days: int = 0
    days_text: str = ""
    #: A one-shot window: its only occurrence starts at this instant (Unix seconds), and
    #: ``schedule`` only carries its zone (it never fires).
    once: int | None = None
    #: ``notBefore``/``notAfter`` (Unix seconds): a recurring window's occurrences count
    #: only when they start in ``[not_before, not_after)``; the texts as written.
    not_before: int | None = None
    not_after: int | None = None
    not_before_text: str = ""
    not_after_text: str = ""
    #: Memoised answers (pure: a function of the immutable fields above).
    _memo: dict[str, tuple[int, WindowState, int | None]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    _starts: dict[tuple[str, int], int | None] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    _runs: list[tuple[int, int, tuple[Interval, ...]]] = field(
        default_factory=list, compare=False, repr=False, hash=False
    )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def zone_name(self) -> str:
        return self.schedule.zone_name

    @property
    def dated(self) -> bool:
        """Whether the window's dates end it: a one-shot ``startTime`` or a ``notAfter``."""
        return self.once is not None or self.not_after is not None

    def why_ended(self) -> str:
        """Why the window has ended (asked of one whose :meth:`ended` is true).

        ``its one occurrence (2027-01-15T01:00:00Z) is over``, or ``no occurrence starts
        before its notAfter 2027-02-01 (2027-01-31T23:00:00Z)``.
        """
        if self.once is not None:
            return f"its one occurrence ({format_instant(self.once * SECOND)}) is over"
        return (
            f"no occurrence starts before its notAfter {self.not_after_text} "
            f"({format_instant((self.not_after or 0) * SECOND)})"
        )

    def _fire(self, after: int) -> int | None:
        """First firing (Unix seconds) strictly after ``after``.

        robfig's, on ``days`` only, starting in ``[not_before, not_after)``; a one-shot
        window's single instant.
        """
        if self.once is not None:
            return self.once if self.once > after else None
        if self.not_before is not None and after < self.not_before - 1:
            after = self.not_before - 1  # the first firing at or after notBefore
        if self.days:
            fire = next_on_days(self.schedule, self.days, after)
        else:
            fire = self.schedule.next_fire(after)
        if fire is not None and self.not_after is not None and fire >= self.not_after:
            return None
        return fire

    def ended(self, t: int) -> bool:
        """Whether the window is closed at instant ``t`` and its dates leave no occurrence to come.

        A one-shot window has ended once its occurrence closed; a bounded one once no
        firing is left before ``notAfter``. robfig looks five years ahead at most, so a
        ``notAfter`` further away than that never counts as ended before it is near.
        """
        if not self.dated:
            return False
        covering = self._next_fire(t - self.duration)
        if covering is not None:
            return False  # open at t, or opening later
        if self.once is not None:
            return True
        assert self.not_after is not None
        return self.not_after * SECOND - t <= FIVE_YEARS

    def _next_fire(self, after: int) -> int | None:
        """First firing instant (ns) strictly after instant ``after`` (ns)."""
        fire = self._fire(after // SECOND)
        return None if fire is None else fire * SECOND

    def _fire_at_or_after(self, t: int) -> int | None:
        """First firing instant (ns) at or after instant ``t`` (ns)."""
        fire = self._fire(-(-t // SECOND) - 1)
        return None if fire is None else fire * SECOND

    def _last_fire_at_or_before(self, t: int, fire: int) -> int:
        """The latest firing at or before ``t``, given one: a binary search on robfig's Next."""
        lo, hi = fire // SECOND, t // SECOND  # lo is a firing <= hi
        while True:
            nxt = self._fire(lo)
            if nxt is None or nxt > hi:
                return lo * SECOND
            mid = (nxt + hi) // 2
            probe = self._fire(mid) if mid > nxt else None
            if probe is not None and probe <= hi:
                lo = probe  # a later firing still <= hi
            elif mid > nxt:
                hi = mid  # no firing in (mid, hi]
            else:
                lo = nxt

    def _block_end(self, fire: int) -> int | None:
        """The last firing of the block of firing ``fire`` on its day, if it is certain.

        While the UTC offset (of whole minutes) stays the same, the wall-clock minutes
        of a day from ``fire`` to the last minute of its block (:func:`_blocks`) each
        happen once, and the schedule fires at each: they chain at the window's
        duration. None where that is not certain: the block's end lies past a change of
        offset (daylight saving), an offset of whole seconds (the LMTs, where robfig's
        ``Next`` may pass firings), or ``fire`` off the schedule's minutes.
        """
        sec = fire // SECOND
        location = self.schedule.location
        offset, _begins, ends = location.lookup(sec)
        if offset % _MINUTE_S or fire % SECOND:
            return None
        day = (sec + offset) // _DAY_S * _DAY_S - offset  # local midnight at this offset (UTC)
        firsts, lasts, fires = _blocks(self.schedule.hour, self.schedule.minute, self.duration)
        minute, rest = divmod(sec - day, _MINUTE_S)
        n = bisect.bisect_right(firsts, minute) - 1
        if rest or n < 0 or minute > lasts[n]:
            return None
        last = lasts[n]
        while ends <= day + last * _MINUTE_S:  # the offset's span may end on the day
            following, _, further = location.lookup(ends)
            if following != offset:  # a change of offset: the block up to it
                before = bisect.bisect_right(fires, (ends - 1 - day) // _MINUTE_S)
                last = min(last, fires[before - 1])  # fire's own minute is before the change
                break
            ends = further
        return (day + last * _MINUTE_S) * SECOND if last > minute else None

    def _run_end(self, last: int, limit: int) -> tuple[int, bool]:
        """Follow the run from its firing ``last`` through firings up to ``limit``.

        Occurrences that overlap or touch it extend it: the run ends at the first
        firing ``g`` whose next firing comes more than one duration after it (at ``g``
        plus the duration). The flag says whether the end found is the run's real end:
        False when the run is still chained to a firing beyond ``limit`` (the end is then
        the latest firing at or before ``limit`` plus the duration). The answer does not
        depend on which firing of the run the search starts from, so it is the same for
        every instant of the run.

        It is the firing-by-firing follower's answer, without asking for every firing:
        on a plain day it jumps to the last firing of a block (:meth:`_block_end`) once
        that is seen to fire (a window whose firings stop, by a date, stops a block
        short and is followed firing by firing), then asks for the next firing; so a
        run costs about two firings asked per block per day.
        """
        fire, d = last, self.duration
        while True:
            target = self._block_end(fire)
            if target is not None and target > fire:
                if target > limit:
                    fire = self._last_fire_at_or_before(limit, fire)
                elif self._next_fire(target - SECOND) == target:
                    fire = target
            nxt = self._next_fire(fire)
            if nxt is None or nxt > fire + d:
                return fire + d, True
            if nxt > limit:
                return fire + d, False
            fire = nxt

    def firings(self, start: int, until: int, limit: int = 64) -> list[int]:
        """The instants the window's occurrences start at in ``[start, until)`` (at most ``limit``).

        robfig's firings, on ``daysOfMonth`` only when the window has it.
        """
        found: list[int] = []
        fire = self._fire_at_or_after(start)
        while fire is not None and fire < until and len(found) < limit:
            found.append(fire)
            fire = self._next_fire(fire)
        return found

    def run_start(self, t: int) -> int | None:
        """When the run open at ``t`` began, if within :data:`MAX_WALK` jumps back; None if closed.

        Each jump goes to the earliest firing within one duration before.
        Memoised by the covering firing (a pure function of ``t``).
        """
        covering = self._next_fire(t - self.duration)
        if covering is None or covering > t:
            return None
        key = ("start", covering)
        if key in self._starts:
            return self._starts[key]
        fire, found = covering, False
        for _ in range(MAX_WALK):
            earlier = self._fire_at_or_after(fire - self.duration)
            if earlier is None or earlier >= fire:
                found = True
                break
            fire = earlier
        if len(self._starts) > 64:
            self._starts.clear()
        self._starts[key] = fire if found else None
        return self._starts[key]

    def state_at(self, t: int, slot: str = "state") -> WindowState:
        """Whether the window is open at instant ``t``, and until when (or when it opens).

        A pure function of ``t`` (see :data:`HORIZON`), memoised for the span
        over which it holds; a caller that asks about a second instant every pass
        (the end of ``--planned-lead``) gives it a ``slot`` of its own.
        """
        memo = self._memo.get(slot)
        if memo is not None and memo[0] <= t and (memo[2] is None or t < memo[2]):
            return memo[1]
        covering = self._next_fire(t - self.duration)  # open iff some firing s has t - d < s <= t
        if covering is None or covering > t:
            state = WindowState(open=False, opens=covering, ended=self.ended(t))
        else:
            hour_end = (t // HORIZON + 1) * HORIZON
            end, ended = self._run_end(
                self._last_fire_at_or_before(t, covering), hour_end + HORIZON
            )
            if ended:
                state = WindowState(open=True, closes=end)
            else:
                state = WindowState(open=True, recheck=hour_end)
        # The same answer holds from t until its next change (earlier instants are asked afresh).
        self._memo[slot] = (t, state, state.next_change)
        return state

    def intervals(self, start: int, end: int, lookahead: int = 0) -> Iterator[Interval]:
        """Merged open intervals intersecting ``[start, end)``, in order.

        The first may begin before ``start`` (at its run start, or at the
        firing covering ``start`` when the run began beyond :data:`MAX_WALK`
        jumps); the last may end after ``end`` (reported at least up to
        ``end``). With a ``lookahead`` (:data:`YEAR`), a run still chained at
        ``end`` is followed to its real end if it has one within ``lookahead`` after
        its first firing reported, else marked ``open_ended`` (its ``end`` then where
        it was followed to): the same answer whatever ``end`` (the run's first firing
        is the one reported for every range that begins within :data:`MAX_WALK` jumps
        after it, or later than it began).
        """
        covering = self._next_fire(start - self.duration)
        follow_from: int | None = None
        if covering is not None and covering <= start:
            began = self.run_start(start)
            first: int | None = covering if began is None else began
            follow_from = self._last_fire_at_or_before(start, covering)
        else:
            first = self._fire_at_or_after(start)
        while first is not None and first < end:
            origin = first if follow_from is None else follow_from
            run_end, ended = self._run_end(origin, first + lookahead if lookahead else end)
            follow_from = None
            yield Interval(first, run_end, open_ended=bool(lookahead) and not ended)
            if lookahead and not ended:
                return  # it never closes (within the look-ahead): nothing follows it
            first = self._next_fire(run_end)

    def runs_within(self, start: int, end: int) -> tuple[Interval, ...]:
        """:meth:`intervals` of ``[start, end)`` that end after ``start``, memoised.

        For a span that slides forward (``--planned-lead``'s): computed for twice the span
        asked and reused while the span asked stays inside it.
        """
        memo = self._runs[0] if self._runs else None
        if memo is None or not (memo[0] <= start and end <= memo[1]):
            far = end + (end - start)
            memo = (start, far, tuple(self.intervals(start, far)))
            self._runs[:] = [memo]
        return tuple(iv for iv in memo[2] if iv.end > start and iv.start < end)

    def never_closes(self, t: int, within: int = YEAR) -> bool:
        """Whether the run open at ``t`` (or the next one) chains on for longer than ``within``.

        Such a window keeps its nodes under maintenance for good: its occurrences
        follow each other without a gap (``*/5 * * * *`` for ``10m``, ``0 0 1 1 *``
        for ``9000h``). A long run that ends within ``within`` of its start (``* * *
        12 *`` for ``1m``: all December) does close. The run is followed exactly
        (:meth:`_run_end`), whatever its length.
        """
        first = next(self.intervals(t, t + 1, lookahead=within), None)
        return first is not None and first.open_ended

    def run_close(self, t: int, within: int = YEAR) -> int | None:
        """When the run open at ``t`` closes, followed to its end (:meth:`_run_end`).

        None when the window is closed at ``t`` or the run never closes (still chained
        ``within`` after it began, :meth:`never_closes`). Unlike :meth:`state_at`'s
        ``closes`` (within :data:`HORIZON`), this is the run's close however far.
        """
        run = next(self.intervals(t, t + 1, lookahead=within), None)
        if run is None or run.open_ended or not run.contains(t):
            return None
        return run.end

    def describe(self) -> str:
        """Return a one-line human description of the window."""
        sel = self.selector_text or "every node in scope"
        span = format_go_duration(self.duration)
        kind = "freeze " if self.freeze else ""
        budget = f", at most {self.budget} in progress" if self.budget is not None else ""
        days = f" on days {self.days_text}" if self.days else ""
        once = " once" if self.once is not None else ""
        bounds = "".join(
            f", {word} {text}"
            for word, text in (
                ("not before", self.not_before_text),
                ("not after", self.not_after_text),
            )
            if text
        )
        return (
            f"{kind}{self.start_time!r}{once}{days} ({self.zone_name}) for {span}{bounds}, "
            f"nodes: {sel}{budget}"
        )


# ---------------------------------------------------------------------------
# Occurrences in a range


@dataclass(frozen=True, order=True)
class Occurrence:
    """One merged open interval of one window."""

    start: int
    namespace: str
    name: str
    #: Where it closes; for an open-ended one, the end of the range asked (``until``):
    #: it is open at least that long.
    end: int
    #: Still chained a look-ahead (a year) after it began: it never closes.
    open_ended: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def occurrences(
    windows: Iterable[Window], start: int, until: int, limit: int, lookahead: int = 0
) -> tuple[list[Occurrence], bool]:
    """Open intervals intersecting ``[start, until)``, sorted; and whether ``limit`` cut them.

    With a ``lookahead``, an occurrence still running at ``until`` is followed for its
    real end, up to ``lookahead`` after it began; if it has none there it is marked
    open-ended and ends at ``until`` (:meth:`Window.intervals`).
    """
    found: list[Occurrence] = []
    truncated = False
    for w in windows:
        for n, iv in enumerate(w.intervals(start, until, lookahead)):
            if iv.end <= start:
                continue
            if n >= limit:
                truncated = True
                break
            run_end = until if iv.open_ended else iv.end
            found.append(Occurrence(iv.start, w.namespace, w.name, run_end, iv.open_ended))
    found.sort()
    if len(found) > limit:
        found, truncated = found[:limit], True
    return found, truncated
