"""Exactly-once maintenance: a reboot observed through ``status.nodeInfo.bootID`` ends it.

Hand-computed cases for each rule, then a property over random histories of one
machine run the way kured v2's agents run it (a detector reporting the sentinel
at random times, a daemon rebooting whenever MaintenanceInProgress is True in
the cluster, kumaco planning at random times or not at all -- down, or a new
leader --, reboots that do or do not clear the sentinel), every write applied as
the API server stores it (times to the second). Judged from the history itself,
not from the planner's bookkeeping:

* a node is never admitted twice for one request: between two grants lies a
  reboot and, after it, a True report of the detector;
* a request made afresh after a reboot (the reboot did not fix it) is served:
  once the world settles, the node is admitted again, exactly once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.objects.boots import admitted_on, boot_token, reboot_of
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.changes import changes
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import (
    ALLOWED,
    CAUSE_CLEARED,
    CAUSE_REBOOTED,
    FINISHED,
    NOT_REPORTED_SINCE_REBOOT,
    REBOOTED_IN_WINDOW,
    Plan,
    Policy,
)
from kumaco.core.planning.rules import NotReported
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.policies import policy_of

SECOND = 1_000_000_000
REQ, MIP = "kured.dev/reboot-required", "kured.dev/maintenance-in-progress"
T0 = int(dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC).timestamp()) * SECOND
POLICY = policy_of(in_progress=MIP, ceiling=parse_ceiling("1"), require=(REQ,))


def _open_window() -> list[Window]:
    w = parse_window(
        "maint", "always", {"startTime": "* * * * *", "duration": "2h", "nodeSelector": ""}
    )
    assert isinstance(w, Window)
    return [w]


WINDOWS = _open_window()


def seconds(t: int) -> str:
    """An instant as the API server stores a condition time: to the second, truncated."""
    return dt.datetime.fromtimestamp(t // SECOND, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Machine:
    """One node as the cluster stores it, and the machine behind it (ground truth)."""

    boot: str = "boot-0"
    boots: int = 0
    sentinel: bool = True
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)
    grants: list[int] = field(default_factory=list)
    reboots: list[int] = field(default_factory=list)
    true_reports: list[int] = field(default_factory=list)
    #: How far the machine's own clock, which stamps its reports, is from true time.
    skew: int = 0

    def obj(self) -> dict[str, Any]:
        return {
            "metadata": {"name": "n1", "labels": {}},
            "status": {
                "nodeInfo": {"bootID": self.boot},
                "conditions": [{"type": t, **c} for t, c in self.conditions.items()],
            },
        }

    def report(self, now: int) -> None:
        """The detector: the sentinel as a condition, stamped by the machine's clock.

        The transition time is kept while the status stays.
        """
        status = "True" if self.sentinel else "False"
        stamp = seconds(now + self.skew)
        old = self.conditions.get(REQ)
        ltt = old["lastTransitionTime"] if old and old["status"] == status else stamp
        self.conditions[REQ] = {
            "status": status,
            "reason": "KuredSentinelDetected",
            "message": "",
            "lastTransitionTime": ltt,
            "lastHeartbeatTime": stamp,
        }
        if self.sentinel:
            self.true_reports.append(now)

    def holds(self) -> bool:
        return self.conditions.get(MIP, {}).get("status") == "True"

    def reboot(self, now: int, fixes: bool) -> None:
        self.boots += 1
        self.boot = f"boot-{self.boots}"
        self.reboots.append(now)
        if fixes:
            self.sentinel = False

    def plan(self, now: int, policy: Policy = POLICY) -> Plan:
        nodes = NodeSet([v for v in [node_view(self.obj(), policy.owned)] if v is not None])
        result = plan(WINDOWS, nodes, now, policy)
        for change in changes(result, nodes, {"n1": "1"}, now, policy):
            for w in change.conditions:
                if w.type == MIP and w.status == "True" and not self.holds():
                    self.grants.append(now)
                written = w.as_json()
                written.pop("type")
                for k in ("lastTransitionTime", "lastHeartbeatTime"):
                    written[k] = seconds(now) if written[k] == format_instant(now) else written[k]
                self.conditions[w.type] = written
        return result


def verdict_of(result: Plan) -> Any:
    node = result.node("n1")
    assert node is not None and node.verdict is not None
    return node.verdict


# ----------------------------------------------------------------------------- the rules


def test_admission_records_the_boot_and_a_new_boot_releases_at_once() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + 1 * SECOND)
    assert m.holds() and admitted_on(m.conditions[MIP]["message"]) == "boot-0"
    assert m.conditions[MIP]["reason"] == ALLOWED
    m.reboot(T0 + 5 * SECOND, fixes=True)  # the detector has not reported since
    assert m.conditions[REQ]["status"] == "True"
    result = m.plan(T0 + 6 * SECOND)
    assert not m.holds()
    assert m.conditions[MIP]["reason"] == FINISHED
    assert reboot_of(m.conditions[MIP]["message"]) == ("boot-0", "boot-1")
    assert verdict_of(result).cause == CAUSE_REBOOTED


def test_a_true_left_over_from_before_the_reboot_never_readmits() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND + SECOND // 2)  # observed during second 6
    for t in range(7, 30):
        result = m.plan(T0 + t * SECOND)
        assert not m.holds(), t
        assert verdict_of(result).rule == NOT_REPORTED_SINCE_REBOOT
        assert verdict_of(result).detail(NotReported) == NotReported((REQ,))
    assert m.grants == [T0 + SECOND]


def test_a_fresh_true_after_the_reboot_readmits_once() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND + SECOND // 2)
    m.plan(T0 + 7 * SECOND)
    assert not m.holds()
    # A report that differs from the one the release recorded (a new heartbeat) is
    # fresh, even in the same second as the release: no clock is compared.
    m.report(T0 + 7 * SECOND + SECOND // 10)
    m.plan(T0 + 8 * SECOND)
    assert m.holds() and admitted_on(m.conditions[MIP]["message"]) == "boot-1"
    m.reboot(T0 + 10 * SECOND, fixes=True)
    m.plan(T0 + 11 * SECOND)
    for t in range(12, 20):
        m.report(T0 + t * SECOND)
        m.plan(T0 + t * SECOND + SECOND // 2)
    assert m.grants == [T0 + SECOND, T0 + 8 * SECOND]
    assert m.conditions[REQ]["status"] == "False" and not m.holds()


def test_a_node_ahead_by_ten_minutes_is_not_admitted_again_on_its_old_report() -> None:
    m = Machine(skew=600 * SECOND)
    m.report(T0)  # stamped T0 + 10 min
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND)  # released: the reboot observed
    for t in range(7, 900, 7):  # past the report's own stamp too
        result = m.plan(T0 + t * SECOND)
        assert not m.holds(), t
        assert verdict_of(result).detail(NotReported) == NotReported((REQ,))
    assert m.grants == [T0 + SECOND]
    m.report(T0 + 901 * SECOND)  # the detector reports again: a new request
    m.plan(T0 + 902 * SECOND)
    assert m.grants == [T0 + SECOND, T0 + 902 * SECOND]


def test_a_node_behind_by_ten_minutes_is_admitted_on_its_fresh_report_at_once() -> None:
    m = Machine(skew=-600 * SECOND)
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND)
    m.report(T0 + 8 * SECOND)  # stamped 10 min before the release, and fresh all the same
    m.plan(T0 + 8 * SECOND + SECOND // 10)
    assert m.grants == [T0 + SECOND, T0 + 8 * SECOND + SECOND // 10]


def test_a_clock_jumping_back_an_hour_between_two_reports_is_still_fresh() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND)
    m.skew = -3600 * SECOND
    m.report(T0 + 8 * SECOND)
    m.plan(T0 + 9 * SECOND)
    assert m.holds() and m.grants == [T0 + SECOND, T0 + 9 * SECOND]


def test_the_release_records_the_reports_it_saw() -> None:
    from kumaco.core.objects.boots import Report, last_reports

    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND)
    message = m.conditions[MIP]["message"]
    assert message.endswith(f"; last reports: {REQ}=True@{seconds(T0)}@{seconds(T0)}")
    assert last_reports(message) == {REQ: Report(REQ, "True", seconds(T0), seconds(T0))}
    assert last_reports("maintenance finished: the node rebooted (boot a -> b)") is None


def test_a_release_written_before_records_were_kept_reads_the_stamps_as_before() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    m.plan(T0 + 6 * SECOND)
    held = m.conditions[MIP]
    held["message"] = held["message"].split("; last reports:")[0]
    m.plan(T0 + 7 * SECOND)
    assert not m.holds()  # the report at T0 is before the release at T0 + 6 s
    m.report(T0 + 8 * SECOND)
    m.plan(T0 + 9 * SECOND)
    assert m.holds()


def test_a_required_condition_clearing_still_releases() -> None:
    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.sentinel = False
    m.report(T0 + 2 * SECOND)
    result = m.plan(T0 + 3 * SECOND)
    assert not m.holds() and verdict_of(result).cause == CAUSE_CLEARED


def test_a_node_without_a_boot_id_keeps_the_old_rule() -> None:
    m = Machine()
    m.report(T0)
    obj = m.obj()
    del obj["status"]["nodeInfo"]
    nodes = NodeSet([v for v in [node_view(obj, POLICY.owned)] if v is not None])
    result = plan(WINDOWS, nodes, T0 + SECOND, POLICY)
    n = result.node("n1")
    assert n is not None and n.in_progress is not None and n.verdict is not None
    assert n.in_progress.reason == ALLOWED and admitted_on(n.in_progress.message) is None
    assert n.verdict.boot is None


def test_a_holder_admitted_without_a_boot_mark_adopts_the_current_boot() -> None:
    m = Machine()
    m.report(T0)
    m.conditions[MIP] = {
        "status": "True",
        "reason": "KuredStartedMaintenance",
        "message": "written by kured's maintenance-scheduler",
        "lastTransitionTime": seconds(T0),
        "lastHeartbeatTime": seconds(T0),
    }
    m.plan(T0 + SECOND)
    assert m.holds() and admitted_on(m.conditions[MIP]["message"]) == "boot-0"
    m.reboot(T0 + 3 * SECOND, fixes=True)
    m.plan(T0 + 4 * SECOND)
    assert not m.holds()


def test_without_required_conditions_a_reboot_ends_it_for_the_window() -> None:
    policy = policy_of(in_progress=MIP, ceiling=parse_ceiling("1"))
    m = Machine()
    m.plan(T0, policy)
    assert m.holds()
    m.reboot(T0 + 2 * SECOND, fixes=True)
    m.plan(T0 + 3 * SECOND, policy)
    result = m.plan(T0 + 4 * SECOND, policy)
    assert not m.holds() and verdict_of(result).rule == REBOOTED_IN_WINDOW
    assert m.grants == [T0]


def test_odd_boot_ids_are_kept_short_and_compared_exactly() -> None:
    odd = "a boot id with spaces; admitted on boot x"
    token = boot_token(odd)
    assert token.startswith("sha256:") and len(token) == len("sha256:") + 16
    assert boot_token(odd) == token and boot_token(odd + "!") != token
    assert (
        boot_token("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0") == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    )


# ----------------------------------------------------------------------------- the property

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("tick"), st.integers(1, 40)),  # tenths of a second pass
        st.tuples(st.just("report"), st.booleans()),
        st.tuples(st.just("plan"), st.booleans()),
        st.tuples(st.just("reboot"), st.booleans()),  # the daemon, only while holding
        st.tuples(st.just("request"), st.booleans()),  # the sentinel appears (again)
        # The machine's clock jumps (seconds): NTP failing, a VM restored, a bad RTC.
        st.tuples(st.just("skew"), st.integers(-3600, 3600)),
    ),
    max_size=60,
)


def _never_twice(m: Machine) -> None:
    for g1, g2 in zip(m.grants, m.grants[1:], strict=False):
        served = [r for r in m.reboots if g1 < r < g2]
        assert served, (m.grants, m.reboots)
        fresh = [t for t in m.true_reports if served[0] < t < g2]
        assert fresh, ("admitted again on a report from before the reboot", m)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_never_admitted_twice_for_one_request_and_a_fresh_request_served_once(
    steps: list[tuple[str, Any]],
) -> None:
    # Whatever the machine's clock says: its reports are stamped off true time by a skew
    # that may jump between any two reports.
    m = Machine()
    now = T0
    for kind, arg in steps:
        now += SECOND // 1000  # every event takes a moment: none happen at once
        if kind == "tick":
            now += arg * SECOND // 10
        elif kind == "report":
            m.report(now)
        elif kind == "plan" and arg:
            m.plan(now)
        elif kind == "reboot" and m.holds():
            m.reboot(now, fixes=arg)
        elif kind == "request" and arg:
            m.sentinel = True
        elif kind == "skew":
            m.skew = arg * SECOND
        _never_twice(m)
    # The world settles: the detector reports every second, kumaco plans, the daemon
    # reboots whoever holds it, and every reboot now fixes the machine.
    for _ in range(30):
        now += SECOND
        m.report(now)
        now += SECOND // 10
        m.plan(now)
        if m.holds():
            now += SECOND // 10
            m.reboot(now, fixes=True)
        _never_twice(m)
    assert not m.sentinel and not m.holds(), m
    # A request still open when the world settled was served by exactly one more grant.
    assert m.conditions[REQ]["status"] == "False"


# ----------------------------------------------------------------------------- what people see


def test_the_plan_names_the_cause_the_stale_reports_and_a_missing_boot() -> None:
    import json

    from kumaco.views.listing import render_plan as show_plan

    m = Machine()
    m.report(T0)
    m.plan(T0 + SECOND)
    m.reboot(T0 + 5 * SECOND, fixes=False)
    released = json.loads(show_plan(m.plan(T0 + 6 * SECOND), "json"))["nodes"][0]
    assert released["releaseCause"] == CAUSE_REBOOTED and released["bootID"] == "boot-1"
    waiting = json.loads(show_plan(m.plan(T0 + 7 * SECOND), "json"))["nodes"][0]
    assert waiting["rule"] == NOT_REPORTED_SINCE_REBOOT
    assert waiting["notReportedSinceReboot"] == [REQ] and waiting["releaseCause"] is None
    fresh = Machine()
    fresh.report(T0)
    obj = fresh.obj()
    del obj["status"]["nodeInfo"]
    nodes = NodeSet([v for v in [node_view(obj, POLICY.owned)] if v is not None])
    text = show_plan(plan(WINDOWS, nodes, T0 + 8 * SECOND, POLICY), "table")
    assert "MaintenanceAllowed" in text
    assert "no bootID: ends only when a required condition clears" in text


def test_status_says_when_a_holder_reports_no_boot() -> None:
    from kumaco.core.objects.nodes import Condition
    from kumaco.views.status import NodeStatus, _node_row

    held = Condition(MIP, "True", ALLOWED, "in an open maintenance window", "2026-12-01T02:00:00Z")
    without = _node_row(NodeStatus("n1", ("maint/w",), None, held), T0)
    with_boot = _node_row(NodeStatus("n1", ("maint/w",), None, held, boot_id="b"), T0)
    assert "no bootID reported" in without[-1].text
    assert "no bootID" not in with_boot[-1].text


def test_an_admission_schedules_its_in_progress_timeout() -> None:
    # Regression (found through the process, tests/e2e/test_flags.py): a node admitted in
    # a pass must have its timeout in next_change, or the controller -- whose own write
    # wakes nobody -- sleeps past it.
    policy = policy_of(
        in_progress=MIP, ceiling=parse_ceiling("1"), require=(REQ,), in_progress_timeout=3 * SECOND
    )
    m = Machine()
    m.report(T0)
    now = T0 + 10 * SECOND + SECOND // 4
    admitted = m.plan(now, policy)
    assert m.holds()
    end_of_second = T0 + 11 * SECOND
    assert admitted.next_change == end_of_second + 3 * SECOND
    held = m.plan(now + SECOND // 2, policy)  # planned again from what the server stored
    assert held.next_change == admitted.next_change
