"""The deployment manifests of kustomize/, rendered as ``kubectl kustomize`` renders them.

Contract. :func:`render` runs ``kubectl kustomize`` (kubectl's built-in kustomize, no
server) on ``kustomize/<target>``, optionally with components added through a
throw-away kustomization, and returns the non-empty documents; :func:`kubectl` fails the
test (never skips it) when kubectl is missing, and raises on a non-zero exit when
``check``. :func:`one`, :func:`by_kind`, :func:`container_env` and :func:`rules_of` read
the rendered documents; the ``*_RULES`` sets are the grants docs/deploy.md documents,
``(apiGroup, resource, verb, resourceName or *)``. Shared by the rendering tests
(tests/unit/deploy/test_manifests.py) and the server tests of tests/e2e/test_deploy.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
KUSTOMIZE = REPO / "kustomize"
OVERLAYS = sorted(
    p.name for p in (KUSTOMIZE / "overlays").iterdir() if (p / "kustomization.yaml").exists()
)
COMPONENTS = sorted(
    p.name for p in (KUSTOMIZE / "components").iterdir() if (p / "kustomization.yaml").exists()
)
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
#: What components/kured-v2 sets: the condition names of kured v2's agents (its prototype's
#: internal/conditions), a ceiling of one, and a node kumaco released less than 30 minutes
#: ago counted toward it while it is cordoned or NotReady.
KURED_V2_ENV = {
    "KUMACO_UNDER_MAINTENANCE_CONDITION": "kured.dev/under-maintenance-window",
    "KUMACO_IN_PROGRESS_CONDITION": "kured.dev/maintenance-in-progress",
    "KUMACO_REQUIRE_CONDITION": "kured.dev/reboot-required",
    "KUMACO_BLOCK_CONDITION": "kured.dev/reboot-inhibited",
    "KUMACO_MAX_IN_PROGRESS": "1",
    "KUMACO_COUNT_RELEASED_UNAVAILABLE": "30m",
}
# The overlays' own namespace names, remapped to unique ones in each test.
SYSTEM_NS, MAINTENANCE_NS = "kumaco-system", "maintenance"


def kubectl(
    kubeconfig: Path | None, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    if exe is None:  # never skip: the manifests would go untested
        pytest.fail("kubectl (with its built-in kustomize) is required", pytrace=False)
    cmd = [exe, *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def render(target: str, tmp: Path, components: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of kustomize/<target>, optionally with components added."""
    path = KUSTOMIZE / target
    if components:
        # A throw-away kustomization adding the components; kustomize wants relative paths.
        wrap = tmp / f"wrap-{uuid.uuid4().hex[:6]}"
        wrap.mkdir(parents=True)
        rel = os.path.relpath(KUSTOMIZE, wrap)
        (wrap / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": [f"{rel}/{target}"],
                    "components": [f"{rel}/components/{c}" for c in components],
                }
            )
        )
        path = wrap
    out = kubectl(None, "kustomize", str(path)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(docs: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: Sequence[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in by_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container_env(docs: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The KUMACO_* settings of the rendered Deployment (literal values only)."""
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}


def rules_of(role: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """(apiGroup, resource, verb, resourceName or *) of a Role/ClusterRole or rules review."""
    out = set()
    for rule in role.get("rules") or []:
        for group in rule.get("apiGroups") or [""]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or ["*"]:
                        out.add((group, resource, verb, name))
    return out


# Expected grants (apiGroup, resource, verb, resourceName); see docs/deploy.md.
NODE_RULES = {("", "nodes", v, "*") for v in ("get", "list", "watch")} | {
    ("", "nodes/status", "patch", "*")
}
LEASE_RULES = {
    ("coordination.k8s.io", "leases", "create", "*"),
    ("coordination.k8s.io", "leases", "get", "kumaco"),
    ("coordination.k8s.io", "leases", "update", "kumaco"),
}
WINDOW_RULES = {("", "configmaps", v, "*") for v in ("get", "list", "watch")} | {
    ("events.k8s.io", "events", v, "*") for v in ("create", "patch")
}
#: What ``kubectl kumaco`` needs (base/viewer-rbac and the viewer half of base/windows-rbac).
VIEWER_NODE_RULES = {("", "nodes", v, "*") for v in ("get", "list", "watch")}
VIEWER_RULES = {
    *(("coordination.k8s.io", "leases", v, "kumaco") for v in ("get", "list", "watch")),
    ("apps", "deployments", "get", "kumaco"),
}
VIEWER_WINDOW_RULES = {("", "configmaps", v, "*") for v in ("get", "list", "watch")}
MANAGER_RULES = {
    ("", "configmaps", v, "*")
    for v in ("get", "list", "watch", "create", "update", "patch", "delete")
}
#: components/respect-pdbs: read-only, cluster-wide, for ``--respect-pdbs``.
PDB_RULES = {("", "pods", v, "*") for v in ("list", "watch")} | {
    ("policy", "poddisruptionbudgets", v, "*") for v in ("list", "watch")
}
