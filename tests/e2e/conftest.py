"""Fixtures for the end-to-end tier: a real kube-apiserver + etcd on loopback.

The control plane is the very code of ``hack/controlplane.py`` (its library,
``tests/support/env/controlplane.py``), started once per session, with the audit
policy of ``tests/support/judges/audit.py``. If its binaries cannot be found or built the session FAILS:
these tests are never skipped, because a silently skipped e2e tier would let
a broken controller pass CI.

Tests that damage a control plane on purpose (etcd compaction, kube-apiserver
SIGKILL, etcd SIGSTOP, API Priority and Fairness floods) take ``own_control_plane``
instead: a control plane of their own, audited like the session's, started for
the test and stopped after it, so that a bad recovery fails that test and not
every later one. Each start time is recorded as a figure (``controlplane``).

When ``KUMACO_E2E_PROOF`` names a file, the fixture writes there what the
server said about itself (``/version``) and every e2e test that passed *and talked to a
real kube-apiserver*, judged by what it did, not by its folder (:func:`_used_a_server`):
a fixture of its closure is a started :class:`ControlPlane` (``control_plane``,
``own_control_plane``, a module's own such as test_kured_v2's ``plane``, or anything built
on them), or it started one itself during its call (the benchmarks' short forms), or it
carries the marker ``real_server(why)``: its server runs in a process it starts
(hack/demo.py). ``.ci/run`` checks that file (tests/support/judges/junit.py): every test of
tests/e2e must be listed, so a test that touches no server fails CI until it moves to
tests/unit. The exemptions -- ``artifact(why)`` (a built artifact, no server) and
``real_server(why)`` (counted on its word) -- are listed apart in the proof, and CI
accepts only the fixed set ``tests/e2e/expected.json`` names (with every module's number of
tests: tests/support/judges/junit.py).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.support.env import lanes
from tests.support.env.auditing import audit_args
from tests.support.env.controlplane import ControlPlane, ensure_assets
from tests.support.env.harness import Api, Kumaco, Shift
from tests.support.env.supervisor import ReplicaFactory, Supervisor
from tests.support.env.workers import per_worker
from tests.support.judges.figures import Figures

#: Rough wall time of the longest modules (s), measured in CI (the junit times of a warm
#: clean-clone run, 2026-12-03, with the real-cluster tier): under pytest-xdist they are
#: handed out first, so that no long module starts last and keeps the run waiting.
LONGEST = {
    "test_kured_v2": 405,  # with (h)
    "test_bench_small": 320,
    "test_faults": 240,
    "test_cluster_lifecycle": 180,  # 116 s to 253 s: up to a minute waits for a cron minute
    "test_cluster_fleet": 115,
    "test_demo": 110,
    "test_controller": 110,
    "test_cluster_kured": 110,
    "test_cluster_probes": 105,
    "test_policy": 90,
    "test_cluster": 90,
    "test_lifecycle": 70,
    "test_kured_latency_small": 65,
    "test_ha": 65,
    "test_deploy": 40,
    "test_clock_skew": 40,
    "test_planned": 38,
    "test_fleetrules": 36,
    "test_catch_up": 32,
    "test_flags": 31,
    "test_quickstart": 30,
    "test_image": 30,
    "test_monitoring": 25,
}


#: The modules that keep both cores busy by themselves (kwok fleets, kured's agents, image
#: builds, Chromium, request floods), in two lanes: each lane's modules run one after the
#: other on one worker, so that at most two of them run together and the other workers'
#: timing bounds keep their margins; and the real clusters, in two lanes of their own.
CPU_LANES = {
    "test_bench_small": "cpu-lane-a",
    "test_kwok": "cpu-lane-a",
    "test_timeline_browser": "cpu-lane-a",
    "test_transport_bench": "cpu-lane-a",
    "test_demo": "cpu-lane-a",  # a control plane, kumaco and its table of its own
    "test_kured_v2": "cpu-lane-b",
    "test_kured_latency_small": "cpu-lane-b",
    "test_image": "cpu-lane-b",
    "test_quickstart": "cpu-lane-b",  # builds (or reuses) test_image's image
    # Real clusters (tests/support/env/cluster.py): mostly waiting on kubelets, each ~800 MiB;
    # two lanes, so that at most two run at once beside the CPU lanes.
    "test_cluster": "cluster-lane-c",  # smoke, the overlay, helm, README's steps
    "test_cluster_probes": "cluster-lane-c",  # a replica cut off from the API server
    "test_cluster_fleet": "cluster-lane-c",  # a real cluster and a kwok fleet around it
    "test_cluster_kured": "cluster-lane-d",  # kured v2's agents as pods rebooting real nodes
    "test_cluster_lifecycle": "cluster-lane-d",  # kumaco's exits, restarts and a rollout
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Keep each module on one xdist worker, the CPU-heavy ones in lanes (:mod:`lanes`).

    A worker runs its modules one after the other against its own control plane (the
    session fixture below is per worker), so a module's module-scoped fixtures and its
    order hold as in a serial run, and a test that needs a quiet server has one.
    """
    return lanes.scheduler(config, log, CPU_LANES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the e2e tier; hand the CPU lanes out first, then the longest modules.

    The CPU-heavy modules share two lanes (:data:`CPU_LANES`), handed out first.
    """
    here = Path(__file__).parent
    mine = [item for item in items if here in Path(str(item.fspath)).parents]
    for item in mine:
        item.add_marker(pytest.mark.e2e)
    if mine and len(mine) == len(items):  # reorder only a run of the e2e tier alone

        def weight(i: pytest.Item) -> tuple[bool, int]:
            stem = Path(str(i.fspath)).stem
            return (stem not in CPU_LANES, -LONGEST.get(stem, 0))

        items.sort(key=weight)


#: The marker of a test whose real kube-apiserver runs in a process it starts, where this
#: process cannot see it (hack/demo.py starts its own control plane).
REAL_SERVER = "real_server"

_passed: list[str] = []  # the e2e proof: passed and talked to a real kube-apiserver
#: The marker of a test of a built artifact (the image, the zipapp) that needs no server;
#: the proof lists those apart (``artifacts``), so none is taken for a server test.
ARTIFACT = "artifact"
_artifacts: list[str] = []
#: The passed tests counted on their ``real_server`` marker (also in ``_passed``).
_real_server: list[str] = []
_server: dict[str, Any] = {}  # /version of the first control plane this process started
_starts = [0]  # successful ControlPlane.start calls in this process
_STARTED_IN_CALL = pytest.StashKey[int]()
_start = ControlPlane.start


def _counted_start(self: ControlPlane, timeout: float = 120.0) -> None:
    _start(self, timeout)
    _starts[0] += 1
    if not _server:
        status, body = self.get("/version")
        if status == 200:
            _server.update(json.loads(body))


ControlPlane.start = _counted_start  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{REAL_SERVER}(why): the test's real kube-apiserver runs in a process it starts "
        "(counted in the e2e proof; tests/e2e/conftest.py)",
    )
    config.addinivalue_line(
        "markers",
        f"{ARTIFACT}(why): a test of a built artifact that needs no server (listed apart "
        "in the e2e proof; tests/e2e/conftest.py)",
    )


def _used_a_server(item: pytest.Item) -> bool:
    """Whether ``item`` talked to a real kube-apiserver (see the module docstring)."""
    funcargs: dict[str, object] = getattr(item, "funcargs", {})
    return (
        any(isinstance(v, ControlPlane) for v in funcargs.values())
        or item.stash.get(_STARTED_IN_CALL, 0) > 0
        or item.get_closest_marker(REAL_SERVER) is not None
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    before = _starts[0]
    yield
    item.stash[_STARTED_IN_CALL] = _starts[0] - before


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.passed and item.get_closest_marker("e2e"):
        if _used_a_server(item):
            _passed.append(item.nodeid)
            if item.get_closest_marker(REAL_SERVER) is not None:
                _real_server.append(item.nodeid)  # on its word: listed apart, capped
        elif item.get_closest_marker(ARTIFACT) is not None:
            _artifacts.append(item.nodeid)


def _audited(logs: Path, figures: Figures) -> ControlPlane:
    """A started control plane auditing with tests/support/judges/audit.py's policy into ``logs``."""
    try:
        assets = ensure_assets()
    except RuntimeError as exc:
        pytest.fail(f"the test control plane is unavailable: {exc}", pytrace=False)
    # Every Lease write with its body (to know the holder), every node write with the
    # stored Node (the ceiling judge), every ServiceAccount request (the RBAC tests).
    cp = ControlPlane(assets, log_dir=logs, apiserver_args=audit_args(logs))
    cp.start()
    figures.record("controlplane", start_s=[round(cp.startup_seconds, 2)])
    return cp


@pytest.fixture(scope="session")
def control_plane(
    tmp_path_factory: pytest.TempPathFactory, figures: Figures
) -> Iterator[ControlPlane]:
    cp = _audited(tmp_path_factory.mktemp("controlplane-logs"), figures)
    status, body = cp.get("/version")
    assert status == 200, body
    try:
        yield cp
    finally:
        cp.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the e2e proof (this worker's part under xdist) once every test has run.

    Written here, not when the session's control plane stops: a worker whose modules
    start only control planes of their own (test_kured_v2, the benchmarks) proves its
    tests too.
    """
    proof = os.environ.get("KUMACO_E2E_PROOF")
    if proof and (_passed or _artifacts):
        doc = {
            "server": _server,
            "passed": _passed,
            "artifacts": _artifacts,
            "real_server": _real_server,
        }
        per_worker(Path(proof)).write_text(json.dumps(doc, indent=2) + "\n")


@pytest.fixture(scope="session")
def kubeconfig_path(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kubeconfig") / "admin.kubeconfig"
    control_plane.write_kubeconfig(path)
    return path


@pytest.fixture(scope="session")
def api(kubeconfig_path: Path) -> client.ApiClient:
    """An admin ApiClient (client certificate in ``system:masters``)."""
    return config.new_client_from_config(str(kubeconfig_path))


@pytest.fixture
def raw(control_plane: ControlPlane) -> Api:
    """Raw JSON access to the test API server (admin)."""
    return Api(control_plane)


@pytest.fixture
def spawn(kubeconfig_path: Path, tmp_path: Path) -> Iterator[Callable[..., Kumaco]]:
    """Start ``kumaco run`` processes (admin kubeconfig); any left alive is SIGKILLed after.

    ``shift``: run it on a shifted wall clock (:func:`tests.support.env.harness.shift_before`).
    """
    started: list[Kumaco] = []

    def make(
        *args: str,
        name: str = "kumaco",
        env: dict[str, str] | None = None,
        shift: Shift | None = None,
    ) -> Kumaco:
        k = Kumaco(
            kubeconfig_path, args, tmp_path / f"{name}-{len(started)}.log", env or {}, name=name
        )
        if shift is not None:  # kumaco's wall clock shifted (tests/support/env/shifted.py)
            k.launcher = shift.launcher
        started.append(k.start())
        return k

    yield make
    for k in started:
        if k.alive:
            k.stop(signal.SIGKILL)


@pytest.fixture
def replicas(kubeconfig_path: Path, tmp_path: Path) -> Iterator[Callable[..., Supervisor]]:
    """``make(run, flags, n)``: ``n`` supervised ``kumaco run`` replicas, stopped after the test."""
    sups: list[Supervisor] = []

    def make(run: str, flags: list[str], n: int = 3) -> Supervisor:
        sup = Supervisor(ReplicaFactory(kubeconfig_path, flags, tmp_path, run), n)
        sups.append(sup)
        return sup

    yield make
    for s in sups:
        s.stop()


@pytest.fixture
def own_control_plane(tmp_path: Path, figures: Figures) -> Iterator[ControlPlane]:
    """A control plane for this test alone (audited like the session's), for damaging tests."""
    cp = _audited(tmp_path / "own-controlplane", figures)
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def own_kubeconfig(own_control_plane: ControlPlane, tmp_path: Path) -> Path:
    """An admin kubeconfig for :func:`own_control_plane`."""
    return own_control_plane.write_kubeconfig(tmp_path / "own-admin.kubeconfig")
