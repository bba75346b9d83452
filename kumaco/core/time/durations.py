r"""Go ``time.ParseDuration``, exactly, and Go-style formatting of durations.

Contract: :func:`parse_go_duration` accepts precisely the strings Go's
``time.ParseDuration`` accepts and returns the same number of nanoseconds;
for anything else it raises :class:`~kumaco.core.errors.InvalidInput` with Go's own
wording (``time: invalid duration "1d"`` becomes ``unknown unit "d" in
duration "1d"``). :func:`parse_window_duration` adds the window rule: the
value must be greater than zero. Pure: no I/O, no clock.

Grammar (Go's): ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` where the unit is one of
``ns us µs μs ms s m h`` and ``0`` alone is the only unit-less value. There
are no days, no spaces, and each component is a byte-level scan -- a unit
ends at the next digit or ``.``, so ``1h 30m`` has the unit ``"h "``.
Fractions are converted with float64 arithmetic exactly as Go does, so
``1.0000000001h`` rounds the same way. Values must fit in an int64 of
nanoseconds (about 292 years). This is differential-tested against Go's own
``time.ParseDuration`` (``tests/unit/core/time/test_durations.py``).
"""

from __future__ import annotations

import re

from kumaco.core.errors import InvalidInput
from kumaco.core.golang.gotime import INT64_MAX, time_quote

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS: dict[bytes, int] = {
    b"ns": NANOSECOND,
    b"us": MICROSECOND,
    "µ".encode() + b"s": MICROSECOND,  # U+00B5 MICRO SIGN
    "μ".encode() + b"s": MICROSECOND,  # U+03BC GREEK SMALL LETTER MU
    b"ms": MILLISECOND,
    b"s": SECOND,
    b"m": MINUTE,
    b"h": HOUR,
}
_U63 = INT64_MAX + 1
_MAX_SHOWN = 200


def _error(kind: str, raw: bytes) -> InvalidInput:
    shown = raw if len(raw) <= _MAX_SHOWN else raw[:_MAX_SHOWN]
    suffix = "" if len(raw) <= _MAX_SHOWN else f" (first {_MAX_SHOWN} of {len(raw)} bytes shown)"
    return InvalidInput(f"{kind} {time_quote(shown)}{suffix}")


def _is_digit(c: int) -> bool:
    return 0x30 <= c <= 0x39


def _leading_int(s: bytes, orig: bytes) -> tuple[int, bytes, bool]:
    """Go's ``leadingInt``: ``[0-9]*``; overflow beyond 1<<63 is an error."""
    i, v = 0, 0
    while i < len(s) and _is_digit(s[i]):
        if v > _U63 // 10:
            raise _error("invalid duration", orig)
        v = v * 10 + s[i] - 0x30
        if v > _U63:
            raise _error("invalid duration", orig)
        i += 1
    return v, s[i:], i > 0


def _leading_fraction(s: bytes) -> tuple[int, float, bytes, bool]:
    """Go's ``leadingFraction`` after the dot: digits past overflow are consumed and ignored."""
    i, f, scale, overflow = 0, 0, 1.0, False
    while i < len(s) and _is_digit(s[i]):
        if not overflow:
            if f > INT64_MAX // 10:
                overflow = True
            else:
                y = f * 10 + s[i] - 0x30
                if y > _U63:
                    overflow = True
                else:
                    f = y
                    scale *= 10
        i += 1
    return f, scale, s[i:], i > 0


def _unit(s: bytes, orig: bytes) -> tuple[int, bytes]:
    """The unit, which runs up to the next '.' or digit."""
    i = 0
    while i < len(s) and not (s[i] == 0x2E or _is_digit(s[i])):
        i += 1
    if i == 0:
        raise _error("missing unit in duration", orig)
    unit = _UNITS.get(s[:i])
    if unit is None:
        raise _error(f"unknown unit {time_quote(s[:i])} in duration", orig)
    return unit, s[i:]


def parse_go_duration(text: str) -> int:
    """Parse ``text`` like Go's ``time.ParseDuration``; return nanoseconds."""
    orig = text.encode("utf-8", "surrogatepass")
    s = orig
    neg = False
    if s and s[0] in b"+-":
        neg = s[0] == 0x2D
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise _error("invalid duration", orig)
    total = 0
    while s:
        if not (s[0] == 0x2E or _is_digit(s[0])):
            raise _error("invalid duration", orig)
        v, s, pre = _leading_int(s, orig)
        f, scale, post = 0, 1.0, False
        if s and s[0] == 0x2E:
            f, scale, s, post = _leading_fraction(s[1:])
        if not pre and not post:
            raise _error("invalid duration", orig)
        unit, s = _unit(s, orig)
        if v > _U63 // unit:
            raise _error("invalid duration", orig)
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > _U63:
                raise _error("invalid duration", orig)
        total += v
        if total > _U63:
            raise _error("invalid duration", orig)
    if neg:
        return -total
    if total > INT64_MAX:
        raise _error("invalid duration", orig)
    return total


#: Go's longest duration (int64 nanoseconds), as ``Duration.String`` writes it.
MAX_DURATION_TEXT = "2562047h47m16.854775807s"
_SYNTAX = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+")


def overflow_hint(text: str) -> str:
    """Why Go rejects a well-formed ``text``, if it is because it is too long; else ''.

    Go's own message says only ``invalid duration``; a value beyond int64 nanoseconds is the
    one well-formed duration it rejects.
    """
    if not _SYNTAX.fullmatch(text):
        return ""
    try:
        parse_go_duration(text)
    except InvalidInput:
        if text.startswith("-"):
            return f"under Go's minimum duration, -{MAX_DURATION_TEXT[:-2]}8s (about 292 years)"
        return f"over Go's maximum duration, {MAX_DURATION_TEXT} (about 292 years)"
    return ""


def parse_flag_duration(text: str) -> int:
    """A flag's Go duration in ns, 0 or more; :class:`InvalidInput` with the fix otherwise."""
    try:
        ns = parse_go_duration(text)
    except InvalidInput as exc:
        why = overflow_hint(text)
        fix = f"; {why}" if why else " (e.g. 90s, 10m, 1h30m)"
        raise InvalidInput(f"{exc.reason}{fix}") from None
    if ns < 0:
        raise InvalidInput("must not be negative")
    return ns


def parse_window_duration(text: str) -> int:
    """Parse a window's ``duration``: Go syntax, and strictly greater than zero."""
    ns = parse_go_duration(text)
    if ns <= 0:
        raise InvalidInput(
            f"must be greater than 0, got {time_quote(text.encode('utf-8', 'surrogatepass'))}"
        )
    return ns


def format_go_duration(ns: int) -> str:
    """Format nanoseconds as Go's ``Duration.String`` does (``1h30m0s``, ``1.5s``, ``0s``)."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        for unit, name in ((MILLISECOND, "ms"), (MICROSECOND, "µs"), (NANOSECOND, "ns")):
            if u >= unit:
                return sign + _frac(u, unit) + name
    h, rem = divmod(u, HOUR)
    m, rem = divmod(rem, MINUTE)
    secs = _frac(rem, SECOND) + "s"
    if h:
        return f"{sign}{h}h{m}m{secs}"
    if m:
        return f"{sign}{m}m{secs}"
    return sign + secs


def _frac(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if not rest:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + str(rest).rjust(digits, "0").rstrip("0")
