"""The window ConfigMap format: a window ConfigMap's ``data`` in, a validated window out.

Contract
--------
:func:`parse_window` never raises for bad user data: it returns either a
:class:`~kumaco.core.windows.window.Window` or an
:class:`~kumaco.core.windows.window.InvalidWindow` whose ``errors`` name each bad key
and the reason, with a hint at the fix where a mistake is a common one. Every
key is checked, so one ConfigMap reports all its problems at once, and one bad
ConfigMap never affects another. Pure: no I/O, no clock.

The ConfigMap format (``data``):

``startTime`` (required)
    A cron schedule with robfig/cron v3 ``ParseStandard`` semantics
    (:mod:`kumaco.core.time.schedule`); UTC unless ``CRON_TZ=``/``TZ=`` or ``timeZone``.
    Or one RFC 3339 date-time (``2027-01-15T02:00:00+01:00``; without an offset read in
    ``timeZone``, default UTC; :mod:`kumaco.core.time.dates`): a one-shot window, exactly
    one occurrence, which takes neither ``daysOfMonth`` nor ``notBefore``/``notAfter``.
``duration`` (required)
    A Go duration greater than zero (:mod:`kumaco.core.time.durations`).
``nodeSelector`` (required, may be empty)
    A Kubernetes label selector string (:mod:`kumaco.core.labels.selectors`), or a
    metav1.LabelSelector in YAML or JSON (``matchLabels``/``matchExpressions``,
    :mod:`kumaco.core.labels.node_selector`): a value that is a YAML/JSON mapping is a
    LabelSelector, anything else a selector string. Empty (``""``, ``{}``)
    selects every node in kumaco's scope. ``Window.selector_text`` is the string
    as written, or for a LabelSelector the equivalent selector string
    (``LabelSelectorAsSelector(...).String()``).
``timeZone`` (optional)
    An IANA zone, as a CronJob's ``spec.timeZone``; an error together with a
    ``CRON_TZ=``/``TZ=`` prefix.
``daysOfMonth`` (optional)
    The days of the month an occurrence may start on, in the window's zone, in the
    syntax of a cron day-of-month field (``1-7``, ``1,15``, ``*/2``), combined with
    ``startTime`` with AND: ``0 1 * * SAT`` on ``1-7`` is the first Saturday of the
    month (:mod:`kumaco.core.windows.days_of_month`). A pair that can never meet is an error.
``notBefore``, ``notAfter`` (optional)
    An RFC 3339 date-time or a date (its midnight), read in the window's zone: a cron
    window's occurrence counts only if it starts in ``[notBefore, notAfter)`` (one that
    starts before ``notAfter`` runs its whole duration). ``notAfter`` must be after
    ``notBefore``, and at least one occurrence must start between them.
``maxInProgress`` (optional)
    This window's budget: ``N`` or ``P%`` (of the nodes in scope it selects)
    nodes in progress at once among the nodes it selects
    (:mod:`kumaco.core.windows.ceilings`); ``0`` pauses the window.
``freeze`` (optional)
    ``"true"`` makes the window a change freeze: while it is open on a node,
    that node is not under maintenance and nobody new is admitted there.
    Only ``"true"`` and ``"false"``; a freeze has no ``maxInProgress``.

Any other key is an error naming the closest known key (``Freeze`` -> ``freeze``:
keys are case-sensitive; ``maxInProgess`` -> ``maxInProgress``): a misspelled
optional key would otherwise be a freeze or a budget silently not applied. Notes
about a window belong in its annotations. ``binaryData`` is never read. A value
longer than :data:`MAX_VALUE_LENGTH` characters is rejected before parsing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kumaco.core.errors import InvalidInput, excerpt, one_line
from kumaco.core.labels.node_selector import LabelSelectorError, NotAMapping, read_label_selector
from kumaco.core.labels.selectors import Selector, parse_selector
from kumaco.core.time.cronfields import parse_day_of_month
from kumaco.core.time.dates import looks_dated, parse_local_instant
from kumaco.core.time.durations import SECOND, overflow_hint, parse_window_duration
from kumaco.core.time.schedule import Schedule, parse_schedule, zone_only
from kumaco.core.time.zones import load_zone
from kumaco.core.windows.ceilings import Ceiling, parse_ceiling
from kumaco.core.windows.days_of_month import WEEKDAYS, never_on_days
from kumaco.core.windows.window import FieldError, InvalidWindow, Window

START_TIME = "startTime"
DURATION = "duration"
NODE_SELECTOR = "nodeSelector"
TIME_ZONE = "timeZone"
MAX_IN_PROGRESS = "maxInProgress"
FREEZE = "freeze"
DAYS_OF_MONTH = "daysOfMonth"
NOT_BEFORE = "notBefore"
NOT_AFTER = "notAfter"
REQUIRED_KEYS = (START_TIME, DURATION, NODE_SELECTOR)
KNOWN_KEYS = (
    *REQUIRED_KEYS,
    TIME_ZONE,
    DAYS_OF_MONTH,
    NOT_BEFORE,
    NOT_AFTER,
    MAX_IN_PROGRESS,
    FREEZE,
)
MAX_VALUE_LENGTH = 4096
#: Longest message kept for one key: the parsers quote Go's and the API
#: server's wording in full, which for a selector with several bad values runs
#: to thousands of characters; a window's message is one printable line.
MAX_MESSAGE_LENGTH = 900


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
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "binary data"
    return "a date or time" if hasattr(value, "isoformat") else "a value YAML cannot name"


#: Longest unknown key shown as it is (a file read offline is not checked by an API server).
MAX_KEY_SHOWN = 253
#: How alike (difflib's ratio) an unknown key must be to a known one to be named as meant:
#: ``maxInProgess`` 0.96, ``freze`` 0.91, ``selector`` 0.70, ``description`` 0.63 (not
#: ``duration``).
CLOSE_ENOUGH = 0.7


def _hinted_key(data: Iterable[object], key: str) -> str | None:
    """The first key of ``data`` that differs from the missing ``key`` only in case.

    That key is named by ``key``'s own error (``is missing (found 'starttime': ...)``);
    any other variant is an unknown key of its own (:func:`_unknown_keys`).
    """
    return next((k for k in data if isinstance(k, str) and k.lower() == key.lower()), None)


def _unknown_keys(data: Mapping[object, object], errors: list[FieldError]) -> None:
    """An error per key that is not a window key, naming the closest known one.

    A missing required key's hinted key (:func:`_hinted_key`) is named by that key's
    own error, not a second time here.
    """
    hinted = {_hinted_key(data, k) for k in REQUIRED_KEYS if k not in data}
    by_lower = {k.lower(): k for k in KNOWN_KEYS}
    for raw in data:
        key = raw if isinstance(raw, str) else str(raw)
        if key in KNOWN_KEYS or raw in hinted:
            continue
        shown = one_line(key if len(key) <= MAX_KEY_SHOWN else key[:MAX_KEY_SHOWN] + "...")
        if key.lower() in by_lower:
            hint = f": did you mean {by_lower[key.lower()]}? (keys are case-sensitive)"
        else:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=CLOSE_ENOUGH)
            hint = (
                f": did you mean {close[0]}?"
                if close
                else f" (the keys are {', '.join(KNOWN_KEYS)}; a note belongs in an annotation)"
            )
        errors.append(FieldError(shown, "is not a window key" + hint))


def _string_value(data: Mapping[str, object], key: str, errors: list[FieldError]) -> str | None:
    if key not in data:
        hint = _hinted_key(data, key)
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
T = TypeVar("T")


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
    nth = _nth_weekday(fields, prefix)
    if nth and "is not a number" in reason:
        return f"Quartz's # is not supported by robfig's cron; for {nth}"
    if any(q in text for q in ("L", "W", "#")) and "is not a number" in reason:
        return "Quartz's L, W and # are not supported by robfig's cron"
    return ""


_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _nth_weekday(fields: list[str], prefix: str) -> str:
    """For Quartz's ``DOW#N`` (``6#1``): how to write it with ``daysOfMonth``; else ''."""
    rest = fields[1:] if prefix else fields
    if len(rest) != 5 or rest[4].count("#") != 1:
        return ""
    weekday, _, n = rest[4].partition("#")
    if not (n.isdigit() and 1 <= int(n) <= 5 and weekday):
        return ""
    k = int(n)
    spec = " ".join([*fields[: len(fields) - 5], *rest[:2], "*", rest[3], weekday])
    first, last = 7 * k - 6, min(7 * k, 31)
    day = WEEKDAYS.get(weekday.lower(), weekday)
    return (
        f'the {_ORDINALS[k - 1]} {day} of the month write startTime: "{spec}" with '
        f'{DAYS_OF_MONTH}: "{first}-{last}"'
    )


#: A number a person writes before a unit: 2, 1.5, .5, 2. (never "..0" or "0..").
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _duration_hint(text: str, reason: str) -> str:
    """The fix for a duration mistake a person is likely to make, or ''."""
    stripped = text.strip().lower()
    too_long = overflow_hint(text)
    if too_long:
        return too_long
    if stripped.endswith(("d", "w")) and _DECIMAL.fullmatch(stripped[:-1]):
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


def _parsed(
    key: str,
    text: str | None,
    blank: Callable[[str], bool],
    parse: Callable[[str], T],
    hint: Callable[[str, str], str],
    errors: list[FieldError],
) -> T | None:
    """``parse(text)``, or None after an error naming ``key`` (None: already said).

    The error is ``is empty`` when ``blank(text)``, else the parser's reason and ``hint``'s fix.
    """
    if text is None:
        return None
    if blank(text):
        errors.append(FieldError(key, "is empty"))
        return None
    try:
        return parse(text)
    except InvalidInput as exc:
        reason = _reason(exc)
        errors.append(FieldError(key, _with_hint(reason, hint(text, reason))))
        return None


def _parse_start_time(start_time: str | None, errors: list[FieldError]) -> Schedule | None:
    return _parsed(
        START_TIME, start_time, lambda t: not t.strip(), parse_schedule, _start_time_hint, errors
    )


def _zone_of(zone_text: str | None) -> str | None:
    """The zone a dated ``startTime`` is read in: ``timeZone`` or UTC; None if it is bad."""
    if zone_text is None:
        return "UTC"
    try:
        return zone_only("", zone_text).zone_name if zone_text else None
    except InvalidInput:
        return None  # timeZone's own error says why


def _parse_once(
    start_time: str, zone_text: str | None, errors: list[FieldError]
) -> tuple[Schedule, int] | None:
    """A one-shot ``startTime``: a zone-only schedule and its instant (Unix seconds)."""
    zone = _zone_of(zone_text)
    if zone is None:
        _apply_zone(None, zone_text, errors)  # says why
        return None
    try:
        once = parse_local_instant(start_time, zone)
    except InvalidInput as exc:
        errors.append(FieldError(START_TIME, _reason(exc)))
        return None
    return zone_only(start_time, zone), once


def _parse_bound(
    data: Mapping[str, object], key: str, zone: str | None, errors: list[FieldError]
) -> tuple[int | None, str]:
    """``notBefore``/``notAfter``: the instant (Unix seconds, None: absent or bad) and its text."""
    if key not in data:
        return None, ""
    text = _string_value(data, key, errors)
    if text is None or zone is None:
        return None, text or ""
    try:
        return parse_local_instant(text, zone, date_allowed=True), text
    except InvalidInput as exc:
        errors.append(FieldError(key, _reason(exc)))
        return None, text


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
    # An all-space duration is not "empty": its parse error says "no spaces".
    return _parsed(
        DURATION, duration_text, lambda t: t == "", parse_window_duration, _duration_hint, errors
    )


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


def _parse_days(
    data: Mapping[str, object], schedule: Schedule | None, errors: list[FieldError]
) -> tuple[int, str]:
    """``daysOfMonth``: the bit set of the days (0: the key is absent) and its text."""
    if DAYS_OF_MONTH not in data:
        return 0, ""
    text = _string_value(data, DAYS_OF_MONTH, errors)
    if text is None:
        return 0, ""
    try:
        days = parse_day_of_month(text)
    except InvalidInput as exc:
        errors.append(FieldError(DAYS_OF_MONTH, _reason(exc)))
        return 0, ""
    if schedule is not None and not schedule.never_fires and never_on_days(schedule, days):
        errors.append(
            FieldError(
                DAYS_OF_MONTH,
                f"{excerpt(text)} and startTime {excerpt(schedule.source)} never meet: no "
                "firing falls on these days",
            )
        )
    return days, text


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

    once: int | None = None
    if start_time is not None and looks_dated(start_time):
        dated = _parse_once(start_time, zone_text, errors)
        schedule, once = dated if dated else (None, None)
    else:
        schedule = _apply_zone(_parse_start_time(start_time, errors), zone_text, errors)
    if schedule is not None and once is None and schedule.never_fires:
        errors.append(
            FieldError(START_TIME, f"{excerpt(start_time or '')} never fires (no date matches it)")
        )
    duration = _parse_duration(duration_text, errors)
    parsed_selector = _parse_node_selector(selector_text, errors)
    selector, shown_selector = parsed_selector if parsed_selector else (None, None)
    days, days_text = _parse_days(data, schedule, errors)
    zone = schedule.zone_name if schedule is not None else None
    not_before, not_before_text = _parse_bound(data, NOT_BEFORE, zone, errors)
    not_after, not_after_text = _parse_bound(data, NOT_AFTER, zone, errors)
    if start_time is not None and looks_dated(start_time):
        for key in (DAYS_OF_MONTH, NOT_BEFORE, NOT_AFTER):
            if key in data:
                errors.append(
                    FieldError(
                        key,
                        "applies to a cron startTime only: a date-time startTime is one "
                        "occurrence; remove the key",
                    )
                )
    elif not_before is not None and not_after is not None and not_after <= not_before:
        errors.append(
            FieldError(
                NOT_AFTER,
                f"{excerpt(not_after_text)} is not after notBefore {excerpt(not_before_text)}: "
                "no occurrence could count",
            )
        )
    freeze, budget = _parse_policy_keys(data, errors)
    _unknown_keys(data, errors)

    if errors or schedule is None or duration is None or selector is None:
        order = {k: i for i, k in enumerate(KNOWN_KEYS)}
        errors.sort(key=lambda e: order.get(e.key, len(order)))
        return InvalidWindow(namespace, name, tuple(errors))
    assert start_time is not None
    assert duration_text is not None
    assert shown_selector is not None
    window = Window(
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
        days=days,
        days_text=days_text,
        once=once,
        not_before=not_before,
        not_after=not_after,
        not_before_text=not_before_text,
        not_after_text=not_after_text,
    )
    if (
        not_before is not None
        and not_after is not None
        and window.firings(not_before * SECOND, not_after * SECOND, limit=1) == []
    ):
        reason = (
            f"no occurrence of startTime {excerpt(start_time)} starts between notBefore "
            f"{excerpt(not_before_text)} and {excerpt(not_after_text)} (in {window.zone_name})"
        )
        return InvalidWindow(namespace, name, (FieldError(NOT_AFTER, reason),))
    return window
