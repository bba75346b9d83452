"""CI's verdict on a test run: every test of every tier ran and passed, the e2e tier for real.

``.ci/run`` calls ``python hack/ci_verdict.py artifacts/junit-unit.xml artifacts/junit-e2e.xml
artifacts/e2e-proof.json`` after the test command (the JUnit reports of the tiers, then the
proof). :func:`verdict` fails the run when any test case of any tier
(unit, e2e, ...) was skipped (an xfail counts as a skip), failed or errored, when the
report holds no test at all, and when the e2e proof written by tests/e2e/conftest.py does
not show every e2e test passing against a real kube-apiserver.

The e2e proof lists the node ids of the e2e tests that passed *and talked to a real
kube-apiserver* (tests/e2e/conftest.py judges that by what the test did). The rule, case
by case (a node id read as pytest's JUnit report names it, :func:`junit_case`): every
e2e case (classname ``tests.e2e.*``) the JUnit report shows passing must be in the proof,
else it touched no server and belongs in tests/unit -- unless the proof lists it under
``artifacts`` (marked ``artifact(why)``: a test of a built image or zipapp); every proof entry must be an e2e
case of the report, listed once; and the server must be a real one (``gitVersion``
``v1.*``).

Which e2e tests must run at all is kept in the repo, in ``tests/e2e/expected.json``
(:data:`EXPECTED`): every ``tests/e2e/test_*.py`` module with its number of test cases
(each parameter set one case), and the exemptions from the proof -- the node ids marked
``artifact(why)`` and ``real_server(why)`` (tests/e2e/conftest.py), a fixed set. Given that
list, :func:`verdict` also fails the run when a listed module has no case in the report, or
fewer cases than listed (a module that vanished from collection, a test deleted or
skipped at import), and when the proof names an exemption the list does not hold (so
exemptions cannot grow unseen); more cases than listed pass, but are printed so the list
gets updated. :func:`collected` reads the counts and the exemptions off a collect-only
pytest run of tests/e2e; ``python hack/ci_verdict.py --write-expected`` rewrites the list
from it (the exemptions it keeps as listed: a new one is added by hand).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The list of the e2e modules that must run, and of the exemptions from the proof.
EXPECTED = Path("tests/e2e/expected.json")
#: The markers that exempt an e2e test from talking to the session's server
#: (tests/e2e/conftest.py), as the proof names their lists.
EXEMPTIONS = {"artifact": "artifacts", "real_server": "real_server"}


def junit_case(nodeid: str) -> tuple[str, str]:
    """``(classname, name)`` of the JUnit case pytest writes for the test ``nodeid``.

    As pytest's junitxml names it: the path's ``/`` become dots and ``.py`` goes, a class
    joins the classname; the parameters stay in the name.
    """
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _case(c: ET.Element) -> tuple[str, str]:
    return c.get("classname", ""), c.get("name", "")


def e2e_module(classname: str) -> str:
    """The e2e module of a JUnit case's classname: ``tests.e2e.test_b.TestK`` -> ``test_b``."""
    parts = classname.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["tests", "e2e"] else ""


def collected(root: Path, marker: str | None = None) -> list[str]:
    """The node ids a collect-only pytest run of ``root``'s tests/e2e finds (``-m marker``)."""
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "tests/e2e", "--collect-only", "-q"),
            *("-p", "no:randomly", "-p", "no:cacheprovider"),
            *(("-m", marker) if marker else ()),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    ids = [line for line in run.stdout.splitlines() if line.startswith("tests/e2e/")]
    if run.returncode not in (0, 5) or (marker is None and not ids):
        raise RuntimeError(f"collecting tests/e2e failed ({run.returncode}): {run.stdout[-2000:]}")
    return ids


def expected_from(root: Path, exempt: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The list :data:`EXPECTED` holds, from a collect-only run; ``exempt`` kept as given."""
    counts = Counter(e2e_module(junit_case(i)[0]) for i in collected(root))
    return {
        "modules": dict(sorted(counts.items())),
        "exempt": {m: sorted(exempt.get(m, [])) for m in EXEMPTIONS},
    }


def judge_expected(
    e2e_cases: Sequence[tuple[str, str]], proof: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """``(lines, problems)``: the e2e report and proof against the list (see the contract)."""
    lines: list[str] = []
    problems: list[str] = []
    ran = Counter(e2e_module(c) for c, _n in e2e_cases)
    for module, want in sorted(expected["modules"].items()):
        got = ran.get(module, 0)
        if got == 0:
            problems.append(
                f"missing e2e module: tests/e2e/{module}.py is listed with {want} tests in "
                f"{EXPECTED} but the report holds none of its tests"
            )
        elif got < want:
            problems.append(
                f"e2e module shrank: tests/e2e/{module}.py ran {got} tests, {EXPECTED} lists {want}"
            )
        elif got > want:
            lines.append(
                f"e2e module grew: tests/e2e/{module}.py ran {got} tests, {EXPECTED} lists "
                f"{want} (update it: python hack/ci_verdict.py --write-expected)"
            )
    for module in sorted(set(ran) - set(expected["modules"])):
        problems.append(
            f"unlisted e2e module: tests/e2e/{module}.py ran {ran[module]} tests but is not "
            f"in {EXPECTED} (python hack/ci_verdict.py --write-expected)"
        )
    for marker, key in EXEMPTIONS.items():
        allowed = {junit_case(i) for i in expected["exempt"].get(marker, [])}
        for nodeid in proof.get(key, []):
            classname, name = junit_case(str(nodeid))
            if (classname, name) not in allowed:
                problems.append(
                    f"unlisted exemption: {classname}::{name} is marked {marker} but is not "
                    f"among the {len(allowed)} exemptions {EXPECTED} lists"
                )
    return lines, problems


def verdict(
    junit: Path | Sequence[Path], proof: Path, expected: Path | None = None
) -> tuple[list[str], list[str]]:
    """``(report lines, problems)``; the run passes when ``problems`` is empty.

    ``junit``: one report, or several (one per tier run) read as one; ``expected``: the
    list of the e2e modules and exemptions (:data:`EXPECTED`), judged when given.
    """
    reports = [junit] if isinstance(junit, Path) else list(junit)
    cases = [c for r in reports for c in ET.parse(r).iter("testcase")]
    tiers: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    passing: set[tuple[str, str]] = set()
    for c in cases:
        tier = ".".join(c.get("classname", "").split(".")[:2]) or "?"
        t = tiers.setdefault(tier, {"tests": 0, "skipped": 0, "failed": 0})
        t["tests"] += 1
        bad = False
        for kind, tags in (("skipped", ("skipped",)), ("failed", ("failure", "error"))):
            if any(c.find(tag) is not None for tag in tags):
                t[kind] += 1
                bad = True
                problems.append(f"{kind}: {c.get('classname')}::{c.get('name')}")
        if not bad:
            passing.add(_case(c))
    lines = [
        f"{tier}: {t['tests']} tests, {t['skipped']} skipped, {t['failed']} failed"
        for tier, t in sorted(tiers.items())
    ]
    if not cases:
        problems.append("the report holds no test")
    e2e = [c for c in cases if c.get("classname", "").startswith("tests.e2e.")]
    if not e2e:
        problems.append("no e2e test ran")
    listed = json.loads(expected.read_text()) if expected is not None else None
    if not proof.exists():
        problems.append(f"{proof} is missing: the e2e session did not end")
        if listed is not None:
            problems += judge_expected([_case(c) for c in e2e], {}, listed)[1]
        return lines, problems
    doc = json.loads(proof.read_text())
    version = str(doc["server"].get("gitVersion", ""))
    recorded = Counter(junit_case(str(nodeid)) for nodeid in doc["passed"])
    artifacts = {junit_case(str(nodeid)) for nodeid in doc.get("artifacts", [])}
    e2e_cases = {_case(c) for c in e2e}
    lines.append(
        f"e2e tier: {len(e2e)} tests; {len(recorded.keys() & e2e_cases)} passed against "
        f"kube-apiserver {version}"
    )
    if not version.startswith("v1."):
        problems.append(f"the e2e proof names no real kube-apiserver: {version!r}")
    if artifacts:
        lines.append(
            f"e2e tier: {len(artifacts & e2e_cases)} tests of built artifacts (marked "
            "artifact: the image, the zipapp) needed no server"
        )
    for classname, name in sorted((e2e_cases & passing) - recorded.keys() - artifacts):
        problems.append(
            f"touched no server: {classname}::{name} passed in the e2e tier but the e2e proof "
            "does not list it (no real kube-apiserver; a test that needs none belongs in "
            "tests/unit)"
        )
    for (classname, name), n in sorted(recorded.items()):
        if (classname, name) not in e2e_cases:
            problems.append(
                f"not in the report: the e2e proof lists {classname}::{name}, which no e2e "
                "case of the JUnit report is"
            )
        elif n > 1:
            problems.append(f"listed {n} times in the e2e proof: {classname}::{name}")
    if listed is not None:
        more, wrong = judge_expected([_case(c) for c in e2e], doc, listed)
        lines += more
        problems += wrong
    return lines, problems
