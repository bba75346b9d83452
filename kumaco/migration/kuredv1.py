"""kured v1's reboot schedule read exactly as kured reads it, and the windows that equal it.

Contract: pure (no I/O, no clock: ``now`` is passed in). :func:`parse_days` is kured's
``--reboot-days`` (its ``parseWeekdays``: a number 0-6 or a day name, any case, ``su`` to
``sunday``; empty items skipped); :func:`parse_clock` its ``--start-time`` and
``--end-time`` (Go's ``time.ParseInLocation`` with kured's layouts, tried in order:
:data:`LAYOUTS`). :func:`regexp_error` says why Go's ``regexp.Compile`` refuses an
``--alert-filter-regexp`` (only where Python's ``re`` agrees). :func:`weekly_intervals` is
the set of instants kured's ``TimeWindow.Contains`` accepts, as merged intervals of a week
of local time: on each reboot day, ``[start, end]`` -- kured's end is inclusive to the last
nanosecond of its second -- or, when the start is after the end (a window that crosses
midnight), the two ends of that same calendar day, ``[00:00, end]`` and ``[start, 24:00)``:
kured tests the day of the instant, not of the window's start. :func:`convert` turns kured's
flags into window specifications (a cron ``startTime``, a Go duration, the days) and the
flags of kumaco and of kured v2's ``reboot-inhibitors``, with a note for each difference in
meaning (and one for each flag of :data:`NO_EQUIVALENT` given) and a warning for what cannot
be kept exactly (a clock change only when it falls inside a window). Bad input raises
:class:`~kumaco.core.errors.InvalidInput` naming kured's flag.
"""

from __future__ import annotations

import re
import warnings as python_warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.golang import gostrconv
from kumaco.core.time import zones
from kumaco.core.time.durations import SECOND, format_go_duration
from kumaco.core.windows.daylight_saving import dst_notes
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window

DAY_SECONDS = 86_400
WEEK_SECONDS = 7 * DAY_SECONDS
#: How far ahead the zone's clock changes are looked at: a year (each rule once).
HORIZON_SECONDS = 366 * DAY_SECONDS
#: kured's ``parseTime`` layouts, in the order it tries them.
LAYOUTS = ("15:04", "15:04:05", "03:04pm", "15", "03pm", "3pm")
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_DAYS = {
    **{n: i for i, n in enumerate(("su", "mo", "tu", "we", "th", "fr", "sa"))},
    **{n.lower(): i for i, n in enumerate(DAY_NAMES)},
    **{
        n: i
        for i, n in enumerate(
            ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
        )
    },
}
#: How long a node kumaco released keeps its place while still cordoned or not Ready
#: (``--count-released-unavailable``; kustomize/components/kured-v2 sets the same).
RELEASED_UNAVAILABLE = "30m"
#: kured v2's condition names (kustomize/components/kured-v2), with kured v1's ceiling.
KURED_V2_FLAGS = (
    "--under-maintenance-condition=kured.dev/under-maintenance-window",
    "--in-progress-condition=kured.dev/maintenance-in-progress",
    "--require-condition=kured.dev/reboot-required",
    "--block-condition=kured.dev/reboot-inhibited",
    f"--count-released-unavailable={RELEASED_UNAVAILABLE}",
)
#: What the count of unavailable nodes keeps of kured v1, and why (always noted).
UNAVAILABLE_NOTE = (
    "kured v1 kept rebooting past a node NotReady or cordoned for another reason; "
    f"--count-released-unavailable={RELEASED_UNAVAILABLE} keeps that: only a node kumaco "
    f"released less than {RELEASED_UNAVAILABLE} ago that is still cordoned or not Ready takes "
    "a place (kured v2's reboot-daemon uncordons a rebooted node only after its release), "
    "so the maintenance itself never disrupts more nodes than the ceiling; --count-unavailable "
    "would count every unavailable node instead, and with a ceiling of 1 one NotReady node "
    "would stop every reboot"
)


def parse_days(values: Iterable[str]) -> frozenset[int]:
    """Kured's ``parseWeekdays``: each value a number 0-6 (Sunday 0) or a day name."""
    days: set[int] = set()
    for value in values:
        if value == "":
            continue
        number = gostrconv.parse_int64(value)
        if number is not None:
            if not 0 <= number < 7:
                raise InvalidInput(
                    f"--reboot-days: {excerpt(value)}: kured rejects it (invalid weekday, "
                    "number out of range): 0 (Sunday) to 6 (Saturday)"
                )
            days.add(number)
        elif value.lower() in _DAYS:
            days.add(_DAYS[value.lower()])
        else:
            raise InvalidInput(
                f"--reboot-days: {excerpt(value)}: kured rejects it (invalid weekday): "
                "a day name (su, mon, tuesday, ...) or 0-6"
            )
    return frozenset(days)


#: Python's ``re`` errors (their message's start) for patterns that Go's RE2 refuses too.
_REFUSED_BY_BOTH = (
    "missing ), unterminated subpattern",
    "unbalanced parenthesis",
    "unterminated character set",
    "multiple repeat",
    "bad character range",
    "bad escape (end of pattern)",
    "min repeat greater than max repeat",
)


def regexp_error(text: str) -> str | None:
    r"""Why Go's ``regexp.Compile`` (kured's ``--alert-filter-regexp``) refuses ``text``.

    Only what Python's ``re`` refuses too, for a reason RE2 shares (an unbalanced
    parenthesis, an unterminated set, a repeat of nothing or of a repeat, a bad range, a
    trailing backslash); None otherwise: RE2 syntax that Python lacks (``\pL``, ``\z``)
    passes, and so does Python syntax RE2 lacks (a lookahead), which kured then refuses.
    """
    try:
        with python_warnings.catch_warnings():
            python_warnings.simplefilter("ignore")  # "possible nested set": [[:alpha:]]
            re.compile(text)
    except re.error as exc:
        after = text[exc.pos - 1] if exc.pos else "("  # Go repeats an anchor (^*), not nothing
        # Go reads a brace as a repeat only as {n}, {n,} or {n,m}: {,} is a literal there.
        brace = exc.pos is not None and text[exc.pos : exc.pos + 1] == "{"
        go_repeat = not brace or re.match(r"\{\d+(,\d*)?\}", text[exc.pos or 0 :]) is not None
        if exc.msg.startswith(_REFUSED_BY_BOTH) or (
            exc.msg == "nothing to repeat" and after in "(|" and go_repeat
        ):
            return f"{exc.msg} at position {exc.pos}"
    return None


@dataclass(frozen=True, order=True)
class Clock:
    """A time of day as kured keeps it: hour, minute, second, nanosecond (ordered so)."""

    hour: int
    minute: int
    second: int
    nanosecond: int = 0

    @property
    def seconds(self) -> int:
        """Seconds since midnight (kured's window uses the whole second only)."""
        return self.hour * 3600 + self.minute * 60 + self.second

    def __str__(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}"


def _number(value: str, fixed: bool) -> tuple[int, str] | None:
    """Go's ``getnum``: one or two ASCII digits (exactly two when ``fixed``)."""
    if not value[:1].isdigit() or not value[:1].isascii():
        return None
    if len(value) < 2 or not (value[1].isdigit() and value[1].isascii()):
        return None if fixed else (int(value[0]), value[1:])
    return int(value[:2]), value[2:]


def _fraction(value: str) -> tuple[int, str]:
    """Go's fractional seconds after a ``05`` with none in the layout (``.5``, ``,25``)."""
    if len(value) >= 2 and value[0] in ".," and value[1].isdigit() and value[1].isascii():
        n = 2
        while n < len(value) and value[n].isdigit() and value[n].isascii():
            n += 1
        digits = value[1 : min(n, 10)]
        return int(digits) * 10 ** (9 - len(digits)), value[n:]
    return 0, value


def _parse_layout(layout: str, value: str) -> Clock | None:
    """Go's ``time.Parse`` of ``value`` with one of :data:`LAYOUTS`, or None if it fails."""
    hour = minute = second = nano = 0
    pm = am = False
    rest = value
    tokens = {
        "15:04": ("15", ":", "04"),
        "15:04:05": ("15", ":", "04", ":", "05"),
        "03:04pm": ("03", ":", "04", "pm"),
        "15": ("15",),
        "03pm": ("03", "pm"),
        "3pm": ("3", "pm"),
    }[layout]
    for element in tokens:
        if element == ":":
            if not rest.startswith(":"):
                return None
            rest = rest[1:]
        elif element == "pm":
            if rest[:2] not in ("pm", "am"):
                return None
            pm, am, rest = rest[:2] == "pm", rest[:2] == "am", rest[2:]
        else:
            got = _number(rest, element in ("03", "04", "05"))
            if got is None:
                return None
            number, rest = got
            if (element == "15" and number >= 24) or (element in ("03", "3") and number > 12):
                return None
            if element in ("04", "05") and number >= 60:
                return None
            if element in ("15", "03", "3"):
                hour = number
            elif element == "04":
                minute = number
            else:
                second = number
                nano, rest = _fraction(rest)
    if rest:
        return None
    if pm and hour < 12:
        hour += 12
    elif am and hour == 12:
        hour = 0
    return Clock(hour, minute, second, nano)


def parse_clock(flag: str, value: str) -> Clock:
    """Kured's ``parseTime``: the first of :data:`LAYOUTS` that Go parses ``value`` with."""
    for layout in LAYOUTS:
        clock = _parse_layout(layout, value)
        if clock is not None:
            return clock
    raise InvalidInput(
        f"{flag}: {excerpt(value)}: kured rejects it (invalid time format): write it as "
        + ", ".join(LAYOUTS)
        + " (e.g. 22:00, 4am)"
    )


def weekly_intervals(days: frozenset[int], start: Clock, end: Clock) -> list[tuple[int, int]]:
    """Kured's window as merged ``[from, until)`` seconds of a local week (Sunday 00:00 is 0).

    An interval may run past the week's end into the next (Saturday night into Sunday); a
    window open all the time is ``[(0, WEEK_SECONDS)]``.
    """
    s, e = start.seconds, end.seconds + 1  # the end's whole second is in
    pieces: list[tuple[int, int]] = []
    for d in sorted(days):
        base = d * DAY_SECONDS
        if start > end:  # crosses midnight: both ends of the same calendar day
            pieces += [(base, base + e), (base + s, base + DAY_SECONDS)]
        else:
            pieces.append((base + s, base + e))
    merged: list[list[int]] = []
    for a, b in sorted(pieces):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if len(merged) > 1 and merged[0][0] == 0 and merged[-1][1] == WEEK_SECONDS:
        first = merged.pop(0)  # Saturday night runs on into Sunday morning
        merged[-1][1] = WEEK_SECONDS + first[1]
    return [(a, b) for a, b in merged]


@dataclass(frozen=True)
class WindowSpec:
    """One window ConfigMap's data: occurrences at ``clock`` on ``days``, ``duration`` long."""

    days: tuple[int, ...]
    clock: int  # seconds since local midnight, whole minutes
    duration: int  # ns

    @property
    def start_time(self) -> str:
        """The cron ``startTime`` (robfig: minute, hour, day of month, month, day of week)."""
        return f"{self.clock // 60 % 60} {self.clock // 3600} * * {cron_days(self.days)}"

    @property
    def duration_text(self) -> str:
        """The duration, its zero units left out (``4h1s``, ``2h``: Go reads both)."""
        return compact_duration(self.duration)

    def data(self, zone: str) -> dict[str, str]:
        """The window ConfigMap's ``data`` (``timeZone`` left out in UTC)."""
        data = {"startTime": self.start_time, "duration": self.duration_text, "nodeSelector": ""}
        if zone != "UTC":
            data["timeZone"] = zone
        return data

    @property
    def suffix(self) -> str:
        """A name suffix: the start and the days (``2200-sat``)."""
        days = cron_days(self.days).lower().replace(",", "-").replace("*", "daily")
        return f"{self.clock // 3600:02d}{self.clock // 60 % 60:02d}-{days}"


def compact_duration(ns: int) -> str:
    """A Go duration without zero units (``4h0m1s`` -> ``4h1s``); Go's form below a second."""
    if ns % SECOND:
        return format_go_duration(ns)
    h, rest = divmod(ns // SECOND, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def cron_days(days: Sequence[int]) -> str:
    """Day-of-week field: ``*`` for all, runs of three or more as ranges (``MON-FRI``)."""
    if len(days) == 7:
        return "*"
    parts: list[str] = []
    run: list[int] = []
    for d in [*sorted(days), 99]:
        if run and d == run[-1] + 1:
            run.append(d)
            continue
        if len(run) >= 3:
            parts.append(f"{DAY_NAMES[run[0]]}-{DAY_NAMES[run[-1]]}")
        else:
            parts += [DAY_NAMES[x] for x in run]
        run = [d]
    return ",".join(parts)


def window_specs(intervals: Sequence[tuple[int, int]]) -> tuple[list[WindowSpec], list[str]]:
    """The windows equal to ``intervals`` (one per start time and length), and warnings.

    A start with seconds is moved to the next whole minute (cron has no seconds): the
    window then opens that much later than kured's, never earlier.
    """
    warnings: list[str] = []
    groups: dict[tuple[int, int], list[int]] = {}
    for opens, b in intervals:
        late = -opens % 60
        if late:
            warnings.append(
                f"kured's window opens at second {opens % 60} of a minute; a cron schedule has no "
                f"seconds: the window opens {late}s later, at the next whole minute"
            )
        a = opens + late
        if b <= a:
            continue
        key = (a % DAY_SECONDS, (b - a) * SECOND)
        groups.setdefault(key, []).append(a // DAY_SECONDS % 7)
    specs = [
        WindowSpec(tuple(sorted(days)), clock, duration)
        for (clock, duration), days in groups.items()
    ]
    return sorted(specs, key=lambda w: (w.days[0], w.clock)), list(dict.fromkeys(warnings))


_DAEMON = "kured v2's reboot-daemon does this (its own flags), not kumaco"
_LOCK = (
    "kured v1's lock was an annotation on its DaemonSet; kumaco keeps no lock: the "
    "MaintenanceInProgress condition and --max-in-progress replace it"
)
#: kured v1's flags that kumaco has no equivalent of: their kind (``bool``, ``int``,
#: ``duration``, ``string``, ``list``: pflag's comma-separated, repeatable string slice)
#: and what becomes of them, as :func:`convert` notes it.
NO_EQUIVALENT: dict[str, tuple[str, str]] = {
    "--period": (
        "duration",
        "kumaco has no polling period: it admits a node the moment its window opens, not at "
        "the next look (kured v2's reboot-required-detector has its own --period)",
    ),
    "--reboot-sentinel": (
        "string",
        "kured v2's reboot-required-detector does this (its own flags): it sets "
        "kured.dev/reboot-required, which kumaco reads",
    ),
    "--reboot-sentinel-command": (
        "string",
        "kured v2's reboot-required-detector does this (its own flags): it sets "
        "kured.dev/reboot-required, which kumaco reads",
    ),
    "--ds-name": ("string", _LOCK),
    "--ds-namespace": ("string", _LOCK),
    "--lock-annotation": ("string", _LOCK),
    "--node-id": (
        "string",
        "each kured v1 pod's own node; kumaco runs once for the whole cluster",
    ),
    "--metrics-host": ("string", "kured v1's metrics; kumaco run has --metrics-bind-address"),
    "--metrics-port": ("int", "kured v1's metrics; kumaco run has --metrics-bind-address"),
    "--log-format": ("string", "kured v1's logs; kumaco run has its own --log-format"),
    **{
        flag: (kind, _DAEMON)
        for flag, kind in (
            ("--reboot-command", "string"),
            ("--reboot-method", "string"),
            ("--reboot-signal", "int"),
            ("--reboot-delay", "duration"),
            ("--force-reboot", "bool"),
            ("--drain-delay", "duration"),
            ("--drain-timeout", "duration"),
            ("--drain-grace-period", "int"),
            ("--drain-pod-selector", "string"),
            ("--skip-wait-for-delete-timeout", "int"),
            ("--prefer-no-schedule-taint", "string"),
            ("--pre-reboot-node-labels", "list"),
            ("--post-reboot-node-labels", "list"),
            ("--annotate-nodes", "bool"),
        )
    },
}


@dataclass(frozen=True)
class KuredFlags:
    """kured v1's flags that the conversion reads (their values as kured would receive them)."""

    reboot_days: tuple[str, ...] = ("su", "mo", "tu", "we", "th", "fr", "sa")
    start_time: str = "0:00"
    end_time: str = "23:59:59"
    time_zone: str = "UTC"
    concurrency: int = 1
    blocking_pod_selectors: tuple[str, ...] = ()
    prometheus_url: str = ""
    alert_filter_regexp: str = ""
    alert_firing_only: bool = False
    alert_filter_match_only: bool = False
    lock_ttl: int = 0  # ns
    lock_release_delay: int = 0  # ns
    #: The flags of :data:`NO_EQUIVALENT` given (each becomes a note).
    no_equivalent: tuple[str, ...] = ()
    #: Warnings from reading the flags (a ``KURED_<FLAG>`` variable kured ignores), first.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conversion:
    """What kured v1's flags become."""

    zone: str
    windows: tuple[WindowSpec, ...]
    kumaco_flags: tuple[str, ...]
    inhibitor_flags: tuple[str, ...]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    always_open: bool = False


def _zone(name: str) -> tuple[str, list[str]]:
    """Kured's ``--time-zone`` as a zone kumaco accepts, and a warning for ``Local``."""
    if name == "Local":
        return "UTC", [
            "--time-zone Local is the kured pod's own zone (UTC unless its TZ variable or "
            "/etc/localtime said otherwise; kumaco never depends on its container's zone): "
            "converted as UTC; give --time-zone the zone that pod had"
        ]
    try:
        return zones.resolve_zone(name)[0], []
    except InvalidInput as exc:
        raise InvalidInput(f"--time-zone: {exc.reason}") from None


def _changes(zone: str, now: int) -> list[tuple[int, int, int]]:
    """``zone``'s offset changes within :data:`HORIZON_SECONDS` after ``now``.

    Each is (instant s, offset before, offset after), from the zone data robfig reads.
    """
    location = zones.zone_location(zone)
    found: list[tuple[int, int, int]] = []
    t = now // SECOND
    while True:
        before, _start, end = location.lookup(t)
        if end >= now // SECOND + HORIZON_SECONDS or end <= t:
            return found
        after = location.offset(end)
        if after != before:
            found.append((end, before, after))
        t = end


def _across(window: Window, at: int) -> bool:
    """Whether an occurrence of ``window`` is open on both sides of the instant ``at`` (s)."""
    t = at * SECOND
    run = next(window.intervals(t, t + 1), None)
    return run is not None and run.start < t < run.end


def _wall_change(change: tuple[int, int, int]) -> str:
    """``Sunday 02:00 -> 03:00``: the local day and wall clocks of a change."""
    at, before, after = change
    day = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
    local = at + before
    return (
        f"{day[(local // DAY_SECONDS + 4) % 7]} {local % DAY_SECONDS // 3600:02d}:"
        f"{local % 3600 // 60:02d} -> {(at + after) % DAY_SECONDS // 3600:02d}:"
        f"{(at + after) % 3600 // 60:02d}"
    )


def _dst_warnings(zone: str, specs: Sequence[WindowSpec], now: int) -> list[str]:
    """A warning when a clock change of the coming year falls inside the windows, else none.

    Inside: an occurrence is open across it, or it skips or repeats a start (the notes of
    :func:`~kumaco.core.windows.daylight_saving.dst_notes`, added after the warning). Only
    there do kured and the windows differ.
    """
    windows = [parse_window("", "kured-v1", spec.data(zone)) for spec in specs]
    valid = [w for w in windows if isinstance(w, Window)]
    notes = [n for w in valid for n in dst_notes(w, now, now + HORIZON_SECONDS * SECOND)]
    noted = {n.at // SECOND for n in notes}
    inside = [
        c for c in _changes(zone, now) if c[0] in noted or any(_across(w, c[0]) for w in valid)
    ]
    if not inside:
        return []
    walls = ", ".join(dict.fromkeys(_wall_change(c) for c in inside))
    warning = (
        f"{zone} changes its clocks inside kured's window ({walls}): on those nights a window "
        "keeps its duration where kured's ends at the time of day --end-time (they differ by "
        "the shift), and a start inside the skipped hour does not fire that day (robfig), "
        "where kured starts at the shifted time"
    )
    return list(dict.fromkeys([warning, *(n.text for n in notes)]))


def convert(flags: KuredFlags, now: int) -> Conversion:
    """The windows and flags equal to kured v1's ``flags``; notes and warnings on the way."""
    days = parse_days(flags.reboot_days)
    refused = regexp_error(flags.alert_filter_regexp)
    if refused is not None:
        raise InvalidInput(
            f"--alert-filter-regexp: {excerpt(flags.alert_filter_regexp)}: kured rejects it "
            f"(not a Go regular expression: {refused})"
        )
    start = parse_clock("--start-time", flags.start_time)
    end = parse_clock("--end-time", flags.end_time)
    zone, zone_warnings = _zone(flags.time_zone)
    warnings = [*flags.warnings, *zone_warnings]
    notes = [
        "kured's --end-time is a time of day, inclusive to the end of its second; a window "
        f"is a start and a duration: a window below that ends at {end} ({zone}) lasts until "
        "one second after it, as kured's does",
        "kured v1 looked at its window every --period (1h by default) and rebooted at the "
        "first look inside it; kumaco admits a node the moment a window opens, and a node "
        "already admitted finishes even after it closes (kured v1 did too); "
        "--admission-cutoff stops late starts",
        UNAVAILABLE_NOTE,
    ]
    intervals = weekly_intervals(days, start, end)
    always = intervals == [(0, WEEK_SECONDS)]
    if not days:
        warnings.append("--reboot-days names no day: kured never reboots; no window is made")
        specs: list[WindowSpec] = []
    elif always:
        specs = [WindowSpec(tuple(range(7)), 0, DAY_SECONDS * SECOND)]
        notes.append(
            "kured's window is open at every instant (every day, the whole day): so is this "
            "window (kumaco validate warns that it never closes)"
        )
    else:
        specs, more = window_specs(intervals)
        warnings += more
    if start > end and days and not always:
        notes.append(
            f"kured's window crosses midnight ({start} to {end}) and kured tests the day of "
            "the instant, not of the window's start: on each reboot day it is open from "
            f"00:00 to {end} and from {start} to 24:00, and two reboot days in a row join "
            "into one night; converted exactly so. For nights that start on the reboot days "
            "instead, list the days the nights start on and use one window: "
            f"startTime '{start.minute} {start.hour} * * <days>'"
        )
    if start == end and days:
        warnings.append(
            f"--start-time equals --end-time ({start}): kured's window is one second a day"
        )
    if zone != "UTC" and specs and not always:
        warnings += _dst_warnings(zone, specs, now)
    concurrency = flags.concurrency
    if concurrency < 1:
        warnings.append(
            f"--concurrency {concurrency}: kured takes its lock alone below 1; converted as 1"
        )
        concurrency = 1
    kumaco = [f"--max-in-progress={concurrency}", *KURED_V2_FLAGS]
    if flags.lock_ttl:
        kumaco.append(f"--in-progress-timeout={compact_duration(flags.lock_ttl)}")
        notes.append(
            "kured v1's --lock-ttl let another node take a lock held too long; kumaco's "
            "--in-progress-timeout takes MaintenanceInProgress from its holder (kured v2's "
            "reboot-daemon then uncordons it) before admitting the next; a revoked node "
            f"still cordoned or not Ready keeps its place for up to {RELEASED_UNAVAILABLE} "
            "(--count-released-unavailable): its maintenance disrupted it"
        )
    if flags.lock_release_delay:
        kumaco.append(f"--release-delay={compact_duration(flags.lock_release_delay)}")
    inhibitors = [f"--blocking-pod-selector={s}" for s in flags.blocking_pod_selectors]
    if flags.prometheus_url:
        inhibitors.append(f"--prometheus-url={flags.prometheus_url}")
        if flags.alert_filter_regexp:
            inhibitors.append(f"--alert-filter-regexp={flags.alert_filter_regexp}")
        if flags.alert_firing_only:
            inhibitors.append("--alert-firing-only")
        if flags.alert_filter_match_only:
            inhibitors.append("--alert-filter-match-only")
    if inhibitors:
        notes.append(
            "kured v2's reboot-inhibitors sets kured.dev/reboot-inhibited on each node with a "
            "running pod its --blocking-pod-selector matches, and on every node while an alert "
            "fires (as kured v1 blocked); kumaco's --block-condition=kured.dev/reboot-inhibited "
            "then stops new admissions there, and a holder finishes"
        )
    notes += [f"{flag}: {NO_EQUIVALENT[flag][1]}" for flag in dict.fromkeys(flags.no_equivalent)]
    return Conversion(
        zone,
        tuple(specs),
        tuple(kumaco),
        tuple(inhibitors),
        tuple(notes),
        tuple(warnings),
        always,
    )
