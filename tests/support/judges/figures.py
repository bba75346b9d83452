"""Published figures: recorded by the tests that measure them, checked against the docs.

Contract. Every measured figure in the documents (:func:`documents`: README.md,
CONTRIBUTING.md and docs/*.md) comes from a named command whose output is kept in
``docs/*.json``:

* the e2e tests record what they measure with :meth:`Figures.record` (the session
  fixture ``figures``, tests/conftest.py); when ``KUMACO_FIGURES`` names a file,
  the session writes them there (``hack/test.sh`` writes ``artifacts/figures.json``
  and ``.ci/run`` prints it). The copy the docs quote is ``docs/e2e-figures.json``,
  with the command, date and commit of the run that produced it;
* ``python hack/chaos.py`` writes ``docs/chaos.json``, ``python hack/soak.py``
  ``docs/soak.json``, ``python hack/bench.py`` ``docs/benchmarks.json``.

In the Markdown, a comment (it may span lines) names the source of the block (a table
or a paragraph: the non-blank lines after it) and, in reading order, what each number of
the block is::

    <!-- figures: docs/e2e-figures.json
    ha_failover: takeover_seconds.SIGTERM.max settings.lease_s =17
    chaos_short: kills takeover_seconds.SIGKILL.min reboots_started~record -->

The first word is the JSON file. Then one item per number the block shows (outside
inline code, link targets, comments, dates, clock times and commit hashes): a dotted
path from the JSON's root (``figures.`` may be left out; see :func:`resolve` for list
indices, ``min``/``max``/``len``, ``runs[nodes=5000]`` and ``#i``), or ``=N`` for a
number that is not a measurement (a bound computed from settings, a documented limit).
``KEY:`` makes the following paths relative to ``KEY`` (until the next ``KEY:``; a bare
``:`` goes back to the root); shell quoting keeps a key with spaces in one word.
:func:`check_markdown` fails unless the block shows exactly as many numbers as the marker
has items and each number is its item's value at the precision shown (``16.2`` shows
``16.23``, ``4.1`` shows ``4.06``, an integer only itself). ``python -m
tests.support.judges.figures DOC...`` prints each figure beside its item and value.

A run's figures in CI: :func:`compare_with_run` looks every quote of
``docs/e2e-figures.json`` up in the fresh run's ``artifacts/figures.json``
(hack/ci_verdict.py): a time (a part of the path ending in ``_s``, ``_ms`` or
``seconds``) must be within a factor of :data:`TIME_FACTOR` either way or
:data:`TIME_SLACK` apart, an integer count within :data:`COUNT_FRACTION` of it (rounded
down, so small counts exactly), anything else equal. An item ending in ``~record`` is a figure
the run does not reproduce (the random counts of a chaos run): it is not compared, and
its block says which run it is from (``CI run of COMMIT, YYYY-MM-DD``, :func:`record_of`).

:func:`mutation_score` changes each checked figure's last digit, one at a time, and
counts the changes these checks catch (tests/unit/test_figures_mutation.py).
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import functools
import itertools
import json
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "KUMACO_FIGURES"
MARKER = re.compile(r"<!--\s*figures:(?P<spec>.*?)-->", re.S)
RECORD = "~record"
TIME_FACTOR = 3.0
#: A count of a fault run (connections cut, handovers, writes) moves a little from run to
#: run: within this fraction of the docs' value, rounded down -- so a 0, a 1 or a ceiling
#: of 2 or 3 must be met exactly, while 12 connections may be 9 to 15.
COUNT_FRACTION = 0.25
#: A sub-second time under a fault (a poll of 0.1 s, a cut landing on a write) moves by up
#: to a second from run to run on two cores running four e2e lanes: 0.12 s was 0.85 s in
#: a clean-clone run of 73a31cc.
TIME_SLACK = {"s": 1.0, "ms": 1000.0}
_COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
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
class Span:
    """One number a reader sees: 0-based line and columns in its file, and the token."""

    line: int
    start: int
    end: int
    token: str


@dataclass(frozen=True)
class Item:
    """What a marker says one figure is: a path into the JSON or a constant (``=N``)."""

    text: str  # the dotted path from the JSON's root, or the constant as written
    constant: bool = False
    record: bool = False  # ``~record``: this run's own figure (see compare_with_run)


@dataclass(frozen=True)
class Block:
    """A marked block of a Markdown file: its source, its items and the numbers it shows."""

    path: Path
    line: int  # 1-based line where the marker starts
    source: Path
    items: tuple[Item, ...]
    text: str
    spans: tuple[Span, ...]
    errors: tuple[str, ...] = ()
    body: int = 0  # 0-based line where the block starts

    @property
    def numbers(self) -> tuple[str, ...]:
        return tuple(s.token for s in self.spans)


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def _masked(text: str) -> str:
    """``text`` with what is not a figure blanked out, each character kept in its place."""
    for pattern in (_COMMENT, _CODE, _LINK_TARGET, _DATE_TIME, _COMMIT):
        text = pattern.sub(_blank, text)
    return text


def number_spans(text: str) -> list[tuple[int, int, int, str]]:
    """``(line, start, end, token)`` of every number a reader sees in ``text`` (0-based)."""
    found: list[tuple[int, int, int, str]] = []
    for i, line in enumerate(_masked(text).split("\n")):
        found.extend((i, m.start(), m.end(), m.group(0)) for m in _NUMBER.finditer(line))
    return found


def numbers_in(text: str) -> list[str]:
    """The numbers a reader sees in ``text``: not in inline code, link targets, comments,
    dates, clock times or commit hashes; thousands separators kept as written."""
    return [tok for _i, _s, _e, tok in number_spans(text)]


def _items(spec: str) -> tuple[str, list[Item], list[str]]:
    """The source and items of a marker's text, and what is wrong with its syntax."""
    errors: list[str] = []
    if re.search(r";\s*constants:", spec):
        errors.append("'; constants:' is gone: write each constant in its place as =N")
        spec = re.sub(r";\s*constants:", " ", spec)
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        return "", [], [f"the marker does not parse: {exc}"]
    if not words:
        return "", [], ["a figures marker names no source"]
    prefix = ""
    items: list[Item] = []
    for word in words[1:]:
        if word.startswith("="):
            items.append(Item(word[1:], constant=True))
        elif word.endswith(":"):
            prefix = word[:-1]
        else:
            record = word.endswith(RECORD)
            path = word.removesuffix(RECORD)
            items.append(Item(f"{prefix}.{path}" if prefix else path, record=record))
    return words[0], items, errors


def blocks(path: Path, root: Path, text: str | None = None) -> Iterator[Block]:
    """Every block of ``path`` (or of ``text``, read as ``path``) after a ``figures:`` marker.

    The block is the run of non-blank lines after the line where the marker ends.
    """
    content = path.read_text() if text is None else text
    lines = content.splitlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for m in MARKER.finditer(content):
        first = bisect.bisect_right(offsets, m.start()) - 1
        last = bisect.bisect_right(offsets, m.end() - 1) - 1
        source, items, errors = _items(m.group("spec"))
        j = last + 1
        body: list[str] = []
        while j < len(lines) and lines[j].strip():
            body.append(lines[j])
            j += 1
        spans = [Span(last + 1 + i, s, e, t) for i, s, e, t in number_spans("\n".join(body))]
        yield Block(
            path,
            first + 1,
            root / source if source else root,
            tuple(items),
            "\n".join(body),
            tuple(spans),
            tuple(errors),
            last + 1,
        )


@functools.lru_cache(maxsize=64)
def _load(path: str, mtime_ns: int) -> Any:
    return json.loads(Path(path).read_text())


def load(path: Path) -> Any:
    """The JSON document at ``path`` (cached while the file is unchanged)."""
    return _load(str(path), path.stat().st_mtime_ns)


_UNITS = {"kB": 1e3, "MB": 1e6, "GB": 1e9}
_SELECT = re.compile(r"^(?P<name>[^\[]*)\[(?P<key>[^=\]]+)=(?P<value>[^\]]*)\]$")


def resolve(doc: Any, path: str) -> Any:
    """The value at a dotted ``path`` of ``doc``; KeyError (with the reason) if there is none.

    ``figures.`` may be left out. A part is a key of a mapping; on a list, an index,
    ``min``, ``max`` or ``len``; on a number, ``kB``/``MB``/``GB`` (decimal units) or
    ``round``; ``name[key=value]`` is the one element of list ``name`` whose ``key`` is
    ``value``; ``#i`` is the i-th number written in a string.
    """
    node = doc
    parts = path.split(".")
    if isinstance(node, Mapping) and parts[0] not in node and "figures" in node:
        node = node["figures"]
    for part in parts:
        sel = _SELECT.match(part)
        if sel:
            if sel["name"]:
                node = _step(node, sel["name"], path)
            if not isinstance(node, list):
                raise KeyError(f"{path}: {sel['name']!r} is not a list")
            hits = [
                e for e in node if isinstance(e, Mapping) and str(e.get(sel["key"])) == sel["value"]
            ]
            if len(hits) != 1:
                raise KeyError(f"{path}: {len(hits)} elements have {sel['key']}={sel['value']}")
            node = hits[0]
        else:
            node = _step(node, part, path)
    return node


def _step(node: Any, part: str, path: str) -> Any:
    if isinstance(node, Mapping):
        if part not in node:
            raise KeyError(f"{path}: no {part!r}")
        return node[part]
    if isinstance(node, list):
        numbers = [v for v in node if isinstance(v, int | float) and not isinstance(v, bool)]
        if part in ("min", "max") and numbers and len(numbers) == len(node):
            return min(numbers) if part == "min" else max(numbers)
        if part == "len":
            return len(node)
        if part.isdigit() and int(part) < len(node):
            return node[int(part)]
        raise KeyError(f"{path}: no {part!r} in a list of {len(node)}")
    if isinstance(node, int | float) and not isinstance(node, bool):
        if part in _UNITS:
            return node / _UNITS[part]
        if part == "round":
            return round(node)
    if isinstance(node, str) and part.startswith("#") and part[1:].isdigit():
        found = numbers_in(node)
        if int(part[1:]) < len(found):
            return found[int(part[1:])]
    raise KeyError(f"{path}: {part!r} is below a scalar")


def shows(token: str, value: Any) -> bool:
    """Whether the JSON ``value`` is what the doc's ``token`` shows, at its precision."""
    plain = token.replace(",", "")
    if isinstance(value, str):
        return value.replace(",", "") == plain
    if "." in plain:
        decimals = len(plain.split(".")[1])
        return f"{float(value):.{decimals}f}" == plain
    return float(value) == float(plain) and float(value).is_integer()


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float | str) and not isinstance(value, bool)


def check_markdown(path: Path, root: Path, text: str | None = None) -> list[str]:
    """What is wrong with the marked figures of ``path`` (or of ``text``, read as ``path``).

    Each number of a block is paired, in reading order, with the marker's items: as many
    items as numbers, each path naming one scalar the number shows at its precision, each
    constant written as the number is. A block with a ``~record`` item names the run
    (``CI run of COMMIT, DATE``, from its JSON) in its text.
    """
    problems: list[str] = []
    for b in blocks(path, root, text):
        where = f"{path.relative_to(root)}:{b.line}"
        problems.extend(f"{where}: {e}" for e in b.errors)
        if b.source == root or not b.source.is_file():
            problems.append(f"{where}: the source {b.source.relative_to(root)} does not exist")
            continue
        if not b.text:
            problems.append(f"{where}: the marker is followed by no block")
        doc = load(b.source)
        if len(b.items) != len(b.spans):
            problems.append(
                f"{where}: the block shows {len(b.spans)} figures, the marker names {len(b.items)}"
            )
        for span, item in zip(b.spans, b.items, strict=False):
            at = f"{path.relative_to(root)}:{span.line + 1}"
            if item.constant:
                if span.token != item.text:
                    problems.append(f"{at}: {span.token} is not the constant {item.text}")
                continue
            try:
                value = resolve(doc, item.text)
            except KeyError as exc:
                problems.append(f"{at}: {span.token}: {b.source.name} has no {exc.args[0]}")
                continue
            if not _scalar(value):
                problems.append(f"{at}: {span.token}: {item.text} is not one value")
            elif not shows(span.token, value):
                problems.append(
                    f"{at}: {span.token} is not {b.source.name} {item.text} ({value!r})"
                )
        if any(i.record for i in b.items):
            run = record_of(doc)
            if run not in b.text.replace("\n", " "):
                problems.append(f"{where}: ~record figures, but the block does not say {run!r}")
    return problems


def record_of(doc: Any) -> str:
    """How a quote names the run a JSON document was kept from: ``CI run of C, YYYY-MM-DD``."""
    return f"CI run of {doc.get('commit', '?')}, {str(doc.get('date', '?'))[:10]}"


def explain(path: Path, root: Path) -> Iterator[str]:
    """Each marked figure of ``path`` with its item and the value there (a reader's aid)."""
    for b in blocks(path, root):
        doc = load(b.source) if b.source.is_file() else {}
        for span, item in itertools.zip_longest(b.spans, b.items):
            line = f"{path.relative_to(root)}:{span.line + 1}" if span else "(no figure)"
            token = span.token if span else "-"
            if item is None:
                yield f"{line}: {token} <- (no item)"
            elif item.constant:
                yield f"{line}: {token} <- constant {item.text}"
            else:
                try:
                    value: Any = resolve(doc, item.text)
                except KeyError as exc:
                    value = f"<{exc.args[0]}>"
                mark = " ~record" if item.record else ""
                yield f"{line}: {token} <- {item.text}{mark} = {value!r}"


def quote(token: str, value: Any) -> str:
    """``value`` written as the doc's ``token`` writes a number: its decimals, its commas."""
    if isinstance(value, str):
        return value
    plain = token.replace(",", "")
    if "." in plain:
        return f"{float(value):.{len(plain.split('.')[1])}f}"
    return f"{round(float(value)):,}" if "," in token else str(round(float(value)))


def requote(path: Path, root: Path, source: Path) -> tuple[str, int]:
    """``path``'s text with every quote of ``source`` rewritten from ``source`` as it is now.

    For a new copy of a run's figures (``docs/e2e-figures.json`` from a green CI run's
    ``artifacts/figures.json``): each marked number whose block names ``source`` is
    written anew from its item's value at the precision shown, and each ``CI run of C,
    DATE`` in those blocks names the new run. Constants are left alone; what the prose
    says about the numbers is for the author to read again. Returns the text and how
    many numbers changed.
    """
    lines = path.read_text().splitlines(keepends=True)
    doc = load(source)
    changed = 0
    edits: list[tuple[Span, str]] = []
    for b in blocks(path, root):
        if b.source != source:
            continue
        for span, item in zip(b.spans, b.items, strict=False):
            if item.constant:
                continue
            with contextlib.suppress(KeyError):
                value = resolve(doc, item.text)
                if _scalar(value) and not shows(span.token, value):
                    edits.append((span, quote(span.token, value)))
        for i in range(b.body, b.body + len(b.text.splitlines())):
            lines[i] = _RUN.sub(record_of(doc), lines[i])
    for span, new in sorted(edits, key=lambda e: (e[0].line, e[0].start), reverse=True):
        line = lines[span.line]
        lines[span.line] = line[: span.start] + new + line[span.end :]
        changed += 1
    return "".join(lines), changed


_RUN = re.compile(r"CI run of [0-9a-f]{7,40}, \d{4}-\d{2}-\d{2}")


# ----------------------------------------------------------------------------- a CI run's figures


def _is_time(path: str) -> str | None:
    """``s`` or ``ms`` when a part of ``path`` names a time (``*_s``, ``*_ms``, ``*seconds``)."""
    unit = None
    for part in path.split("."):
        if part.endswith("_ms"):
            unit = "ms"
        elif part.endswith(("_s", "seconds")):
            unit = "s"
    return unit


def within(path: str, kept: Any, fresh: Any) -> bool:
    """Whether a fresh run's ``fresh`` reproduces the docs' ``kept`` figure at ``path``.

    A time (see :func:`_is_time`) within :data:`TIME_FACTOR` either way, or
    :data:`TIME_SLACK` apart in its unit; an integer count within :data:`COUNT_FRACTION`
    of the docs' value (rounded down: small counts exactly); anything else exactly.
    """
    unit = _is_time(path)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (kept, fresh)):
        return bool(kept == fresh)
    if unit is None:
        if isinstance(kept, int) and isinstance(fresh, int):
            return abs(fresh - kept) <= int(abs(kept) * COUNT_FRACTION)
        return bool(kept == fresh)
    if abs(fresh - kept) <= TIME_SLACK[unit]:
        return True
    return bool(kept / TIME_FACTOR <= fresh <= kept * TIME_FACTOR)


def compare_with_run(docs: Iterable[Path], root: Path, kept: Path, fresh: Path) -> CiComparison:
    """The docs' quotes of ``kept`` (docs/e2e-figures.json) against a fresh run's ``fresh``.

    Every item of a block whose source is ``kept`` is looked up in both; a ``~record``
    item is not compared (its block names the kept run instead).
    """
    result = CiComparison()
    kept_doc, fresh_doc = load(kept), load(fresh)
    for path in docs:
        for b in blocks(path, root):
            if b.source.resolve() != kept.resolve():
                continue
            for span, item in zip(b.spans, b.items, strict=False):
                if item.constant:
                    continue
                if item.record:
                    result.recorded += 1
                    continue
                at = f"{path.relative_to(root)}:{span.line + 1}"
                try:
                    was, now = resolve(kept_doc, item.text), resolve(fresh_doc, item.text)
                except KeyError as exc:
                    result.problems.append(f"{at}: {item.text}: not in both runs ({exc.args[0]})")
                    continue
                result.compared += 1
                if not within(item.text, was, now):
                    how = "exactly" if _is_time(item.text) is None else "within the tolerance"
                    result.problems.append(
                        f"{at}: {item.text}: the docs say {span.token} ({was!r}), this run "
                        f"measured {now!r}, not {how}"
                    )
    return result


@dataclass
class CiComparison:
    """What :func:`compare_with_run` found: figures compared, kept as a record, problems."""

    compared: int = 0
    recorded: int = 0
    problems: list[str] = field(default_factory=list)


def documents(root: Path) -> list[Path]:
    """The Markdown files whose figures are checked: README.md, CONTRIBUTING.md, docs/*.md."""
    return [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]


def ci_figures(root: Path, fresh: Path) -> tuple[list[str], list[str]]:
    """CI's check of the docs' e2e quotes against this run (hack/ci_verdict.py).

    ``(report lines, problems)``: every quote of ``docs/e2e-figures.json`` in the
    :func:`documents` compared with ``fresh`` (``artifacts/figures.json``); a missing
    ``fresh`` is a problem, since the e2e tier always records figures.
    """
    if not fresh.is_file():
        return [], [f"{fresh}: no figures recorded: the docs' e2e figures cannot be compared"]
    docs = documents(root)
    kept = root / "docs" / "e2e-figures.json"
    got = compare_with_run(docs, root, kept, fresh)
    run = record_of(load(kept))
    line = (
        f"figures: {got.compared} of the docs' quotes of docs/e2e-figures.json reproduced by "
        f"this run (times within x{TIME_FACTOR:g} or {TIME_SLACK['s']:g} s, counts within "
        f"{COUNT_FRACTION:.0%} rounded down, the rest exactly), "
        f"{len(got.problems)} not; {got.recorded} kept as the record of the {run}"
    )
    return [line], got.problems


# ----------------------------------------------------------------------------- mutations


def mutate(token: str) -> str:
    """``token`` with its last digit one up (9 becomes 0): another figure, same shape."""
    return token[:-1] + str((int(token[-1]) + 1) % 10)


def marked_spans(path: Path, root: Path) -> list[Span]:
    """Every figure of ``path`` a check covers: marked blocks' numbers and file counts."""
    spans = {(s.line, s.start): s for b in blocks(path, root) for s in b.spans}
    for i, line in enumerate(path.read_text().splitlines()):
        for m in FILES.finditer(line):
            spans.setdefault((i, m.start("n")), Span(i, m.start("n"), m.end("n"), m.group("n")))
    return sorted(spans.values(), key=lambda s: (s.line, s.start))


def mutation_score(docs: Iterable[Path], root: Path) -> tuple[int, list[str]]:
    """How many one-digit mutations of the marked figures of ``docs`` the checks catch.

    Returns the total and the mutations that survived (``file:line: old -> new``).
    """
    total, survivors = 0, []
    for path in docs:
        lines = path.read_text().splitlines(keepends=True)
        for span in marked_spans(path, root):
            total += 1
            new = mutate(span.token)
            changed = lines[:]
            line = changed[span.line]
            changed[span.line] = line[: span.start] + new + line[span.end :]
            text = "".join(changed)
            if not check_markdown(path, root, text) and not check_counts(path, root, text):
                survivors.append(f"{path.relative_to(root)}:{span.line + 1}: {span.token} -> {new}")
    return total, survivors


# ----------------------------------------------------------------------------- counts of files

FILES = re.compile(
    r"(?P<n>\d[\d,]*)\s*<!--\s*files:\s*(?P<glob>\S+)(?:\s+class=(?P<cls>\S+))?\s*-->"
)
_CLASS = re.compile(r"kumaco\.test/class:\s*(\S+)")


def check_counts(path: Path, root: Path, text: str | None = None) -> list[str]:
    """Every ``N <!-- files: GLOB [class=a,b] -->`` of ``path`` whose count is not N.

    The count is of the files matching GLOB (from the repository root), restricted to
    those annotated ``kumaco.test/class`` with one of the classes when given.
    """
    problems = []
    content = path.read_text() if text is None else text
    for i, line in enumerate(content.splitlines()):
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


def main(argv: list[str]) -> int:
    """``python -m tests.support.judges.figures DOC...``: each marked figure, its item, its value.

    ``--requote JSON DOC...`` rewrites the DOCs' quotes of JSON from it (:func:`requote`).
    """
    root = Path(__file__).resolve().parents[3]
    if argv[:1] == ["--requote"]:
        source = Path(argv[1]).resolve()
        for name in argv[2:]:
            doc = Path(name).resolve()
            text, changed = requote(doc, root, source)
            doc.write_text(text)
            print(f"{doc.relative_to(root)}: {changed} figures requoted from {argv[1]}")
        return 0
    for name in argv:
        for line in explain(Path(name).resolve(), root):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
