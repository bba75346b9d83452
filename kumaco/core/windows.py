"""Maintenance windows: a window ConfigMap's ``data`` in, a validated window out.

Contract
--------
:func:`parse_window` never raises for bad user data: it returns either a
:class:`Window` or an :class:`InvalidWindow` whose ``errors`` name each bad key
and the reason. Every key is checked, so one ConfigMap reports all its
problems at once, and one bad ConfigMap never affects another.

The ConfigMap format (``data``):

``startTime`` (required)
    A cron schedule with robfig/cron v3 ``ParseStandard`` semantics
    (:mod:`kumaco.core.schedule`); UTC unless ``CRON_TZ=``/``TZ=`` or ``timeZone``.
``duration`` (required)
    A Go duration greater than zero (:mod:`kumaco.core.durations`).
``nodeSelector`` (required, may be empty)
    A Kubernetes label selector string (:mod:`kumaco.core.selectors`), or a
    metav1.LabelSelector in YAML or JSON (``matchLabels``/``matchExpressions``,
    :mod:`kumaco.core.labelselector`): a value that is a YAML/JSON mapping is a
    LabelSelector, anything else a selector string. Empty (``""``, ``{}``)
    selects every node in kumaco's scope. ``Window.selector_text`` is the string
    as written, or for a LabelSelector the equivalent selector string
    (``LabelSelectorAsSelector(...).String()``).
``timeZone`` (optional)
    An IANA zone, as a CronJob's ``spec.timeZone``; an error together with a
    ``CRON_TZ=``/``TZ=`` prefix.
``maxInProgress`` (optional)
    This window's budget: ``N`` or ``P%`` (of the nodes in scope it selects)
    nodes in progress at once among the nodes it selects
    (:mod:`kumaco.core.ceilings`); ``0`` pauses the window.
``freeze`` (optional)
    ``"true"`` makes the window a change freeze: while it is open on a node,
    that node is not under maintenance and nobody new is admitted there.
    Only ``"true"`` and ``"false"``; a freeze has no ``maxInProgress``.

Other keys are ignored (a ``description`` is welcome). ``binaryData`` is never
read. A value longer than :data:`MAX_VALUE_LENGTH` characters is rejected
before parsing.

Time arithmetic is on integer nanoseconds since the Unix epoch (an
"instant"); nothing here reads a clock. An occurrence firing at ``s`` is open
on ``[s, s + duration)``; overlapping or touching occurrences of one window
merge into one open interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from kumaco.core.ceilings import Ceiling, parse_ceiling
from kumaco.core.durations import SECOND, format_go_duration, parse_window_duration
from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.labelselector import LabelSelectorError, NotAMapping, read_label_selector
from kumaco.core.schedule import Schedule, parse_schedule
from kumaco.core.selectors import Selector, parse_selector
from kumaco.core.zones import load_zone

START_TIME = "startTime"
DURATION = "duration"
NODE_SELECTOR = "nodeSelector"
TIME_ZONE = "timeZone"
MAX_IN_PROGRESS = "maxInProgress"
FREEZE = "freeze"
REQUIRED_KEYS = (START_TIME, DURATION, NODE_SELECTOR)
KNOWN_KEYS = (*REQUIRED_KEYS, TIME_ZONE, MAX_IN_PROGRESS, FREEZE)
MAX_VALUE_LENGTH = 4096

#: How far ahead a run's firings are followed. At instant ``t`` the run open at
#: ``t`` is followed through its chained firings up to the end of the UTC hour
#: after ``t``'s hour: if it ends there (no firing chains on past that), its end
#: is reported (``closes``); if it is still chained to a later firing, the run
#: has "no end in sight" (``closes`` None) and the answer is looked at again
#: (``recheck``) at the next full hour. A window that fires more often than it
#: lasts (``* * * * *`` for ``2m``) never closes; this bounds the work to two
#: hours of firings and keeps the answer a pure function of ``t`` -- the same
#: for every instant of an hour.
HORIZON = 3600 * SECOND
#: How many chained firings a look-ahead follows at most (``intervals(..., lookahead)``).
MAX_FOLLOW = 20_000
YEAR = 365 * 24 * 3600 * SECOND
#: How many jumps back (each up to one duration) to find where a run began;
#: past that its start is unknown (None).
MAX_WALK = 256
#: Longest message kept for one key: the parsers quote Go's and the API
#: server's wording in full, which for a selector with several bad values runs
#: to thousands of characters; a window's message is one printable line.
MAX_MESSAGE_LENGTH = 900


@dataclass(frozen=True)
class FieldError:
    """One problem with one key of a window ConfigMap."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


@dataclass(frozen=True)
class InvalidWindow:
    """A window ConfigMap that kumaco ignores, and why."""

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
    #: Memoised answers (pure: a function of the immutable fields above).
    _memo: dict[str, tuple[int, WindowState, int | None]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    _starts: dict[tuple[str, int], int | None] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def zone_name(self) -> str:
        return self.schedule.zone_name

    def _next_fire(self, after: int) -> int | None:
        """First firing instant (ns) strictly after instant ``after`` (ns)."""
        fire = self.schedule.next_fire(after // SECOND)
        return None if fire is None else fire * SECOND

    def _fire_at_or_after(self, t: int) -> int | None:
        """First firing instant (ns) at or after instant ``t`` (ns)."""
        fire = self.schedule.next_fire(-(-t // SECOND) - 1)
        return None if fire is None else fire * SECOND

    def _last_fire_at_or_before(self, t: int, fire: int) -> int:
        """The latest firing at or before ``t``, given one: a binary search on robfig's Next."""
        lo, hi = fire // SECOND, t // SECOND  # lo is a firing <= hi
        while True:
            nxt = self.schedule.next_fire(lo)
            if nxt is None or nxt > hi:
                return lo * SECOND
            mid = (nxt + hi) // 2
            probe = self.schedule.next_fire(mid) if mid > nxt else None
            if probe is not None and probe <= hi:
                lo = probe  # a later firing still <= hi
            elif mid > nxt:
                hi = mid  # no firing in (mid, hi]
            else:
                lo = nxt

    def _run_end(self, last: int, limit: int, max_steps: int | None = None) -> tuple[int, bool]:
        """Follow the run from its firing ``last`` through firings up to ``limit``.

        Occurrences that overlap or touch it extend it. The flag says whether
        the end found is the run's real end: False when the run is still chained
        to a firing beyond ``limit``. The answer does not depend on which firing
        of the run the search starts from (each run is followed to the same
        firings), so it is the same for every instant of the run.
        """
        end = last + self.duration
        fire = self._next_fire(last)
        steps = 0
        while fire is not None and fire <= end:
            steps += 1
            if fire > limit or (max_steps is not None and steps > max_steps):
                return end, False
            end = fire + self.duration
            fire = self._next_fire(fire)
        return end, True

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

    def state_at(self, t: int) -> WindowState:
        """Whether the window is open at instant ``t``, and until when (or when it opens).

        A pure function of ``t`` (see :data:`HORIZON`), memoised for the span
        over which it holds.
        """
        memo = self._memo.get("state")
        if memo is not None and memo[0] <= t and (memo[2] is None or t < memo[2]):
            return memo[1]
        covering = self._next_fire(t - self.duration)  # open iff some firing s has t - d < s <= t
        if covering is None or covering > t:
            state = WindowState(open=False, opens=covering)
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
        self._memo["state"] = (t, state, state.next_change)
        return state

    def intervals(self, start: int, end: int, lookahead: int = 0) -> Iterator[Interval]:
        """Merged open intervals intersecting ``[start, end)``, in order.

        The first may begin before ``start`` (at its run start, or at the
        firing covering ``start`` when the run began beyond :data:`MAX_WALK`
        jumps); the last may end after ``end`` (reported at least up to
        ``end``). With a ``lookahead``, a run still chained at ``end`` is
        followed up to ``end + lookahead`` (and :data:`MAX_FOLLOW` firings) to
        find its real end; if it has none there it is marked ``open_ended``.
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
            run_end, ended = self._run_end(origin, end)
            if not ended and lookahead:
                run_end, ended = self._run_end(origin, end + lookahead, MAX_FOLLOW)
            follow_from = None
            yield Interval(first, run_end, open_ended=bool(lookahead) and not ended)
            if lookahead and not ended:
                return  # it never closes (within the look-ahead): nothing follows it
            first = self._next_fire(run_end)

    def never_closes(self, t: int, within: int = YEAR) -> bool:
        """Whether the run open at ``t`` (or the next one) chains on for longer than ``within``.

        Such a window keeps its nodes under maintenance for good: its occurrences
        follow each other without a gap (``*/5 * * * *`` for ``10m``, ``0 0 1 1 *``
        for ``9000h``).
        """
        first = next(self.intervals(t, t + 1, lookahead=within), None)
        return first is not None and first.open_ended

    def describe(self) -> str:
        """Return a one-line human description of the window."""
        sel = self.selector_text or "every node in scope"
        span = format_go_duration(self.duration)
        kind = "freeze " if self.freeze else ""
        budget = f", at most {self.budget} in progress" if self.budget is not None else ""
        return f"{kind}{self.start_time!r} ({self.zone_name}) for {span}, nodes: {sel}{budget}"


def _reason(exc: InvalidInput) -> str:
    """A parser's reason as one printable line of at most :data:`MAX_MESSAGE_LENGTH` characters."""
    text = exc.reason
    if not text.isprintable():
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    if len(text) > MAX_MESSAGE_LENGTH:
        cut = f"... ({len(text)} characters, cut)"
        text = text[: MAX_MESSAGE_LENGTH - len(cut)] + cut
    return text


def yaml_type_name(value: object) -> str:
    """Name a decoded value's type in the words of YAML/JSON, not Python."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _string_value(data: Mapping[str, object], key: str, errors: list[FieldError]) -> str | None:
    if key not in data:
        hint = next((k for k in data if isinstance(k, str) and k.lower() == key.lower()), None)
        errors.append(
            FieldError(
                key, "is missing" + (f" (found {hint!r}: keys are case-sensitive)" if hint else "")
            )
        )
        return None
    value = data[key]
    if not isinstance(value, str):
        errors.append(FieldError(key, f"must be a string, got {yaml_type_name(value)}"))
        return None
    if len(value) > MAX_VALUE_LENGTH:
        errors.append(
            FieldError(
                key, f"is {len(value)} characters long; at most {MAX_VALUE_LENGTH} are accepted"
            )
        )
        return None
    return value


_DOW_FIELD = 4


def _start_time_hint(text: str, reason: str) -> str:
    """The fix for a schedule mistake a person is likely to make, or ''."""
    fields = text.split()
    prefix = fields[0].partition("=")[0] if fields and "=" in fields[0] else ""
    if prefix and prefix.upper() in ("CRON_TZ", "TZ") and prefix not in ("CRON_TZ", "TZ"):
        zone = fields[0].partition("=")[2]
        return f"the zone prefix is case-sensitive: write {prefix.upper()}={zone}"
    if "found 6" in reason and fields and not prefix:
        return (
            "kumaco takes 5 fields, without seconds (minute hour day-of-month month "
            "day-of-week); drop the first field if it is seconds"
        )
    dow = fields[_DOW_FIELD] if len(fields) == 5 else ""
    if reason.startswith("day of week: 7 is above the maximum 6") or (
        "day of week" in reason and "7" in dow
    ):
        return "robfig has no 7 for Sunday: use 0 or SUN"
    if "day of week" in reason and dow.lower().endswith("sun") and "-" in dow:
        return "a range cannot wrap past Saturday: write mon-sat,sun or 0,1-6"
    if any(q in text for q in ("L", "W", "#")) and "is not a number" in reason:
        return "Quartz's L, W and # are not supported by robfig's cron"
    return ""


def _duration_hint(text: str, reason: str) -> str:
    """The fix for a duration mistake a person is likely to make, or ''."""
    stripped = text.strip().lower()
    if stripped.endswith(("d", "w")) and stripped[:-1].replace(".", "").isdigit():
        n = float(stripped[:-1]) * (24 if stripped.endswith("d") else 168)
        return f"Go durations have no days or weeks: write {n:g}h"
    if " " in text:
        return "no spaces: write e.g. 1h30m"
    if "missing unit" in reason:
        return "add a unit: s, m or h (e.g. 90m)"
    if any(c.isupper() for c in text):
        return "units are lower case: ns, us, ms, s, m, h"
    return ""


def _with_hint(message: str, hint: str) -> str:
    return f"{message}; {hint}" if hint else message


def _parse_start_time(start_time: str | None, errors: list[FieldError]) -> Schedule | None:
    if start_time is None:
        return None
    if not start_time.strip():
        errors.append(FieldError(START_TIME, "is empty"))
        return None
    try:
        return parse_schedule(start_time)
    except InvalidInput as exc:
        reason = _reason(exc)
        errors.append(
            FieldError(START_TIME, _with_hint(reason, _start_time_hint(start_time, reason)))
        )
        return None


def _apply_zone(
    schedule: Schedule | None, zone_text: str | None, errors: list[FieldError]
) -> Schedule | None:
    """The schedule in ``timeZone`` (if given); the zone is checked even without a schedule."""
    if zone_text is None:
        return schedule
    if zone_text == "":
        errors.append(FieldError(TIME_ZONE, "is empty; remove the key to use UTC"))
        return schedule
    if schedule is not None and schedule.prefix_zone is not None:
        errors.append(
            FieldError(
                TIME_ZONE,
                "cannot be combined with the zone prefix in startTime "
                f"({schedule.prefix_zone!r}); use one of them",
            )
        )
        return None
    try:
        if schedule is not None:
            return schedule.in_zone(zone_text)
        load_zone(zone_text)  # startTime is missing or invalid: the zone is still checked
    except InvalidInput as exc:
        errors.append(FieldError(TIME_ZONE, _reason(exc)))
    return None


def _parse_duration(duration_text: str | None, errors: list[FieldError]) -> int | None:
    if duration_text is None:
        return None
    if duration_text == "":
        errors.append(FieldError(DURATION, "is empty"))
        return None
    try:
        return parse_window_duration(duration_text)
    except InvalidInput as exc:
        reason = _reason(exc)
        errors.append(
            FieldError(DURATION, _with_hint(reason, _duration_hint(duration_text, reason)))
        )
        return None


def _parse_node_selector(
    selector_text: str | None, errors: list[FieldError]
) -> tuple[Selector, str] | None:
    """The selector and its human-readable text (a LabelSelector's equivalent string)."""
    if selector_text is None:
        return None
    if "\x00" in selector_text:
        # The API server's lexer stops at a NUL: "\0zone=a" would select every node.
        errors.append(
            FieldError(NODE_SELECTOR, f"{excerpt(selector_text)} contains a NUL character")
        )
        return None
    try:
        found = read_label_selector(selector_text)
    except LabelSelectorError as exc:
        where = f" (at {exc.where})" if exc.where and exc.where not in exc.reason else ""
        message = _reason(exc) + where
        errors.append(FieldError(NODE_SELECTOR, f"LabelSelector: {_with_hint(message, exc.fix)}"))
        return None
    if not isinstance(found, NotAMapping):
        return found, str(found)
    try:
        return parse_selector(selector_text), selector_text
    except InvalidInput as exc:
        hint = ""
        if found.problem:
            hint = (
                f"read as a selector string, since as a LabelSelector it is {found.problem}; "
                "write a selector string (zone=a) or a LabelSelector map "
                "(matchLabels: {zone: a})"
            )
        errors.append(FieldError(NODE_SELECTOR, _with_hint(_reason(exc), hint)))
        return None


def _parse_policy_keys(
    data: Mapping[str, object], errors: list[FieldError]
) -> tuple[bool, Ceiling | None]:
    """``freeze`` and ``maxInProgress``: a freeze flag and the window's budget."""
    freeze = False
    if FREEZE in data:
        text = _string_value(data, FREEZE, errors)
        if text is not None:
            if text not in ("true", "false"):
                errors.append(FieldError(FREEZE, f'{excerpt(text)} is neither "true" nor "false"'))
            freeze = text == "true"
    budget: Ceiling | None = None
    if MAX_IN_PROGRESS in data:
        text = _string_value(data, MAX_IN_PROGRESS, errors)
        if text is not None:
            try:
                budget = parse_ceiling(text)
            except InvalidInput as exc:
                errors.append(FieldError(MAX_IN_PROGRESS, _reason(exc)))
            if freeze:
                errors.append(
                    FieldError(
                        MAX_IN_PROGRESS, "a freeze admits nobody; remove maxInProgress or freeze"
                    )
                )
    return freeze, budget


def parse_window(
    namespace: str,
    name: str,
    data: object,
    *,
    has_binary_data: bool = False,
) -> Window | InvalidWindow:
    """Validate one window ConfigMap's ``data``; never raises for bad data."""
    if data is None or not isinstance(data, Mapping):
        note = " (binaryData is not read)" if has_binary_data else ""
        if data is not None:
            note = f" (data must be a map of strings, got {yaml_type_name(data)})"
        return InvalidWindow(
            namespace, name, tuple(FieldError(k, "is missing" + note) for k in REQUIRED_KEYS)
        )
    errors: list[FieldError] = []
    start_time = _string_value(data, START_TIME, errors)
    duration_text = _string_value(data, DURATION, errors)
    selector_text = _string_value(data, NODE_SELECTOR, errors)
    zone_text = _string_value(data, TIME_ZONE, errors) if TIME_ZONE in data else None

    schedule = _apply_zone(_parse_start_time(start_time, errors), zone_text, errors)
    if schedule is not None and schedule.never_fires:
        errors.append(
            FieldError(START_TIME, f"{excerpt(start_time or '')} never fires (no date matches it)")
        )
    duration = _parse_duration(duration_text, errors)
    parsed_selector = _parse_node_selector(selector_text, errors)
    selector, shown_selector = parsed_selector if parsed_selector else (None, None)
    freeze, budget = _parse_policy_keys(data, errors)

    if errors or schedule is None or duration is None or selector is None:
        order = {k: i for i, k in enumerate(KNOWN_KEYS)}
        errors.sort(key=lambda e: order.get(e.key, len(order)))
        return InvalidWindow(namespace, name, tuple(errors))
    assert start_time is not None
    assert duration_text is not None
    assert shown_selector is not None
    return Window(
        namespace=namespace,
        name=name,
        schedule=schedule,
        duration=duration,
        selector=selector,
        start_time=start_time,
        duration_text=duration_text,
        selector_text=shown_selector,
        freeze=freeze,
        budget=budget,
    )


# ---------------------------------------------------------------------------
# Occurrences in a range


@dataclass(frozen=True, order=True)
class Occurrence:
    """One merged open interval of one window."""

    start: int
    namespace: str
    name: str
    end: int
    #: Still chained at ``end`` after the look-ahead: it never closes (or not within it).
    open_ended: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def occurrences(
    windows: Iterable[Window], start: int, until: int, limit: int, lookahead: int = 0
) -> tuple[list[Occurrence], bool]:
    """Open intervals intersecting ``[start, until)``, sorted; and whether ``limit`` cut them.

    With a ``lookahead``, an occurrence still running at ``until`` is followed that much
    further for its real end, and marked open-ended if it has none there.
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
            found.append(Occurrence(iv.start, w.namespace, w.name, iv.end, iv.open_ended))
    found.sort()
    if len(found) > limit:
        found, truncated = found[:limit], True
    return found, truncated
