"""The five fields of a robfig/cron v3 schedule, parsed into robfig's bit sets.

Contract
--------
:func:`parse_fields` takes what follows a schedule's zone prefix (see
:mod:`kumaco.core.time.schedule`, which owns the prefix and the zone) and returns the
minute, hour, day-of-month, month and day-of-week bit sets robfig's
``SpecSchedule`` holds: bit ``v`` of a field is set when value ``v`` matches,
and :data:`STAR` marks a field written as ``*``/``?``. Every rejection raises
:class:`kumaco.core.errors.InvalidInput` -- never any other exception, whatever
the text -- with a one-line message naming the field (or the descriptor) and a
bounded excerpt of the offending token. ``@every`` is rejected: it has no
anchor in time. :func:`parse_day_of_month` reads one day-of-month field alone (a
window's ``daysOfMonth``). Pure: no I/O, no clock.

Grammar as robfig implements it (quirks included)
-------------------------------------------------
* A text starting with ``@`` is a descriptor, compared as an exact string:
  ``@yearly @annually @monthly @weekly @daily @midnight @hourly``.
* Otherwise exactly five fields -- minute 0-59, hour 0-23, day of month 1-31,
  month 1-12 or ``jan``..``dec``, day of week 0-6 or ``sun``..``sat`` (7 is
  out of range) -- separated by runs of Unicode White_Space as Go's
  ``strings.Fields`` sees it (U+001C..U+001F are *not* separators).
* A field is a comma list; empty items are dropped, so ``1,,2`` is valid and
  ``,`` is an empty set (a schedule that never fires, see
  :attr:`kumaco.core.time.schedule.Schedule.never_fires`).
* An item is ``range[/step]``. ``*`` and ``?`` mean the whole range in *any*
  field and set a "star" flag; anything after a hyphen following them is
  ignored (``*-5`` is ``*``). Otherwise ``n`` or ``n-m`` where each end is a
  Go ``strconv.Atoi`` integer (optional ``+``, ASCII digits only, any number
  of leading zeros, at most int64) or, for month and day of week, a name
  lower-cased with Go's simple case mapping (``FRİ`` with U+0130 is Friday).
  A ``-`` always splits the range, so only a step can be negative, and is
  rejected. ``n/step`` means ``n-max/step``; a step of 0 is an error; a
  step above 1 clears the star flag, ``*/1`` keeps it.
* Day matching: if the day-of-month or the day-of-week field carries the
  star flag, both must match (AND); otherwise either may (OR). So
  ``0 0 1-31 * mon`` fires daily, ``0 0 * * mon`` only on Mondays.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.golang.gostrconv import parse_int64

__all__ = [
    "DAYS_IN_MONTH",
    "FIELDS_HINT",
    "GO_SPACE",
    "STAR",
    "Fields",
    "parse_day_of_month",
    "parse_fields",
]

#: robfig's flag bit: the field was written as ``*`` or ``?`` (step <= 1).
STAR = 1 << 63

#: Unicode White_Space, as Go's ``unicode.IsSpace`` (``strings.Fields``/``TrimSpace``).
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_FIELD_RE = re.compile(f"[^{re.escape(GO_SPACE)}]+")
# Go's strings.ToLower maps these to ASCII letters too (simple case mapping).
_GO_LOWER = str.maketrans(
    {**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}, "\u0130": "i", "\u212a": "k"}
)
#: Days in each month (index 1..12); February: 29, as in leap years.
DAYS_IN_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: The minute, hour, day-of-month, month and day-of-week bit sets.
Fields = tuple[int, int, int, int, int]


class _Bounds(NamedTuple):
    field: str
    lo: int
    hi: int
    names: Mapping[str, int] | None


_MINUTE = _Bounds("minute", 0, 59, None)
_HOUR = _Bounds("hour", 0, 23, None)
_DOM = _Bounds("day of month", 1, 31, None)
_MONTH = _Bounds(
    "month",
    1,
    12,
    {
        name: i + 1
        for i, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
        )
    },
)
_DOW = _Bounds(
    "day of week",
    0,
    6,
    {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)
_FIELDS = (_MINUTE, _HOUR, _DOM, _MONTH, _DOW)


def _span(lo: int, hi: int) -> int:
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


_EVERY = {b.field: _span(b.lo, b.hi) | STAR for b in _FIELDS}
_FIRST = {b.field: 1 << b.lo for b in _FIELDS}
#: Descriptor -> (minute, hour, day of month, month, day of week) bit sets.
_DESCRIPTORS: dict[str, Fields] = {}
for _names, _free in (
    (("@yearly", "@annually"), ("day of week",)),
    (("@monthly",), ("month", "day of week")),
    (("@weekly",), ("day of month", "month")),
    (("@daily", "@midnight"), ("day of month", "month", "day of week")),
    (("@hourly",), ("hour", "day of month", "month", "day of week")),
):
    _bits = tuple(_EVERY[b.field] if b.field in _free else _FIRST[b.field] for b in _FIELDS)
    for _name in _names:
        _DESCRIPTORS[_name] = (_bits[0], _bits[1], _bits[2], _bits[3], _bits[4])

FIELDS_HINT = "minute hour day-of-month month day-of-week"
_EVERY_MESSAGE = (
    "@every has no anchor in time, so it cannot describe a maintenance window; "
    'use a cron schedule such as "0 */6 * * *" (every six hours, on the hour) instead'
)


def _number(text: str, b: _Bounds, expr: str, what: str) -> int:
    value = parse_int64(text)
    if value is None:
        raise InvalidInput(f"{b.field}: {what} {excerpt(text)} is not a number in {excerpt(expr)}")
    if value < 0:
        raise InvalidInput(f"{b.field}: negative number {value} not allowed in {excerpt(expr)}")
    return value


def _number_or_name(text: str, b: _Bounds, expr: str) -> int:
    if b.names is not None:
        named = b.names.get(text.translate(_GO_LOWER))
        if named is not None:
            return named
    return _number(text, b, expr, "value")


def _parse_range(expr: str, b: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = 0
    if low_and_high[0] in ("*", "?"):
        start, end, star = b.lo, b.hi, STAR
    else:
        start = _number_or_name(low_and_high[0], b, expr)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number_or_name(low_and_high[1], b, expr)
        else:
            raise InvalidInput(f"{b.field}: too many hyphens in {excerpt(expr)}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], b, expr, "step")
        if len(low_and_high) == 1:
            end = b.hi  # "n/step" means "n-max/step"
        if step > 1:
            star = 0
    else:
        raise InvalidInput(f"{b.field}: too many slashes in {excerpt(expr)}")
    if start < b.lo:
        raise InvalidInput(f"{b.field}: {start} is below the minimum {b.lo} in {excerpt(expr)}")
    if end > b.hi:
        raise InvalidInput(f"{b.field}: {end} is above the maximum {b.hi} in {excerpt(expr)}")
    if start > end:
        raise InvalidInput(
            f"{b.field}: range starts at {start}, after its end {end}, in {excerpt(expr)}"
        )
    if step == 0:
        raise InvalidInput(f"{b.field}: step must be a positive number in {excerpt(expr)}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | star


def _parse_field(text: str, b: _Bounds) -> int:
    bits = 0
    for expr in text.split(","):
        if expr:
            bits |= _parse_range(expr, b)
    return bits


def parse_fields(text: str) -> Fields:
    """The bit sets of a descriptor (``@daily``) or of five fields, as robfig parses them."""
    if text.startswith("@"):
        if text.startswith("@every"):
            raise InvalidInput(f"{_EVERY_MESSAGE} (got {excerpt(text)})")
        bits = _DESCRIPTORS.get(text)
        if bits is None:
            raise InvalidInput(
                f"unrecognized descriptor {excerpt(text)}: expected one of "
                + ", ".join(_DESCRIPTORS)
            )
        return bits
    fields = _FIELD_RE.findall(text)
    if len(fields) != len(_FIELDS):
        raise InvalidInput(
            f"expected 5 fields ({FIELDS_HINT}), found {len(fields)} in {excerpt(text)}"
        )
    minute, hour, dom, month, dow = (
        _parse_field(f, b) for f, b in zip(fields, _FIELDS, strict=True)
    )
    return minute, hour, dom, month, dow


def parse_day_of_month(text: str) -> int:
    """One day-of-month field on its own (a window's ``daysOfMonth``), as robfig reads that field.

    The same grammar as the third field of a schedule (``1-7``, ``1,15``, ``*/2``); the bit
    set of the days (with :data:`STAR` for ``*``/``?``). Raises :class:`InvalidInput`
    naming the mistake, also for white space inside (one field) and for no day at all.
    """
    if not text.strip(GO_SPACE):
        raise InvalidInput("is empty; remove the key to allow every day")
    if len(_FIELD_RE.findall(text)) != 1:
        raise InvalidInput(f"{excerpt(text)} is more than one field: write e.g. 1-7 or 1,15")
    bits = _parse_field(text.strip(GO_SPACE), _DOM)
    if not bits & _span(_DOM.lo, _DOM.hi):
        raise InvalidInput(f"{excerpt(text)} selects no day")
    return bits
