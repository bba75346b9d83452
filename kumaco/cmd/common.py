"""What every command line shares: the clock, reading input files, times and exit codes.

Contract: :func:`now_ns` is kumaco's one reading of the wall clock (everything
below ``cmd`` is handed ``now``); :func:`load_objects` reads YAML/JSON files
(``-`` is standard input) into objects, Lists unwrapped, and :func:`read_windows`
keeps the window ConfigMaps among them; :func:`time_flag`
parses a time given to a flag. Input that cannot be used raises
:class:`~kumaco.cmd.flags.UsageError` (exit status 2).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from kumaco.cmd.flags import UsageError, selector_flag
from kumaco.core.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.errors import InvalidInput
from kumaco.core.manifests import ManifestError, load_documents, select_windows
from kumaco.core.times import parse_time
from kumaco.core.windows import InvalidWindow, Window

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
TIME_HELP = "RFC 3339 (2027-03-20T02:00:00Z), or a date alone for its midnight UTC"


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


def time_flag(text: str) -> int:
    """A time given on the command line (RFC 3339), as an instant."""
    try:
        return parse_time(text)
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
