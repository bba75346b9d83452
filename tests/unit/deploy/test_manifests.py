"""The deployment manifests (kustomize/) rendered, without a server: the deployment contract.

Moved from tests/e2e/test_deploy.py, where they used no API server: ``kubectl kustomize``
renders every overlay and component offline, and the rendered documents must keep the
contract of docs/deploy.md (security context, probes, downward API, exact RBAC rule sets,
no namespace in the base, the components' objects). What the API server makes of them
(server-side dry-run, Pod Security, effective RBAC) stays in tests/e2e/test_deploy.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.support.env.manifests import (
    CLUSTER_SCOPED,
    COMPONENTS,
    KURED_V2_ENV,
    LEASE_RULES,
    MAINTENANCE_NS,
    MANAGER_RULES,
    NODE_RULES,
    OVERLAYS,
    PDB_RULES,
    SYSTEM_NS,
    VIEWER_NODE_RULES,
    VIEWER_RULES,
    VIEWER_WINDOW_RULES,
    WINDOW_RULES,
    by_kind,
    container_env,
    one,
    render,
    rules_of,
)


def test_the_overlays_and_components_of_the_issue_exist() -> None:
    assert set(OVERLAYS) >= {"single-namespace", "delegated", "kured"}
    assert set(COMPONENTS) >= {
        "ha",
        "single-replica",
        "admission-policy",
        "monitoring",
        "kured-v2",
        "respect-pdbs",
        "notifications",
    }


def test_rendered_manifests_keep_the_deployment_contract(tmp_path: Path) -> None:
    base = render("base", tmp_path)
    assert all("namespace" not in d["metadata"] for d in base), "the base bakes in no namespace"
    assert sorted((d["kind"], d["metadata"]["name"]) for d in base) == sorted(
        [
            ("ServiceAccount", "kumaco"),
            ("ClusterRole", "kumaco"),
            ("ClusterRoleBinding", "kumaco"),
            ("Role", "kumaco-leader-election"),
            ("RoleBinding", "kumaco-leader-election"),
            ("Role", "kumaco-windows"),
            ("RoleBinding", "kumaco-windows"),
            ("ClusterRole", "kumaco-viewer"),
            ("ClusterRoleBinding", "kumaco-viewer"),
            ("Role", "kumaco-viewer"),
            ("RoleBinding", "kumaco-viewer"),
            ("Role", "kumaco-viewer-windows"),
            ("RoleBinding", "kumaco-viewer-windows"),
            ("Deployment", "kumaco"),
            ("PodDisruptionBudget", "kumaco"),
            ("NetworkPolicy", "kumaco"),
        ]
    )
    assert one(base, "ServiceAccount")["automountServiceAccountToken"] is False

    deployment = one(base, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == "kumaco"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert isinstance(sc["runAsUser"], int) and sc["runAsUser"] >= 10000
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert "args" not in container and "command" not in container, "ENTRYPOINT is kumaco run"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}  # kumaco's default bind addresses
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"memory": "256Mi"},
    }
    assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+", container["image"]), container["image"]

    # RBAC: exactly the documented rules, nothing else anywhere.
    assert rules_of(one(base, "ClusterRole", "kumaco")) == NODE_RULES
    assert rules_of(one(base, "Role", "kumaco-leader-election")) == LEASE_RULES
    assert rules_of(one(base, "Role", "kumaco-windows")) == WINDOW_RULES
    # The viewers of kubectl kumaco: read-only, bound to a placeholder Group.
    assert rules_of(one(base, "ClusterRole", "kumaco-viewer")) == VIEWER_NODE_RULES
    assert rules_of(one(base, "Role", "kumaco-viewer")) == VIEWER_RULES
    assert rules_of(one(base, "Role", "kumaco-viewer-windows")) == VIEWER_WINDOW_RULES
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for name in ("kumaco-viewer", "kumaco-viewer-windows")[: 1 if kind[0] == "C" else 2]:
            assert one(base, kind, name)["subjects"] == [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kumaco-viewers"}
            ]
    for overlay in OVERLAYS:
        docs = render(f"overlays/{overlay}", tmp_path, COMPONENTS)
        for role in by_kind(docs, "Role") + by_kind(docs, "ClusterRole"):
            for group, resource, verb, _name in rules_of(role):
                assert "*" not in (group, resource, verb), (overlay, role["metadata"]["name"])
                assert resource != "secrets", (overlay, role["metadata"]["name"])
        assert sorted(r["metadata"]["name"] for r in by_kind(docs, "ClusterRole")) == [
            "kumaco",
            "kumaco-respect-pdbs",  # components/respect-pdbs, checked below
            "kumaco-viewer",
        ]

    # single-namespace: everything in kumaco-system; kumaco watches its own namespace.
    single = render("overlays/single-namespace", tmp_path)
    assert {d["metadata"].get("namespace") for d in single if d["kind"] not in CLUSTER_SCOPED} == {
        SYSTEM_NS
    }
    assert one(single, "ClusterRoleBinding", "kumaco")["subjects"] == [
        {"kind": "ServiceAccount", "name": "kumaco", "namespace": SYSTEM_NS}
    ]
    assert "KUMACO_NAMESPACES" not in container_env(single)

    # delegated: kumaco in kumaco-system watches maintenance; rights on ConfigMaps only there.
    delegated = render("overlays/delegated", tmp_path)
    assert container_env(delegated)["KUMACO_NAMESPACES"] == MAINTENANCE_NS
    assert one(delegated, "Deployment")["metadata"]["namespace"] == SYSTEM_NS
    windows_role = one(delegated, "Role", "kumaco-windows")
    assert windows_role["metadata"]["namespace"] == MAINTENANCE_NS
    assert one(delegated, "RoleBinding", "kumaco-windows")["subjects"] == [
        {"kind": "ServiceAccount", "name": "kumaco", "namespace": SYSTEM_NS}
    ]
    # The viewers read windows where they are, and nothing of kumaco-system's ConfigMaps.
    assert one(delegated, "Role", "kumaco-viewer-windows")["metadata"]["namespace"] == (
        MAINTENANCE_NS
    )
    assert one(delegated, "Role", "kumaco-viewer")["metadata"]["namespace"] == SYSTEM_NS
    manager = one(delegated, "Role", "maintenance-manager")
    assert manager["metadata"]["namespace"] == MAINTENANCE_NS
    assert rules_of(manager) == MANAGER_RULES
    (subject,) = one(delegated, "RoleBinding", "maintenance-manager")["subjects"]
    assert subject["kind"] in ("Group", "User")

    # kured: the names kured v2's agents read and write (components/kured-v2), as
    # environment variables, with every other overlay too.
    kured_env = container_env(render("overlays/kured", tmp_path))
    assert {k: kured_env.get(k) for k in KURED_V2_ENV} == KURED_V2_ENV
    for overlay in ("single-namespace", "delegated", "delegated/controller"):
        env = container_env(render(f"overlays/{overlay}", tmp_path, ["kured-v2"]))
        assert {k: env[k] for k in KURED_V2_ENV} == KURED_V2_ENV, overlay

    # Safe by default: every overlay spreads its two replicas over
    # nodes and has a PodDisruptionBudget, so that a drain (kured's) never evicts both.
    for overlay in OVERLAYS:
        docs = render(f"overlays/{overlay}", tmp_path)
        assert_highly_available(docs, 2)
    # components: ha raises the replicas, single-replica lowers them for one-node clusters.
    assert_highly_available(render("overlays/single-namespace", tmp_path, ["ha"]), 3)
    lone = render("overlays/delegated", tmp_path, ["single-replica"])
    assert one(lone, "Deployment")["spec"]["replicas"] == 1
    assert one(lone, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1  # never blocks
    monitoring = render("overlays/single-namespace", tmp_path, ["monitoring"])
    deployment = one(monitoring, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    (kumaco_container,) = deployment["spec"]["template"]["spec"]["containers"]
    port_names = {p["name"] for p in kumaco_container["ports"]}
    service = one(monitoring, "Service", "kumaco-metrics")
    assert service["metadata"]["namespace"] == SYSTEM_NS
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["metrics"]
    pod_monitor = one(monitoring, "PodMonitor", "kumaco")
    assert pod_monitor["metadata"]["namespace"] == SYSTEM_NS
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in port_names and endpoint["path"] == "/metrics"
    rules = one(monitoring, "PrometheusRule", "kumaco")["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules if "alert" in r} == {
        "KumacoNoLeader",
        "KumacoInvalidWindows",
        "KumacoConditionWritesFailing",
        "KumacoHolderInProgressTooLong",
        "KumacoControllerStalled",
        "KumacoNodeWaitingTooLong",
        "KumacoCrashLooping",
        "KumacoRestartingOnWindowChanges",
        "KumacoNotificationsFailing",
    }
    policy = render("overlays/single-namespace", tmp_path, ["admission-policy"])
    binding = one(policy, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert (
        binding["spec"]["policyName"]
        == one(policy, "ValidatingAdmissionPolicy")["metadata"]["name"]
    )


def test_the_respect_pdbs_component_turns_it_on_with_read_only_rights(tmp_path: Path) -> None:
    for overlay, ns in (("kured", SYSTEM_NS), ("delegated/controller", SYSTEM_NS)):
        docs = render(f"overlays/{overlay}", tmp_path, ["respect-pdbs"])
        assert container_env(docs)["KUMACO_RESPECT_PDBS"] == "true"
        role = one(docs, "ClusterRole", "kumaco-respect-pdbs")
        assert rules_of(role) == PDB_RULES, "list and watch of pods and PDBs, nothing more"
        binding = one(docs, "ClusterRoleBinding", "kumaco-respect-pdbs")
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "kumaco", "namespace": ns}
        ]
    assert "KUMACO_RESPECT_PDBS" not in container_env(render("overlays/kured", tmp_path))


def assert_highly_available(docs: list[dict[str, Any]], replicas: int) -> None:
    """``replicas`` replicas, spread over nodes, and a PDB that lets a drain evict one at a time."""
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == replicas
    pod = deployment["spec"]["template"]["spec"]
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["metadata"].get("namespace") == deployment["metadata"].get("namespace")
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    assert set(spread) == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    hostname = spread["kubernetes.io/hostname"]
    assert hostname["whenUnsatisfiable"] == "DoNotSchedule"
    # A tainted control plane or a cordoned node never counts as an empty domain.
    assert hostname["nodeTaintsPolicy"] == "Honor"
    assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway"
    for c in spread.values():
        assert c["labelSelector"]["matchLabels"].items() <= (
            deployment["spec"]["template"]["metadata"]["labels"].items()
        )
