"""The Helm chart (charts/kumaco) renders exactly what kustomize renders.

The chart reads the kustomize manifests themselves (``charts/kumaco/files`` is a link to
``kustomize/``) and parameterises them; here ``helm template`` with the values matching
each overlay and component must give, object for object, the same documents as
``kubectl kustomize`` of that overlay with those components -- less the Namespace of
kumaco itself, which Helm leaves to ``--create-namespace`` or to the user (docs/deploy.md,
"With Helm"). ``helm lint --strict`` passes with every set of values. helm is built from
the Go module proxy like kwok (tests/support/env/helm.py). ``helm install`` against the
test API server: tests/e2e/test_chart.py.
"""

from __future__ import annotations

import difflib
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.env.helm import ensure_helm
from tests.support.env.manifests import MAINTENANCE_NS, SYSTEM_NS, one, render

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "kumaco"
DELEGATED = {"windowNamespaces": [MAINTENANCE_NS]}
KURED = {"kured": {"enabled": True}}

#: id: (kustomize target, its components, the chart's values for the same)
CASES: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "single-namespace": ("overlays/single-namespace", (), {}),
    "delegated": ("overlays/delegated", (), DELEGATED),
    "kured": ("overlays/kured", (), KURED),
    "delegated+kured-v2": ("overlays/delegated", ("kured-v2",), {**DELEGATED, **KURED}),
    "ha": ("overlays/single-namespace", ("ha",), {"replicas": 3}),
    "single-replica": ("overlays/delegated", ("single-replica",), {**DELEGATED, "replicas": 1}),
    "admission-policy": (
        "overlays/single-namespace",
        ("admission-policy",),
        {"admissionPolicy": {"enabled": True}},
    ),
    "monitoring": (
        "overlays/delegated",
        ("monitoring",),
        {**DELEGATED, "monitoring": {"enabled": True}},
    ),
    "respect-pdbs": (
        "overlays/kured",
        ("respect-pdbs",),
        {**KURED, "respectPdbs": {"enabled": True}},
    ),
    "notifications": (
        "overlays/kured",
        ("notifications",),
        {**KURED, "notifications": {"enabled": True}},
    ),
    "everything": (
        "overlays/delegated",
        ("kured-v2", "ha", "admission-policy", "monitoring", "respect-pdbs", "notifications"),
        {
            **DELEGATED,
            **KURED,
            "replicas": 3,
            "admissionPolicy": {"enabled": True},
            "monitoring": {"enabled": True},
            "respectPdbs": {"enabled": True},
            "notifications": {"enabled": True},
        },
    ),
}


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ensure_helm()), *args], capture_output=True, text=True, timeout=120, check=False
    )


def template(
    values: Mapping[str, Any], tmp: Path, namespace: str = SYSTEM_NS
) -> list[dict[str, Any]]:
    """``helm template kumaco charts/kumaco -n NAMESPACE -f VALUES``: its documents."""
    path = tmp / f"values-{len(list(tmp.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(dict(values)))
    done = helm("template", "kumaco", str(CHART), "--namespace", namespace, "-f", str(path))
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def keyed(docs: Sequence[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    assert len(out) == len(docs), "an object twice"
    return out


def diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    return "\n".join(
        difflib.unified_diff(
            yaml.safe_dump(a).splitlines(), yaml.safe_dump(b).splitlines(), "kustomize", "helm"
        )
    )


@pytest.mark.parametrize(("target", "components", "values"), CASES.values(), ids=CASES.keys())
def test_helm_template_renders_what_kustomize_renders(
    tmp_path: Path, target: str, components: tuple[str, ...], values: dict[str, Any]
) -> None:
    expected = keyed(render(target, tmp_path, components))
    # kumaco's own namespace is Helm's release namespace: not an object of the chart.
    assert expected.pop(("Namespace", "", SYSTEM_NS))["metadata"]["labels"] == {
        f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")
    }
    got = keyed(template(values, tmp_path))
    assert sorted(got) == sorted(expected)
    for key, obj in expected.items():
        assert got[key] == obj, f"{key}:\n{diff(obj, got[key])}"


def test_the_values_move_kumaco_and_its_image_and_set_its_priority(tmp_path: Path) -> None:
    values = {
        "windowNamespaces": ["team-a", "team-b"],
        "image": {
            "repository": "registry.example.com/kumaco",
            "tag": "1.2.3",
            "digest": "sha256:" + "0" * 64,
        },
        "priorityClassName": "system-cluster-critical",
        "env": {
            "KUMACO_NODE_SELECTOR": "node-role.kubernetes.io/worker",
            "KUMACO_MAX_IN_PROGRESS": 2,
        },
        "viewers": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}],
        **KURED,
    }
    docs = template(values, tmp_path, namespace="ops")
    deployment = one(docs, "Deployment")
    assert deployment["metadata"]["namespace"] == "ops"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    (container,) = pod["containers"]
    assert container["image"] == "registry.example.com/kumaco:1.2.3@sha256:" + "0" * 64
    env = [(e["name"], e.get("value")) for e in container["env"]]
    names = [n for n, _v in env]
    assert len(names) == len(set(names)), "a variable twice"
    assert env[:2] == [
        ("KUMACO_MAX_IN_PROGRESS", "2"),  # the values' own win over kured's ceiling of 1
        ("KUMACO_NODE_SELECTOR", "node-role.kubernetes.io/worker"),
    ]
    assert ("KUMACO_NAMESPACES", "team-a,team-b") in env
    assert ("KUMACO_REQUIRE_CONDITION", "kured.dev/reboot-required") in env
    windows = [d for d in docs if d["metadata"]["name"] == "kumaco-windows"]
    assert sorted((d["kind"], d["metadata"]["namespace"]) for d in windows) == [
        ("Role", "team-a"),
        ("Role", "team-b"),
        ("RoleBinding", "team-a"),
        ("RoleBinding", "team-b"),
    ]
    for d in windows:
        if d["kind"] == "RoleBinding":
            assert d["subjects"] == [
                {"kind": "ServiceAccount", "name": "kumaco", "namespace": "ops"}
            ]
    viewer = one(docs, "ClusterRoleBinding", "kumaco-viewer")
    assert viewer["subjects"] == values["viewers"]
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"} == {"team-a", "team-b"}


@pytest.mark.parametrize("case", ["single-namespace", "everything"])
def test_helm_lint_strict_passes(tmp_path: Path, case: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(CASES[case][2]))
    done = helm("lint", "--strict", str(CHART), "--namespace", SYSTEM_NS, "-f", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout, done.stdout


def test_notifications_mount_the_named_secret_read_only(tmp_path: Path) -> None:
    values = {"notifications": {"enabled": True, "existingSecret": "team-slack"}}
    (deployment,) = [d for d in template(values, tmp_path) if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert {"name": "KUMACO_NOTIFY_URL_FILE", "value": "/etc/kumaco/notify/urls"} in container[
        "env"
    ]
    assert container["volumeMounts"] == [
        {"name": "notify", "mountPath": "/etc/kumaco/notify", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {"name": "notify", "secret": {"secretName": "team-slack", "defaultMode": 0o440}}
    ]
