"""Times at the edges of the calendar, through the installed ``kumaco`` script.

A time flag (``--at``, ``--from``, ``--until``) outside the supported range
(kumaco.cmd.common.EARLIEST to LATEST) is a usage error naming the flag and the
range (exit 2); a time inside it works, and every instant printed is RFC 3339 with
a four-digit year. No command ever ends in a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.builders.cli import LABEL, REQ, cm, kumaco

RANGE = "1678-01-01T00:00:00Z to 2261-12-31T23:59:59Z"
OUTSIDE = [
    "9999-12-31",
    "0001-01-01",
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00+01:00",  # an offset takes it into year 0
    "1677-12-31T23:59:59Z",
    "2262-01-01",
]
#: An instant as kumaco prints it; a year of other than four digits does not match.
STAMP = re.compile(r"\b\d{1,5}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    w = tmp_path / "w.yaml"
    daily = {"startTime": "0 2 * * *", "duration": "3h", "nodeSelector": ""}
    new_york = {"startTime": "CRON_TZ=America/New_York 30 1 * * *", "duration": "90m"}
    docs = [
        cm("daily", daily, labels={LABEL: ""}),
        cm("ny", {**new_york, "nodeSelector": ""}, labels={LABEL: ""}),
    ]
    w.write_text(yaml.safe_dump_all(docs))
    n = tmp_path / "nodes.json"
    cond = {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    items = [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"conditions": [cond]}}
        for i in range(2)
    ]
    n.write_text(json.dumps({"kind": "List", "items": items}))
    return str(w), str(n)


def commands(w: str, n: str, flag: str, value: str) -> list[list[str]]:
    """Every offline command that takes ``flag``, given ``value`` there."""
    plan = ["plan", "--windows", w, "--nodes", n, "--max-in-progress", "2"]
    forecast = [
        *["forecast", "--windows", w, "--nodes", n, "--max-in-progress", "2"],
        *["--require-condition", REQ, "--maintenance-duration", "30m"],
    ]
    if flag == "--at":
        return [
            ["validate", w, "--at", value],
            ["windows", w, "--at", value],
            [*plan, "--at", value],
            ["timeline", w, "--nodes", n, "--at", value, "-o", "svg"],
        ]
    far = "2261-12-31" if flag == "--from" else "1678-01-01"
    span = {flag: value, ("--until" if flag == "--from" else "--from"): far}
    given = [x for kv in span.items() for x in kv]
    return [
        ["windows", w, *given],
        ["timeline", w, "--nodes", n, *given, "-o", "svg"],
        [*forecast, *given],
    ]


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = kumaco(*args)
    assert "Traceback" not in done.stderr, (args, done.stderr)
    return done


@pytest.mark.parametrize("value", OUTSIDE)
@pytest.mark.parametrize("flag", ["--at", "--from", "--until"])
def test_a_time_outside_the_range_is_a_usage_error_naming_flag_and_range(
    files: tuple[str, str], flag: str, value: str
) -> None:
    for args in commands(*files, flag, value):
        done = run(args)
        assert (done.returncode, done.stdout) == (2, ""), (args, done.stderr)
        assert done.stderr == (
            f"kumaco {args[0]}: {flag}: {value} is outside the supported range, {RANGE}\n"
        ), args


@pytest.mark.parametrize(
    ("at", "start", "until"),
    [
        ("1678-01-01", "1678-01-01", "1678-01-03"),
        ("2261-12-31T23:59:59Z", "2261-12-29", "2261-12-31T23:59:59Z"),
    ],
)
def test_a_time_at_either_end_of_the_range_works_and_prints_four_digit_years(
    files: tuple[str, str], at: str, start: str, until: str
) -> None:
    w, n = files
    span = ["--from", start, "--until", until]
    plan = ["plan", "--windows", w, "--nodes", n, "--max-in-progress", "2", "--at", at]
    forecast = [
        *["forecast", "--windows", w, "--nodes", n, "--max-in-progress", "2"],
        *["--require-condition", REQ, "--maintenance-duration", "30m", *span],
    ]
    runs = [
        ["validate", w, "--at", at],
        ["windows", w, *span, "--at", at],
        ["windows", w, *span, "-o", "json"],
        [*plan, "-o", "json"],
        [*forecast, "-o", "json"],
        ["timeline", w, "--nodes", n, *span, "--at", at, "-o", "svg"],
    ]
    year = start[:4]
    for args in runs:
        done = run(args)
        assert done.returncode == 0, (args, done.stderr)
        stamps = STAMP.findall(done.stdout + done.stderr)
        assert all(re.fullmatch(r"\d{4}-.*", s) for s in stamps), (args, stamps)
        if args[0] in ("windows", "forecast"):
            assert any(s.startswith(f"{year}-") for s in stamps), (args, done.stdout)
