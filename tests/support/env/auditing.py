"""The API server's audit policies and an audited control plane: how the tests make it log.

Contract. :data:`AUDIT_POLICY` is the policy the e2e session's control plane, the chaos run
and the soak start kube-apiserver with:

* every Lease write with its request and response (to know the holder);
* every Node creation, every ``nodes/status`` write and every Node deletion with the
  request *and the stored object* (level RequestResponse): the response body of a
  successful write is the Node as the server stored it, with the ``resourceVersion``
  (etcd revision) that orders it among all writes;
* every request of a ServiceAccount, with its metadata and response code.

:data:`NODE_READS_POLICY` is that policy plus every LIST and WATCH of Nodes, with its
metadata (the request's URI: its resourceVersion): what a test of the relist after an
expired watch reads (tests/e2e/test_controller.py), on a control plane of its own.

:func:`audit_args` writes a policy (this one by default) into a directory and returns the
kube-apiserver flags that log with it there; :func:`audited_control_plane` is a started
control plane logging so. Reading and judging the log is :mod:`tests.support.judges.audit`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.env.controlplane import ControlPlane, ensure_assets

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
omitManagedFields: true
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch"]
    resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
  - level: RequestResponse
    verbs: ["create", "update", "patch"]
    resources: [{group: "", resources: ["nodes/status"]}]
  - level: RequestResponse
    verbs: ["create", "delete"]
    resources: [{group: "", resources: ["nodes"]}]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"""

NODE_READS_POLICY = AUDIT_POLICY.replace(
    "  - level: None\n",
    '  - level: Metadata\n    verbs: ["list", "watch"]\n    resources: [{group: "", resources: ["nodes"]}]\n'
    "  - level: None\n",
)


def audit_args(
    workdir: Path,
    policy: str = AUDIT_POLICY,
    *,
    name: str = "audit-policy.yaml",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """kube-apiserver flags auditing with ``policy`` into ``workdir/audit.log``.

    Writes the policy to ``workdir/<name>``; ``extra`` adds flags (e.g. the log's size
    before rotation). A :class:`ControlPlane` given these flags names the log in
    :attr:`ControlPlane.audit_log`.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / name
    path.write_text(policy)
    return {
        "audit-policy-file": str(path),
        "audit-log-path": str(workdir / "audit.log"),
        **(extra or {}),
    }


@contextlib.contextmanager
def audited_control_plane(workdir: Path) -> Iterator[tuple[ControlPlane, Path]]:
    """A started, audited control plane logging into ``workdir``, and its admin kubeconfig."""
    cp = ControlPlane(ensure_assets(), log_dir=workdir, apiserver_args=audit_args(workdir))
    cp.start()
    try:
        yield cp, cp.write_kubeconfig(workdir / "admin.kubeconfig")
    finally:
        cp.stop()
