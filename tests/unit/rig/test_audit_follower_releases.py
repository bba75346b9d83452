"""The fencing judge (tests.support.judges.audit.audit_check) and a follower's one write.

Synthetic audit lines: a Lease held by replica L, node-status writes by L and by a
follower F. F's write passes the judge only when it is a release by an observed reboot
of the in-progress condition alone (listed in ``follower_releases``); any other write of
F's -- a grant, the release with another condition beside it, a release for another
cause -- is unfenced and overlaps L's period, as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.judges.audit import audit_check

REBOOTED = (
    "maintenance finished: the node rebooted (boot b1 -> b2); admitted again once "
    "RebootRequired is reported after the reboot"
)


def _stamp(t: float) -> str:
    return f"2026-12-01T05:00:{t:09.6f}Z"


def _lease(t: float, holder: str) -> str:
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "verb": "update",
            "requestReceivedTimestamp": _stamp(t),
            "stageTimestamp": _stamp(t),
            "userAgent": f"kumaco/0.1.0 ({holder})",
            "responseStatus": {"code": 200},
            "objectRef": {"resource": "leases", "namespace": "ns", "name": "run"},
            "requestObject": {"spec": {"holderIdentity": holder, "leaseDurationSeconds": 8}},
        }
    )


def _status(t: float, who: str, conditions: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "verb": "patch",
            "requestReceivedTimestamp": _stamp(t),
            "stageTimestamp": _stamp(t + 0.01),
            "userAgent": f"kumaco/0.1.0 ({who})",
            "responseStatus": {"code": 200},
            "objectRef": {"resource": "nodes", "subresource": "status", "name": "run-0"},
            "requestObject": {"status": {"conditions": conditions}},
        }
    )


MIP = "MaintenanceInProgress"
RELEASE = {"type": MIP, "status": "False", "reason": "MaintenanceFinished", "message": REBOOTED}


def _judge(tmp_path: Path, *writes: str) -> Any:
    path = tmp_path / "audit.log"
    path.write_text("\n".join([_lease(1, "L"), *writes]) + "\n")
    return audit_check(path, "ns", "run", "run-", 8.0, 0.0)


def test_the_leaders_write_and_a_followers_release_pass(tmp_path: Path) -> None:
    v = _judge(tmp_path, _status(2, "L", [RELEASE]), _status(3, "F", [RELEASE]))
    assert v.unfenced == [] and v.overlaps == []
    (release,) = v.follower_releases
    assert release.startswith("F released run-0 at ")
    assert v.node_writes == 2


@pytest.mark.parametrize(
    "conditions",
    [
        [{"type": MIP, "status": "True", "reason": "MaintenanceAllowed", "message": "x"}],
        [RELEASE, {"type": "kured.dev/UnderMaintenance", "status": "False", "message": ""}],
        [{**RELEASE, "message": "maintenance finished: RebootRequired no longer True"}],
        [{**RELEASE, "type": "kured.dev/UnderMaintenance"}],
    ],
    ids=["a grant", "a release with another condition", "another cause", "another condition"],
)
def test_any_other_write_of_a_follower_is_unfenced(
    tmp_path: Path, conditions: list[dict[str, Any]]
) -> None:
    v = _judge(tmp_path, _status(3, "F", conditions))
    assert v.follower_releases == []
    assert len(v.unfenced) == 1 and len(v.overlaps) == 1
