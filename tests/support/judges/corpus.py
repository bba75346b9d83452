"""The 1 MiB values of the hostile-input corpus (tests/data/invalid/huge-*.yaml).

Contract: a corpus file annotated :data:`INFLATE` (``kumaco.test/inflate: KEY``) holds a
placeholder in ``data[KEY]``; :func:`inflated_value` is the deterministic value that
replaces it, ``length`` characters of :data:`HUGE_PATTERNS` ``[KEY]`` repeated (chosen so
that parsing it would be expensive). The unit corpus test and the live corpus test
build their 1 MiB ConfigMaps with it.
"""

from __future__ import annotations

INFLATE = "kumaco.test/inflate"
ONE_MIB = 1 << 20
HUGE_PATTERNS = {
    "startTime": "0,",
    "duration": "1h",
    "nodeSelector": "a,",
    "timeZone": "Europe/",
    "daysOfMonth": "1,",
    "notBefore": "2027-01-01 ",
    "notAfter": "2027-",
    "maxInProgress": "9",
    "freeze": "true",
}


def inflated_value(key: str, length: int = ONE_MIB) -> str:
    """``length`` characters of ``key``'s pattern, repeated."""
    pattern = HUGE_PATTERNS[key]
    return (pattern * (length // len(pattern) + 1))[:length]
