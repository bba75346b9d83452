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
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from pathlib import Path


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


def verdict(junit: Path | Sequence[Path], proof: Path) -> tuple[list[str], list[str]]:
    """``(report lines, problems)``; the run passes when ``problems`` is empty.

    ``junit``: one report, or several (one per tier run) read as one.
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
    if not proof.exists():
        problems.append(f"{proof} is missing: the e2e session did not end")
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
    return lines, problems
