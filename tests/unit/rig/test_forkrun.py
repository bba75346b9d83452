"""tests/support/env/forkrun.py: a forked run reports what ``python -m`` run as a subprocess does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.env.forkrun import ForkRunner

REPO = Path(__file__).resolve().parents[3]
VALID = REPO / "tests" / "data" / "valid"
INVALID = REPO / "tests" / "data" / "invalid"


@pytest.fixture(scope="module")
def kumaco() -> Iterator[ForkRunner]:
    with ForkRunner("kumaco", ["kumaco.cmd.cli"], cwd=REPO) as runner:
        yield runner


def _subprocess(module: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(sorted(VALID.glob("*.yaml"))[0])],
        ["validate", "--output", "json", str(sorted(INVALID.glob("*.yaml"))[0])],
        ["validate", "/nonexistent/windows.yaml"],
        ["validate", "--no-such-flag"],
        ["--help"],
    ],
    ids=["valid", "invalid-json", "missing-file", "bad-flag", "help"],
)
def test_a_forked_run_is_the_subprocess_run(kumaco: ForkRunner, args: list[str]) -> None:
    forked = kumaco.run(args)
    plain = _subprocess("kumaco", args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    assert forked.args == plain.args


def test_the_runs_differ_where_the_inputs_do(kumaco: ForkRunner) -> None:
    """Nothing of one run leaks into the next (streams, exit status, sys.argv)."""
    bad = kumaco.run(["validate", "/nonexistent/windows.yaml"])
    good = kumaco.run(["validate", str(sorted(VALID.glob("*.yaml"))[0])])
    assert bad.returncode != 0 and bad.stderr
    assert good.returncode == 0 and good.stderr == ""
    assert good.stdout.startswith("valid ")


def test_another_module_exits_as_it_does_in_a_subprocess() -> None:
    with ForkRunner("json.tool", [], cwd=REPO) as runner:
        forked = runner.run(["--no-such-flag-either"])
    plain = _subprocess("json.tool", ["--no-such-flag-either"])
    assert (forked.returncode, forked.stdout, forked.stderr) == (2, "", plain.stderr)
    assert plain.returncode == 2
    assert "unrecognized arguments" in forked.stderr


def test_a_run_past_its_timeout_is_killed() -> None:
    with ForkRunner("timeit", [], cwd=REPO) as runner:
        with pytest.raises(subprocess.TimeoutExpired):
            runner.run(["-n", "1", "-r", "1", "import time; time.sleep(30)"], timeout=0.5)
        again = runner.run(["-n", "1", "-r", "1", "pass"])  # the server still serves
    assert again.returncode == 0
    assert "loop" in again.stdout
