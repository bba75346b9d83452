"""CI's verdict (hack/ci_verdict.py, tests/support/junit.py): a skip or a failure in any tier fails CI.

Before, ``.ci/run`` judged the e2e tier only: a skipped or failed unit test passed CI
as long as pytest's exit status was 0 (a skip leaves it 0).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.junit import verdict

ROOT = Path(__file__).resolve().parents[2]


def _junit(path: Path, cases: list[tuple[str, str, str]]) -> Path:
    """A junit report with ``(classname, name, outcome)`` cases; outcome: pass, skip, fail."""
    body = {"pass": "", "skip": '<skipped message="s"/>', "fail": '<failure message="f"/>'}
    xml = "".join(f'<testcase classname="{c}" name="{n}">{body[o]}</testcase>' for c, n, o in cases)
    path.write_text(f'<testsuites><testsuite name="pytest">{xml}</testsuite></testsuites>')
    return path


def _proof(path: Path, passed: list[str]) -> Path:
    path.write_text(json.dumps({"server": {"gitVersion": "v1.37.2"}, "passed": passed}))
    return path


def test_a_green_run_passes(tmp_path: Path) -> None:
    junit = _junit(
        tmp_path / "j.xml",
        [("tests.unit.test_a", "t1", "pass"), ("tests.e2e.test_b", "t2", "pass")],
    )
    lines, problems = verdict(junit, _proof(tmp_path / "p.json", ["tests/e2e/test_b.py::t2"]))
    assert problems == []
    assert "tests.unit: 1 tests, 0 skipped, 0 failed" in lines


def test_a_skipped_unit_test_fails_ci(tmp_path: Path) -> None:
    junit = _junit(
        tmp_path / "j.xml",
        [("tests.unit.test_a", "t1", "skip"), ("tests.e2e.test_b", "t2", "pass")],
    )
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", ["tests/e2e/test_b.py::t2"]))
    assert problems == ["skipped: tests.unit.test_a::t1"]


def test_a_failed_test_and_an_e2e_skip_fail_ci(tmp_path: Path) -> None:
    junit = _junit(
        tmp_path / "j.xml",
        [("tests.unit.test_a", "t1", "fail"), ("tests.e2e.test_b", "t2", "skip")],
    )
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", []))
    assert "failed: tests.unit.test_a::t1" in problems
    assert "skipped: tests.e2e.test_b::t2" in problems


def test_the_command_exits_1_on_a_skip(tmp_path: Path) -> None:
    junit = _junit(
        tmp_path / "j.xml",
        [("tests.unit.test_a", "t1", "skip"), ("tests.e2e.test_b", "t2", "pass")],
    )
    proof = _proof(tmp_path / "p.json", ["tests/e2e/test_b.py::t2"])
    run = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "ci_verdict.py"), str(junit), str(proof)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert "skipped: tests.unit.test_a::t1" in run.stderr
    assert "hack/ci_verdict.py" in (ROOT / ".ci" / "run").read_text()
