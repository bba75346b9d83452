"""The clock-skew scenarios' own parts: kured's detector rule and the audit-log replay.

* :func:`~tests.support.judges.consumer.detector_write` is kured v2's
  ``UpdateNodeCondition`` (c06d381), decided by the node's clock: a new status is
  written at once with both times ``now``; an unchanged one only after ``period`` by
  that clock, keeping its ``lastTransitionTime``; a heartbeat in the clock's future (a
  clock set back) is never rewritten while the status stays.
* :func:`~tests.support.judges.skew.history` replays synthetic audit lines in commit order
  (the stored object's resourceVersion, not the line order) into admissions, releases,
  reports and boots, with their writers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.env.harness import MIP, REQUIRED
from tests.support.judges.consumer import SkewedClock, detector_write, parse_stamp, stamp
from tests.support.judges.skew import KUMACO, history

T = parse_stamp("2026-12-03T12:00:00Z")


def cond(status: str, hb: float, ltt: float) -> dict[str, str]:
    return {
        "type": REQUIRED,
        "status": status,
        "lastHeartbeatTime": stamp(hb),
        "lastTransitionTime": stamp(ltt),
    }


def test_a_new_condition_is_written_with_both_times_now() -> None:
    w = detector_write(None, True, T + 0.9, 2.0)
    assert w is not None
    assert (w["status"], w["lastHeartbeatTime"], w["lastTransitionTime"]) == (
        "True",
        "2026-12-03T12:00:00Z",
        "2026-12-03T12:00:00Z",
    )


def test_an_unchanged_status_waits_for_its_period_and_keeps_its_transition() -> None:
    current = cond("True", T, T - 60)
    assert detector_write(current, True, T + 2.0, 2.0) is None
    w = detector_write(current, True, T + 2.5, 2.0)
    assert w is not None
    assert w["lastHeartbeatTime"] == stamp(T + 2.5)
    assert w["lastTransitionTime"] == stamp(T - 60)


def test_a_changed_status_is_written_at_once() -> None:
    w = detector_write(cond("True", T, T), False, T + 0.5, 2.0)
    assert w is not None
    assert (w["status"], w["lastTransitionTime"]) == ("False", stamp(T + 0.5))


def test_a_clock_set_back_does_not_rewrite_an_unchanged_status() -> None:
    clock = SkewedClock(0.0)
    written = cond("True", clock(), clock())
    clock.jump(-3600)
    assert detector_write(written, True, clock(), 2.0) is None
    # A transition is written all the same, stamped by the clock set back.
    w = detector_write(written, False, clock(), 2.0)
    assert w is not None
    assert parse_stamp(w["lastTransitionTime"]) < parse_stamp(written["lastHeartbeatTime"]) - 3000


def _line(
    rv: int, received: float, node: str, ua: str, conds: list[dict[str, str]], boot: str
) -> str:
    at = dt_text(received)
    doc: dict[str, Any] = {
        "kind": "Event",
        "level": "RequestResponse",
        "stage": "ResponseComplete",
        "verb": "patch",
        "userAgent": ua,
        "requestReceivedTimestamp": at,
        "stageTimestamp": at,
        "objectRef": {"resource": "nodes", "subresource": "status", "name": node},
        "responseStatus": {"code": 200},
        "responseObject": {
            "kind": "Node",
            "metadata": {"name": node, "resourceVersion": str(rv)},
            "status": {"conditions": conds, "nodeInfo": {"bootID": boot}},
        },
    }
    return json.dumps(doc)


def dt_text(t: float) -> str:
    return stamp(t).replace("Z", "") + f".{int((t % 1) * 1e6):06d}Z"


def mip(status: str, message: str = "") -> dict[str, str]:
    return {"type": MIP, "status": status, "reason": "R", "message": message}


def test_the_replay_finds_admissions_releases_reports_and_boots_in_commit_order(
    tmp_path: Path,
) -> None:
    n, other = "s-skewed", "s-other"
    req = cond("True", T + 600, T + 600)
    fresh = cond("True", T + 610, T + 600)
    k = "kumaco/v1 (s-r0_abc)"
    rows = [
        (1, T, n, "", [req], "b0"),  # the first report
        (2, T + 1, other, k, [mip("False")], "o0"),
        (3, T + 1, n, k, [req, mip("True")], "b0"),  # admitted
        (4, T + 2, n, "", [req, mip("True")], "b1"),  # rebooted
        (5, T + 3, n, k, [req, mip("False", "the node rebooted (boot b0 -> b1)")], "b1"),
        (6, T + 4, other, "", [mip("False"), cond("False", T + 4, T)], "o0"),  # unrelated
        (7, T + 6, n, "", [fresh, mip("False", "x")], "b1"),  # the fresh report
        (8, T + 6.2, n, k, [fresh, mip("True")], "b1"),  # admitted again
    ]
    lines = [_line(*r) for r in rows]
    random.Random(35).shuffle(lines)  # written as answers complete, not in commit order
    log = tmp_path / "audit.log"
    log.write_text("\n".join([*lines, "not an event"]) + "\n")
    h = history(log, "s-")
    assert [w.revision for w in h.writes] == list(range(1, 9))
    assert [w.revision for w in h.admissions(n)] == [3, 8]
    assert all(w.by.startswith(KUMACO) for w in h.admissions(n))
    assert [w.revision for w in h.releases(n)] == [5]
    assert [w.revision for w in h.reports(n)] == [1, 7]
    assert [w.revision for w in h.boots(n)] == [4]
    assert h.admissions(other) == []
    assert [w.revision for w in h.by_others(other, T, T + 10)] == [6]


def test_the_replay_keeps_only_the_named_nodes_and_successful_writes(tmp_path: Path) -> None:
    ok = _line(1, T, "s-a", "", [mip("True")], "b")
    other_run = _line(2, T, "t-a", "", [mip("True")], "b")
    refused = json.loads(_line(3, T, "s-a", "", [mip("False")], "b"))
    refused["responseStatus"] = {"code": 409}
    log = tmp_path / "audit.log"
    log.write_text("\n".join([ok, other_run, json.dumps(refused)]) + "\n")
    h = history(log, "s-")
    assert [(w.node, w.revision) for w in h.writes] == [("s-a", 1)]
