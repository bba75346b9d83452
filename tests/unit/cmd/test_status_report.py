"""``kubectl kumaco status``'s pure parts: the report, the leader's currency, the wording.

Moved from tests/e2e/test_status.py, where they used no API server: the report of a
snapshot at an instant (:func:`kumaco.cmd.status.status_report`, the planner's answer
rendered by :func:`kumaco.views.status.report`; its text and JSON forms),
the leader's ``current`` as renewTime plus the Lease duration, relative times and the
colour rule, the default namespace from the kubeconfig contexts as kubectl picks it,
and a continuously open window's ``closesAfter``. The plugin against the real server
stays in tests/e2e/test_status.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from kumaco.cmd.kubectl import use_color
from kumaco.cmd.status import status_report as report
from kumaco.core.objects.nodes import Condition
from kumaco.core.planning.instance import Instance
from kumaco.core.time.instants import format_instant
from kumaco.views.status import (
    LeaderStatus,
    NodeStatus,
    Snapshot,
    format_report,
)
from kumaco.views.status_json import to_json
from kumaco.views.wording import relative


def _cond(ctype: str, status: str, reason: str = "", message: str = "") -> Condition:
    return Condition(ctype, status, reason, message, "2026-03-29T01:00:00Z")


def test_report_without_in_progress_condition_and_released_lease() -> None:
    at = 1_774_748_400 * 10**9  # 2026-03-29T01:40:00Z
    scope = Instance(lease_namespace="maintenance", field_manager="kumaco/kumaco")
    node = {
        "metadata": {"name": "w1", "labels": {"pool": "a"}},
        "status": {
            "conditions": [
                {
                    "type": "kured.dev/UnderMaintenance",
                    "status": "True",
                    "lastTransitionTime": "2026-03-29T01:00:00Z",
                }
            ]
        },
    }
    cm = {
        "metadata": {"namespace": "maintenance", "name": "nightly"},
        "data": {
            "startTime": "0 3 * * *",
            "timeZone": "Europe/Berlin",
            "duration": "4h",
            "nodeSelector": "pool=a",
        },
    }
    released = {
        "spec": {
            "holderIdentity": None,
            "leaseDurationSeconds": 1,
            "renewTime": "2026-03-29T01:39:00.000000Z",
        }
    }
    from kumaco.core.objects.nodes import node_view

    view = node_view(node)
    assert view is not None
    r = report(Snapshot((cm,), (view,), released, namespaces=("maintenance",)), scope, at)
    assert r.nodes == (
        NodeStatus(
            "w1", ("maintenance/nightly",), _cond("kured.dev/UnderMaintenance", "True"), None
        ),
    )
    text = format_report(r)
    assert "not set" in text and "kumaco runs without --max-in-progress?" in text
    assert "none (the Lease was released); last renewed 2026-03-29T01:39:00Z (1m ago)" in text
    doc = to_json(r)
    assert doc["windows"][0]["closesLocal"] == "2026-03-29T07:00:00+02:00"  # 05:00Z, CEST
    assert (
        doc["nodes"][0]["inProgress"] is False and doc["nodes"][0]["maintenanceInProgress"] is None
    )
    assert doc["leader"]["holder"] is None and doc["leader"]["current"] is False


def test_leader_current_is_renew_time_plus_duration() -> None:
    scope = Instance(lease_namespace="ns", field_manager="kumaco/kumaco")
    lease = {
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "renewTime": "2026-03-29T01:00:00.500000Z",
        }
    }
    renewed = 1_774_746_000 * 10**9 + 500_000_000
    just_before = report(Snapshot((), (), lease), scope, renewed + 15 * 10**9 - 1).leader
    at_expiry = report(Snapshot((), (), lease), scope, renewed + 15 * 10**9).leader
    assert isinstance(just_before, LeaderStatus) and just_before.current is True
    assert isinstance(at_expiry, LeaderStatus) and at_expiry.current is False


def test_relative_and_use_color() -> None:
    s = 10**9
    assert relative(0, 0) == "now"
    assert relative(90 * s, 0) == "in 1m30s"
    assert relative(0, 3 * 86_400 * s + 7200 * s + 5 * s) == "3d2h ago"

    class Tty:
        def isatty(self) -> bool:
            return True

    assert use_color(Tty(), {}) is True  # type: ignore[arg-type]
    assert use_color(Tty(), {"NO_COLOR": ""}) is False  # type: ignore[arg-type]
    assert use_color(Tty(), {"TERM": "dumb"}) is False  # type: ignore[arg-type]


def test_default_namespace_follows_kubeconfig_context_like_kubectl(tmp_path: Path) -> None:
    from kumaco.kube.config import context_namespace, default_namespace

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(
        "contexts:\n- {name: dev, context: {cluster: c, user: u, namespace: team-a}}\n"
        "- {name: bare, context: {cluster: c, user: u}}\n"
    )
    b.write_text(
        "current-context: dev\n"
        "contexts:\n- {name: dev, context: {cluster: c, user: u, namespace: ignored}}\n"
        "- {name: prod, context: {cluster: c, user: u, namespace: team-p}}\n"
    )
    env = {
        "KUBECONFIG": f"{a}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{b}",
        "HOME": str(tmp_path),
    }
    # First current-context and first definition of a context win (kubectl's merge).
    assert context_namespace(None, None, env) == ("dev", "team-a")
    assert context_namespace(None, "prod", env) == ("prod", "team-p")
    assert default_namespace(None, "bare", env) == ("bare", "default")
    assert default_namespace(str(b), None, env) == (
        "dev",
        "ignored",
    )  # --kubeconfig wins over $KUBECONFIG
    assert default_namespace(None, None, {"HOME": str(tmp_path)}) == (
        None,
        "default",
    )  # no kubeconfig
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "POD_NAMESPACE": "kumaco-system"}
    assert default_namespace(None, None, {**pod, "HOME": str(tmp_path)}) == (
        None,
        "kumaco-system",
    )  # in a pod without $KUBECONFIG: the service account, as load_configuration
    assert default_namespace(None, None, {**pod, **env}) == (
        "dev",
        "team-a",
    )  # $KUBECONFIG comes before in-cluster, as kubectl and controller-runtime


def test_a_continuously_open_window_never_closes_and_is_rechecked() -> None:
    at = 1_774_748_400 * 10**9  # 2026-03-29T01:40:00Z
    cm = {
        "metadata": {"namespace": "ops", "name": "always"},
        "data": {"startTime": "* * * * *", "duration": "2h", "nodeSelector": ""},
    }
    r = report(
        Snapshot((cm,), (), None, namespaces=("ops",)),
        Instance(lease_namespace="ops", field_manager="kumaco/kumaco"),
        at,
    )
    state = r.windows[0].state
    assert state is not None and state.open and state.closes is None and state.recheck is not None
    doc = to_json(r)["windows"][0]
    assert doc["open"] is True and doc["closes"] is None
    assert doc["closesAfter"] == format_instant(state.recheck) > "2026-03-29T01:40:00Z"
    # Its firings chain without a gap: the table says so, as the timeline does.
    text = format_report(r)
    assert "never closes (its occurrences follow each other without a gap)" in text
    assert "closes after" not in text


def test_a_dated_window_that_has_ended_says_so_in_the_table_and_the_json() -> None:
    at = 1_800_000_000 * 10**9  # 2027-01-15T08:00:00Z
    data = {"duration": "1h", "nodeSelector": ""}
    cms = (
        {
            "metadata": {"namespace": "ops", "name": "once"},
            "data": {**data, "startTime": "2027-01-15T02:00:00Z"},
        },
        {
            "metadata": {"namespace": "ops", "name": "bounded"},
            "data": {**data, "startTime": "0 2 * * *", "notAfter": "2027-01-20"},
        },
    )
    r = report(
        Snapshot(cms, (), None, namespaces=("ops",)),
        Instance(lease_namespace="ops", field_manager="kumaco/kumaco"),
        at,
    )
    docs = {d["name"]: d for d in to_json(r)["windows"]}
    assert docs["once"]["ended"] is True and docs["once"]["opens"] is None
    assert docs["bounded"]["ended"] is False and docs["bounded"]["notAfter"] == "2027-01-20"
    assert docs["bounded"]["opens"] == "2027-01-16T02:00:00Z"
    rows = {line.split()[0]: line for line in format_report(r).splitlines() if "ops/" in line}
    assert rows["ops/once"].split()[1] == "ended"
    assert "ended (it will never open again: delete its ConfigMap)" in rows["ops/once"]
    assert rows["ops/bounded"].split()[1] == "valid"
