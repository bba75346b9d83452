"""Smoke tests proving the test control plane is a real Kubernetes API server.

Each test asserts what the server did -- merging conditions by type, refusing a
stale resourceVersion, expiring a watch, denying and then allowing a token --
behaviour a hand-made fake would have to re-implement to pass.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.support.env.controlplane import ControlPlane


def _node(name: str) -> client.V1Node:
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name, labels={"kumaco.test/smoke": "yes"}),
        status=client.V1NodeStatus(
            conditions=[
                client.V1NodeCondition(
                    type="Ready",
                    status="True",
                    reason="KubeletReady",
                    message="kubelet is posting ready status",
                    last_heartbeat_time="2026-01-01T00:00:00Z",
                    last_transition_time="2026-01-01T00:00:00Z",
                )
            ]
        ),
    )


def _conditions(api: client.ApiClient, name: str) -> dict[str, dict[str, str]]:
    node = client.CoreV1Api(api).read_node_status(name)
    return {c.type: {"status": c.status, "reason": c.reason} for c in node.status.conditions}


def test_status_conditions_merge_by_type_under_patch_and_apply(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    core.create_node(_node(name))

    # Writer 1: strategic merge patch on nodes/status, merging the list by its key `type`.
    core.patch_node_status(
        name,
        {
            "status": {
                "conditions": [
                    {
                        "type": "example.com/First",
                        "status": "True",
                        "reason": "ByPatch",
                        "lastTransitionTime": "2026-01-02T00:00:00Z",
                    }
                ]
            }
        },
        _content_type="application/strategic-merge-patch+json",
    )
    # Writer 2: server-side apply under its own field manager.
    core.patch_node_status(
        name,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "conditions": [
                    {
                        "type": "example.com/Second",
                        "status": "False",
                        "reason": "ByApply",
                        "lastTransitionTime": "2026-01-03T00:00:00Z",
                    }
                ]
            },
        },
        field_manager="kumaco-smoke",
        force=True,
        _content_type="application/apply-patch+yaml",
    )

    conds = _conditions(api, name)
    assert conds["Ready"] == {"status": "True", "reason": "KubeletReady"}
    assert conds["example.com/First"] == {"status": "True", "reason": "ByPatch"}
    assert conds["example.com/Second"] == {"status": "False", "reason": "ByApply"}
    managers = {m.manager for m in core.read_node_status(name).metadata.managed_fields}
    assert "kumaco-smoke" in managers
    # The first writer's status update was recorded under its own manager, not taken over.
    assert len(managers) >= 2


def test_lease_update_with_stale_resource_version_conflicts(api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    lease = coord.create_namespaced_lease(
        "default",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name=name), spec=client.V1LeaseSpec(holder_identity="a")
        ),
    )
    stale_rv = lease.metadata.resource_version
    lease.spec.holder_identity = "b"
    coord.replace_namespaced_lease(name, "default", lease)
    lease.spec.holder_identity = "c"
    lease.metadata.resource_version = stale_rv
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease(name, "default", lease)
    assert err.value.status == 409
    assert coord.read_namespaced_lease(name, "default").spec.holder_identity == "b"


def test_watch_from_too_old_resource_version_is_gone_and_relist_recovers(
    own_control_plane: ControlPlane, own_kubeconfig: Path
) -> None:
    control_plane = own_control_plane  # compacted and restarted: its own (tests/e2e/conftest.py)
    api = config.new_client_from_config(str(own_kubeconfig))
    core = client.CoreV1Api(api)
    ns = "default"
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    old_rv = core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name + "-old"))
    ).metadata.resource_version
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name + "-new"))
    )
    # What a client meets in production: etcd history compacted (every 5 min by default) and an
    # API server restart, after which the watch cache starts from the current revision.
    control_plane.compact_etcd()
    control_plane.restart_apiserver()

    # The 410 is the watch's first and only event, sent at once: 5 s only catches a hang.
    resp = core.list_namespaced_config_map(
        ns, watch=True, resource_version=old_rv, timeout_seconds=5, _preload_content=False
    )
    first = next(line for line in resp.stream(decode_content=True) if line)
    resp.release_conn()
    event = json.loads(first)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"

    # Relist: a fresh LIST gives a current resourceVersion; a watch from it sees new events.
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))
    )
    seen = []
    # The ConfigMap was created before the watch: its ADDED comes at once; 10 s catches a hang.
    for ev in watch.Watch().stream(
        core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10
    ):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == name:
            break
    assert seen == [("ADDED", name)]


def test_service_account_token_is_denied_until_bound(
    api: client.ApiClient, control_plane: ControlPlane
) -> None:
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    ns, sa = "default", f"smoke-{uuid.uuid4().hex[:8]}"
    core.create_node(_node(sa))  # what the ServiceAccount's LIST must show once bound
    core.create_namespaced_service_account(
        ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=sa))
    )
    token = core.create_namespaced_service_account_token(
        sa,
        ns,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
        ),
    ).status.token
    assert token.count(".") == 2  # a signed JWT

    cfg = client.Configuration()
    cfg.host = control_plane.url
    cfg.ssl_ca_cert = control_plane.pki.path("ca.crt")
    cfg.api_key = {"authorization": f"Bearer {token}"}
    as_sa = client.CoreV1Api(client.ApiClient(cfg))
    with pytest.raises(ApiException) as err:
        as_sa.list_node()
    assert err.value.status == 403
    assert f"system:serviceaccount:{ns}:{sa}" in err.value.body

    rbac.create_cluster_role(
        client.V1ClusterRole(
            metadata=client.V1ObjectMeta(name=sa),
            rules=[client.V1PolicyRule(api_groups=[""], resources=["nodes"], verbs=["list"])],
        )
    )
    rbac.create_cluster_role_binding(
        client.V1ClusterRoleBinding(
            metadata=client.V1ObjectMeta(name=sa),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=sa
            ),
            subjects=[client.RbacV1Subject(kind="ServiceAccount", name=sa, namespace=ns)],
        )
    )
    # 10 s: the authorizer's informer has one new binding to see (not timed); room for load.
    deadline = time.monotonic() + 10
    while True:  # the authorizer's cache follows the binding within moments
        try:
            nodes = as_sa.list_node(label_selector="kumaco.test/smoke=yes")
            break
        except ApiException as exc:
            if exc.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    # The same nodes the admin sees, the one made above among them: the LIST was answered.
    admin = core.list_node(label_selector="kumaco.test/smoke=yes")
    assert sa in {n.metadata.name for n in nodes.items}
    assert {n.metadata.name for n in nodes.items} == {n.metadata.name for n in admin.items}
    core.delete_node(sa)


def test_a_failed_start_leaves_nothing_running(control_plane: ControlPlane, tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "etcd").symlink_to(control_plane.assets / "etcd")
    broken = assets / "kube-apiserver"
    broken.write_text("#!/bin/sh\necho 'refusing to start' >&2\nexit 1\n")
    broken.chmod(0o755)
    cp = ControlPlane(assets)
    with pytest.raises(RuntimeError, match="refusing to start"):
        # The stub exits at once; 20 s is far above a full start (2.54-3.36 s, controlplane).
        cp.start(timeout=20)
    assert cp.etcd is None
    assert cp.apiserver is None
    assert cp.workdir is not None
    assert not cp.workdir.exists()
