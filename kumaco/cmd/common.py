"""What every command line shares: the clock, reading input files, times and exit codes.

Contract: :func:`now_ns` is kumaco's one reading of the wall clock (everything
below ``cmd`` is handed ``now``); :func:`load_objects` reads YAML/JSON files
(``-`` is standard input) into objects, Lists unwrapped; :func:`time_flag`
parses a time given to a flag. Input that cannot be used raises
:class:`~kumaco.cmd.flags.UsageError` (exit status 2).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TextIO

from kumaco.cmd.flags import UsageError
from kumaco.core.errors import InvalidInput
from kumaco.core.manifests import ManifestError, load_documents
from kumaco.core.times import parse_time

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


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


def time_flag(text: str) -> int:
    """A time given on the command line (RFC 3339), as an instant."""
    try:
        return parse_time(text)
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
