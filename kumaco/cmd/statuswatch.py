"""``kubectl kumaco status --watch``: the status, shown again whenever the cluster changes.

Contract
--------
:func:`watch` is the body of ``status --watch`` (``-w``), and the demo's live table
(``tools/demo.py`` runs it in-process with its :class:`Hooks`). A
:class:`~kumaco.cmd.statusfeed.Feed` watches the nodes, the window ConfigMaps and
the Lease and wakes the loop when something the report shows changed.
Level-triggered: a wake-up only says "look again"; the loop takes the whole
:class:`~kumaco.views.status.Snapshot` from the feed and builds the report through
:func:`~kumaco.cmd.statusreport.status_report`, the one-shot's own path, at the instant
``clock()`` gives. It looks again on every wake-up (:data:`SETTLE` later, so that
a burst of events is one look) and every ``tick`` seconds (:data:`TICK`, 1 s):
relative times, windows opening and closing and leases running out move with the
clock alone.

* On a terminal (``-o text``/``table``, stdout a TTY, ``TERM`` not ``dumb``) the
  status is drawn in place on the alternate screen (cursor hidden, typed keys not
  echoed), redrawn from the top left each time, cleared and redrawn at the new size
  on SIGWINCH, coloured as the one-shot ``status`` decides
  (:func:`~kumaco.cmd.statusreport.use_color`); on exit the terminal is restored and the
  screen it had comes back.
* Otherwise (a pipe, a file, ``-o json``/``yaml``) successive snapshots are printed,
  the first at once and then one each time
  :func:`~kumaco.views.statuswatch.change_key` changes, separated as ``kubectl get -w`` would
  (:func:`~kumaco.views.statuswatch.separator`); the problems of a snapshot that
  changed them also go to standard error, as the one-shot's do.

A failed LIST or WATCH (unreachable, 403, ...) is a problem of the report, shown
like the one-shot's, and retried forever (:mod:`kumaco.cmd.statusfeed`): nothing
of it raises. It runs until ``stop`` is set; unless the host passes its own
``stop``, SIGINT (Ctrl-C), SIGTERM and SIGHUP set it. Exit status 0.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from kumaco.cmd.cluster import Cluster, configmap_selector
from kumaco.cmd.common import EXIT_OK, now_ns
from kumaco.cmd.signals import SignalRelay
from kumaco.cmd.statusfeed import Feed
from kumaco.cmd.statusreport import STATUSES, Shown, required, status_report, use_color
from kumaco.core.planning.instance import Instance
from kumaco.views import statuswatch as frames
from kumaco.views.status import Snapshot, StatusReport, format_report

#: Seconds between two looks without a wake-up (relative times, windows, lease expiry).
TICK = 1.0
#: After a wake-up, how long the loop waits for the rest of a burst of events.
SETTLE = 0.1


class Hooks(Protocol):
    """What a host adds to the watch (the demo: its narration, event log and footer)."""

    def on_report(self, snapshot: Snapshot, report: StatusReport) -> None:
        """Called with each snapshot and its report, before it is shown."""
        ...

    def panel(self, report: StatusReport, color: bool) -> tuple[str, Sequence[str]]:
        """A title and lines for under the status on a terminal (the newest that fit)."""
        ...

    def footer(self, report: StatusReport, color: bool) -> Sequence[str]:
        """The last lines of the screen on a terminal."""
        ...


class _Alone:
    """The command's own hooks: nothing added, the product's footer."""

    def on_report(self, snapshot: Snapshot, report: StatusReport) -> None:
        return None

    def panel(self, report: StatusReport, color: bool) -> tuple[str, Sequence[str]]:
        return "", ()

    def footer(self, report: StatusReport, color: bool) -> Sequence[str]:
        return frames.footer(color)


# ----------------------------------------------------------------------------- the terminal


class Screen:
    """A terminal drawn in place: alternate screen, cursor hidden, keys not echoed; restored."""

    def __init__(self, out: TextIO, stdin: TextIO | None = None) -> None:
        self.out = out
        self.stdin = stdin if stdin is not None else sys.stdin
        self.resized = False
        self._saved: list[Any] | None = None
        self.active = False

    def open(self) -> None:
        with contextlib.suppress(ImportError, OSError, ValueError, AttributeError):
            if self.stdin.isatty():
                import termios  # noqa: PLC0415

                fd = self.stdin.fileno()
                self._saved = termios.tcgetattr(fd)
                quiet = termios.tcgetattr(fd)
                quiet[3] &= ~termios.ECHO  # typed keys (and ^C) do not garble the frame
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
        self.out.write("\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H")
        self.out.flush()
        self.active = True

    def size(self) -> tuple[int, int]:
        """Columns and rows (at least 20 x 5)."""
        try:
            cols, rows = os.get_terminal_size(self.out.fileno())
        except (OSError, ValueError, AttributeError):
            cols, rows = shutil.get_terminal_size((80, 24))
        return max(cols, 20), max(rows, 5)

    def draw(self, lines: Sequence[str]) -> None:
        clear = "\x1b[2J" if self.resized else ""
        self.resized = False
        self.out.write(clear + "\x1b[H" + "\x1b[K\n".join(lines) + "\x1b[K\x1b[J")
        self.out.flush()

    def close(self) -> None:
        if not self.active:
            return
        self.active = False
        with contextlib.suppress(OSError, ValueError):
            self.out.write("\x1b[0m\x1b[?25h\x1b[?1049l")
            self.out.flush()
        if self._saved is not None:
            with contextlib.suppress(ImportError, OSError, ValueError):
                import termios  # noqa: PLC0415

                fd = self.stdin.fileno()
                termios.tcflush(fd, termios.TCIFLUSH)
                termios.tcsetattr(fd, termios.TCSANOW, self._saved)


def in_place(output: str, out: TextIO, env: Mapping[str, str]) -> bool:
    """Whether the watch draws in place: text on a terminal that can move its cursor."""
    if output not in ("text", "table") or env.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


# ----------------------------------------------------------------------------- the loop


@contextlib.contextmanager
def _quiet_kube_logs() -> Iterator[None]:
    """The reflectors' retry warnings stay out of the output: the problems are shown."""
    logger = logging.getLogger("kumaco.kube")
    quiet, propagate = logging.NullHandler(), logger.propagate
    logger.addHandler(quiet)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(quiet)
        logger.propagate = propagate


@dataclass
class _View:
    """How the loop shows each report: in place on ``screen``, or as snapshots on ``out``."""

    output: str
    out: TextIO
    err: TextIO
    screen: Screen | None
    color: bool
    host: Hooks
    shown: str | None = None
    problems: tuple[str, ...] = ()

    def show(self, report: StatusReport) -> None:
        if self.screen is not None:
            cols, rows = self.screen.size()
            title, panel = self.host.panel(report, self.color)
            self.screen.draw(
                frames.screen(
                    format_report(report, color=self.color),
                    cols,
                    rows,
                    panel=panel,
                    panel_title=title,
                    bottom=self.host.footer(report, self.color),
                )
            )
            return
        key = frames.change_key(report)
        if key == self.shown:
            return
        text = STATUSES.formats[self.output](Shown(report, False))
        self.out.write(text if self.shown is None else frames.separator(self.output) + text)
        self.out.flush()
        self.shown = key
        if report.problems != self.problems:
            for p in report.problems:
                self.err.write(f"kubectl-kumaco status: {p}\n")
            self.err.flush()
        self.problems = report.problems


def watch(
    args: argparse.Namespace,
    cluster: Cluster,
    instance: Instance,
    out: TextIO,
    err: TextIO,
    *,
    hooks: Hooks | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], int] = now_ns,
    tick: float = TICK,
    color: bool | None = None,
) -> int:
    """Show the status until ``stop`` (see the module contract); exit status 0."""
    assert cluster.resources is not None
    host = hooks if hooks is not None else _Alone()
    feed = Feed(
        cluster.resources,
        instance,
        cluster.namespaces,
        configmap_selector(args),
        args.node_selector,
    )
    ended = stop if stop is not None else threading.Event()
    require = required(args)
    screen = Screen(out) if in_place(args.output, out, os.environ) else None
    painted = use_color(out, os.environ) if color is None else color
    view = _View(args.output, out, err, screen, painted, host)

    def on_stop(_signum: signal.Signals) -> None:
        ended.set()
        feed.wake.set()

    def on_resize(_signum: signal.Signals) -> None:
        if screen is not None:
            screen.resized = True
        feed.wake.set()

    # Relayed to a thread (kumaco.cmd.signals): a handler setting feed.wake in the main
    # thread, which waits on that very Event, could wait for itself for ever.
    actions: dict[signal.Signals, Callable[[signal.Signals], None]] = {}
    if stop is None:
        actions.update(dict.fromkeys((signal.SIGINT, signal.SIGTERM, signal.SIGHUP), on_stop))
    if screen is not None:
        actions[signal.SIGWINCH] = on_resize
    with SignalRelay(actions, name="status-watch-signals"), _quiet_kube_logs():
        try:
            feed.start()
            if screen is not None:
                screen.open()
                screen.draw(frames.screen(frames.READING, *screen.size()))
            while not ended.is_set() and not feed.settled():
                feed.wake.wait(tick)
                feed.wake.clear()
            while not ended.is_set():
                feed.wake.clear()
                snapshot = feed.snapshot()
                report = status_report(snapshot, instance, clock(), cluster.context, require)
                host.on_report(snapshot, report)
                view.show(report)
                if feed.wake.wait(tick) and not ended.is_set():
                    ended.wait(SETTLE)  # the rest of a burst of events, in one look
        finally:
            feed.close()
            if screen is not None:
                screen.close()
    return EXIT_OK
