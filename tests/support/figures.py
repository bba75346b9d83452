"""Published figures: recorded by the tests that measure them, checked against the docs.

Contract. Every measured figure in README.md and docs/*.md comes from a named command
whose output is kept in ``docs/*.json``:

* the e2e tests record what they measure with :meth:`Figures.record` (the session
  fixture ``figures``, tests/conftest.py); when ``KUMACO_FIGURES`` names a file,
  the session writes them there (``hack/test.sh`` writes ``artifacts/figures.json``
  and ``.ci/run`` prints it). The copy the docs quote is ``docs/e2e-figures.json``,
  with the command, date and commit of the run that produced it;
* ``python hack/chaos.py`` writes ``docs/chaos.json``, ``python hack/soak.py``
  ``docs/soak.json``, ``python hack/bench.py`` ``docs/benchmarks.json``.

In the Markdown, a comment names the source of the block (a table or a paragraph)
that follows it::

    <!-- figures: docs/e2e-figures.json ha_failover ha_config_edit; constants: 17 -->

and :func:`check_markdown` asserts that every number in that block (outside inline
code, dates and clock times) is a value in the named subtrees of that JSON (all of
it when no key is named), shown with the same precision: ``16.2`` matches ``16.23``,
``4.1`` matches ``4.06``, an integer matches only itself. ``constants:`` lists the
numbers of the block that are not measurements (a bound computed from settings, a
documented limit).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "KUMACO_FIGURES"
MARKER = re.compile(r"<!--\s*figures:\s*(?P<spec>.*?)\s*-->")
_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_COMMENT = re.compile(r"<!--.*?-->")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?Z?)?|\b\d{1,2}:\d{2}(?::\d{2})?\b"
)
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?")


class Figures:
    """The figures one test session measured: ``{section: {name: value}}`` (thread-safe)."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def record(self, section: str, **values: Any) -> None:
        """Merge ``values`` into ``section``; lists under one name are extended."""
        with self._lock:
            into = self.sections.setdefault(section, {})
            for name, value in values.items():
                if isinstance(value, list) and isinstance(into.get(name), list):
                    into[name].extend(value)
                else:
                    into[name] = value

    def write(self, path: Path, command: str) -> None:
        doc = {
            "command": command,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "commit": _commit(),
            "figures": self.sections,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return ""
    return out.stdout.strip()


# ----------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class Block:
    """A marked block of a Markdown file: its source and the numbers it shows."""

    path: Path
    line: int  # 1-based line of the marker
    source: Path
    keys: tuple[str, ...]
    constants: frozenset[str]
    text: str
    numbers: tuple[str, ...] = field(default=())


def numbers_in(text: str) -> list[str]:
    """The numbers a reader sees in ``text``: not in inline code, link targets, comments,
    dates or clock times; thousands separators kept as written."""
    for pattern in (_COMMENT, _CODE, _LINK_TARGET, _DATE_TIME):
        text = pattern.sub(" ", text)
    return _NUMBER.findall(text)


def blocks(path: Path, root: Path) -> Iterator[Block]:
    """Every block of ``path`` that follows a ``figures:`` marker."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        m = MARKER.search(line)
        if m is None:
            continue
        spec = m.group("spec")
        source_part, _, const_part = spec.partition(";")
        constants = const_part.strip().removeprefix("constants:").split()
        words = source_part.split()
        if not words:
            raise ValueError(f"{path}:{i + 1}: a figures marker names no source")
        j = i + 1
        body: list[str] = []
        while j < len(lines) and lines[j].strip():
            body.append(lines[j])
            j += 1
        text = "\n".join(body)
        yield Block(
            path,
            i + 1,
            root / words[0],
            tuple(words[1:]),
            frozenset(constants),
            text,
            tuple(numbers_in(text)),
        )


def leaves(doc: Any) -> Iterator[Any]:
    """Every scalar in a JSON document (strings yield the numbers they contain)."""
    if isinstance(doc, Mapping):
        for v in doc.values():
            yield from leaves(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from leaves(v)
    elif isinstance(doc, str):
        yield from numbers_in(doc)
    elif doc is not None and not isinstance(doc, bool):
        yield doc


def subtree(doc: Any, key: str) -> Any:
    """``doc`` at a dotted ``key`` (``figures.`` may be left out); KeyError if absent."""
    node = doc
    parts = key.split(".")
    if isinstance(node, Mapping) and parts[0] not in node and "figures" in node:
        node = node["figures"]
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def shows(token: str, value: Any) -> bool:
    """Whether the JSON ``value`` is what the doc's ``token`` shows, at its precision."""
    plain = token.replace(",", "")
    if isinstance(value, str):
        return value.replace(",", "") == plain
    if "." in plain:
        decimals = len(plain.split(".")[1])
        return f"{float(value):.{decimals}f}" == plain
    return float(value) == float(plain) and float(value).is_integer()


def check_markdown(path: Path, root: Path) -> list[str]:
    """Every number of every marked block of ``path`` that its source does not hold."""
    problems: list[str] = []
    for b in blocks(path, root):
        where = f"{path.relative_to(root)}:{b.line}"
        if not b.source.exists():
            problems.append(f"{where}: the source {b.source.relative_to(root)} does not exist")
            continue
        doc = json.loads(b.source.read_text())
        try:
            trees = [subtree(doc, k) for k in b.keys] if b.keys else [doc]
        except KeyError as exc:
            problems.append(f"{where}: {b.source.name} has no {exc.args[0]!r}")
            continue
        values = [v for t in trees for v in leaves(t)]
        if not b.text:
            problems.append(f"{where}: the marker is followed by no block")
        for token in b.numbers:
            if token.replace(",", "") in b.constants or token in b.constants:
                continue
            if not any(shows(token, v) for v in values):
                problems.append(
                    f"{where}: {token} is not in {b.source.name} "
                    f"{' '.join(b.keys) or '(whole file)'}"
                )
    return problems


# ----------------------------------------------------------------------------- counts of files

FILES = re.compile(
    r"(?P<n>\d[\d,]*)\s*<!--\s*files:\s*(?P<glob>\S+)(?:\s+class=(?P<cls>\S+))?\s*-->"
)
_CLASS = re.compile(r"kumaco\.test/class:\s*(\S+)")


def check_counts(path: Path, root: Path) -> list[str]:
    """Every ``N <!-- files: GLOB [class=a,b] -->`` of ``path`` whose count is not N.

    The count is of the files matching GLOB (from the repository root), restricted to
    those annotated ``kumaco.test/class`` with one of the classes when given.
    """
    problems = []
    for i, line in enumerate(path.read_text().splitlines()):
        for m in FILES.finditer(line):
            files = sorted(root.glob(m.group("glob")))
            if m.group("cls"):
                wanted = set(m.group("cls").split(","))
                files = [
                    f
                    for f in files
                    if (c := _CLASS.search(f.read_text(errors="replace"))) and c.group(1) in wanted
                ]
            n = int(m.group("n").replace(",", ""))
            if not files or n != len(files):
                problems.append(
                    f"{path.relative_to(root)}:{i + 1}: says {n}, {m.group('glob')} "
                    f"{m.group('cls') or ''} has {len(files)}"
                )
    return problems
