"""CI's verdict (hack/ci_verdict.py, tests/support/judges/junit.py): a skip or a failure in any tier fails CI.

Before, ``.ci/run`` judged the e2e tier only: a skipped or failed unit test passed CI
as long as pytest's exit status was 0 (a skip leaves it 0). And an e2e test counts by what
it did, not by its folder: one that passed without talking to a real kube-apiserver (not
in the e2e proof tests/e2e/conftest.py writes) fails CI, as do proof entries the report
does not hold, an entry listed twice and a proof naming no real server; the node ids of
the proof are matched to the JUnit cases as pytest's own report names them. Which e2e
tests must run is listed in tests/e2e/expected.json: a module missing from the report, or
with fewer tests than listed, fails CI, as does an exemption from the proof the list does
not hold; the list holds every e2e module and exactly the tests marked as exempt.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.support.judges.junit import EXPECTED, collected, junit_case, verdict

ROOT = Path(__file__).resolve().parents[3]


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


# ----------------------------------------------------------------------------- e2e by what it did
# The e2e proof lists the e2e tests that talked to a real kube-apiserver (tests/e2e/conftest.py);
# each e2e case the report shows passing must be listed, and nothing else.

E2E_PASS = [("tests.unit.test_a", "t1", "pass"), ("tests.e2e.test_b", "t2", "pass")]


def test_a_passing_e2e_test_that_touched_no_server_fails_ci(tmp_path: Path) -> None:
    junit = _junit(tmp_path / "j.xml", [*E2E_PASS, ("tests.e2e.test_b", "pure", "pass")])
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", ["tests/e2e/test_b.py::t2"]))
    assert problems == [
        "touched no server: tests.e2e.test_b::pure passed in the e2e tier but the e2e proof "
        "does not list it (no real kube-apiserver; a test that needs none belongs in tests/unit)"
    ]


def test_a_failed_e2e_test_is_reported_as_failed_not_as_serverless(tmp_path: Path) -> None:
    junit = _junit(tmp_path / "j.xml", [*E2E_PASS, ("tests.e2e.test_b", "t3", "fail")])
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", ["tests/e2e/test_b.py::t2"]))
    assert problems == ["failed: tests.e2e.test_b::t3"]


def test_a_proof_entry_that_is_no_e2e_case_of_the_report_fails_ci(tmp_path: Path) -> None:
    junit = _junit(tmp_path / "j.xml", E2E_PASS)
    passed = ["tests/e2e/test_b.py::t2", "tests/e2e/test_b.py::ghost", "tests/unit/test_a.py::t1"]
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", passed))
    assert problems == [
        "not in the report: the e2e proof lists tests.e2e.test_b::ghost, which no e2e case of "
        "the JUnit report is",
        "not in the report: the e2e proof lists tests.unit.test_a::t1, which no e2e case of "
        "the JUnit report is",
    ]


def test_a_test_listed_twice_in_the_proof_fails_ci(tmp_path: Path) -> None:
    junit = _junit(tmp_path / "j.xml", E2E_PASS)
    twice = ["tests/e2e/test_b.py::t2", "tests/e2e/test_b.py::t2"]
    _lines, problems = verdict(junit, _proof(tmp_path / "p.json", twice))
    assert problems == ["listed 2 times in the e2e proof: tests.e2e.test_b::t2"]


def test_a_proof_without_a_real_server_version_fails_ci(tmp_path: Path) -> None:
    junit = _junit(tmp_path / "j.xml", E2E_PASS)
    proof = tmp_path / "p.json"
    proof.write_text(
        json.dumps({"server": {"gitVersion": "fake"}, "passed": ["tests/e2e/test_b.py::t2"]})
    )
    _lines, problems = verdict(junit, proof)
    assert problems == ["the e2e proof names no real kube-apiserver: 'fake'"]


def test_classes_and_parameters_match_between_the_proof_and_the_report(tmp_path: Path) -> None:
    cases = [
        ("tests.e2e.test_b.TestK", "test_x[a/b::c-1]", "pass"),
        ("tests.e2e.sub.test_c", "test_y", "pass"),
    ]
    proof = ["tests/e2e/test_b.py::TestK::test_x[a/b::c-1]", "tests/e2e/sub/test_c.py::test_y"]
    lines, problems = verdict(_junit(tmp_path / "j.xml", cases), _proof(tmp_path / "p.json", proof))
    assert problems == []
    assert "e2e tier: 2 tests; 2 passed against kube-apiserver v1.37.2" in lines


def test_junit_case_names_a_test_as_pytests_own_junit_report_does(tmp_path: Path) -> None:
    """The mapping from node ids to JUnit cases, checked against a real pytest run."""
    e2e = tmp_path / "tests" / "e2e"
    e2e.mkdir(parents=True)
    (tmp_path / "conftest.py").write_text(
        "import json, pathlib\n"
        "def pytest_collection_modifyitems(items):\n"
        "    pathlib.Path('ids.json').write_text(json.dumps([i.nodeid for i in items]))\n"
    )
    (e2e / "test_k.py").write_text(
        "import pytest\n"
        "class TestK:\n"
        "    def test_m(self): pass\n"
        "@pytest.mark.parametrize('p', ['a/b', 'x::y', 'q[1]', 'sp ace'])\n"
        "def test_p(p): pass\n"
    )
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"),
            *("--rootdir", str(tmp_path), "--junitxml", "j.xml", "tests/e2e/test_k.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    ids = json.loads((tmp_path / "ids.json").read_text())
    assert len(ids) == 5
    reported = sorted(
        (c.get("classname", ""), c.get("name", ""))
        for c in ET.parse(tmp_path / "j.xml").iter("testcase")
    )
    assert sorted(junit_case(i) for i in ids) == reported


def test_an_artifact_test_listed_apart_needs_no_server_but_an_unlisted_one_fails(
    tmp_path: Path,
) -> None:
    junit = tmp_path / "j.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.e2e.test_a" name="t_server" />'
        '<testcase classname="tests.e2e.test_a" name="t_image" />'
        "</testsuite></testsuites>"
    )
    proof = tmp_path / "p.json"
    doc = {"server": {"gitVersion": "v1.37.2"}, "passed": ["tests/e2e/test_a.py::t_server"]}
    proof.write_text(json.dumps({**doc, "artifacts": ["tests/e2e/test_a.py::t_image"]}))
    lines, problems = verdict(junit, proof)
    assert problems == [] and any("built artifacts" in line for line in lines)
    proof.write_text(json.dumps(doc))
    _lines, problems = verdict(junit, proof)
    assert [p for p in problems if "touched no server" in p and "t_image" in p]


# ----------------------------------------------------------------------------- which e2e tests ran
# tests/e2e/expected.json: every e2e module with its number of tests, and the exemptions.

LISTED = {
    "modules": {"test_b": 2, "test_c": 1},
    "exempt": {"artifact": ["tests/e2e/test_c.py::t_image"], "real_server": []},
}
COMPLETE = [
    ("tests.unit.test_a", "t1", "pass"),
    ("tests.e2e.test_b", "t1", "pass"),
    ("tests.e2e.test_b.TestK", "t2[x]", "pass"),
    ("tests.e2e.test_c", "t_image", "pass"),
]


def _listed(tmp_path: Path, doc: dict[str, object] = LISTED) -> Path:
    path = tmp_path / "expected.json"
    path.write_text(json.dumps(doc))
    return path


def _e2e_proof(tmp_path: Path, passed: list[str], artifacts: list[str]) -> Path:
    path = tmp_path / "p.json"
    doc = {"server": {"gitVersion": "v1.37.2"}, "passed": passed, "artifacts": artifacts}
    path.write_text(json.dumps(doc))
    return path


def _judge(tmp_path: Path, cases: list[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    e2e = [
        f"tests/e2e/{c.split('.')[2]}.py::{'::'.join([*c.split('.')[3:], n])}"
        for c, n, _o in cases
        if c.startswith("tests.e2e.") and n != "t_image"
    ]
    images = ["tests/e2e/test_c.py::t_image"] if any(n == "t_image" for _c, n, _o in cases) else []
    proof = _e2e_proof(tmp_path, e2e, images)
    return verdict(_junit(tmp_path / "j.xml", cases), proof, _listed(tmp_path))


def test_the_complete_e2e_report_passes_the_list(tmp_path: Path) -> None:
    lines, problems = _judge(tmp_path, COMPLETE)
    assert problems == []
    assert not [line for line in lines if "grew" in line]


def test_a_deleted_e2e_module_fails_ci_naming_it(tmp_path: Path) -> None:
    without_b = [c for c in COMPLETE if not c[0].startswith("tests.e2e.test_b")]
    _lines, problems = _judge(tmp_path, without_b)
    assert problems == [
        "missing e2e module: tests/e2e/test_b.py is listed with 2 tests in "
        f"{EXPECTED} but the report holds none of its tests"
    ]


def test_a_shrunk_e2e_module_fails_ci_with_both_counts(tmp_path: Path) -> None:
    shrunk = [c for c in COMPLETE if c[1] != "t2[x]"]
    _lines, problems = _judge(tmp_path, shrunk)
    assert problems == [f"e2e module shrank: tests/e2e/test_b.py ran 1 tests, {EXPECTED} lists 2"]


def test_a_grown_e2e_module_passes_but_is_printed(tmp_path: Path) -> None:
    grown = [*COMPLETE, ("tests.e2e.test_b", "t3", "pass")]
    lines, problems = _judge(tmp_path, grown)
    assert problems == []
    assert (
        f"e2e module grew: tests/e2e/test_b.py ran 3 tests, {EXPECTED} lists 2 (update it: "
        "python hack/ci_verdict.py --write-expected)" in lines
    )


def test_an_unlisted_e2e_module_fails_ci(tmp_path: Path) -> None:
    _lines, problems = _judge(tmp_path, [*COMPLETE, ("tests.e2e.test_new", "t", "pass")])
    assert problems == [
        f"unlisted e2e module: tests/e2e/test_new.py ran 1 tests but is not in {EXPECTED} "
        "(python hack/ci_verdict.py --write-expected)"
    ]


def test_an_exemption_the_list_does_not_hold_fails_ci(tmp_path: Path) -> None:
    cases = [*COMPLETE, ("tests.e2e.test_b", "t_more", "pass")]
    proof = _e2e_proof(
        tmp_path,
        ["tests/e2e/test_b.py::t1", "tests/e2e/test_b.py::TestK::t2[x]"],
        ["tests/e2e/test_c.py::t_image", "tests/e2e/test_b.py::t_more"],
    )
    _lines, problems = verdict(_junit(tmp_path / "j.xml", cases), proof, _listed(tmp_path))
    assert problems == [
        "unlisted exemption: tests.e2e.test_b::t_more is marked artifact but is not among "
        f"the 1 exemptions {EXPECTED} lists"
    ]
    real = tmp_path / "p.json"
    doc = json.loads(real.read_text())
    doc["artifacts"] = ["tests/e2e/test_c.py::t_image"]
    doc["passed"].append("tests/e2e/test_b.py::t_more")
    doc["real_server"] = ["tests/e2e/test_b.py::t_more"]  # counted on its word, unlisted
    real.write_text(json.dumps(doc))
    _lines, problems = verdict(_junit(tmp_path / "j.xml", cases), real, _listed(tmp_path))
    assert problems == [
        "unlisted exemption: tests.e2e.test_b::t_more is marked real_server but is not among "
        f"the 0 exemptions {EXPECTED} lists"
    ]


def test_a_missing_proof_still_judges_the_modules(tmp_path: Path) -> None:
    without_c = [c for c in COMPLETE if not c[0].startswith("tests.e2e.test_c")]
    _lines, problems = verdict(
        _junit(tmp_path / "j.xml", without_c), tmp_path / "none.json", _listed(tmp_path)
    )
    assert any("test_c.py is listed with 1 tests" in p for p in problems)


def test_every_e2e_module_is_listed_and_the_list_is_not_ahead_of_the_code() -> None:
    """Adding a module needs listing it; the list's counts are at most what is collected."""
    doc = json.loads((ROOT / EXPECTED).read_text())
    on_disk = {p.stem for p in (ROOT / "tests" / "e2e").glob("test_*.py")}
    assert sorted(on_disk - set(doc["modules"])) == [], "python hack/ci_verdict.py --write-expected"
    assert sorted(set(doc["modules"]) - on_disk) == []
    ids = collected(ROOT)
    counts = {m: sum(1 for i in ids if i.startswith(f"tests/e2e/{m}.py::")) for m in on_disk}
    assert {m: n for m, n in doc["modules"].items() if n > counts[m]} == {}


def test_the_exemptions_are_exactly_the_tests_marked_so() -> None:
    """A new ``artifact`` or ``real_server`` mark fails here until the list names it (a cap)."""
    doc = json.loads((ROOT / EXPECTED).read_text())
    for marker in ("artifact", "real_server"):
        assert sorted(collected(ROOT, marker)) == doc["exempt"][marker], marker
    # 4 artifact; 17 real_server: the demo (3) and the real-cluster modules (14), each on a
    # kube-apiserver of its own rather than the session's
    assert sum(len(v) for v in doc["exempt"].values()) == 21


def test_write_expected_keeps_the_exemptions_and_counts_every_module(tmp_path: Path) -> None:
    from tests.support.judges.junit import expected_from

    doc = json.loads((ROOT / EXPECTED).read_text())
    fresh = expected_from(ROOT, {"artifact": ["kept"]})
    assert fresh["exempt"] == {"artifact": ["kept"], "real_server": []}
    assert set(fresh["modules"]) == set(doc["modules"])
    assert all(n >= doc["modules"][m] for m, n in fresh["modules"].items())
