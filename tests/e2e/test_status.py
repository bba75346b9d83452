"""``kubectl kumaco`` against the real control plane, with the real kumaco controller running.

The scene (unique namespace and node labels per run, removed afterwards):

* window ConfigMaps: ``open-now`` (Europe/Berlin, opened 20 minutes ago for
  3h, pool ``a``), ``later`` (``CRON_TZ=America/New_York``, opens in about 5h,
  pool ``b``), ``broken`` (bad ``startTime`` and ``duration``), and a
  ConfigMap without the window label, which must not be listed;
* nodes in scope ``n1``..``n4`` in pool ``a`` -- ``n1`` reboot-required since
  long, ``n2`` reboot-required but inhibited, ``n3`` reboot-required more
  recently, ``n4`` not reboot-required -- and ``n5`` in pool ``b``; ``n6`` is in
  pool ``a`` but outside the controller's and the plugin's ``--node-selector``;
* ``kumaco run`` (a subprocess) with ``--max-in-progress 1``, so the
  conditions and the Lease are written by kumaco itself: ``n1`` in progress,
  ``n2`` BlockedByCondition, ``n3`` ConcurrencyCeilingReached, ``n4``
  RequiredConditionNotTrue.

The plugin runs as ``kubectl kumaco ...`` (kubectl finds ``kubectl-kumaco``
on PATH, the venv's bin first) with a ServiceAccount token whose RBAC allows
only get/list -- so success also proves it never needs to write -- and whose
kubeconfig context carries the namespace (the default ``-n``).
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.env.controlplane import ControlPlane
from tests.support.env.plugin import (
    kubectl,
    kumaco_cli,
    plugin_env,
)
from tests.support.judges.audit import read_audit_log

ROOT = Path(__file__).resolve().parents[2]
RUN_KEY = "kumaco-status-e2e/run"
POOL_KEY = "kumaco-status-e2e/pool"
WINDOW_LABEL = {"kured.dev/maintenance-window": ""}
UTC = dt.UTC
BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")


# ----------------------------------------------------------------------------- API helpers


class Api:
    """Raw JSON requests as the admin (client certificate in system:masters)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        ok: tuple[int, ...] = (200, 201),
    ) -> Any:
        conn: http.client.HTTPSConnection = self.cp.connection()
        try:
            headers = {"Content-Type": content_type} if body is not None else {}
            conn.request(
                method, path, body=json.dumps(body) if body is not None else None, headers=headers
            )
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        assert resp.status in ok, f"{method} {path}: {resp.status} {raw[:400]!r}"
        return json.loads(raw) if raw else None


def _rfc3339(d: dt.datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(ctype: str, status: str, since: str) -> dict[str, str]:
    return {
        "type": ctype,
        "status": status,
        "reason": "SetByTest",
        "message": "set by the e2e test, as kured/NPD would",
        "lastHeartbeatTime": since,
        "lastTransitionTime": since,
    }


@dataclass
class Scene:
    run: str
    ns: str
    selector: str
    nodes: dict[str, dict[str, str]]
    fire_open: dt.datetime  # when open-now opened
    opens_later: dt.datetime  # when later next opens
    kubeconfig: Path  # admin
    viewer: Path  # get/list-only ServiceAccount, context namespace = ns
    kumaco: subprocess.Popen[bytes]
    identity_prefix: str
    workdir: Path


def _wait(what: str, check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}; last seen: {last!r}")


def _node_conditions(api: Api, name: str) -> dict[str, dict[str, Any]]:
    node = api.call("GET", f"/api/v1/nodes/{name}")
    return {c["type"]: c for c in node.get("status", {}).get("conditions", [])}


def _viewer_kubeconfig(api: Api, admin: Path, ns: str, run: str, path: Path) -> None:
    """A ServiceAccount allowed get/list on configmaps, leases (ns) and nodes (cluster)."""
    api.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "viewer"}})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    api.call(
        "POST",
        f"{rbac}/namespaces/{ns}/roles",
        {
            "metadata": {"name": "kumaco-viewer"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]},
            ],
        },
    )
    subject = [{"kind": "ServiceAccount", "name": "viewer", "namespace": ns}]
    api.call(
        "POST",
        f"{rbac}/namespaces/{ns}/rolebindings",
        {
            "metadata": {"name": "kumaco-viewer"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "kumaco-viewer",
            },
            "subjects": subject,
        },
    )
    api.call(
        "POST",
        f"{rbac}/clusterroles",
        {
            "metadata": {"name": f"kst-{run}-nodes"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        },
    )
    api.call(
        "POST",
        f"{rbac}/clusterrolebindings",
        {
            "metadata": {"name": f"kst-{run}-nodes"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"kst-{run}-nodes",
            },
            "subjects": subject,
        },
    )
    token = api.call(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts/viewer/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )["status"]["token"]
    cfg = json.loads(admin.read_text())
    cfg["users"] = [{"name": "viewer", "user": {"token": token}}]
    cfg["contexts"] = [
        {
            "name": "viewer",
            "context": {"cluster": cfg["clusters"][0]["name"], "user": "viewer", "namespace": ns},
        }
    ]
    cfg["current-context"] = "viewer"
    path.write_text(json.dumps(cfg, indent=2))
    path.chmod(0o600)


@pytest.fixture(scope="module")
def scene(
    control_plane: ControlPlane, kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scene]:
    api = Api(control_plane)
    run = uuid.uuid4().hex[:6]
    ns = f"kst-{run}"
    selector = f"{RUN_KEY}={run}"
    workdir = tmp_path_factory.mktemp("status")
    now = dt.datetime.now(UTC).replace(microsecond=0)

    # Window ConfigMaps: open now (Berlin), closed now (New York), invalid, and an unlabelled one.
    fire_local = (now - dt.timedelta(minutes=20)).astimezone(BERLIN).replace(second=0)
    fire_open = fire_local.astimezone(UTC)
    later_local = (now + dt.timedelta(hours=5)).astimezone(NEW_YORK).replace(second=0)
    opens_later = later_local.astimezone(UTC)
    api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    configmaps = {
        "open-now": {
            "startTime": f"{fire_local.minute} {fire_local.hour} * * *",
            "timeZone": "Europe/Berlin",
            "duration": "3h",
            "nodeSelector": f"{POOL_KEY}=a",
        },
        "later": {
            "startTime": f"CRON_TZ=America/New_York {later_local.minute} {later_local.hour} * * *",
            "duration": "1h",
            "nodeSelector": f"{POOL_KEY}=b",
        },
        "broken": {"startTime": "61 4 * * *", "duration": "1d", "nodeSelector": ""},
    }
    for name, data in configmaps.items():
        api.call(
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            {"metadata": {"name": name, "labels": WINDOW_LABEL}, "data": data},
        )
    api.call(
        "POST",
        f"/api/v1/namespaces/{ns}/configmaps",
        {
            "metadata": {"name": "not-a-window"},
            "data": {"startTime": "* * * * *", "duration": "1h", "nodeSelector": ""},
        },
    )

    # Nodes, and the conditions kured / node-problem-detector would set.
    old, recent = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    nodes = {
        f"kst-{run}-n1": {"pool": "a", "scope": "yes"},
        f"kst-{run}-n2": {"pool": "a", "scope": "yes"},
        f"kst-{run}-n3": {"pool": "a", "scope": "yes"},
        f"kst-{run}-n4": {"pool": "a", "scope": "yes"},
        f"kst-{run}-n5": {"pool": "b", "scope": "yes"},
        f"kst-{run}-n6": {"pool": "a", "scope": "no"},
    }
    conditions = {
        f"kst-{run}-n1": [_condition("kured.dev/RebootRequired", "True", old)],
        f"kst-{run}-n2": [
            _condition("kured.dev/RebootRequired", "True", old),
            _condition("kured.dev/RebootInhibited", "True", old),
        ],
        f"kst-{run}-n3": [_condition("kured.dev/RebootRequired", "True", recent)],
        f"kst-{run}-n4": [],
        f"kst-{run}-n5": [_condition("kured.dev/RebootRequired", "True", old)],
        f"kst-{run}-n6": [_condition("kured.dev/RebootRequired", "True", old)],
    }
    for name, spec in nodes.items():
        labels = {POOL_KEY: spec["pool"]}
        if spec["scope"] == "yes":
            labels[RUN_KEY] = run
        api.call("POST", "/api/v1/nodes", {"metadata": {"name": name, "labels": labels}})
        if conditions[name]:
            api.call(
                "PATCH",
                f"/api/v1/nodes/{name}/status",
                {"status": {"conditions": conditions[name]}},
                "application/strategic-merge-patch+json",
            )

    viewer = workdir / "viewer.kubeconfig"
    _viewer_kubeconfig(api, kubeconfig_path, ns, run, viewer)

    # The real controller.
    log = (workdir / "kumaco.log").open("wb")
    env = {**os.environ, "POD_NAME": f"kst-{run}"}
    env.pop("POD_NAMESPACE", None)
    kumaco = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kumaco",
            "run",
            "--kubeconfig",
            str(kubeconfig_path),
            "--namespaces",
            ns,
            "--leader-election-namespace",
            ns,
            "--node-selector",
            selector,
            "--max-in-progress",
            "1",
            "--require-condition",
            "kured.dev/RebootRequired",
            "--block-condition",
            "kured.dev/RebootInhibited",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )
    s = Scene(
        run,
        ns,
        selector,
        nodes,
        fire_open,
        opens_later,
        kubeconfig_path,
        viewer,
        kumaco,
        f"kst-{run}_",
        workdir,
    )
    try:
        expected = {
            f"kst-{run}-n1": "MaintenanceAllowed",
            f"kst-{run}-n2": "BlockedByCondition",
            f"kst-{run}-n3": "ConcurrencyCeilingReached",
            f"kst-{run}-n4": "RequiredConditionNotTrue",
        }

        def converged() -> dict[str, str] | None:
            if kumaco.poll() is not None:
                pytest.fail(
                    f"kumaco exited with {kumaco.returncode}:\n{(workdir / 'kumaco.log').read_text()[-3000:]}"
                )
            seen = {
                n: _node_conditions(api, n).get("MaintenanceInProgress", {}).get("reason", "")
                for n in expected
            }
            n5 = (
                _node_conditions(api, f"kst-{run}-n5")
                .get("kured.dev/UnderMaintenance", {})
                .get("status")
            )
            return seen if seen == expected and n5 == "False" else None

        # Start-up and the first pass: 1-4 s measured (test_catch_up.py); _wait gives 60 s.
        _wait("kumaco to write the conditions", converged)
        yield s
    finally:
        if kumaco.poll() is None:
            kumaco.send_signal(signal.SIGTERM)
            try:
                kumaco.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kumaco.kill()
                kumaco.wait()
        log.close()
        for name in nodes:
            api.call("DELETE", f"/api/v1/nodes/{name}", ok=(200, 404))
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        api.call("DELETE", f"{rbac}/clusterrolebindings/kst-{run}-nodes", ok=(200, 404))
        api.call("DELETE", f"{rbac}/clusterroles/kst-{run}-nodes", ok=(200, 404))
        api.call("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202, 404))


# ----------------------------------------------------------------------------- running the plugin


def _z(d: dt.datetime) -> str:
    return _rfc3339(d)


def _row(table: str, first: str) -> str:
    rows = [line for line in table.splitlines() if line.split("  ")[0].strip() == first]
    assert len(rows) == 1, f"no single row for {first!r} in:\n{table}"
    return rows[0]


# ----------------------------------------------------------------------------- status


def test_status_json_reports_windows_nodes_and_leader(scene: Scene) -> None:
    proc = kubectl(
        "status", "--kubeconfig", str(scene.viewer), "--node-selector", scene.selector, "-o", "json"
    )
    doc = json.loads(proc.stdout)
    assert proc.stderr == ""
    assert doc["namespaces"] == [scene.ns]  # from the kubeconfig context: no -n given
    assert doc["context"] == "viewer"
    assert doc["nodesInScope"] == 5  # n6 is out of scope
    windows = {w["name"]: w for w in doc["windows"]}
    assert sorted(windows) == ["broken", "later", "open-now"]  # not-a-window has no label

    open_now = windows["open-now"]
    closes = scene.fire_open + dt.timedelta(hours=3)
    assert open_now["valid"] is True and open_now["open"] is True
    assert open_now["timeZone"] == "Europe/Berlin"
    assert open_now["since"] == _z(scene.fire_open)
    assert open_now["closes"] == _z(closes)
    assert open_now["closesLocal"] == closes.astimezone(BERLIN).isoformat()
    assert open_now["opens"] is None
    assert open_now["matchingNodes"] == 4

    later = windows["later"]
    assert later["valid"] is True and later["open"] is False
    assert later["timeZone"] == "America/New_York"
    assert later["opens"] == _z(scene.opens_later)
    assert later["opensLocal"] == scene.opens_later.astimezone(NEW_YORK).isoformat()
    assert later["matchingNodes"] == 1

    broken = windows["broken"]
    assert broken["valid"] is False
    assert [e["key"] for e in broken["errors"]] == ["startTime", "duration"]
    assert 'unknown unit "d"' in broken["reason"]

    r = scene.run
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert sorted(nodes) == [f"kst-{r}-n{i}" for i in (1, 2, 3, 4)]  # n5: window closed; n6: scope
    for n in nodes.values():
        assert n["windows"] == [f"{scene.ns}/open-now"]
        assert n["underMaintenance"]["status"] == "True"
        assert n["underMaintenance"]["reason"] == "MaintenanceWindowOpen"
        assert n["underMaintenance"]["lastTransitionTime"]
        assert n["maintenanceInProgress"]["lastTransitionTime"]
    assert nodes[f"kst-{r}-n1"]["inProgress"] is True
    assert nodes[f"kst-{r}-n1"]["maintenanceInProgress"]["reason"] == "MaintenanceAllowed"
    reasons = {
        name: n["maintenanceInProgress"]["reason"]
        for name, n in nodes.items()
        if not n["inProgress"]
    }
    assert reasons == {
        f"kst-{r}-n2": "BlockedByCondition",
        f"kst-{r}-n3": "ConcurrencyCeilingReached",
        f"kst-{r}-n4": "RequiredConditionNotTrue",
    }
    assert "kured.dev/RebootInhibited" in nodes[f"kst-{r}-n2"]["maintenanceInProgress"]["message"]

    leader = doc["leader"]
    assert leader["lease"] == f"{scene.ns}/kumaco"
    assert leader["found"] is True and leader["current"] is True
    assert leader["holder"].startswith(scene.identity_prefix)
    assert leader["leaseDurationSeconds"] == 15
    assert doc["problems"] == []


def test_status_table_is_aligned_and_plain_when_piped(scene: Scene) -> None:
    proc = kubectl("status", "--kubeconfig", str(scene.viewer), "--node-selector", scene.selector)
    out = proc.stdout
    assert "\x1b[" not in out  # not a terminal: no colour
    assert out.startswith("kumaco status at ")
    assert f"namespaces {scene.ns}; nodes in scope: 5 ({scene.selector})" in out
    windows_table = out.split("WINDOWS (kured.dev/maintenance-window)\n", 1)[1].split("\n\n", 1)[0]
    header = windows_table.splitlines()[0]
    assert header.split() == [
        "WINDOW",
        "VALID",
        "ZONE",
        "OPEN",
        "NEXT",
        "CHANGE",
        "(UTC)",
        "IN",
        "WINDOW",
        "ZONE",
        "NODES",
        "REASON",
    ]
    closes = scene.fire_open + dt.timedelta(hours=3)
    row = _row(windows_table, f"{scene.ns}/open-now")
    # Aligned: every cell starts under its column heading.
    assert row.index(" valid ") + 1 == header.index("VALID")
    assert row.index("Europe/Berlin") == header.index("ZONE")
    assert row.index("yes") == header.index("OPEN")
    assert row.index(f"closes {_z(closes)}") == header.index("NEXT CHANGE")
    local = closes.astimezone(BERLIN)
    assert row.index(f"{local:%Y-%m-%d %H:%M} {local.tzname()}") == header.index("IN WINDOW ZONE")
    assert row[header.index("NODES") :].split()[0] == "4"
    row = _row(windows_table, f"{scene.ns}/later")
    later_local = scene.opens_later.astimezone(NEW_YORK)
    assert f"opens {_z(scene.opens_later)}" in row
    assert f"{later_local:%Y-%m-%d %H:%M} {later_local.tzname()}" in row
    assert row[header.index("NODES") :].split()[0] == "1"
    row = _row(windows_table, f"{scene.ns}/broken")
    assert row[header.index("VALID") :].startswith("invalid")
    assert row[header.index("REASON") :].startswith("startTime: ")
    assert 'duration: unknown unit "d" in duration "1d"' in row

    r = scene.run
    nodes_part = out.split(
        "NODES UNDER MAINTENANCE (kured.dev/UnderMaintenance=True) OR IN PROGRESS: 4, 1 with MaintenanceInProgress=True\n",
        1,
    )[1]
    nodes_table = nodes_part.split("\n\n", 1)[0]
    header = nodes_table.splitlines()[0]
    assert header.split()[:2] == ["NODE", "WINDOWS"]
    for i, (state, reason) in {
        # The scene's nodes report no bootID: status says what then ends a maintenance.
        1: (
            "yes",
            "MaintenanceAllowed (no bootID reported: only a required condition clearing ends it)",
        ),
        2: ("no", "BlockedByCondition: blocked by condition: kured.dev/RebootInhibited"),
        3: (
            "no",
            "ConcurrencyCeilingReached: waiting: at most 1 node may be in maintenance at once",
        ),
        4: (
            "no",
            "RequiredConditionNotTrue: required condition not True: kured.dev/RebootRequired",
        ),
    }.items():
        row = _row(nodes_table, f"kst-{r}-n{i}")
        assert row[header.index("WINDOWS") :].startswith(f"{scene.ns}/open-now")
        assert row[header.index("IN PROGRESS") :].split()[0] == state
        assert row[header.index("REASON") :] == reason
        since = row[header.index("UNDER MAINTENANCE SINCE") :]
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(((\d+[dhms])+ ago|now)\)", since), row
    assert f"kst-{r}-n5" not in nodes_table and f"kst-{r}-n6" not in nodes_table

    leader = out.split(f"LEADER (Lease {scene.ns}/kumaco): ", 1)[1]
    assert leader.startswith(scene.identity_prefix)
    assert re.search(
        r"renewed \S+Z \(((\d+[dhms])+ ago|now)\), lease 15s, until \S+Z: current", leader
    )


def test_status_colour_only_on_a_terminal_and_never_with_no_color(scene: Scene) -> None:
    def on_tty(env: dict[str, str]) -> str:
        if shutil.which("kubectl", path=env["PATH"]) is None:
            pytest.fail("kubectl is not installed")
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [
                "kubectl",
                "kumaco",
                "status",
                "--kubeconfig",
                str(scene.viewer),
                "--node-selector",
                scene.selector,
            ],
            stdout=slave,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(slave)
        chunks = []
        while True:
            # The plugin's start and one read of the cluster (not timed): 60 s catches a hang.
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                proc.kill()
                pytest.fail("no output from kubectl kumaco status on a terminal")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other end is closed
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        # Its output is closed: only the exit is left; 60 s catches a hang.
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        return b"".join(chunks).decode()

    def normal(text: str) -> str:  # times move between two runs
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "T", text.replace("\r\n", "\n"))
        text = re.sub(r"\(((in )?(\d+[dhms])+( ago)?|now)\)", "(R)", text)
        # A relative time of another width ("9s ago", "10s ago") pads its column
        # differently: the runs are compared cell by cell, not by alignment.
        return re.sub(r" {2,}", " ", text)

    coloured = on_tty(plugin_env(TERM="xterm-256color"))
    assert "\x1b[" in coloured
    assert "\x1b[31;1minvalid\x1b[0m" in coloured  # invalid windows in red
    plain = on_tty(plugin_env(TERM="xterm-256color", NO_COLOR="1"))
    assert "\x1b[" not in plain
    assert normal(re.sub(r"\x1b\[[0-9;]*m", "", coloured)) == normal(plain)


def test_status_namespace_flags_and_lease_flags(scene: Scene, control_plane: ControlPlane) -> None:
    api = Api(control_plane)
    # A stale Lease under another id: its holder stopped renewing ten minutes ago.
    stale = (dt.datetime.now(UTC) - dt.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    api.call(
        "POST",
        f"/apis/coordination.k8s.io/v1/namespaces/{scene.ns}/leases",
        {
            "metadata": {"name": "ghost"},
            "spec": {
                "holderIdentity": "ghost-replica",
                "leaseDurationSeconds": 15,
                "renewTime": stale,
                "acquireTime": stale,
            },
        },
    )
    proc = kubectl(
        "status",
        "--kubeconfig",
        str(scene.kubeconfig),
        "-n",
        scene.ns,
        "--node-selector",
        scene.selector,
        "--leader-election-id",
        "ghost",
        "-o",
        "json",
    )
    doc = json.loads(proc.stdout)
    assert doc["namespaces"] == [scene.ns]
    assert doc["leader"]["holder"] == "ghost-replica"
    assert doc["leader"]["current"] is False
    table = kubectl(
        "status",
        "--kubeconfig",
        str(scene.kubeconfig),
        "--namespaces",
        f"{scene.ns},{scene.ns}-none",
        "--node-selector",
        scene.selector,
        "--leader-election-id",
        "ghost",
        "--leader-election-namespace",
        scene.ns,
    ).stdout
    assert f"namespaces {scene.ns},{scene.ns}-none;" in table
    assert "ghost-replica" in table and "expired: the holder stopped renewing" in table
    # No Lease at all under this id.
    doc = json.loads(
        kubectl(
            "-n",
            scene.ns,
            "status",
            "--kubeconfig",
            str(scene.kubeconfig),
            "--leader-election-id",
            "nobody",
            "-o",
            "json",
        ).stdout
    )
    assert doc["leader"] == {
        "lease": f"{scene.ns}/nobody",
        "found": False,
        "holder": None,
        "acquireTime": None,
        "renewTime": None,
        "leaseDurationSeconds": 0,
        "leaseTransitions": 0,
        "expires": None,
        "current": False,
    }
    # Without --node-selector every node counts: n6 too (and other tests' nodes).
    doc = json.loads(
        kubectl(
            "status", "--kubeconfig", str(scene.kubeconfig), "-n", scene.ns, "-o", "json"
        ).stdout
    )
    assert {w["name"]: w.get("matchingNodes") for w in doc["windows"]}["open-now"] == 5
    # Even as cluster-admin the plugin wrote nothing: the control plane audits every Lease and
    # node write (tests/support/judges/audit.py), and none carries the plugin's user agent. (The log
    # also holds every request of a ServiceAccount, the viewer's reads included.)
    events = read_audit_log(control_plane.audit_log)
    writes = [e for e in events if e.verb not in ("get", "list", "watch")]
    assert writes, "the audit log should hold kumaco's own Lease and condition writes"
    assert not [e for e in writes if e.user_agent.startswith("kubectl-kumaco/")]


def test_status_reports_what_rbac_denies_and_exits_1(
    scene: Scene, control_plane: ControlPlane
) -> None:
    # The viewer may not read Leases in another namespace, nor ConfigMaps there.
    proc = kubectl(
        "status",
        "--kubeconfig",
        str(scene.viewer),
        "--namespaces",
        f"{scene.ns},default",
        "--node-selector",
        scene.selector,
        check=False,
    )
    assert proc.returncode == 1
    assert "cannot list ConfigMaps in namespace default: 403 Forbidden" in proc.stderr
    assert f"{scene.ns}/open-now" in proc.stdout  # what could be read is still shown
    assert "error: cannot list ConfigMaps in namespace default: 403 Forbidden" in proc.stdout


# ----------------------------------------------------------------------------- windows and plan


def _dump(scene: Scene, api: Api) -> tuple[Path, Path]:
    """The cluster's window ConfigMaps and in-scope nodes as files, as kubectl get -o json writes."""
    cms = api.call(
        "GET",
        f"/api/v1/namespaces/{scene.ns}/configmaps?labelSelector=kured.dev/maintenance-window",
    )
    nodes = api.call("GET", f"/api/v1/nodes?labelSelector={scene.selector}")
    windows_file, nodes_file = scene.workdir / "windows.json", scene.workdir / "nodes.json"
    windows_file.write_text(
        json.dumps({"kind": "List", "items": [{"kind": "ConfigMap", **i} for i in cms["items"]]})
    )
    nodes_file.write_text(
        json.dumps({"kind": "List", "items": [{"kind": "Node", **i} for i in nodes["items"]]})
    )
    return windows_file, nodes_file


def test_windows_and_plan_from_the_cluster_equal_the_offline_commands(
    scene: Scene, control_plane: ControlPlane
) -> None:
    windows_file, nodes_file = _dump(scene, Api(control_plane))
    span = ["--from", "2026-03-01T00:00:00Z", "--until", "2026-04-15T00:00:00Z"]
    span += ["--at", "2026-02-20T08:00:00Z"]  # the calendar's DTSTAMP: the same bytes
    for output in ("text", "json", "ics"):
        online = kubectl("windows", "--kubeconfig", str(scene.viewer), *span, "-o", output)
        offline = kumaco_cli("windows", str(windows_file), *span, "-o", output)
        assert offline.returncode == 0, offline.stderr
        assert online.stdout == offline.stdout
        assert online.stderr == offline.stderr  # "skipping invalid .../broken: ..."
        if output == "text":
            # Daily for 45 days; at some times of day one firing falls into the spring-forward
            # gap of 2026-03-29 in Berlin (02:00-03:00), which robfig skips.
            assert online.stdout.count(f"{scene.ns}/open-now\n") >= 44
    assert f"skipping invalid {scene.ns}/broken: startTime:" in online.stderr

    policy = [
        "--node-selector",
        scene.selector,
        "--max-in-progress",
        "1",
        "--require-condition",
        "kured.dev/RebootRequired",
        "--block-condition",
        "kured.dev/RebootInhibited",
    ]
    at = _z(dt.datetime.now(UTC))
    for output in ("text", "json"):
        online = kubectl(
            "plan", "--kubeconfig", str(scene.viewer), "--at", at, *policy, "-o", output
        )
        offline = kumaco_cli(
            "plan",
            "--windows",
            str(windows_file),
            "--nodes",
            str(nodes_file),
            "--at",
            at,
            *policy,
            "-o",
            output,
        )
        assert offline.returncode == 0, offline.stderr
        assert online.stdout == offline.stdout
    plan = {n["name"]: n for n in json.loads(online.stdout)["nodes"]}
    # What kumaco would set is what the running kumaco did set.
    for name, row in plan.items():
        conditions = _node_conditions(Api(control_plane), name)
        assert conditions["kured.dev/UnderMaintenance"]["status"] == (
            "True" if row["underMaintenance"] else "False"
        )
        assert conditions["MaintenanceInProgress"]["reason"] == row["reason"]


def test_usage_errors_exit_2(scene: Scene) -> None:
    proc = kubectl(
        "status", "--kubeconfig", str(scene.viewer), "--node-selector", "a in (", check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("kubectl-kumaco status: --node-selector: ")
    proc = kubectl("windows", "--kubeconfig", str(scene.viewer), "--from", "yesterday", check=False)
    assert proc.returncode == 2 and "is not an RFC 3339 time" in proc.stderr


def test_unreachable_server_exits_1_quickly(tmp_path: Path, kubeconfig_path: Path) -> None:
    cfg = json.loads(kubeconfig_path.read_text())
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(json.dumps(cfg))
    t0 = time.monotonic()
    proc = kubectl("status", "--kubeconfig", str(dead), check=False)
    assert proc.returncode == 1
    assert "cannot reach the API server" in proc.stderr
    # 3 attempts with 0.2-2 s backoffs under a 15 s deadline (kumaco/cmd/cluster.py), plus
    # the start: 30 s is twice the deadline.
    assert time.monotonic() - t0 < 30


def test_kubectl_like_flags_impersonate_and_bound_each_request(scene: Scene) -> None:
    """--as / --as-group ride on the admin's credentials with the impersonated rights;
    --request-timeout bounds each answer."""
    viewer = f"system:serviceaccount:{scene.ns}:viewer"
    args = [
        "status",
        "--kubeconfig",
        str(scene.kubeconfig),
        "-n",
        scene.ns,
        "--node-selector",
        scene.selector,
    ]
    as_viewer = kubectl(*args, "--as", viewer, "-o", "json", check=False)
    assert as_viewer.returncode == 0, as_viewer.stderr
    assert json.loads(as_viewer.stdout)["nodesInScope"] == 5
    nobody = kubectl(*args, "--as", "nobody", "--as-group", "nobodies", check=False)
    assert nobody.returncode == 1
    assert 'User "nobody" cannot list resource "configmaps"' in nobody.stderr
    # A group with the rights is enough, whoever the user: one header per group.
    grouped = kubectl(
        *args,
        "--as",
        "someone",
        "--as-group",
        "nobodies",
        "--as-group",
        "system:masters",
        check=False,
    )
    assert grouped.returncode == 0, grouped.stderr
    bad = kubectl(*args, "--request-timeout", "soon", check=False)
    assert bad.returncode == 2 and "--request-timeout: " in bad.stderr
    # 30 s per answer: a status read of this small scene (not timed) with room for load.
    assert kubectl(*args, "--request-timeout", "30s", check=False).returncode == 0
