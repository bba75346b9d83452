"""Admin access to the test control plane, and kumaco run there as its Deployment's pod runs it.

:class:`Cluster` (and its pytest fixture ``cluster``: bind it in a test module with
``cluster = admin.cluster``) is admin access over the shared control plane; every
namespace, node and cluster-scoped object created through it is removed at the end.
:func:`kumaco` runs ``python -m kumaco run`` with the pod's environment (POD_NAME,
POD_NAMESPACE, KUMACO_*) and kills it if the test did not stop it; :func:`remap` moves
rendered manifests into a test's namespaces with unique cluster-scoped names;
:func:`window` is a window ConfigMap, :data:`OPEN_NOW` a window open now, :data:`INVALID`
one kumaco rejects; :func:`wait_for` polls a predicate up to a timeout.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import Api, run_command, unique
from tests.support.env.manifests import (
    CLUSTER_SCOPED,
    kubectl,
)

T = TypeVar("T")
#: The repository: ``kumaco run`` starts from it, as the pod starts from its image.
REPO = Path(__file__).resolve().parents[3]


WINDOW_LABEL = "kured.dev/maintenance-window"


UM = "kured.dev/UnderMaintenance"


MIP = "MaintenanceInProgress"


RUN_LABEL = "kumaco.test/deploy-run"


def wait_for(pred: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def remap(
    docs: Sequence[dict[str, Any]], ns: Mapping[str, str], suffix: str
) -> list[dict[str, Any]]:
    """Move rendered objects to test namespaces and give cluster-scoped objects unique names."""
    out = []
    for original in docs:
        d = copy.deepcopy(original)
        meta = d["metadata"]
        kind = d["kind"]
        if kind == "Namespace":
            meta["name"] = ns.get(meta["name"], meta["name"])
        elif kind in CLUSTER_SCOPED:
            meta["name"] += suffix
        if "namespace" in meta:
            meta["namespace"] = ns.get(meta["namespace"], meta["namespace"])
        for subject in d.get("subjects") or []:
            if "namespace" in subject:
                subject["namespace"] = ns.get(subject["namespace"], subject["namespace"])
        role_ref = d.get("roleRef")
        if role_ref and role_ref["kind"] == "ClusterRole":
            role_ref["name"] += suffix
        if kind == "ValidatingAdmissionPolicyBinding":
            d["spec"]["policyName"] += suffix
        if kind == "Deployment":
            for container in d["spec"]["template"]["spec"]["containers"]:
                for env in container.get("env") or []:
                    if env["name"] == "KUMACO_NAMESPACES":
                        env["value"] = ",".join(ns.get(n, n) for n in env["value"].split(","))
        out.append(d)
    return out


def write_docs(docs: Sequence[dict[str, Any]], path: Path) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path


@dataclass
class Cluster:
    """Admin access plus helpers; every object created through it is removed at the end."""

    cp: ControlPlane
    api: client.ApiClient
    kubeconfig: Path
    tmp: Path

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.cleanups: list[Callable[[], Any]] = []

    def defer(self, fn: Callable[[], Any]) -> None:
        self.cleanups.append(fn)

    def cleanup(self) -> None:
        for fn in reversed(self.cleanups):
            with contextlib.suppress(ApiException, AssertionError):
                fn()
        self.cleanups.clear()

    def apply(
        self, docs: Sequence[dict[str, Any]], *extra: str
    ) -> subprocess.CompletedProcess[str]:
        path = write_docs(docs, self.tmp / f"apply-{uuid.uuid4().hex[:6]}.yaml")
        return kubectl(self.kubeconfig, "apply", "--server-side", "-f", str(path), *extra)

    def apply_for_real(self, docs: Sequence[dict[str, Any]]) -> None:
        """Apply, and delete again at cleanup (cluster-scoped objects and namespaces)."""
        self.apply(docs)
        for d in docs:
            kind, name = d["kind"], d["metadata"]["name"]
            if kind in CLUSTER_SCOPED:
                resource = {
                    "Namespace": "namespace",
                    "ClusterRole": "clusterrole",
                    "ClusterRoleBinding": "clusterrolebinding",
                    "ValidatingAdmissionPolicy": "validatingadmissionpolicy",
                    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybinding",
                }[kind]
                self.defer(
                    functools.partial(
                        kubectl,
                        self.kubeconfig,
                        "delete",
                        resource,
                        name,
                        "--wait=false",
                        check=False,
                    )
                )

    def namespace(self, name: str, labels: Mapping[str, str] | None = None) -> str:
        self.core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=dict(labels or {})))
        )
        self.defer(lambda: self.core.delete_namespace(name))
        return name

    def node(self, name: str, labels: Mapping[str, str]) -> str:
        self.core.create_node(
            client.V1Node(
                metadata=client.V1ObjectMeta(name=name, labels=dict(labels)),
                status=client.V1NodeStatus(
                    conditions=[
                        client.V1NodeCondition(
                            type="Ready",
                            status="True",
                            reason="KubeletReady",
                            # Sent as written (the client passes strings through).
                            last_heartbeat_time="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
                            last_transition_time="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
                        )
                    ]
                ),
            )
        )
        self.defer(lambda: self.core.delete_node(name))
        return name

    def set_condition(self, node: str, ctype: str, status: str) -> None:
        self.core.patch_node_status(
            node,
            {
                "status": {
                    "conditions": [
                        {
                            "type": ctype,
                            "status": status,
                            "reason": "Test",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ]
                }
            },
            _content_type="application/strategic-merge-patch+json",
        )

    def conditions(self, node: str) -> dict[str, str]:
        status = self.core.read_node_status(node).status
        assert status is not None, node
        return {c.type: c.status for c in (status.conditions or [])}

    def event_reasons(self, ns: str) -> dict[str, set[str]]:
        """ConfigMap name -> reasons of the events.k8s.io Events regarding it."""
        out: dict[str, set[str]] = {}
        for e in client.EventsV1Api(self.api).list_namespaced_event(ns).items:
            if e.regarding is not None and e.regarding.kind == "ConfigMap":
                assert e.regarding.name is not None and e.reason is not None, e
                out.setdefault(e.regarding.name, set()).add(e.reason)
        return out

    def token_kubeconfig(self, ns: str, sa: str) -> Path:
        """A kubeconfig authenticating as the ServiceAccount, with a TokenRequest token."""
        token = Api(self.cp).service_account_token(ns, sa)
        return self.cp.write_token_kubeconfig(self.tmp / f"{ns}-{sa}.kubeconfig", token, user=sa)

    def impersonating(self, user: str, group: str) -> client.ApiClient:
        """An admin client that acts as ``user`` in ``group`` (plus system:authenticated)."""
        impersonated = client.ApiClient(self.api.configuration)
        impersonated.set_default_header("Impersonate-User", user)
        impersonated.set_default_header("Impersonate-Group", group)
        return impersonated


@pytest.fixture
def cluster(
    control_plane: ControlPlane, api: client.ApiClient, kubeconfig_path: Path, tmp_path: Path
) -> Iterator[Cluster]:
    c = Cluster(control_plane, api, kubeconfig_path, tmp_path)
    try:
        yield c
    finally:
        c.cleanup()


@dataclass
class KumacoProcess:
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_alive(self) -> None:
        assert self.proc.poll() is None, f"kumaco exited ({self.proc.returncode}):\n{self.log()}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:  # a release (0.14-0.64 s to a takeover measured, chaos_short), then the exit
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"kumaco ignored SIGTERM:\n{self.log()}") from None
        return self.proc.returncode


@contextlib.contextmanager
def kumaco(
    kubeconfig: Path, pod_namespace: str, args: Sequence[str], env: Mapping[str, str], log: Path
) -> Iterator[KumacoProcess]:
    """``python -m kumaco run`` as the pod would run it (POD_NAME, POD_NAMESPACE, KUMACO_*)."""
    cmd = run_command(
        kubeconfig,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--log-format",
        "text",
        *args,
    )
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KUMACO_")}
    full_env.update(
        POD_NAME=unique("kumaco-test"),
        POD_NAMESPACE=pod_namespace,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **env,
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
    k = KumacoProcess(proc, log)
    try:
        yield k
    except BaseException:
        print(f"--- kumaco log ({log}):\n{k.log()}")  # shown by pytest on failure
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def window(
    name: str, data: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {WINDOW_LABEL: "", **(labels or {})}},
        "data": dict(data),
    }


OPEN_NOW = {"startTime": "* * * * *", "duration": "10m"}  # fires every minute, lasts 10


INVALID = {"startTime": "@every 1h", "duration": "1d", "nodeSelector": ""}
