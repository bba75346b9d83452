"""The ceiling judge live: the audit log of the session's API server catches a broken kumaco.

A kumaco with a test-only planner (tests/support/judges/violation.py: its planner gets a
ceiling one higher than configured) grants MaintenanceInProgress to two nodes under
``--max-in-progress 1``. Replaying the audit log in commit order
(tests.support.judges.audit.judge_ceiling) must show exactly that, and agree with a separate
watcher that did not relist; kumaco as built must show one.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.env.controlplane import ControlPlane
from tests.support.judges.audit import judge_ceiling
from tests.support.judges.violation import record_run


def test_the_audit_log_catches_a_kumaco_that_grants_one_node_too_many(
    control_plane: ControlPlane, kubeconfig_path: Path, tmp_path: Path
) -> None:
    broken = record_run(control_plane, kubeconfig_path, tmp_path, broken=True)
    verdict = judge_ceiling(control_plane.audit_log, broken.prefix)
    assert verdict.max_holding == 2 == broken.watcher_max
    assert verdict.over(1), "the judge missed the extra grant"
    assert any("kumaco/" in line for line in verdict.over(1))


def test_the_audit_log_and_the_watcher_agree_on_an_honest_kumaco(
    control_plane: ControlPlane, kubeconfig_path: Path, tmp_path: Path
) -> None:
    honest = record_run(control_plane, kubeconfig_path, tmp_path, broken=False)
    verdict = judge_ceiling(control_plane.audit_log, honest.prefix)
    assert verdict.max_holding == 1 == honest.watcher_max
    assert verdict.over(1) == []
    assert verdict.writes >= 7  # creations, grants, the consumer's finish and the handover
