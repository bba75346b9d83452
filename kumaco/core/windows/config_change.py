"""A change of the window ConfigMaps, waited out: adopt it, or settle and exit. A pure machine.

Contract: :class:`ConfigChange` is told, on every controller pass, the parsed
window ConfigMaps (:class:`ParsedWindow`), whether the replica leads, and
``now`` (seconds on a monotonic clock: it reads none itself). It answers what
the pass must do about the ``data`` of those ConfigMaps (the config hash,
:func:`~kumaco.core.windows.configmaps.config_hash`):

* ``None``: nothing changed since the baseline (a change undone within the
  settle time is forgotten) -- go on;
* :class:`Loaded`: the first look; this is the baseline -- go on;
* :class:`Adopted`: a follower saw a change; it is the new baseline at once
  (a follower has no state to rebuild) -- go on;
* :class:`Settling`: the leader saw a change and no further change has come
  for less than ``settle`` seconds (GitOps tools apply many ConfigMaps within
  a second) -- write nothing; look again after ``wait`` seconds;
* :class:`Settled`: the leader's change has been quiet for ``settle`` seconds
  -- announce the end of the open windows whose ConfigMap was deleted
  (``deleted``: their baseline window and ConfigMap) and exit so that a
  restart rebuilds the state. The baseline is kept: asked again, it answers
  the same.

Hashes are given shortened to 16 hex digits, as kumaco logs and exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kumaco.core.windows.configmaps import (
    WindowConfigMap,
    config_digest,
    config_hash,
    describe_config_change,
)
from kumaco.core.windows.window import InvalidWindow, Window

#: Which ConfigMaps were added, removed and edited (``describe_config_change``).
Change = dict[str, list[str]]


@dataclass
class ParsedWindow:
    """A window ConfigMap and what it parsed to."""

    cm: WindowConfigMap
    result: Window | InvalidWindow


def short_hash(digests: dict[str, str]) -> str:
    """The config hash as kumaco logs and exports it."""
    return config_hash(digests)[:16]


@dataclass(frozen=True)
class Loaded:
    """The first look: the baseline (its hash and how many window ConfigMaps)."""

    hash: str
    windows: int


@dataclass(frozen=True)
class Adopted:
    """A follower's change, adopted as the new baseline."""

    before: str
    after: str
    change: Change


@dataclass(frozen=True)
class Settling:
    """The leader's change, not yet quiet for the settle time: write nothing."""

    change: Change
    #: The first look at this change (the burst began): worth a log line.
    first: bool
    #: Seconds until the change may have settled.
    wait: float


@dataclass(frozen=True)
class Settled:
    """The leader's change, quiet for the settle time: announce the deleted, exit."""

    before: str
    after: str
    change: Change
    deleted: tuple[tuple[Window, WindowConfigMap], ...]


Decision = Loaded | Adopted | Settling | Settled


class ConfigChange:
    """The baseline of the window ConfigMaps and the change being waited out."""

    def __init__(self, settle: float) -> None:
        self.settle = settle
        self._baseline: dict[str, str] | None = None
        self._windows: dict[str, Window] = {}
        self._cms: dict[str, WindowConfigMap] = {}
        # A change being waited out: (digests last seen, since when).
        self._changing: tuple[dict[str, str], float] | None = None

    def observe(
        self, entries: Sequence[ParsedWindow], *, leader: bool, now: float
    ) -> Decision | None:
        """What this pass must do about the window ConfigMaps; see the module contract."""
        digests = config_digest(p.cm for p in entries)
        if self._baseline is None:
            self._set_baseline(digests, entries)
            return Loaded(short_hash(digests), len(digests))
        if digests == self._baseline:
            self._changing = None  # a change that was undone within the settle time
            return None
        change = describe_config_change(self._baseline, digests)
        before, after = short_hash(self._baseline), short_hash(digests)
        if not leader:
            self._set_baseline(digests, entries)
            return Adopted(before, after, change)
        first = self._changing is None
        if self._changing is None or self._changing[0] != digests:
            self._changing = (digests, now)
        quiet_until = self._changing[1] + self.settle
        if now < quiet_until:
            return Settling(change, first, quiet_until - now)
        deleted = tuple(
            (self._windows[key], self._cms[key])
            for key in change["removed"]
            if key in self._windows and key in self._cms
        )
        return Settled(before, after, change, deleted)

    def _set_baseline(self, digests: dict[str, str], entries: Sequence[ParsedWindow]) -> None:
        self._baseline = digests
        self._windows = {p.cm.key: p.result for p in entries if isinstance(p.result, Window)}
        self._cms = {p.cm.key: p.cm for p in entries}
