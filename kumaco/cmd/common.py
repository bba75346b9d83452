"""What every command line shares: the clock, input files, the output, times and exit codes.

Contract: :func:`now_ns` is kumaco's one reading of the wall clock (everything
below ``cmd`` is handed ``now``); :func:`load_objects` reads YAML/JSON files
(``-`` is standard input) into objects, Lists unwrapped, and :func:`read_windows`
keeps the window ConfigMaps among them; :func:`time_flag`
parses a time given to a flag; a :class:`FilesSource` is a command's input read
from files (``kumaco``; :class:`~kumaco.cmd.cluster.ClusterSource` is the cluster's
twin). An :class:`Output` is a result type's one table of
output formats: it declares ``-o/--output`` (and ``--output-file``) -- the only
place either is declared -- and writes the chosen rendering through
:func:`write_output`, the one writer of every command's output. Input that cannot
be used raises :class:`~kumaco.cmd.flags.UsageError` (exit status 2).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from kumaco.cmd.flags import UsageError, selector_flag
from kumaco.core.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.errors import InvalidInput
from kumaco.core.manifests import ManifestError, load_documents, node_views, select_windows
from kumaco.core.nodes import NodeSet
from kumaco.core.times import parse_time
from kumaco.core.windows import InvalidWindow, Window

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: ``--output-file``'s help, unless a command says otherwise.
OUTPUT_FILE_HELP = "write the output here (default: standard output)"
TIME_HELP = "RFC 3339 (2027-03-20T02:00:00Z), a date alone (its midnight UTC), or now"
#: How far ``--until`` is from ``--from`` by default (``windows``, ``timeline``).
DEFAULT_SPAN = 7 * 24 * 3600 * 10**9
HOUR = 3600 * 10**9


def now_ns() -> int:
    """The wall clock, as an instant (ns since the epoch)."""
    return time.time_ns()


def _read(path: str, stdin: TextIO) -> str:
    if path == "-":
        return stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: {exc}") from None


def load_objects(paths: Sequence[str], stdin: TextIO) -> list[Any]:
    """Every object in the files (``-`` is stdin), Lists unwrapped; UsageError if unreadable."""
    objects: list[Any] = []
    for path in paths:
        try:
            objects.extend(load_documents(_read(path, stdin), path))
        except ManifestError as exc:
            raise UsageError(str(exc)) from None
    return objects


def add_input_flags(p: argparse.ArgumentParser) -> None:
    """``--configmap-selector``: which ConfigMaps of the input are windows, as for ``run``."""
    p.add_argument(
        "--configmap-selector",
        default=DEFAULT_CONFIGMAP_SELECTOR,
        metavar="SEL",
        help="label selector of window ConfigMaps, as kumaco run's (default: "
        f"{DEFAULT_CONFIGMAP_SELECTOR}); others are skipped with a note",
    )


def read_windows(
    paths: Sequence[str], args: argparse.Namespace, stdin: TextIO, err: TextIO
) -> list[Window | InvalidWindow]:
    """The window ConfigMaps of the files, selected as the controller selects them.

    A ConfigMap the selector leaves out is skipped with a note on ``err``, and a
    warning when it looks like a window meant for kumaco (window keys, or a label
    close to the selector's: a typo). No ConfigMap at all in the input is a usage
    error.
    """
    objects = load_objects(paths, stdin)
    if not objects:
        raise UsageError("no ConfigMap found in the input")
    selector = selector_flag("--configmap-selector", args.configmap_selector)
    found = select_windows(objects, selector, args.configmap_selector)
    for line in found.skipped:
        err.write(line + "\n")
    for line in found.warnings:
        err.write(f"warning: {line}\n")
    if not found.entries and not found.skipped:
        raise UsageError("no ConfigMap found in the input")
    return found.entries


@dataclass(frozen=True)
class FilesSource:
    """A command's input read from files: window ConfigMaps and, for some, nodes.

    ``nodes_path`` is ``--nodes`` (None: the command takes none, or it was not given).
    """

    paths: Sequence[str]
    nodes_path: str | None
    args: argparse.Namespace
    stdin: TextIO

    def windows(self, err: TextIO) -> list[Window | InvalidWindow]:
        """The window ConfigMaps of the files (:func:`read_windows`)."""
        return read_windows(self.paths, self.args, self.stdin, err)

    @property
    def has_nodes(self) -> bool:
        return bool(self.nodes_path)

    def nodes(self, owned: tuple[str, ...] = ()) -> NodeSet:
        """The nodes of ``--nodes`` (``owned``: the conditions whose writers to keep)."""
        assert self.nodes_path is not None
        return NodeSet(node_views(load_objects([self.nodes_path], self.stdin), owned))

    def origin(self, detailed: bool = False) -> str:
        """What the input was, for a picture's caption: the files."""
        text = "windows: " + ", ".join(self.paths)
        return text + (f" · nodes: {self.nodes_path}" if self.nodes_path else "")


def write_output(text: str, path: str | None, out: TextIO) -> None:
    """``text`` to ``--output-file``'s ``path`` if given (``-``: standard output), else ``out``.

    The one writer of every command's output; a file that cannot be written is a usage
    error naming the flag.
    """
    if not path or path == "-":
        out.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--output-file {path}: {exc}") from None


R = TypeVar("R")


@dataclass(frozen=True)
class Output(Generic[R]):
    """A result type's output formats (format name -> renderer) and how its flags read.

    ``formats`` keeps its order: the first is not the default unless ``default`` says
    so, and ``-o``'s choices are listed in this order. ``file_help`` is
    ``--output-file``'s help; ``None``: the command writes to standard output only.
    """

    formats: Mapping[str, Callable[[R], str]]
    default: str
    help: str
    file_help: str | None = OUTPUT_FILE_HELP

    def add_flags(self, p: argparse.ArgumentParser) -> None:
        """``-o/--output FORMAT`` and, when the command has one, ``--output-file PATH``."""
        p.add_argument(
            "--output", "-o", choices=tuple(self.formats), default=self.default, help=self.help
        )
        if self.file_help is not None:
            p.add_argument("--output-file", metavar="PATH", help=self.file_help)

    def write(self, result: R, args: argparse.Namespace, out: TextIO) -> None:
        """``result`` in the format ``-o`` chose, through :func:`write_output`."""
        path = args.output_file if self.file_help is not None else None
        write_output(self.formats[args.output](result), path, out)


def time_flag(text: str, now: int) -> int:
    """A time given on the command line (RFC 3339, a date, or ``now``), as an instant."""
    if text.strip().lower() == "now":
        return now
    try:
        return parse_time(text)
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None


def add_at_flag(p: argparse.ArgumentParser, what: str) -> None:
    """``--at T``: the instant a command takes as now (``what`` it is used for)."""
    p.add_argument("--at", metavar="T", help=f"{what}: {TIME_HELP} (default: now)")


def clock(args: argparse.Namespace) -> int:
    """The command's one reading of now: ``--at`` if given, else the wall clock."""
    now = now_ns()
    at: str | None = getattr(args, "at", None)
    return time_flag(at, now) if at else now


def add_range_flags(p: argparse.ArgumentParser, start_default: str | None) -> None:
    """``--from T`` and ``--until T``; ``start_default`` None: both are required.

    Otherwise ``--from`` defaults to ``start_default`` (its help) and ``--until`` to seven
    days after ``--from`` (:func:`time_range`).
    """
    required = start_default is None
    p.add_argument(
        "--from",
        dest="from_",
        required=required,
        metavar="T",
        help=TIME_HELP + ("" if required else f" (default: {start_default})"),
    )
    p.add_argument(
        "--until",
        required=required,
        metavar="T",
        help=TIME_HELP + ("" if required else " (default: --from + 7 days)"),
    )


def time_range(args: argparse.Namespace, now: int, align: int = HOUR) -> tuple[int, int]:
    """``--from``/``--until``; by default from ``now`` down to ``align``, for seven days."""
    start = time_flag(args.from_, now) if args.from_ else now - now % align
    until = time_flag(args.until, now) if args.until else start + DEFAULT_SPAN
    if until <= start:
        raise UsageError("--until must be after --from")
    return start, until
