"""What every command line shares: the clock, input files, the output, times and exit codes.

Contract: :func:`now_ns` is kumaco's one reading of the wall clock (everything
below ``cmd`` is handed ``now``); :func:`load_objects` reads YAML/JSON files
(``-`` is standard input) into objects, Lists unwrapped, and :func:`read_windows`
keeps the window ConfigMaps among them; :func:`time_flag` parses a time given to
a flag, which must lie in :data:`EARLIEST` to :data:`LATEST` (a usage error
naming the flag and that range otherwise); a :class:`FilesSource` is a command's
input read from files (``kumaco``; :class:`~kumaco.cmd.cluster.ClusterSource` is
the cluster's twin). An :class:`Output` is a result type's one table of output
formats: it declares ``-o/--output`` (and ``--output-file``) -- the only place
either is declared -- and writes the chosen rendering through
:func:`write_output`, the one writer of every command's output. Input that cannot
be used raises :class:`~kumaco.cmd.flags.UsageError` (exit status 2).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from kumaco.cmd.flags import UsageError, selector_flag
from kumaco.core.errors import InvalidInput
from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals, refusals_of
from kumaco.core.objects.nodes import NodeSet, uncarried
from kumaco.core.planning.pdb_rule import PDBS
from kumaco.core.planning.policy import Policy
from kumaco.core.time.instants import format_instant, parse_time
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.windows.manifests import (
    ManifestError,
    Selection,
    kind_of,
    load_documents,
    node_views,
    select_windows,
)
from kumaco.core.windows.window import InvalidWindow, Window

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: ``--output-file``'s help, unless a command says otherwise.
OUTPUT_FILE_HELP = "write the output here (default: standard output)"
TIME_HELP = "RFC 3339 (2027-03-20T02:00:00Z), a date alone (its midnight UTC), or now"
#: The times a flag accepts: the whole years a 64-bit count of nanoseconds (Go's
#: ``UnixNano``) spans, so that a command's look-ahead (up to a few years, plus a
#: window's duration) stays within the years RFC 3339 can write.
EARLIEST = parse_time("1678-01-01")
LATEST = parse_time("2262-01-01") - 1
#: How far ``--until`` is from ``--from`` by default (``windows``, ``timeline``).
DEFAULT_SPAN = 7 * 24 * 3600 * 10**9
HOUR = 3600 * 10**9


def now_ns() -> int:
    """The wall clock, as an instant (ns since the epoch)."""
    return time.time_ns()


STDIN_NAME = "<stdin>"


def _not_text(name: str, byte: int, offset: int) -> UsageError:
    return UsageError(
        f"{name}: not UTF-8 text (byte 0x{byte:02x} at offset {offset}): expected YAML or "
        "JSON, as kubectl get -o yaml prints it"
    )


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_text(name, data[exc.start], exc.start) from None


def _read(path: str, stdin: TextIO) -> str:
    """The text of ``path`` (``-``: standard input); binary input is a usage error naming it."""
    if path == "-":
        raw = getattr(stdin, "buffer", None)  # a real standard input: its bytes
        if raw is not None:
            return _decode(STDIN_NAME, raw.read())
        return stdin.read()
    try:
        with open(path, "rb") as fh:
            return _decode(path, fh.read())
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def load_sourced(paths: Sequence[str], stdin: TextIO) -> list[tuple[str, Any]]:
    """Every object in the files with where it came from (``file, document N``)."""
    found: list[tuple[str, Any]] = []
    for path in paths:
        name = STDIN_NAME if path == "-" else path
        try:
            docs = load_documents(_read(path, stdin), name)
        except ManifestError as exc:
            raise UsageError(str(exc)) from None
        found.extend((f"{name}, object {n}", obj) for n, obj in enumerate(docs, 1))
    return found


def load_objects(paths: Sequence[str], stdin: TextIO) -> list[Any]:
    """Every object in the files (``-`` is stdin), Lists unwrapped; UsageError if unreadable."""
    return [obj for _where, obj in load_sourced(paths, stdin)]


def add_input_flags(p: argparse.ArgumentParser) -> None:
    """``--configmap-selector``: which ConfigMaps of the input are windows, as for ``run``."""
    p.add_argument(
        "--configmap-selector",
        default=DEFAULT_CONFIGMAP_SELECTOR,
        metavar="SEL",
        help="label selector of window ConfigMaps, as kumaco run's (default: "
        f"{DEFAULT_CONFIGMAP_SELECTOR}); others are skipped with a note",
    )


def _counted(kinds: Sequence[str]) -> str:
    """``6 Nodes``, ``a string``: what documents are, counted by kind."""
    counts = Counter(kinds)
    return ", ".join(
        (f"{n} {kind}" + ("s" if n > 1 else ""))
        if kind[:1].isupper()
        else (kind if n == 1 else f"{kind} ({n} times)")
        for kind, n in counts.items()
    )


def _nothing_selected(found: Selection, selector: str, nodes_flag: bool) -> str:
    """Why the input has no window for the command, and what to do about it."""
    if found.foreign and set(found.foreign) == {"Node"}:
        fix = (
            "were --windows and --nodes swapped?"
            if nodes_flag
            else "give the window ConfigMaps (kubectl get cm -n NAMESPACE -o yaml)"
        )
        return f"the input holds {_counted(found.foreign)} and no window ConfigMap: {fix}"
    if found.skipped:
        return (
            f"no window ConfigMap selected by --configmap-selector {selector!r} in the input: "
            f"{len(found.skipped)} ConfigMap{'s' if len(found.skipped) > 1 else ''} skipped "
            "(see above)"
        )
    return f"no ConfigMap found in the input (it holds {_counted(found.foreign)})"


def read_windows(
    paths: Sequence[str],
    args: argparse.Namespace,
    stdin: TextIO,
    err: TextIO,
    nodes_flag: bool = False,
) -> list[Window | InvalidWindow]:
    """The window ConfigMaps of the files, selected as the controller selects them.

    A ConfigMap the selector leaves out is skipped with a note on ``err``, and a
    warning when it looks like a window meant for kumaco (window keys, or a label
    close to the selector's: a typo). An input without any selected window ConfigMap
    is a usage error saying what it held (``nodes_flag``: the command also takes
    ``--nodes``, so Nodes here mean the two were swapped); a namespace/name given more
    than once makes each copy invalid (:func:`~kumaco.core.windows.manifests.window_entries`).
    """
    sourced = load_sourced(paths, stdin)
    if not sourced:
        raise UsageError("no ConfigMap found in the input")
    selector = selector_flag("--configmap-selector", args.configmap_selector)
    found = select_windows(
        [obj for _where, obj in sourced],
        selector,
        args.configmap_selector,
        [where for where, _obj in sourced],
    )
    for line in found.skipped:
        err.write(line + "\n")
    for line in found.warnings:
        err.write(f"warning: {line}\n")
    if not found.selected:
        raise UsageError(_nothing_selected(found, args.configmap_selector, nodes_flag))
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
        nodes_flag = getattr(self.args, "nodes", None) is not None
        return read_windows(self.paths, self.args, self.stdin, err, nodes_flag)

    @property
    def has_nodes(self) -> bool:
        return bool(self.nodes_path)

    def nodes(self, owned: tuple[str, ...] = ()) -> NodeSet:
        """The nodes of ``--nodes`` (``owned``: the conditions whose writers to keep).

        Other objects are ignored (a ``kubectl get nodes,cm`` dump may serve both flags);
        none at all, or a node name given twice, is a usage error.
        """
        assert self.nodes_path is not None
        objects = load_objects([self.nodes_path], self.stdin)
        views = node_views(objects, owned)
        flag = f"--nodes {self.nodes_path}"
        if not views:
            held = _counted([kind_of(o) for o in objects]) if objects else "nothing"
            fix = (
                ": were --windows and --nodes swapped?"
                if any(kind_of(o) == "ConfigMap" for o in objects)
                else " (kubectl get nodes -o yaml prints them)"
            )
            raise UsageError(f"{flag}: no Node in it (it holds {held}){fix}")
        twice = sorted(n for n, c in Counter(v.name for v in views).items() if c > 1)
        if twice:
            raise UsageError(
                f"{flag}: the node {twice[0]} is in it more than once"
                + (f" (and {len(twice) - 1} more)" if len(twice) > 1 else "")
                + "; a node has one state: keep one"
            )
        return NodeSet(views)

    def refusals(self, policy: Policy) -> Refusals:
        """With ``--respect-pdbs``: the PodDisruptionBudgets' answers of ``--pods``/``--pdbs``.

        Each flag reads the objects of its kind in its file (one ``kubectl get pods,pdb
        -A -o yaml`` file may be given to both); a file with objects but none of its kind
        is a usage error, and so are the flags without ``--respect-pdbs``.
        """
        paths = {f: getattr(self.args, f.lstrip("-"), None) for f in ("--pods", "--pdbs")}
        if not policy.reads_cluster(PDBS):
            if any(paths.values()):
                raise UsageError("--pods and --pdbs are read only with --respect-pdbs")
            return NO_REFUSALS
        found: dict[str, list[Any]] = {}
        for (flag, path), kind in zip(paths.items(), ("Pod", "PodDisruptionBudget"), strict=True):
            if not path:
                raise UsageError(
                    f"--respect-pdbs: give {flag} FILE offline "
                    "(kubectl get pods,pdb -A -o yaml, to both --pods and --pdbs)"
                )
            objects = load_objects([path], self.stdin)
            found[flag] = [o for o in objects if isinstance(o, dict) and o.get("kind") == kind]
            if objects and not found[flag]:
                raise UsageError(f"{flag} {path}: no {kind} in it")
        return refusals_of(found["--pods"], found["--pdbs"])

    def origin(self, detailed: bool = False) -> str:
        """What the input was, for a picture's caption: the files."""
        text = "windows: " + ", ".join(self.paths)
        return text + (f" · nodes: {self.nodes_path}" if self.nodes_path else "")


@dataclass(frozen=True)
class Uncarried:
    """A required or blocking condition type no node in scope carries (a typo, mostly)."""

    flag: str
    type: str
    #: The closest type the nodes do carry, if one is close.
    close: str | None

    def text(self, effect: str) -> str:
        hint = f"; did you mean {self.close}?" if self.close else ""
        return f"no node in scope carries the condition {self.type} ({self.flag}): {effect}{hint}"


def uncarried_conditions(policy: Policy, nodes: NodeSet) -> list[Uncarried]:
    """The required and blocking condition types no node in scope carries.

    A typo there (``--require-condition kured.dev/RebootRequierd``) would otherwise admit
    nobody, or block nobody, without a word; the closest type the nodes carry is named.
    """
    chosen = policy.scope.select(nodes.index)
    in_scope = [n for n in nodes if n.name in chosen]
    return [
        Uncarried(flag, ctype, close)
        for flag, types in (
            ("--require-condition", policy.require),
            ("--block-condition", policy.block),
        )
        for ctype, close in uncarried(types, in_scope)
    ]


def condition_warnings(policy: Policy, nodes: NodeSet) -> list[str]:
    """The warning lines of :func:`uncarried_conditions`."""
    return [
        u.text(
            "no node can be admitted" if u.flag == "--require-condition" else "it blocks no node"
        )
        for u in uncarried_conditions(policy, nodes)
    ]


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


def time_flag(text: str, now: int, flag: str) -> int:
    """A time given to ``flag`` (RFC 3339, a date, or ``now``), as an instant.

    A time outside :data:`EARLIEST` to :data:`LATEST` is a usage error naming both.
    """
    if text.strip().lower() == "now":
        return now
    try:
        t = parse_time(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None
    if not EARLIEST <= t <= LATEST:
        raise UsageError(
            f"{flag}: {text.strip()} is outside the supported range, "
            f"{format_instant(EARLIEST)} to {format_instant(LATEST)}"
        )
    return t


def add_at_flag(p: argparse.ArgumentParser, what: str) -> None:
    """``--at T``: the instant a command takes as now (``what`` it is used for)."""
    p.add_argument("--at", metavar="T", help=f"{what}: {TIME_HELP} (default: now)")


def clock(args: argparse.Namespace) -> int:
    """The command's one reading of now: ``--at`` if given, else the wall clock."""
    now = now_ns()
    at: str | None = getattr(args, "at", None)
    return time_flag(at, now, "--at") if at else now


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
    start = time_flag(args.from_, now, "--from") if args.from_ else now - now % align
    until = time_flag(args.until, now, "--until") if args.until else start + DEFAULT_SPAN
    if until <= start:
        raise UsageError("--until must be after --from")
    return start, until
