"""The ceiling judge (tests.support.judges.audit.judge_ceiling) on audit logs recorded from a real API server.

``tests/data/audit/honest.log`` and ``broken.log`` are the audit-log lines about one run's
nodes, recorded by ``python hack/record_audit.py`` (tests/support/judges/violation.py): three nodes
needing a reboot, ceiling 1, once with kumaco as built and once with a test-only
planner (a seam of ``kumaco run``) that grants one node more than the ceiling. The judge must pass the first and
catch the second, whatever the order of the lines, and refuse a log it cannot judge
exactly. The watcher, its second opinion, must refuse to count over a gap.
Writes of unknown outcome (answered 504) are resolved from what the server stored next;
``assert_resolved`` fails on any left unresolved that asked the condition True, and on a
revocation unless the caller says why an upper bound suffices (synthetic logs).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from tests.support.env.auditing import AUDIT_POLICY
from tests.support.env.harness import NodeWatcher, Observation, WatcherGap
from tests.support.judges.audit import (
    AuditJudgeError,
    CeilingVerdict,
    assert_resolved,
    judge_ceiling,
    unresolved_problems,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "audit"


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


# ----------------------------------------------------------------------------- a 504 that landed


def _event(t: float, verb: str, name: str, code: int, mip: str | None, stored: str | None) -> str:
    """One audit line: a write to ``name`` asking MaintenanceInProgress=``mip`` (or nothing),
    answered ``code``, with the stored Node holding MaintenanceInProgress=``stored`` (or none)."""
    stamp = f"2026-12-01T05:00:{t:09.6f}Z"
    conds = [] if mip is None else [{"type": "MaintenanceInProgress", "status": mip}]
    doc: dict[str, object] = {
        "stage": "ResponseComplete",
        "verb": verb,
        "requestReceivedTimestamp": stamp,
        "stageTimestamp": stamp,
        "userAgent": "kumaco/0.1.0 (x)",
        "responseStatus": {"code": code},
        "objectRef": {"resource": "nodes", "subresource": "status", "name": name},
        "requestObject": {"status": {"conditions": conds}},
    }
    if stored is not None:
        doc["responseObject"] = {
            "kind": "Node",
            "metadata": {"name": name, "resourceVersion": str(int(t * 10))},
            "status": {"conditions": [{"type": "MaintenanceInProgress", "status": stored}]},
        }
    return json.dumps(doc)


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "audit.log"
    path.write_text("\n".join(lines) + "\n")
    return path


HANDOVER = (
    _event(1, "patch", "n-a", 200, "True", "True"),
    _event(2, "patch", "n-b", 200, "True", "True"),
    # The revocation of n-a timed out at the server (504, nothing stored in the log) ...
    _event(3, "patch", "n-a", 504, "False", None),
    # ... and the place went to n-c later.
    _event(5, "patch", "n-c", 200, "True", "True"),
)


def test_a_write_answered_504_is_resolved_by_the_state_the_server_kept(tmp_path: Path) -> None:
    log = _log(tmp_path, *HANDOVER)
    # n-a no longer holds at the end: the revocation was applied, before n-c's grant.
    applied = judge_ceiling(log, "n-", final={"n-a": False, "n-b": True, "n-c": True})
    assert applied.over(2) == [] and applied.unresolved == []
    assert [s.holding for s in applied.steps][-2:] == [("n-b",), ("n-b", "n-c")]
    # n-a still holds at the end: it was not applied, and n-c's grant broke the ceiling.
    kept = judge_ceiling(log, "n-", final={"n-a": True, "n-b": True, "n-c": True})
    assert len(kept.over(2)) == 1 and kept.unresolved == []
    # Nothing tells: taken as not applied, and said so.
    unknown = judge_ceiling(log, "n-")
    assert len(unknown.over(2)) == 1 and len(unknown.unresolved) == 1


def test_a_later_write_to_the_node_tells_whether_the_504_landed(tmp_path: Path) -> None:
    # A write to n-a that does not touch MaintenanceInProgress stores it True: not applied.
    later = _event(6, "patch", "n-a", 200, None, "True")
    kept = judge_ceiling(_log(tmp_path, *HANDOVER, later), "n-", final={"n-a": False})
    over = kept.over(2)
    assert over and "patch n-c" in over[0] and kept.unresolved == []


# ----------------------------------------------------------------------------- assert_resolved

#: An admission of n-a answered 504, then a release of n-a that landed: the release names
#: MaintenanceInProgress itself, so nothing tells whether n-a held it in between.
HIDDEN_ADMISSION = (
    _event(1, "patch", "n-a", 504, "True", None),
    _event(4, "patch", "n-a", 200, "False", "False"),
)
WHY = "the test asserts only an upper bound"


def test_assert_resolved_passes_a_verdict_that_resolved_every_write(tmp_path: Path) -> None:
    log = _log(tmp_path, *HANDOVER)
    verdict = judge_ceiling(log, "n-", final={"n-a": False, "n-b": True, "n-c": True})
    assert assert_resolved(verdict) == []
    assert assert_resolved(verdict, log, harmless=WHY) == []


def test_assert_resolved_fails_on_an_unresolved_revocation_unless_told_why(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path, *HANDOVER)
    verdict = judge_ceiling(log, "n-")  # no final: n-a's 504 revocation stays unknown
    assert len(verdict.unresolved) == 1
    with pytest.raises(AssertionError, match=r"asked MaintenanceInProgress=False: an upper"):
        assert_resolved(verdict, log)
    # Without the log it cannot tell the revocation from an admission: never harmless.
    with pytest.raises(AssertionError, match="cannot tell what it asked"):
        assert_resolved(verdict, harmless=WHY)
    accepted = assert_resolved(verdict, log, harmless=WHY)
    assert len(accepted) == 1 and "patch n-a" in accepted[0] and WHY in accepted[0]
    assert unresolved_problems(verdict, log, WHY) == ([], accepted)


def test_an_unexplained_admission_is_counted_as_held_from_its_receipt(tmp_path: Path) -> None:
    log = _log(tmp_path, *HIDDEN_ADMISSION)
    verdict = judge_ceiling(log, "n-", final={"n-a": False})
    # Taken as not applied it could hide a holder; counted from its receipt to the node's
    # next write it can only over-count, so nothing is left unresolved.
    assert verdict.unresolved == [] and len(verdict.assumed) == 1
    assert [s.holding for s in verdict.steps] == [("n-a",), ()]
    first, release = verdict.steps
    assert "counted as applied from its receipt" in first.verb and first.received < release.received
    assert assert_resolved(verdict, log) == []


def test_an_admission_counted_from_its_receipt_can_break_the_ceiling(tmp_path: Path) -> None:
    # n-b holds; n-a's admission is answered 504 and released later; meanwhile n-c is
    # granted: counted from its receipt, n-a makes three holders over a ceiling of 2.
    log = _log(
        tmp_path,
        _event(0, "patch", "n-b", 200, "True", "True"),
        *HIDDEN_ADMISSION,
        _event(2, "patch", "n-c", 200, "True", "True"),
    )
    verdict = judge_ceiling(log, "n-", final={"n-a": False, "n-b": True, "n-c": True})
    over = verdict.over(2)
    assert len(over) == 1 and "n-a, n-b, n-c" in over[0]


def test_unresolved_problems_never_excuses_an_admission_it_cannot_place() -> None:
    # A verdict listing an admission as unresolved (what this judge no longer leaves; a
    # caller's own verdict may) is always a problem, whatever the caller says.
    v = CeilingVerdict(
        "MaintenanceInProgress",
        unresolved=["patch n-a by kumaco answered 504 at 1.500: taken as not applied"],
    )
    problems, accepted = unresolved_problems(v, None, WHY)
    assert len(problems) == 1 and "cannot tell what it asked" in problems[0] and accepted == []
