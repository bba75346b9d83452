"""The malformed-window corpus (``tests/data``) through ``kumaco validate``.

Every file of ``tests/data/invalid`` is one window ConfigMap that kumaco must
reject. Its annotations say what the test expects:

``kumaco.test/expect-key``
    the data key(s), comma-separated, that the errors must name -- exactly;
``kumaco.test/class``
    the class of malformation (``tests/data/README.md`` lists them);
``kumaco.test/inflate``
    the key whose small placeholder value is replaced by a 1 MiB value in a
    variant that this module writes to a temporary directory (the repository
    does not hold 1 MiB files).

Each file, and the 1 MiB variants, go through ``kumaco validate`` both in a
process of its own (``python -m kumaco``, forked from one that imported kumaco
once: tests/support/env/forkrun.py) and in-process (``kumaco.cmd.cli.main``), in
text and JSON output: exit status 1, no traceback, nothing on stderr, exactly
the expected keys named, each message one printable line under 1000
characters, and the text line ``invalid <ns>/<name>: <key>: <reason>`` made of
the same errors as the JSON. The files of ``tests/data/valid`` stay valid, with
only the warnings they deserve in the year after ``validate --at`` (:data:`WARNINGS`),
alone and mixed with the whole corpus in one call (that call is a plain
subprocess: the interpreter's start-up too).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumaco.cmd import cli
from kumaco.core.windows.format import KNOWN_KEYS, REQUIRED_KEYS
from tests.support.env.forkrun import ForkRunner
from tests.support.judges.corpus import INFLATE, ONE_MIB, inflated_value

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
INVALID_DIR = DATA / "invalid"
VALID_DIR = DATA / "valid"

WINDOW_LABEL = "kured.dev/maintenance-window"
EXPECT_KEY = "kumaco.test/expect-key"
CLASS = "kumaco.test/class"
PLACEHOLDER = "@@1MiB@@"
MAX_MESSAGE = 1000
MIN_CORPUS = 60
# A committed corpus file larger than this would be a mistake (1 MiB values are generated).
MAX_COMMITTED_BYTES = 64 * 1024

#: The classes the issue asks for; each must be the class of at least one file.
REQUIRED_CLASSES = frozenset(
    {
        "required-missing",
        "required-empty",
        "required-wrong-type",
        "cron-field-count",
        "cron-out-of-range",
        "cron-unknown-name",
        "cron-bad-step",
        "cron-unknown-zone",
        "cron-prefix-and-timezone",
        "cron-every",
        "cron-local-zone",
        "cron-dow-7",
        "cron-seconds-field",
        "cron-quartz",
        "duration-unknown-unit",
        "duration-spaces",
        "duration-days",
        "duration-negative",
        "duration-zero",
        "duration-overflow",
        "duration-unitless",
        "selector-bad-key",
        "selector-unbalanced-parens",
        "selector-bad-operator",
        "selector-long-value",
        "selector-gt-non-integer",
        "binary-data-only",
        "huge-value",
        "odd-characters",
        "policy-max-in-progress",
        "policy-freeze",
        "unknown-key",
    }
)
#: Characters the odd-characters class must put into each key.
ODD_CHARACTERS = {
    "NUL": lambda s: "\x00" in s,
    "ESC": lambda s: "\x1b" in s,
    "RTL override": lambda s: "\u202e" in s,
    "zero-width space": lambda s: "\u200b" in s,
    "full-width digit": lambda s: any("\uff10" <= c <= "\uff19" for c in s),
    "emoji": lambda s: any(ord(c) >= 0x1F000 for c in s),
}
#: YAML types a required key is given in the wrong-type class, by Python type check.
WRONG_TYPES = {
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
    "map": lambda v: isinstance(v, dict),
}


@dataclass(frozen=True)
class Case:
    """One ConfigMap of the corpus (or a generated 1 MiB variant of one)."""

    id: str
    source: Path
    obj: dict[str, Any]
    inflate: str | None = None

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "default")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.obj["metadata"].get("annotations") or {})

    @property
    def expect(self) -> frozenset[str]:
        return frozenset(k.strip() for k in self.annotations[EXPECT_KEY].split(","))

    @property
    def klass(self) -> str:
        return self.annotations[CLASS]


def _load(path: Path) -> dict[str, Any]:
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    assert len(docs) == 1, f"{path.name}: one ConfigMap per file"
    assert isinstance(docs[0], dict), path.name
    return docs[0]


def _inflated(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of ``obj`` whose ``data[key]`` is 1 MiB long, under another name."""
    out = json.loads(json.dumps(obj))
    assert out["data"][key] == PLACEHOLDER
    out["data"][key] = inflated_value(key)
    out["metadata"]["name"] += "-1mib"
    del out["metadata"]["annotations"][INFLATE]
    return out


def _committed_cases() -> list[Case]:
    return [Case(p.stem, p, _load(p)) for p in sorted(INVALID_DIR.glob("*.yaml"))]


COMMITTED = _committed_cases()
INVALID_CASES = COMMITTED + [
    Case(c.id + "@1MiB", c.source, _inflated(c.obj, c.annotations[INFLATE]), c.annotations[INFLATE])
    for c in COMMITTED
    if INFLATE in c.annotations
]
VALID_CASES = [Case(p.stem, p, _load(p)) for p in sorted(VALID_DIR.glob("*.yaml"))]


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Case id -> a file to validate: committed files as they are, 1 MiB variants written out."""
    out = tmp_path_factory.mktemp("corpus")
    files: dict[str, Path] = {}
    for case in INVALID_CASES:
        if case.inflate is None:
            files[case.id] = case.source
            continue
        path = out / f"{case.name}.yaml"
        # JSON is YAML: the 1 MiB value goes out on one line, exactly as built.
        path.write_text(json.dumps(case.obj), encoding="utf-8")
        assert path.stat().st_size > ONE_MIB
        files[case.id] = path
    return files


#: The instant the runs check as of (``validate --at``): its warnings cover the year after.
AT = ("--at", "2026-01-01")
#: The warnings a valid window gets in that year (what daylight-saving time does to it).
WARNINGS = {
    "new-york-prefix": [
        "01:30 happens twice on 2026-11-01 in America/New_York: the window opens at "
        "2026-11-01T05:30:00Z and again at 2026-11-01T06:30:00Z, and is open 2h30m in one "
        "piece (until 2026-11-01T08:00:00Z)"
    ]
}


def _warned(cases: list[Case]) -> str:
    """What ``validate`` prints on standard error for these valid cases, in their order."""
    return "".join(
        f"warning: {c.namespace}/{c.name}: {w}\n" for c in cases for w in WARNINGS.get(c.id, ())
    )


# ----------------------------------------------------------------------------- checks


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kumaco", "validate", *AT, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def runner() -> Iterator[ForkRunner]:
    """``python -m kumaco``, each run in its own process forked from one that imported kumaco."""
    with ForkRunner("kumaco", ["kumaco.cmd.cli"], cwd=REPO) as forks:
        yield forks


def _run_both(runner: ForkRunner, path: Path) -> tuple[subprocess.CompletedProcess[str], ...]:
    """Text and JSON runs of one file, each in its own process."""
    return tuple(
        runner.run(["validate", *AT, *extra, str(path)], timeout=120)
        for extra in ((), ("--output", "json"))
    )


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["validate", *AT, *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _check_clean_streams(case_id: str, stdout: str, stderr: str, warned: str = "") -> None:
    assert "Traceback" not in stdout + stderr, f"{case_id}: traceback\n{stderr[-2000:]}"
    assert stderr == warned, f"{case_id}: unexpected stderr {stderr[:500]!r}"


def _check_json_entry(case: Case, entry: dict[str, Any]) -> None:
    where = f"{case.id}"
    assert (entry["namespace"], entry["name"]) == (case.namespace, case.name), where
    assert entry["valid"] is False, f"{where}: reported valid"
    keys = [e["key"] for e in entry["errors"]]
    assert set(keys) == case.expect, f"{where}: errors name {keys}, expected {sorted(case.expect)}"
    for error in entry["errors"]:
        message = error["message"]
        shown = f"{where}: {error['key']}: {message[:300]!r}"
        assert isinstance(message, str), shown
        assert message, shown
        assert "\n" not in message, f"{shown}: not one line"
        assert "\r" not in message, f"{shown}: not one line"
        assert message.isprintable(), f"{shown}: not printable"
        assert len(message) < MAX_MESSAGE, f"{shown}: {len(message)} characters"
        assert "Traceback" not in message, shown


def _check_text_line(case: Case, line: str, entry: dict[str, Any]) -> None:
    prefix = f"invalid {case.namespace}/{case.name}: "
    assert line.startswith(prefix), f"{case.id}: {line[:200]!r}"
    reason = line[len(prefix) :]
    # The text line carries the same errors as the JSON output, in the same order.
    assert reason == "; ".join(f"{e['key']}: {e['message']}" for e in entry["errors"]), case.id
    for key in case.expect:
        assert reason.startswith(f"{key}: ") or f"; {key}: " in reason, (
            f"{case.id}: {key} not named"
        )
    assert line.isprintable(), f"{case.id}: text line not printable: {line[:300]!r}"


def _check_invalid(case: Case, rc: int, text_out: str, json_out: str) -> None:
    assert rc == 1, f"{case.id}: exit status {rc}"
    doc = json.loads(json_out)
    assert isinstance(doc, list)
    assert len(doc) == 1, f"{case.id}: {len(doc)} entries"
    _check_json_entry(case, doc[0])
    lines = text_out.split("\n")
    assert lines[-1] == "", f"{case.id}: output does not end with a newline"
    assert len(lines) == 2, f"{case.id}: {len(lines) - 1} lines: {text_out[:500]!r}"
    _check_text_line(case, lines[0], doc[0])


# ----------------------------------------------------------------------------- the corpus itself


def test_corpus_has_enough_files_and_covers_every_class() -> None:
    assert len(COMMITTED) >= MIN_CORPUS
    classes = Counter(c.klass for c in COMMITTED)
    missing = REQUIRED_CLASSES - set(classes)
    assert not missing, f"classes without a file: {sorted(missing)}"
    unlisted = set(classes) - set(_readme_classes())
    assert not unlisted, f"classes not described in tests/data/README.md: {sorted(unlisted)}"


def _readme_classes() -> list[str]:
    lines = (DATA / "README.md").read_text(encoding="utf-8").splitlines()
    return [line.split("`")[1] for line in lines if line.startswith("- `")]


def _data_of(klass: str) -> list[tuple[Case, dict[str, Any]]]:
    return [
        (c, c.obj.get("data")) for c in COMMITTED if c.klass == klass and isinstance(c.obj, dict)
    ]


def test_required_keys_are_missing_empty_and_of_every_wrong_type() -> None:
    for key in REQUIRED_KEYS:
        assert any(
            isinstance(d, dict) and key not in d for _c, d in _data_of("required-missing")
        ), f"no file lacks {key}"
        for type_name, is_type in WRONG_TYPES.items():
            assert any(
                isinstance(d, dict) and key in d and is_type(d[key])
                for _c, d in _data_of("required-wrong-type")
            ), f"no file gives {key} a {type_name}"
    # An empty nodeSelector is valid (it selects every node in scope): it lives in valid/.
    for key in ("startTime", "duration"):
        assert any(isinstance(d, dict) and d.get(key) == "" for _c, d in _data_of("required-empty"))
    assert any(c.obj["data"].get("nodeSelector") == "" for c in VALID_CASES)


def test_odd_characters_reach_every_key() -> None:
    for key in KNOWN_KEYS:
        values = [d.get(key) for _c, d in _data_of("odd-characters") if isinstance(d, dict)]
        texts = [v for v in values if isinstance(v, str)]
        for what, present in ODD_CHARACTERS.items():
            assert any(present(t) for t in texts), f"no {what} in {key}"


def test_one_mib_values_cover_every_key() -> None:
    inflated = {c.inflate for c in INVALID_CASES if c.inflate is not None}
    assert inflated == set(KNOWN_KEYS)
    for case in INVALID_CASES:
        if case.inflate is not None:
            assert len(case.obj["data"][case.inflate]) == ONE_MIB
            assert case.expect == {case.inflate}


@pytest.mark.parametrize("case", COMMITTED + VALID_CASES, ids=lambda c: c.id)
def test_corpus_file_is_one_labelled_window_configmap(case: Case) -> None:
    assert case.source.stat().st_size < MAX_COMMITTED_BYTES
    obj = case.obj
    assert obj["apiVersion"] == "v1"
    assert obj["kind"] == "ConfigMap"
    assert case.name == case.source.stem
    assert obj["metadata"]["labels"] == {WINDOW_LABEL: ""}
    if case.source.parent == INVALID_DIR:
        assert case.expect, case.id
        data = obj.get("data")
        keys_of_data = set(data) if isinstance(data, dict) else set()
        assert case.expect <= set(KNOWN_KEYS) | keys_of_data, case.id
        assert case.klass
    else:
        assert not case.annotations


def test_names_are_unique() -> None:
    names = [(c.namespace, c.name) for c in INVALID_CASES + VALID_CASES]
    assert len(names) == len(set(names))


# ----------------------------------------------------------------------------- one file at a time


@pytest.mark.parametrize("case", INVALID_CASES, ids=lambda c: c.id)
def test_invalid_file_subprocess(
    case: Case, corpus_files: dict[str, Path], runner: ForkRunner
) -> None:
    text, as_json = _run_both(runner, corpus_files[case.id])
    _check_clean_streams(case.id, text.stdout, text.stderr)
    _check_clean_streams(case.id, as_json.stdout, as_json.stderr)
    assert text.returncode == as_json.returncode
    _check_invalid(case, text.returncode, text.stdout, as_json.stdout)


@pytest.mark.parametrize("case", INVALID_CASES, ids=lambda c: c.id)
def test_invalid_file_in_process(
    case: Case, corpus_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(corpus_files[case.id])
    rc, text_out, text_err = _in_process(capsys, path)
    rc_json, json_out, json_err = _in_process(capsys, "--output", "json", path)
    _check_clean_streams(case.id, text_out, text_err)
    _check_clean_streams(case.id, json_out, json_err)
    assert rc == rc_json
    _check_invalid(case, rc, text_out, json_out)


@pytest.mark.parametrize("case", VALID_CASES, ids=lambda c: c.id)
def test_valid_file(case: Case, capsys: pytest.CaptureFixture[str], runner: ForkRunner) -> None:
    text, as_json = _run_both(runner, case.source)
    _check_clean_streams(case.id, text.stdout, text.stderr, _warned([case]))
    _check_clean_streams(case.id, as_json.stdout, as_json.stderr)
    for proc in (text, as_json):
        assert proc.returncode == 0, f"{case.id}: {proc.stdout[:500]}"
    assert text.stdout == f"valid {case.namespace}/{case.name}\n"
    assert json.loads(as_json.stdout) == [
        {
            "namespace": case.namespace,
            "name": case.name,
            "valid": True,
            "errors": [],
            "warnings": WARNINGS.get(case.id, []),
        }
    ]
    rc, out, err = _in_process(capsys, str(case.source))
    assert (rc, out, err) == (0, text.stdout, _warned([case]))


# ----------------------------------------------------------------------------- everything at once


def _check_all_at_once(rc: int, text_out: str, json_out: str) -> None:
    assert rc == 1
    doc = json.loads(json_out)
    total = len(INVALID_CASES) + len(VALID_CASES)
    assert len(doc) == total, "a ConfigMap was lost or duplicated"
    lines = text_out.splitlines()
    assert len(lines) == total
    by_name = {(e["namespace"], e["name"]): (e, line) for e, line in zip(doc, lines, strict=True)}
    for case in INVALID_CASES:
        entry, line = by_name[(case.namespace, case.name)]
        _check_json_entry(case, entry)
        _check_text_line(case, line, entry)
    for case in VALID_CASES:
        entry, line = by_name[(case.namespace, case.name)]
        assert entry["valid"] is True, f"{case.id}: {entry['errors']}"
        assert entry["errors"] == []
        assert line == f"valid {case.namespace}/{case.name}"


def _all_paths(corpus_files: dict[str, Path]) -> list[str]:
    # Valid files first, last and in the middle: one bad ConfigMap never affects another.
    paths = [str(corpus_files[c.id]) for c in INVALID_CASES]
    valid = [str(c.source) for c in VALID_CASES]
    middle = len(paths) // 2
    return valid[:2] + paths[:middle] + valid[2:4] + paths[middle:] + valid[4:]


#: The warnings of the whole corpus in one call: the valid cases' in the order of the paths.
ALL_WARNED = _warned(VALID_CASES)


def test_everything_in_one_call_subprocess(corpus_files: dict[str, Path]) -> None:
    paths = _all_paths(corpus_files)
    text = _run(*paths)
    as_json = _run("--output", "json", *paths)
    _check_clean_streams("all", text.stdout, text.stderr, ALL_WARNED)
    _check_clean_streams("all", as_json.stdout, as_json.stderr)
    assert text.returncode == as_json.returncode
    _check_all_at_once(text.returncode, text.stdout, as_json.stdout)


def test_everything_in_one_call_in_process(
    corpus_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _all_paths(corpus_files)
    rc, text_out, text_err = _in_process(capsys, *paths)
    rc_json, json_out, json_err = _in_process(capsys, "--output", "json", *paths)
    _check_clean_streams("all", text_out, text_err, ALL_WARNED)
    _check_clean_streams("all", json_out, json_err)
    assert rc == rc_json
    _check_all_at_once(rc, text_out, json_out)


# ----------------------------------------------------------------------------- the reported name


@pytest.mark.parametrize(
    "name",
    [
        "line\nbreak",
        "carriage\rreturn",
        "esc\x1b[2Jcape",
        "line\u2028separator",
        "rtl\u202eoverride",
    ],
    ids=["LF", "CR", "ESC", "LS", "RLO"],
)
def test_an_odd_configmap_name_stays_on_one_printable_line(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text line names the ConfigMap; a name from a file is not checked by an API server."""
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "kumaco-corpus", "labels": {WINDOW_LABEL: ""}},
        "data": {"startTime": "0 3 * * *", "duration": "1d", "nodeSelector": ""},
    }
    path = tmp_path / "odd-name.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    rc, out, err = _in_process(capsys, str(path))
    assert rc == 1
    assert err == ""
    assert out.endswith("\n")
    assert len(out.splitlines()) == 1, f"{out!r} is not one line"
    assert out[:-1].isprintable(), f"{out!r} is not printable"
