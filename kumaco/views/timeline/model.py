"""What a timeline picture shows: its lanes, a forecast's node turns, and how they are assembled.

Contract: :func:`build` turns window entries (valid and invalid), their open
intervals (:func:`kumaco.core.windows.window.occurrences`) and optionally the
planner's node counts (a :class:`NodeCounts`, computed by the command: views
never plan) into a :class:`Timeline` -- one :class:`Lane` per valid window,
sorted by ``namespace/name`` with what the DST changes in the range do to
it, the invalid ones sorted too. A repeated
``namespace/name`` keeps its first window (:func:`windows_by_key`). Pure: no
I/O, no clock (``now`` is an argument).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kumaco.core.windows.daylight_saving import DstNote, dst_notes
from kumaco.core.windows.window import Interval, InvalidWindow, Occurrence, Window


@dataclass(frozen=True)
class Lane:
    """A valid window, its open intervals in the range and, if known, its node count.

    ``notes`` are what the DST changes in the range do to it (a night skipped, a start
    time repeated: :func:`~kumaco.core.windows.daylight_saving.dst_notes`).
    """

    window: Window
    bars: tuple[Interval, ...]
    nodes: int | None = None
    notes: tuple[DstNote, ...] = ()
    #: A dated window with no occurrence left at the timeline's "now" (:meth:`Window.ended`).
    ended: bool = False

    @property
    def key(self) -> str:
        return self.window.key


@dataclass(frozen=True)
class Turn:
    """A node's maintenance in a forecast: admitted at ``start``, done at ``end``.

    ``start`` None: never admitted in the range; ``end`` None: not done by its end.
    """

    node: str
    start: int | None
    end: int | None
    windows: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeCounts:
    """The planner's answer about the nodes: how many are in scope, and each window's share.

    ``matching`` maps a window key to the number of nodes in scope its selector
    selects (:attr:`kumaco.core.planning.planner.Plan.matching`); ``selector`` is the
    scope as the user wrote it (empty: every node).
    """

    in_scope: int
    matching: Mapping[str, int]
    selector: str = ""


@dataclass(frozen=True)
class Timeline:
    """Everything a picture shows; instants are ns since the epoch."""

    start: int
    until: int
    now: int
    lanes: tuple[Lane, ...]
    invalid: tuple[InvalidWindow, ...] = ()
    truncated: bool = False
    source: str = ""
    nodes_in_scope: int | None = None
    node_selector: str = ""
    #: A forecast's node lanes, drawn below the windows (``kumaco forecast``).
    turns: tuple[Turn, ...] = ()


def windows_by_key(
    entries: Iterable[Window | InvalidWindow],
) -> tuple[dict[str, Window], dict[str, InvalidWindow]]:
    """The valid and the invalid entries by key, each key keeping its first entry."""
    windows: dict[str, Window] = {}
    invalid: dict[str, InvalidWindow] = {}
    for e in entries:
        if isinstance(e, Window):
            windows.setdefault(e.key, e)
        else:
            invalid.setdefault(e.key, e)
    return windows, invalid


def build(
    entries: Iterable[Window | InvalidWindow],
    occurrences: Iterable[Occurrence],
    *,
    start: int,
    until: int,
    now: int,
    nodes: NodeCounts | None = None,
    truncated: bool = False,
    source: str = "",
    turns: tuple[Turn, ...] = (),
) -> Timeline:
    """Assemble a :class:`Timeline`; ``occurrences`` are the bars, grouped by window key.

    Keys are unique in a cluster; in file input a repeated ``namespace/name``
    keeps its first window (its lane then shows the bars of both). ``nodes``,
    when given, counts the nodes of the windows :func:`windows_by_key` keeps.
    """
    if until <= start:
        raise ValueError("the range must not be empty")
    windows, invalid = windows_by_key(entries)
    bars: dict[str, set[Interval]] = {}
    for o in occurrences:
        bars.setdefault(o.key, set()).add(Interval(o.start, o.end, o.open_ended))
    lanes = tuple(
        Lane(
            w,
            tuple(sorted(bars.get(key, ()), key=lambda iv: (iv.start, iv.end))),
            nodes.matching.get(key) if nodes is not None else None,
            tuple(dst_notes(w, start, until)),
            w.state_at(now).ended,
        )
        for key, w in sorted(windows.items())
    )
    return Timeline(
        start=start,
        until=until,
        now=now,
        lanes=lanes,
        invalid=tuple(v for _k, v in sorted(invalid.items())),
        truncated=truncated,
        source=source,
        nodes_in_scope=nodes.in_scope if nodes is not None else None,
        node_selector=nodes.selector if nodes is not None else "",
        turns=turns,
    )
