"""Fixtures for the end-to-end tier: a real kube-apiserver + etcd on loopback.

The control plane is the very code of ``hack/controlplane.py`` (its library,
``tests/support/controlplane.py``), started once per session, with the audit
policy of ``tests/support/audit.py``. If its binaries cannot be found or built the session FAILS:
these tests are never skipped, because a silently skipped e2e tier would let
a broken controller pass CI.

Tests that damage a control plane on purpose (etcd compaction, kube-apiserver
SIGKILL, etcd SIGSTOP, API Priority and Fairness floods) take ``own_control_plane``
instead: a control plane of their own, audited like the session's, started for
the test and stopped after it, so that a bad recovery fails that test and not
every later one. Each start time is recorded as a figure (``controlplane``).

When ``KUMACO_E2E_PROOF`` names a file, the fixture writes there what the
server said about itself (``/version``) and every e2e test that passed;
``.ci/run`` checks that file to prove the e2e tier really ran.
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

from tests.support.audit import audit_args
from tests.support.controlplane import ControlPlane, ensure_assets
from tests.support.figures import Figures
from tests.support.harness import Api, Kumaco


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


_passed: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.passed and item.get_closest_marker("e2e"):
        _passed.append(item.nodeid)


def _audited(logs: Path, figures: Figures) -> ControlPlane:
    """A started control plane auditing with tests/support/audit.py's policy into ``logs``."""
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
    version = json.loads(body)
    try:
        yield cp
    finally:
        cp.stop()
        proof = os.environ.get("KUMACO_E2E_PROOF")
        if proof:
            Path(proof).write_text(
                json.dumps({"server": version, "passed": _passed}, indent=2) + "\n"
            )


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
    """Start ``kumaco run`` processes (admin kubeconfig); any left alive is SIGKILLed after."""
    started: list[Kumaco] = []

    def make(*args: str, name: str = "kumaco", env: dict[str, str] | None = None) -> Kumaco:
        k = Kumaco(
            kubeconfig_path, args, tmp_path / f"{name}-{len(started)}.log", env or {}, name=name
        )
        started.append(k.start())
        return k

    yield make
    for k in started:
        if k.alive:
            k.stop(signal.SIGKILL)


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
