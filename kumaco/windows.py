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
    (:mod:`kumaco.schedule`); UTC unless ``CRON_TZ=``/``TZ=`` or ``timeZone``.
``duration`` (required)
    A Go duration greater than zero (:mod:`kumaco.durations`).
``nodeSelector`` (required, may be empty)
    A Kubernetes label selector (:mod:`kumaco.selectors`); empty selects
    every node in kumaco's scope.
``timeZone`` (optional)
    An IANA zone, as a CronJob's ``spec.timeZone``; an error together with a
    ``CRON_TZ=``/``TZ=`` prefix.

Other keys are ignored (a ``description`` is welcome). ``binaryData`` is never
read. A value longer than :data:`MAX_VALUE_LENGTH` characters is rejected
before parsing.

Time arithmetic is on integer nanoseconds since the Unix epoch (an
"instant"); nothing here reads a clock. An occurrence firing at ``s`` is open
on ``[s, s + duration)``; overlapping or touching occurrences of one window
merge into one open interval.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kumaco.durations import SECOND, format_go_duration, parse_window_duration
from kumaco.errors import InvalidInput, excerpt
from kumaco.schedule import Schedule, parse_schedule
from kumaco.selectors import Selector, parse_selector

START_TIME = "startTime"
DURATION = "duration"
NODE_SELECTOR = "nodeSelector"
TIME_ZONE = "timeZone"
REQUIRED_KEYS = (START_TIME, DURATION, NODE_SELECTOR)
KNOWN_KEYS = (*REQUIRED_KEYS, TIME_ZONE)
MAX_VALUE_LENGTH = 4096

#: Bound on how many successive occurrences are chained when merging. A window
#: that fires more often than it lasts (``* * * * *`` for ``2h``) is open
#: continuously; past this bound the computed close is a lower bound, and the
#: caller simply re-evaluates then and finds the window still open.
MAX_CHAIN = 2048


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
    """A half-open span of time ``[start, end)`` in instants (ns)."""

    start: int
    end: int

    def contains(self, t: int) -> bool:
        return self.start <= t < self.end


@dataclass(frozen=True)
class WindowState:
    """A window at one instant: open (until ``closes``) or closed (until ``opens``).

    ``opens`` is ``None`` when the schedule has no further firing within
    robfig's five-year horizon.
    """

    open: bool
    since: int | None = None
    closes: int | None = None
    opens: int | None = None

    @property
    def next_change(self) -> int | None:
        return self.closes if self.open else self.opens


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

    def _run_end(self, first: int, limit: int) -> int:
        """End of the merged run that starts with the firing at ``first``.

        Occurrences that overlap or touch the run extend it. After
        :data:`MAX_CHAIN` occurrences the chaining stops once the end passes
        ``limit``, so the result is exact up to ``limit`` and never before it.
        """
        end = first + self.duration
        fire = self._next_fire(first)
        chained = 0
        while fire is not None and fire <= end:
            end = max(end, fire + self.duration)
            chained += 1
            if chained >= MAX_CHAIN and end > limit:
                break
            fire = self._next_fire(fire)
        return end

    def _run_start(self, fire: int) -> int:
        """Walk back from ``fire`` over earlier occurrences that overlap or touch it (bounded)."""
        for _ in range(MAX_CHAIN):
            earlier = self._fire_at_or_after(fire - self.duration)
            if earlier is None or earlier >= fire:
                break
            fire = earlier
        return fire

    def state_at(self, t: int) -> WindowState:
        """Whether the window is open at instant ``t``, since and until when (or when it opens)."""
        covering = self._next_fire(t - self.duration)  # open iff some firing s has t - d < s <= t
        if covering is not None and covering <= t:
            return WindowState(
                open=True, since=self._run_start(covering), closes=self._run_end(covering, t)
            )
        return WindowState(open=False, opens=covering)

    def intervals(self, start: int, end: int) -> Iterator[Interval]:
        """Merged open intervals intersecting ``[start, end)``, in order.

        The first may begin before ``start``; the last may end after ``end``
        (reported at least up to ``end``).
        """
        state = self.state_at(start)
        first = state.since if state.open else self._fire_at_or_after(start)
        while first is not None and first < end:
            run_end = self._run_end(first, end)
            yield Interval(first, run_end)
            first = self._next_fire(run_end)

    def describe(self) -> str:
        """Return a one-line human description of the window."""
        sel = self.selector_text or "every node in scope"
        span = format_go_duration(self.duration)
        return f"{self.start_time!r} ({self.zone_name}) for {span}, nodes: {sel}"


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


def parse_window(
    namespace: str,
    name: str,
    data: Mapping[str, object] | None,
    *,
    has_binary_data: bool = False,
) -> Window | InvalidWindow:
    """Validate one window ConfigMap's ``data``; never raises for bad data."""
    errors: list[FieldError] = []
    if data is None or not isinstance(data, Mapping):
        note = " (binaryData is not read)" if has_binary_data else ""
        if data is not None:
            note = f" (data must be a map of strings, got {yaml_type_name(data)})"
        return InvalidWindow(
            namespace, name, tuple(FieldError(k, "is missing" + note) for k in REQUIRED_KEYS)
        )

    start_time = _string_value(data, START_TIME, errors)
    duration_text = _string_value(data, DURATION, errors)
    selector_text = _string_value(data, NODE_SELECTOR, errors)
    zone_text: str | None = None
    if TIME_ZONE in data:
        zone_text = _string_value(data, TIME_ZONE, errors)

    schedule: Schedule | None = None
    if start_time is not None:
        if not start_time.strip():
            errors.append(FieldError(START_TIME, "is empty"))
        else:
            try:
                schedule = parse_schedule(start_time)
            except InvalidInput as exc:
                errors.append(FieldError(START_TIME, exc.reason))
    if zone_text is not None:
        if zone_text == "":
            errors.append(FieldError(TIME_ZONE, "is empty; remove the key to use UTC"))
        elif schedule is not None and schedule.prefix_zone is not None:
            errors.append(
                FieldError(
                    TIME_ZONE,
                    "cannot be combined with the zone prefix in startTime "
                    f"({schedule.prefix_zone!r}); use one of them",
                )
            )
            schedule = None
        elif schedule is not None:
            try:
                schedule = schedule.in_zone(zone_text)
            except InvalidInput as exc:
                errors.append(FieldError(TIME_ZONE, exc.reason))
                schedule = None
    if schedule is not None and schedule.never_fires:
        errors.append(
            FieldError(START_TIME, f"{excerpt(start_time or '')} never fires (no date matches it)")
        )

    duration: int | None = None
    if duration_text is not None:
        if duration_text == "":
            errors.append(FieldError(DURATION, "is empty"))
        else:
            try:
                duration = parse_window_duration(duration_text)
            except InvalidInput as exc:
                errors.append(FieldError(DURATION, exc.reason))

    selector: Selector | None = None
    if selector_text is not None:
        try:
            selector = parse_selector(selector_text)
        except InvalidInput as exc:
            errors.append(FieldError(NODE_SELECTOR, exc.reason))

    if errors or schedule is None or duration is None or selector is None:
        order = {k: i for i, k in enumerate(KNOWN_KEYS)}
        errors.sort(key=lambda e: order.get(e.key, len(order)))
        return InvalidWindow(namespace, name, tuple(errors))
    assert start_time is not None
    assert duration_text is not None
    assert selector_text is not None
    return Window(
        namespace=namespace,
        name=name,
        schedule=schedule,
        duration=duration,
        selector=selector,
        start_time=start_time,
        duration_text=duration_text,
        selector_text=selector_text,
    )
