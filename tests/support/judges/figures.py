"""Published figures: each number in the docs is a record of a named run or a constant.

Contract. A number in the documents (:func:`documents`: README.md, CONTRIBUTING.md and
docs/*.md) is one of two things:

* a **record**: the value one named run measured, kept in ``docs/*.json`` with the
  command that produced it (and its date, and for the e2e tier its commit), and quoted
  exactly at the precision shown. The e2e tests record what they measure with
  :meth:`Figures.record` (the session fixture ``figures``, tests/conftest.py); with
  ``KUMACO_FIGURES`` set the session writes them there (``hack/test.sh`` writes
  ``artifacts/figures.json``, which ``.ci/run`` prints). ``docs/e2e-figures.json``
  (:data:`RECORD`) is one such run, adopted as the record by ``python
  hack/record_figures.py artifacts/figures.json`` (:func:`adopt_run`), which also rewrites
  every quote of it in the docs. ``python hack/chaos.py`` writes ``docs/chaos.json``,
  ``python hack/soak.py`` ``docs/soak.json``, ``python hack/bench.py``
  ``docs/benchmarks.json``;
* a **constant** (``=N``): a setting of the test or the run, a documented limit, or a
  **bound** that a named test asserts (the doc says which test; the test prints and
  records its measured value, so every run's log shows it against the bound).

There is no tolerance between the two: a later run is not compared with the record (a
run proves the bounds its tests assert; the record only shows one run, named).

In the Markdown, a comment (it may span lines) names the source of the block (a table
or a paragraph: the non-blank lines after it) and, in reading order, what each number of
the block is::

    <!-- figures: docs/e2e-figures.json
    ha_failover: sigkill_takeover_s =18.4 =15
    chaos_short: kills takeover_seconds.SIGKILL.min -->

The first word is the JSON file. Then one item per number the block shows (outside
inline code, link targets, comments, dates, clock times, commit hashes and the name of a
run): a dotted path from the JSON's root (``figures.`` may be left out; see
:func:`resolve` for list indices, ``min``/``max``/``len``, ``runs[nodes=5000]`` and
``#i``), or ``=N`` for a number that is not a measurement. ``KEY:`` makes the following
paths relative to ``KEY`` (until the next ``KEY:``; a bare ``:`` goes back to the root);
shell quoting keeps a key with spaces in one word. :func:`check_markdown` fails unless
the block shows exactly as many numbers as the marker has items, each number is its
item's value at the precision shown (``16.2`` shows ``16.23``, ``4.1`` shows ``4.06``,
an integer only itself), and a block quoting a path of :data:`RECORD` names the run
(``run of COMMIT, YYYY-MM-DD``, :func:`record_of`). ``python -m
tests.support.judges.figures DOC...`` prints each figure beside its item and value.

:func:`mutation_score` changes each checked figure's last digit, one at a time, and
counts the changes these checks catch (tests/unit/rig/test_figures_mutation.py).
"""

from __future__ import annotations

import bisect
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "KUMACO_FIGURES"
MARKER = re.compile(r"<!--\s*figures:(?P<spec>.*?)-->", re.S)
#: The e2e tier's record: the run whose figures the docs quote (see :func:`adopt_run`).
RECORD = "docs/e2e-figures.json"
#: How a block names the run it quotes: ``run of COMMIT, YYYY-MM-DD`` (:func:`record_of`).
_RUN = re.compile(r"run of [0-9a-f]{4,40}, \d{4}-\d{2}-\d{2}")
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
            "commit": commit_of(),
            "figures": self.sections,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def commit_of(tree: Path | None = None, dirty: str = "kumaco") -> str:
    """The short commit of the git tree at ``tree`` (default: this one), with "-dirty" when
    ``dirty`` (a path in it, default kumaco/) differs from it -- code no commit holds.
    "" outside a git tree. What every record (docs/*.json) names as what it measured."""
    where = tree if tree is not None else Path(__file__).parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--", f":/{dirty}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        return ""
    return head + ("-dirty" if head and changed else "")


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
    for pattern in (_COMMENT, _CODE, _LINK_TARGET, _RUN, _DATE_TIME, _COMMIT):
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
    if "~record" in spec:
        errors.append("'~record' is gone: every path is a record of the run the block names")
        spec = spec.replace("~record", "")
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
            items.append(Item(f"{prefix}.{word}" if prefix else word))
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
    constant written as the number is. A block quoting a path of :data:`RECORD` names its
    run (:func:`record_of`) in its text.
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
        quotes_record = any(not i.constant for i in b.items)
        if quotes_record and b.source == root / RECORD:
            run = record_of(doc)
            if run not in b.text.replace("\n", " "):
                problems.append(f"{where}: a record of a run, but the block does not say {run!r}")
    return problems


def record_of(doc: Any) -> str:
    """How a block names the run a JSON document was kept from: ``run of C, YYYY-MM-DD``."""
    return f"run of {doc.get('commit', '?')}, {str(doc.get('date', '?'))[:10]}"


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
                yield f"{line}: {token} <- {item.text} = {value!r}"


def quote(token: str, value: Any) -> str:
    """``value`` written as the doc's ``token`` writes a number: its decimals, its commas."""
    if isinstance(value, str):
        return value
    plain = token.replace(",", "")
    if "." in plain:
        return f"{float(value):.{len(plain.split('.')[1])}f}"
    return f"{round(float(value)):,}" if "," in token else str(round(float(value)))


def requote(path: Path, root: Path, source: Path, doc: Any) -> tuple[str, int, list[str]]:
    """``path``'s text with every quote of ``source`` rewritten from ``doc``, its new content.

    Each marked number whose block names ``source`` is written anew from its item's value
    in ``doc`` at the precision shown, and each ``run of C, DATE`` in those blocks names
    ``doc``'s run. Constants (settings, bounds) are left alone. Returns the text, how many
    numbers changed, and the items ``doc`` has no single value for (then nothing is
    rewritten for them).
    """
    lines = path.read_text().splitlines(keepends=True)
    changed = 0
    missing: list[str] = []
    edits: list[tuple[Span, str]] = []
    runs: list[int] = []
    for b in blocks(path, root):
        if b.source != source:
            continue
        for span, item in zip(b.spans, b.items, strict=False):
            if item.constant:
                continue
            try:
                value = resolve(doc, item.text)
            except KeyError as exc:
                missing.append(f"{path.relative_to(root)}:{span.line + 1}: {exc.args[0]}")
                continue
            if not _scalar(value):
                missing.append(
                    f"{path.relative_to(root)}:{span.line + 1}: {item.text} is not one value"
                )
            elif not shows(span.token, value):
                edits.append((span, quote(span.token, value)))
        runs.extend(range(b.body, b.body + len(b.text.splitlines())))
    # Numbers first, right to left, while the columns of the spans still hold.
    for span, new in sorted(edits, key=lambda e: (e[0].line, e[0].start), reverse=True):
        line = lines[span.line]
        lines[span.line] = line[: span.start] + new + line[span.end :]
        changed += 1
    for i in runs:
        lines[i] = _RUN.sub(record_of(doc), lines[i])
    return "".join(lines), changed, missing


def documents(root: Path) -> list[Path]:
    """The Markdown files whose figures are checked: README.md, CONTRIBUTING.md, docs/*.md."""
    return [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]


def adopt_run(run: Path, root: Path) -> tuple[list[str], list[str]]:
    """Make the e2e run at ``run`` (an ``artifacts/figures.json``) the record the docs quote.

    Writes it to :data:`RECORD` as it is (its command, commit, date and figures) and
    rewrites every quote of the record in the :func:`documents` from it (:func:`requote`).
    Writes nothing when the run is not a whole record: no command, commit, date or
    figures, or no value for an item a doc quotes (a partial run -- one module, a failed
    test -- cannot replace the record). Returns ``(what was done, problems)``; the
    problems after a rewrite are the docs' own (:func:`check_markdown`).
    """
    try:
        doc = json.loads(run.read_text())
    except (OSError, ValueError) as exc:
        return [], [f"{run}: not a figures file: {exc}"]
    if not isinstance(doc, dict):
        return [], [f"{run}: not a figures file: {type(doc).__name__}"]
    absent = [k for k in ("command", "commit", "date", "figures") if not doc.get(k)]
    if absent:
        return [], [f"{run}: no {', '.join(absent)}: not the record of a named run"]
    source = root / RECORD
    texts: dict[Path, str] = {}
    done: list[str] = []
    missing: list[str] = []
    for path in (p for p in documents(root) if p.is_file()):
        text, changed, lacking = requote(path, root, source, doc)
        missing.extend(lacking)
        if text != path.read_text():
            texts[path] = text
        if changed:
            done.append(f"{path.relative_to(root)}: {changed} figures rewritten")
    if missing:
        return [], [f"{run} lacks a figure the docs quote: {m}" for m in missing]
    source.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    for path, text in texts.items():
        path.write_text(text)
    done.insert(0, f"{RECORD}: the {record_of(doc)} (`{doc['command']}`)")
    problems = [p for path in texts for p in check_markdown(path, root)]
    return done, problems


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
    """``python -m tests.support.judges.figures DOC...``: each marked figure, its item, its value."""
    root = Path(__file__).resolve().parents[3]
    for name in argv:
        for line in explain(Path(name).resolve(), root):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
