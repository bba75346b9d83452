"""``kumaco run`` end to end on the real API server (issue: the controller).

Each test asserts what the server shows -- node conditions, Events, Leases,
``apiserver_request_total`` -- never kumaco's own account of what it did.
Timing assertions use a separate watcher's clock against cron boundaries.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.env.auditing import NODE_READS_POLICY, audit_args
from tests.support.env.controlplane import ControlPlane, ensure_assets
from tests.support.env.harness import (
    MIP,
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    count_delta,
    cron_at,
    log_message,
    request_counts,
    shift_before,
    unique,
    wait_for,
)
from tests.support.env.supervisor import scope_flags
from tests.support.judges.audit import node_reads
from tests.support.judges.figures import Figures

ALWAYS = {"startTime": "* * * * *", "duration": "2m"}  # fires every minute, lasts two: always open


def _um(raw: Api, name: str) -> str | None:
    return condition_status(raw.conditions(name), UM)


def test_a_window_flips_its_nodes_within_a_second_of_each_boundary(
    raw: Api, spawn: Callable[..., Kumaco], figures: Figures
) -> None:
    run, ns = unique("open"), raw.namespace(unique("win"))
    foreign = {
        "type": "example.com/DiskHealthy",
        "status": "True",
        "reason": "Probe",
        "message": "3 disks ok",
    }
    for i, zone in enumerate(["a", "a", "b", "b"]):
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "zone": zone}, [foreign])
    before = {
        n: {t: c for t, c in raw.conditions(n).items() if t in ("Ready", foreign["type"])}
        for n in (f"{run}-{i}" for i in range(4))
    }
    # kumaco's clock reaches the window's minute 10 s from now (no wait for the wall clock's).
    # 10 s: its start-up (1-4 s measured under load, test_catch_up.py) ends before the opening.
    shift = shift_before(lead=10)
    opens = shift.opens
    closes = opens + dt.timedelta(seconds=12)
    opens_at, closes_at = shift.real, shift.real + 12  # the machine's instants of both
    raw.window(
        ns, "zone-a", {"startTime": cron_at(opens), "duration": "12s", "nodeSelector": "zone=a"}
    )
    k = spawn(
        "--namespaces",
        ns,
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--leader-election-id",
        run,
        "--leader-election-namespace",
        ns,
        shift=shift,
    )
    wait_for(k.ready, 20, what="kumaco ready")  # start-up: 1-4 s measured (test_catch_up.py)
    # Ready is caches synced; the first pass follows at once: 10 s is room for a loaded machine.
    wait_for(lambda: _um(raw, f"{run}-0") == "False", 10, what="initial conditions")

    with NodeWatcher(raw, run) as watcher:
        wait_for(
            lambda: time.time() > closes_at + 2.5,
            90,  # the close is 22 s after the shift was made, plus 2.5 s: only the clock waits
            interval=0.2,
            what="the window to pass",
        )

    def is_true(c: dict[str, dict[str, str]]) -> bool:
        return condition_status(c, UM) == "True"

    late_ms: list[float] = []
    for name in (f"{run}-0", f"{run}-1"):
        t_open = watcher.first(name, is_true)
        assert t_open is not None, f"{name} never showed UnderMaintenance=True"
        # Each boundary within a second: 9 ms late at worst measured (the figure ``boundary``).
        assert 0 <= t_open - opens_at < 1.0, f"{name} opened {t_open - opens_at:.3f}s late"
        t_close = watcher.first(name, lambda c: condition_status(c, UM) == "False", after=t_open)
        assert t_close is not None
        late_ms += [(t_open - opens_at) * 1000, (t_close - closes_at) * 1000]
        assert 0 <= t_close - closes_at < 1.0, f"{name} closed {t_close - closes_at:.3f}s late"
        conds = raw.conditions(name)
        assert conds[UM]["lastTransitionTime"] == closes.strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in (f"{run}-2", f"{run}-3"):
        assert watcher.first(name, is_true) is None, f"{name} is outside the window but was marked"
        assert _um(raw, name) == "False"
    # Conditions kumaco does not own stay byte-for-byte untouched.
    for name, owned in before.items():
        now = raw.conditions(name)
        assert {t: now[t] for t in owned} == owned
    # One started and one ended Event for the occurrence, not one per node.
    reasons = sorted(e["reason"] for e in raw.events(ns) if e["regarding"]["name"] == "zone-a")
    assert reasons == ["WindowEnded", "WindowLoaded", "WindowStarted"]
    assert k.alive
    print(f"boundary: {max(late_ms):.0f} ms late at worst (2 nodes, opening and closing)")
    figures.record("boundary", worst_late_ms=round(max(late_ms)), nodes_in_window=2)


def test_a_quiet_minute_costs_zero_writes_and_zero_lists(
    raw: Api, spawn: Callable[..., Kumaco], control_plane: ControlPlane
) -> None:
    run, ns = unique("quiet"), raw.namespace(unique("win"))
    for i in range(3):
        raw.node(f"{run}-{i}", {RUN_LABEL: run})
    raw.window(ns, "always", {**ALWAYS, "nodeSelector": ""})
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)
    raw.window(ns, "later", {"startTime": cron_at(later), "duration": "1h", "nodeSelector": ""})
    k = spawn(
        "--namespaces",
        ns,
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--leader-election-id",
        run,
        "--leader-election-namespace",
        ns,
    )
    wait_for(  # start-up and the first pass: 1-4 s measured (test_catch_up.py); 30 s for load
        lambda: all(_um(raw, f"{run}-{i}") == "True" for i in range(3)), 30, what="convergence"
    )
    time.sleep(2)
    before = request_counts(control_plane)
    time.sleep(60)
    delta = count_delta(before, request_counts(control_plane))
    # apiserver_request_total also counts the API server's own loopback clients (its
    # identity Lease, repair loops): judge what kumaco touches -- nodes, ConfigMaps, Events.
    mine = ("nodes", "configmaps", "events")
    writes = {
        k: v
        for k, v in delta.items()
        if k[0] in ("PATCH", "PUT", "POST", "DELETE", "APPLY") and k[1] in mine
    }
    lists = {k: v for k, v in delta.items() if k[0] == "LIST" and k[1] in mine}
    assert writes == {}, f"writes during a quiet minute: {writes}"
    assert lists == {}, f"LISTs during a quiet minute: {lists}"
    assert k.alive


def test_in_progress_matches_kumaco_plan_with_required_blocking_and_a_ceiling(
    raw: Api, spawn: Callable[..., Kumaco], tmp_path: Path
) -> None:
    run, ns = unique("mip"), raw.namespace(unique("win"))
    names = [f"{run}-{i}" for i in range(6)]
    required = "kured.dev/RebootRequired"
    blocking = "kured.dev/RebootInhibited"
    for i, name in enumerate(names):
        conds = []
        if i != 5:  # node 5 needs no reboot
            conds.append(
                {
                    "type": required,
                    "status": "True",
                    "lastTransitionTime": f"2026-11-0{i + 1}T00:00:00Z",
                }
            )
        if i == 0:  # the oldest request is blocked
            conds.append({"type": blocking, "status": "True"})
        raw.node(name, {RUN_LABEL: run}, conds)
    cm = raw.window(ns, "always", {**ALWAYS, "nodeSelector": ""})
    flags = [
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--max-in-progress",
        "2",
        "--require-condition",
        required,
        "--block-condition",
        blocking,
    ]

    # What `kumaco plan` says for the cluster as it is now, before kumaco acts.
    (tmp_path / "windows.json").write_text(json.dumps(cm))
    (tmp_path / "nodes.json").write_text(
        json.dumps({"kind": "List", "items": list(raw.nodes(run).values())})
    )
    at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kumaco",
            "plan",
            "--windows",
            str(tmp_path / "windows.json"),
            "--nodes",
            str(tmp_path / "nodes.json"),
            "--at",
            at,
            "--output",
            "json",
            *flags,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = {n["name"]: n for n in json.loads(out.stdout)["nodes"]}
    assert [n for n, p in expected.items() if p["maintenanceInProgress"]] == [names[1], names[2]]

    k = spawn(
        "--namespaces", ns, "--leader-election-id", run, "--leader-election-namespace", ns, *flags
    )

    def converged() -> bool:
        return all(condition_status(raw.conditions(n), MIP) is not None for n in names)

    # Start-up and the first pass: 1-4 s measured (test_catch_up.py); 30 s for a loaded machine.
    wait_for(converged, 30, what="MaintenanceInProgress on every node")
    for name in names:
        conds = raw.conditions(name)
        want = expected[name]
        assert conds[UM]["status"] == ("True" if want["underMaintenance"] else "False")
        assert conds[MIP]["status"] == ("True" if want["maintenanceInProgress"] else "False"), name
        assert conds[MIP]["reason"] == want["reason"], name
    assert k.alive


def test_events_are_recorded_once_and_aggregated_across_restarts(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run, ns = unique("ev"), raw.namespace(unique("win"))
    raw.node(f"{run}-0", {RUN_LABEL: run})
    raw.window(ns, "good", {**ALWAYS, "nodeSelector": ""})
    raw.window(ns, "bad", {"startTime": "61 * * * *", "duration": "1d", "nodeSelector": ""})
    args = (
        "--namespaces",
        ns,
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--leader-election-id",
        run,
        "--leader-election-namespace",
        ns,
    )

    def by_reason() -> dict[str, list[dict[str, object]]]:
        out: dict[str, list[dict[str, object]]] = {}
        for e in raw.events(ns):
            out.setdefault(str(e["reason"]), []).append(e)
        return out

    k = spawn(*args)
    wait_for(
        lambda: {"WindowLoaded", "WindowInvalid", "WindowStarted"} <= set(by_reason()),
        30,  # start-up and the first pass (1-4 s measured, test_catch_up.py), then its Events
        what="events",
    )
    assert k.stop() == 0
    spawn(*args)
    wait_for(
        lambda: any(
            (e.get("series") or {}).get("count") == 2 for e in by_reason()["WindowInvalid"]
        ),
        30,  # a restart: start-up and its Events (1-4 s to conditions measured, test_catch_up.py)
        what="the invalid window's Warning to be aggregated",
    )
    events = by_reason()
    assert len(events["WindowInvalid"]) == 1, "exactly one aggregated Warning per invalid ConfigMap"
    warning = events["WindowInvalid"][0]
    assert warning["type"] == "Warning"
    assert warning["reportingController"] == "kured.dev/kumaco"
    assert "startTime: minute: 61" in str(warning["note"])
    assert 'duration: unknown unit "d"' in str(warning["note"])
    assert len(events["WindowLoaded"]) == 1
    wait_for(
        lambda: (by_reason()["WindowLoaded"][0].get("series") or {}).get("count") == 2,
        10,  # posted with the Warning just seen aggregated: 10 s is room for a loaded machine
        what="the loaded Event to be aggregated",
    )
    # The occurrence was announced once, by the first process; the second found it announced.
    assert len(events["WindowStarted"]) == 1
    assert (
        "series" not in events["WindowStarted"][0] or events["WindowStarted"][0]["series"] is None
    )


def test_editing_a_window_exits_in_a_controlled_way_and_the_restart_is_right(
    raw: Api, spawn: Callable[..., Kumaco], figures: Figures
) -> None:
    run, ns = unique("edit"), raw.namespace(unique("win"))
    for i, zone in enumerate(["a", "b"]):
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "zone": zone})
    raw.window(ns, "w", {**ALWAYS, "nodeSelector": "zone=a"})
    args = (
        "--namespaces",
        ns,
        "--node-selector",
        f"{RUN_LABEL}={run}",
        "--leader-election-id",
        run,
        "--leader-election-namespace",
        ns,
    )
    k = spawn(*args)
    wait_for(
        lambda: _um(raw, f"{run}-0") == "True" and _um(raw, f"{run}-1") == "False",
        30,  # start-up and the first pass: 1-4 s measured (test_catch_up.py)
        what="first state",
    )

    edited = time.monotonic()
    raw.edit_window(ns, "w", {**ALWAYS, "nodeSelector": "zone=b"})
    # The 2 s edit-burst settle period and the exit: 2.94 s measured (config_edit_single.exit_s).
    assert k.wait(15) == 3, "a config change exits with the documented code 3"
    exit_s = time.monotonic() - edited
    change = next(r for r in k.logs() if "changed" in log_message(r))
    assert change["edited"] == [f"{ns}/w"]
    assert change["added"] == [] and change["removed"] == []
    # The lease was released on the way out.
    lease = raw.lease(ns, run)
    assert lease is not None and not lease["spec"].get("holderIdentity")

    spawn(*args)  # the kubelet would restart the container
    wait_for(
        lambda: _um(raw, f"{run}-0") == "False" and _um(raw, f"{run}-1") == "True",
        30,  # the restart's start-up and pass: 3.47 s from the edit measured (config_edit_single)
        what="new state",
    )
    gap = time.monotonic() - edited
    print(
        f"config edit: exit after {exit_s:.2f}s, new conditions after {gap:.2f}s (single replica)"
    )
    figures.record(
        "config_edit_single",
        exit_s=round(exit_s, 2),
        new_conditions_s=round(gap, 2),
        settings={"replicas": 1, "lease_s": 15, "renew_s": 10, "retry_s": 2},
    )


@pytest.fixture
def own_control_plane(tmp_path: Path, figures: Figures) -> Iterator[ControlPlane]:
    """tests/e2e/conftest.py's, for this module: a control plane of the test's own, whose
    audit log also holds every LIST and WATCH of Nodes (:data:`NODE_READS_POLICY`)."""
    logs = tmp_path / "reads-controlplane"
    cp = ControlPlane(
        ensure_assets(), log_dir=logs, apiserver_args=audit_args(logs, NODE_READS_POLICY)
    )
    cp.start()
    figures.record("controlplane", start_s=[round(cp.startup_seconds, 2)])
    try:
        yield cp
    finally:
        cp.stop()


def test_recovers_after_the_api_server_is_killed_and_restarted(
    own_control_plane: ControlPlane, own_kubeconfig: Path, tmp_path: Path, figures: Figures
) -> None:
    """A watch resumed after the restart gets 410 Gone, and is followed by a LIST of nodes.

    kumaco is frozen (SIGSTOP) across the compaction and the restart, so that its watches
    fail once, after the server is back, and resume from the resourceVersion they had --
    older than the compacted revision: the server answers 410, and the relist is judged
    from the API server's audit log (the watch from the old resourceVersion, then a LIST,
    then a watch from the LIST's), not from kumaco's own account. Unfrozen, it must not
    have failed its way to a LIST instead (five failures in a row: kumaco/kube/retry.py).
    """
    control_plane = own_control_plane  # compacted and SIGKILLed: its own
    raw = Api(control_plane)
    run, ns = unique("crash"), raw.namespace(unique("win"))
    for i in range(3):
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "zone": "b"})
    raw.window(ns, "w", {**ALWAYS, "nodeSelector": "zone=a"})
    k = Kumaco(
        own_kubeconfig,
        [
            *scope_flags(run, ns),
            # Frozen for the compaction and the restart (seconds; 20-30 s under load): its
            # lease must outlast that, so the freeze cannot cost it its leadership.
            "--leader-elect-lease-duration",
            "180s",
            "--leader-elect-renew-deadline",
            "150s",
        ],
        tmp_path / "crash.log",
    ).start()
    try:
        # Start-up and the first pass: 1-4 s measured (test_catch_up.py); 30 s for load.
        wait_for(lambda: _um(raw, f"{run}-0") == "False", 30, what="first state")
        k.send(signal.SIGSTOP)
        control_plane.stop_apiserver(signal.SIGKILL)
        # etcd's revision moves past anything kumaco could have seen (no watch delivers
        # these writes), and its history up to there is compacted: the watches kumaco
        # resumes from its resourceVersions are older than what etcd and the restarted
        # API server's watch cache hold (410).
        control_plane.bump_etcd_revision()
        revision = control_plane.compact_etcd()
        time.sleep(2)
        control_plane.start_apiserver()
        restarted = time.time()
        back = time.monotonic()
        raw.label(f"{run}-1", "zone", "a")  # a change kumaco can only see through a new LIST
        k.send(signal.SIGCONT)
        # A relist and a pass: 0.07 s measured (apiserver_restart_relist); 60 s for load.
        wait_for(lambda: _um(raw, f"{run}-1") == "True", 60, what="convergence after the restart")
        converge = time.monotonic() - back
        print(f"API server restart: converged {converge:.2f}s after it was ready again")
        figures.record("apiserver_restart_relist", converged_s=round(converge, 2))
        assert k.alive, "kumaco must survive an API server restart"

        def reflector_after_start() -> list[tuple[str, str]]:
            nodes_log = [
                (log_message(r), str(r.get("error", "")))
                for r in k.logs()
                if r.get("collection") == "nodes"
            ]
            return nodes_log[[m for m, _e in nodes_log].index("listed") + 1 :]  # the start's

        # The reflector's thread logs its relist after the LIST's items reached the store,
        # which may already have woken the pass that converged: wait for its lines (a CI
        # run on a loaded machine read the log between the two).
        with contextlib.suppress(AssertionError):
            wait_for(
                lambda: "listed" in [m for m, _e in reflector_after_start()],
                30,
                what="the reflector's relist in kumaco's log",
            )
        after = reflector_after_start()
        print(f"kumaco's node reflector after the start: {after}")
        messages = [m for m, _e in after]
        assert messages[messages.index("watch expired; relisting") + 1] == "listed", after
        assert "watch failed; retrying" not in messages[messages.index("listed") :], after
        assert messages.count("listed") == 1, f"one relist, after the 410: {after}"
        # The API server's own record: kumaco's node watch from before the compaction, then
        # a LIST, then a watch from the LIST's resourceVersion.
        reads = node_reads(control_plane.audit_log, "kumaco/", restarted - 1)
        print(f"kumaco's node reads after the restart (compacted at {revision}): {reads}")
        verbs = [v for v, _rv in reads]
        first_list = verbs.index("list")
        expired = [rv for v, rv in reads[:first_list] if v == "watch"]
        assert expired and all(int(rv) < revision for rv in expired), reads
        watched = [int(rv) for v, rv in reads[first_list + 1 :] if v == "watch"]
        assert watched and watched[0] >= revision, reads
        assert verbs.count("list") == 1, reads
    finally:
        k.stop(signal.SIGKILL)


def test_two_instances_with_disjoint_scopes_never_write_each_others_nodes(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run = unique("scope")
    ns_a, ns_b = raw.namespace(unique("win-a")), raw.namespace(unique("win-b"))
    for i in range(4):
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "pool": "a" if i < 2 else "b"})
    raw.window(ns_a, "all", {**ALWAYS, "nodeSelector": ""})  # "all" = all nodes in *its* scope
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)
    raw.window(ns_b, "later", {"startTime": cron_at(later), "duration": "1h", "nodeSelector": ""})
    common = ("--leader-election-id", run)
    spawn(
        "--namespaces",
        ns_a,
        "--leader-election-namespace",
        ns_a,
        "--field-manager",
        "kumaco-a",
        "--node-selector",
        f"{RUN_LABEL}={run},pool=a",
        *common,
        name="a",
    )
    spawn(
        "--namespaces",
        ns_b,
        "--leader-election-namespace",
        ns_b,
        "--field-manager",
        "kumaco-b",
        "--node-selector",
        f"{RUN_LABEL}={run},pool=b",
        *common,
        name="b",
    )
    wait_for(
        lambda: [_um(raw, f"{run}-{i}") for i in range(4)] == ["True", "True", "False", "False"],
        30,  # two start-ups side by side: 1-4 s each measured (test_catch_up.py)
        what="each instance to set its own nodes",
    )
    for i, (mine, other) in enumerate(
        [("kumaco-a", "kumaco-b")] * 2 + [("kumaco-b", "kumaco-a")] * 2
    ):
        node = raw.request("GET", f"/api/v1/nodes/{run}-{i}")
        managers = {
            m["manager"]
            for m in node["metadata"]["managedFields"]
            if m.get("subresource") == "status"
        }
        assert mine in managers and other not in managers, (i, managers)
