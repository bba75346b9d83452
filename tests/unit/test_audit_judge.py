"""The ceiling judge (tests.support.audit.judge_ceiling) on audit logs recorded from a real API server.

``tests/data/audit/honest.log`` and ``broken.log`` are the audit-log lines about one run's
nodes, recorded by ``python hack/record_audit.py`` (tests/support/violation.py): three nodes
needing a reboot, ceiling 1, once with kumaco as built and once with a test-only
monkeypatch that grants one node more than the ceiling. The judge must pass the first and
catch the second, whatever the order of the lines, and refuse a log it cannot judge
exactly. The watcher, its second opinion, must refuse to count over a gap.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from tests.support.audit import AUDIT_POLICY, AuditJudgeError, judge_ceiling
from tests.support.harness import NodeWatcher, Observation, WatcherGap

DATA = Path(__file__).resolve().parents[1] / "data" / "audit"


def test_an_honest_run_never_has_more_than_one_holder() -> None:
    verdict = judge_ceiling(DATA / "honest.log", "honest-")
    assert verdict.max_holding == 1
    assert verdict.over(1) == []
    # Every write to the nodes is judged: 3 creations, kumaco's grants, the consumer's finish.
    assert verdict.writes == 9
    holders = [s.holding for s in verdict.steps if s.holding]
    assert len({h[0] for h in holders}) == 2  # the place was handed over once


def test_a_kumaco_granting_one_node_too_many_is_caught() -> None:
    verdict = judge_ceiling(DATA / "broken.log", "broken-")
    assert verdict.max_holding == 2
    over = verdict.over(1)
    assert over, "the judge missed the extra grant"
    assert "left 2 holding MaintenanceInProgress (ceiling 1)" in over[0]
    assert "kumaco/" in over[0]  # the write that broke the ceiling names its writer
    assert verdict.over(2) == []


def test_the_order_is_the_servers_not_the_logs(tmp_path: Path) -> None:
    """Lines are replayed in commit order (the stored object's resourceVersion)."""
    lines = (DATA / "broken.log").read_text().splitlines()
    rng = random.Random(20)
    for i in range(5):
        rng.shuffle(lines)
        shuffled = tmp_path / f"shuffled-{i}.log"
        shuffled.write_text("\n".join(lines) + "\n")
        steps = judge_ceiling(shuffled, "broken-").steps
        assert steps == judge_ceiling(DATA / "broken.log", "broken-").steps


def test_a_write_without_the_stored_node_cannot_be_judged(tmp_path: Path) -> None:
    """At level Request the log holds what was asked, not what was stored: the judge refuses."""
    out = []
    for line in (DATA / "honest.log").read_text().splitlines():
        doc = json.loads(line)
        doc.pop("responseObject", None)
        doc["level"] = "Request"
        out.append(json.dumps(doc))
    lowered = tmp_path / "request-level.log"
    lowered.write_text("\n".join(out) + "\n")
    with pytest.raises(AuditJudgeError, match="RequestResponse"):
        judge_ceiling(lowered, "honest-")


def test_the_policy_logs_what_the_judges_need() -> None:
    policy = yaml.safe_load(AUDIT_POLICY)
    rules = policy["rules"]

    def level(group: str, resource: str, verb: str, groups: tuple[str, ...] = ()) -> str:
        for r in rules:  # the first rule that matches, as the API server decides
            if r.get("verbs") and verb not in r["verbs"]:
                continue
            if r.get("userGroups") and not set(groups) & set(r["userGroups"]):
                continue
            res = r.get("resources")
            if res and not any(
                g.get("group", "") == group and resource in g["resources"] for g in res
            ):
                continue
            return str(r["level"])
        return "None"

    assert level("", "nodes/status", "patch") == "RequestResponse"
    assert level("", "nodes", "create") == "RequestResponse"
    assert level("", "nodes", "delete") == "RequestResponse"
    assert level("coordination.k8s.io", "leases", "update") == "RequestResponse"
    sa = ("system:serviceaccounts", "system:authenticated")
    assert level("", "configmaps", "watch", sa) == "Metadata"  # "no 403" for a ServiceAccount
    assert level("", "configmaps", "watch") == "None"
    assert policy["omitManagedFields"] is True


def test_the_watcher_refuses_to_count_over_a_gap() -> None:
    w = NodeWatcher(None, "run")  # type: ignore[arg-type]  # never started: only its records
    w.seen = [
        Observation(1.0, "a", {"MaintenanceInProgress": {"status": "True"}}),
        Observation(2.0, "b", {"MaintenanceInProgress": {"status": "True"}}),
    ]
    w.relists = 1

    def holds(c: dict[str, dict[str, str]]) -> bool:
        return c.get("MaintenanceInProgress", {}).get("status") == "True"

    assert w.max_count(holds) == 2
    w.relists, w.gaps = 2, [3.0]  # a 410 made it relist: states in between are lost
    with pytest.raises(WatcherGap, match="relisted"):
        w.max_count(holds)
    assert w.max_count(holds, gaps_ok=True) == 2  # only for a caller that knows
