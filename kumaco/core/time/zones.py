"""Time zones from the ``tzdata`` package: the core's only file access.

Contract
--------
:func:`load_zone` and :func:`resolve_zone` turn a zone name into a zone, and
raise :class:`kumaco.core.errors.InvalidInput` -- never any other exception --
for a name kumaco does not accept: ``"Local"`` (a controller must not depend on
the ``TZ`` of its container) and any name that is not one of the ``tzdata``
package's canonical zones (robfig also finds ``posixrules``, ``right/...`` and
``America//New_York`` in the host's ``/usr/share/zoneinfo``). ``""`` and
``"UTC"`` are UTC, as in Go's ``time.LoadLocation``.

Why the pure core reads files here, and only here: a zone's rules are data, and
the answer of a schedule must not depend on the machine it runs on. So zones
are read from the ``tzdata`` package installed with kumaco
(``importlib.resources``), never from the host's zoneinfo, and each one once:
every reader is cached for the life of the process, so after the first use of
a zone nothing is read again. The file name is built only from a name found in
the package's own list of zones that also matched a plain ``A/B`` pattern (no
``..``, no leading ``/``). No other module of :mod:`kumaco.core` opens a file.
"""

from __future__ import annotations

import functools
import importlib.resources
import io
import re
import zoneinfo

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.golang import gotime

__all__ = ["load_zone", "resolve_zone", "zone_location", "zone_names"]

_ZONE_NAME_RE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_MAX_ZONE_NAME = 128


@functools.cache
def zone_names() -> frozenset[str]:
    """The canonical zone names of the ``tzdata`` package (read once)."""
    text = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def _canonical_zone(name: str) -> str:
    """Validate a zone name; ``""`` is UTC as in Go's ``LoadLocation``."""
    if name == "Local":
        raise InvalidInput(
            'time zone "Local" is not allowed: it would mean whatever zone the '
            "controller's container runs in; name the zone, for example "
            '"Europe/Berlin" or "UTC"'
        )
    if name in ("", "UTC"):
        return "UTC"
    if len(name) > _MAX_ZONE_NAME or not _ZONE_NAME_RE.fullmatch(name) or name not in zone_names():
        raise InvalidInput(
            f"unknown time zone {excerpt(name)}: expected an IANA time zone name "
            'such as "Europe/Berlin" or "UTC"'
        )
    return name


@functools.cache
def _zone_bytes(name: str) -> bytes:
    # ``name`` is in the tzdata package's own list of zones, and matched
    # _ZONE_NAME_RE: no "..", no leading "/", only path components.
    resource = importlib.resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    try:
        return resource.read_bytes()
    except OSError as err:  # pragma: no cover - a broken tzdata installation
        raise InvalidInput(f"time zone {excerpt(name)} cannot be loaded: {err}") from None


@functools.cache
def _cached_zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo.from_file(io.BytesIO(_zone_bytes(name)), key=name)


@functools.cache
def zone_location(name: str) -> gotime.Location:
    """The Go ``Location`` of the canonical zone ``name`` (``"UTC"`` or a tzdata zone), cached.

    ``name`` is not validated: give it a name :func:`resolve_zone` returned or
    one of :func:`zone_names`.
    """
    if name == "UTC":
        return gotime.UTC
    try:
        return gotime.location_from_tzif(name, _zone_bytes(name))
    except gotime.TZifError as err:  # pragma: no cover - a broken tzdata installation
        raise InvalidInput(f"time zone {excerpt(name)} cannot be loaded: {err}") from None


def load_zone(name: str) -> zoneinfo.ZoneInfo:
    """Return the zone ``name`` from the ``tzdata`` package (never the host's files).

    ``""`` and ``"UTC"`` are UTC, as in Go's ``time.LoadLocation``; ``"Local"``
    and names that are not zones of the ``tzdata`` package raise
    :class:`InvalidInput`. Zones are loaded once and cached.
    """
    return _cached_zone(_canonical_zone(name))


def resolve_zone(name: str) -> tuple[str, gotime.Location]:
    """The canonical name of zone ``name`` and its Go ``Location``; as :func:`load_zone` rejects."""
    canonical = _canonical_zone(name)
    return canonical, zone_location(canonical)
