"""Admission rates: "at most N nodes start maintenance in any sliding DURATION".

Contract: :func:`parse_admission_rate` reads ``N/DURATION`` -- ``N`` a count from 1 to
9,999,999, ``DURATION`` a Go duration greater than 0 (``10/1h``, ``1/90s``) -- and
raises :class:`~kumaco.core.errors.InvalidInput` otherwise, with an example in the
message. An :class:`AdmissionRate` prints as ``N/DURATION`` with Go's duration form
(``10/1h0m0s``). Pure: no I/O, no clock. The rule that keeps the rate is
:class:`kumaco.core.planning.pacing_rules.AdmissionRateLimit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.time.durations import format_go_duration, parse_go_duration

_COUNT = re.compile(r"[1-9][0-9]{0,6}")


@dataclass(frozen=True)
class AdmissionRate:
    """At most ``count`` admissions in any window of ``per`` nanoseconds."""

    count: int
    per: int

    @property
    def window(self) -> str:
        """The sliding window as Go writes a duration (``1h0m0s``)."""
        return format_go_duration(self.per)

    def __str__(self) -> str:
        return f"{self.count}/{self.window}"


def parse_admission_rate(text: str) -> AdmissionRate:
    """``N/DURATION`` (see the module contract)."""
    count, sep, duration = text.strip().partition("/")
    if not sep or not _COUNT.fullmatch(count.strip()):
        raise InvalidInput(
            f"{excerpt(text)} is not N/DURATION: a count of at least 1, a slash and a Go "
            "duration (e.g. 10/1h)"
        )
    try:
        per = parse_go_duration(duration.strip())
    except InvalidInput as exc:
        raise InvalidInput(f"{excerpt(text)}: {exc.reason} (e.g. 10/1h)") from None
    if per <= 0:
        raise InvalidInput(f"{excerpt(text)}: the duration must be greater than 0 (e.g. 10/1h)")
    return AdmissionRate(int(count), per)
