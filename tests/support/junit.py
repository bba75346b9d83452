"""CI's verdict on a test run: every test of every tier ran and passed, the e2e tier for real.

``.ci/run`` calls ``python hack/ci_verdict.py artifacts/junit-unit.xml artifacts/junit-e2e.xml
artifacts/e2e-proof.json`` after the test command (the JUnit reports of the tiers, then the
proof). :func:`verdict` fails the run when any test case of any tier
(unit, e2e, ...) was skipped (an xfail counts as a skip), failed or errored, when the
report holds no test at all, and when the e2e proof written by tests/e2e/conftest.py does
not show every e2e test passing against a real kube-apiserver.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path


def verdict(junit: Path | Sequence[Path], proof: Path) -> tuple[list[str], list[str]]:
    """``(report lines, problems)``; the run passes when ``problems`` is empty.

    ``junit``: one report, or several (one per tier run) read as one.
    """
    reports = [junit] if isinstance(junit, Path) else list(junit)
    cases = [c for r in reports for c in ET.parse(r).iter("testcase")]
    tiers: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for c in cases:
        tier = ".".join(c.get("classname", "").split(".")[:2]) or "?"
        t = tiers.setdefault(tier, {"tests": 0, "skipped": 0, "failed": 0})
        t["tests"] += 1
        for kind, tags in (("skipped", ("skipped",)), ("failed", ("failure", "error"))):
            if any(c.find(tag) is not None for tag in tags):
                t[kind] += 1
                problems.append(f"{kind}: {c.get('classname')}::{c.get('name')}")
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
    version = str(doc["server"]["gitVersion"])
    lines.append(
        f"e2e tier: {len(e2e)} tests against kube-apiserver {version}; {len(doc['passed'])} passed"
    )
    if not version.startswith("v1.") or len(doc["passed"]) != len(e2e):
        problems.append("the e2e tests did not all run and pass against the real kube-apiserver")
    return lines, problems
