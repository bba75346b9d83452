"""The deployment manifests (kustomize/) against the real kube-apiserver.

(What needs no server, the rendered manifests' contract of docs/deploy.md, is in
tests/unit/deploy/test_manifests.py, rendered with the helpers of tests/support/env/manifests.py.)

Proven here, on the API server of ``hack/controlplane.py``:

* every overlay, alone and with every component, renders with ``kubectl kustomize``
  and passes a server-side dry-run apply, with no Pod Security warning under the
  ``restricted`` labels the overlays put on their namespaces (the Prometheus
  Operator's kinds of components/monitoring, whose CRDs the test API server does not
  serve, are left out of the dry-run by name; their contract is checked offline in
  tests/unit/deploy/test_manifests.py and their alerts by promtool in
  tests/unit/deploy/test_monitoring_rules.py);
* the base RBAC is *sufficient*: kumaco, run as the base's ServiceAccount with a
  TokenRequest token, does its whole job -- conditions, Events, Lease -- without a
  single 403; and *minimal*: the ServiceAccount's effective rules, as the API server
  computes them, are exactly the documented ones, and it cannot read Secrets, patch or
  delete Nodes, read ConfigMaps elsewhere or touch another Lease;
* overlays/delegated: the maintenance manager can declare windows in its namespace and
  nothing else, and kumaco, configured only by the rendered Deployment's environment
  and RBAC, acts on them;
* overlays/kured (components/kured-v2, whose names every overlay takes): with the rendered
  environment, kured.dev/maintenance-in-progress goes to exactly one node whose
  kured.dev/reboot-required is True and kured.dev/reboot-inhibited is not;
* components/admission-policy: malformed windows are rejected with a message naming the
  key, valid windows and other ConfigMaps pass, and it never rejects a window that
  kumaco accepts (property test against :func:`kumaco.core.windows.format.parse_window`).

The API server is shared with other modules: namespaces, node labels and cluster-scoped
names carry a random run id, and every test removes what it created (namespaces stay
Terminating, as the test control plane runs no namespace controller).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes import client
from kubernetes.client.rest import ApiException

from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.env import admin
from tests.support.env.admin import (
    INVALID,
    OPEN_NOW,
    RUN_LABEL,
    UM,
    WINDOW_LABEL,
    Cluster,
    kumaco,
    remap,
    wait_for,
    window,
)
from tests.support.env.controlplane import ControlPlane
from tests.support.env.manifests import (
    COMPONENTS,
    KUSTOMIZE,
    LEASE_RULES,
    MAINTENANCE_NS,
    MANAGER_RULES,
    NODE_RULES,
    OVERLAYS,
    SYSTEM_NS,
    WINDOW_RULES,
    by_kind,
    container_env,
    kubectl,
    one,
    render,
    rules_of,
)
from tests.support.judges.rbac import (
    assert_no_forbidden,
)

REPO = Path(__file__).resolve().parents[2]
cluster = admin.cluster  # the fixture: admin access, everything removed at the end


# ------------------------------------------------------------------------------ helpers


# ------------------------------------------------------------------------ cluster access


def sa_client(kubeconfig: Path) -> client.ApiClient:
    from kubernetes import config

    return config.new_client_from_config(str(kubeconfig))


def can(
    who: client.ApiClient,
    verb: str,
    resource: str,
    *,
    namespace: str = "",
    group: str = "",
    name: str = "",
    subresource: str = "",
) -> bool:
    """SelfSubjectAccessReview as ``who``."""
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb,
                group=group,
                resource=resource,
                subresource=subresource or None,
                name=name or None,
                namespace=namespace or None,
            )
        )
    )
    return bool(
        client.AuthorizationV1Api(who).create_self_subject_access_review(review).status.allowed
    )


def effective_rules(who: client.ApiClient, namespace: str) -> set[tuple[str, str, str, str]]:
    """The resource rules the API server's authorizer grants ``who`` in ``namespace``."""
    review = client.V1SelfSubjectRulesReview(
        spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace)
    )
    status = client.AuthorizationV1Api(who).create_self_subject_rules_review(review).status
    rules = [
        {
            "apiGroups": r.api_groups,
            "resources": r.resources,
            "verbs": r.verbs,
            "resourceNames": r.resource_names,
        }
        for r in status.resource_rules
    ]
    return rules_of({"rules": rules})


def status_of(exc: ApiException) -> tuple[int, str]:
    try:
        message = json.loads(exc.body or "{}").get("message", "")
    except ValueError:
        message = str(exc.body)
    return exc.status, message


# ------------------------------------------------------------------------- kumaco process


# =============================================================================== rendering


OPERATOR_KINDS = ["monitoring.coreos.com/v1 PodMonitor", "monitoring.coreos.com/v1 PrometheusRule"]
OPERATOR_REASON = (
    "the Prometheus Operator's CRDs are not installed on the test API server; the "
    "PodMonitor's and the Service's selectors and ports are checked against the "
    "Deployment, and the PrometheusRule by promtool check/test rules"
)


def served(
    cluster: Cluster, docs: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The documents whose kind the API server serves, and "apiVersion Kind" of the others."""
    kinds: dict[str, set[str]] = {}
    keep, missing = [], []
    for d in docs:
        version = d["apiVersion"]
        if version not in kinds:
            path = f"/api/{version}" if "/" not in version else f"/apis/{version}"
            status, body = cluster.cp.get(path)
            found = json.loads(body).get("resources", []) if status == 200 else []
            kinds[version] = {r["kind"] for r in found}
        if d["kind"] in kinds[version]:
            keep.append(d)
        else:
            missing.append(f"{version} {d['kind']}")
    return keep, missing


@pytest.mark.parametrize("with_components", [False, True], ids=["alone", "with-components"])
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_and_passes_a_server_side_dry_run(
    cluster: Cluster, tmp_path: Path, overlay: str, with_components: bool
) -> None:
    docs = render(f"overlays/{overlay}", tmp_path, COMPONENTS if with_components else ())
    run = uuid.uuid4().hex[:6]
    ns_map = {SYSTEM_NS: f"kdry-{run}-sys", MAINTENANCE_NS: f"kdry-{run}-mnt"}
    docs = remap(docs, ns_map, f"-{run}")
    # The namespaces for real (a dry-run cannot create what the rest is applied into), with
    # the overlay's own labels: Pod Security admission then judges the Deployment.
    namespaces = by_kind(docs, "Namespace")
    assert namespaces, "every overlay ships the namespaces it uses"
    cluster.apply_for_real(namespaces)
    docs, unserved = served(cluster, docs)
    if with_components:
        # Only what needs the Prometheus Operator's CRDs, which this API server lacks.
        assert sorted(unserved) == sorted(OPERATOR_KINDS), unserved
        print(f"not dry-run ({', '.join(unserved)}): {OPERATOR_REASON}")
    else:
        assert unserved == []
    result = cluster.apply(docs, "--dry-run=server")
    applied = re.findall(r"^(\S+) serverside-applied \(server dry run\)$", result.stdout, re.M)
    assert len(applied) == len(docs), result.stdout
    # kubectl prints admission warnings on stderr, e.g. 'would violate PodSecurity "restricted"'.
    assert "PodSecurity" not in result.stderr, result.stderr
    assert "Warning:" not in result.stderr.replace("WARNING: version difference", ""), result.stderr


# ============================================================================ base RBAC


@pytest.fixture
def base_install(cluster: Cluster, tmp_path: Path) -> dict[str, Any]:
    """The base's RBAC applied for real into a fresh namespace (kustomize sets it)."""
    run = uuid.uuid4().hex[:6]
    ns = cluster.namespace(f"kbase-{run}")
    wrap = tmp_path / "base-in-ns"
    wrap.mkdir()
    (wrap / "kustomization.yaml").write_text(
        yaml.safe_dump({"namespace": ns, "resources": [os.path.relpath(KUSTOMIZE / "base", wrap)]})
    )
    docs = [d for d in yaml.safe_load_all(kubectl(None, "kustomize", str(wrap)).stdout) if d]
    rbac = remap(
        [
            d
            for d in docs
            if d["kind"] not in ("Deployment", "NetworkPolicy", "PodDisruptionBudget")
        ],
        {},
        f"-{run}",
    )
    assert {d["kind"] for d in rbac} == {
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }
    cluster.apply_for_real(rbac)
    return {"ns": ns, "run": run, "kubeconfig": cluster.token_kubeconfig(ns, "kumaco")}


def test_base_rbac_is_sufficient_for_kumaco_to_do_its_whole_job(
    cluster: Cluster, base_install: dict[str, Any], tmp_path: Path
) -> None:
    ns, run = base_install["ns"], base_install["run"]
    in_window = [cluster.node(f"kbase-{run}-{i}", {RUN_LABEL: run, "pool": "a"}) for i in range(2)]
    outside = cluster.node(f"kbase-{run}-2", {RUN_LABEL: run, "pool": "b"})
    cluster.core.create_namespaced_config_map(
        ns, window("open", {**OPEN_NOW, "nodeSelector": "pool=a"})
    )
    cluster.core.create_namespaced_config_map(ns, window("broken", INVALID))

    args = [
        "--namespaces",
        ns,
        "--leader-election-namespace",
        ns,
        "--node-selector",
        f"{RUN_LABEL}={run}",
    ]
    since = time.time()
    with kumaco(base_install["kubeconfig"], ns, args, {}, tmp_path / "kumaco.log") as k:
        for node in in_window:
            wait_for(  # start-up and the first pass: 1-4 s measured (test_catch_up.py)
                lambda n=node: cluster.conditions(n).get(UM) == "True", 20, f"{UM}=True on {node}"
            )
        wait_for(
            lambda: (
                cluster.event_reasons(ns).get("open", set()) >= {"WindowLoaded", "WindowStarted"}
                and "WindowInvalid" in cluster.event_reasons(ns).get("broken", set())
            ),
            20,  # posted by the same first pass: room for a loaded machine
            "WindowLoaded, WindowStarted and WindowInvalid Events",
        )
        k.assert_alive()
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease("kumaco", ns)
        holder = lease.spec.holder_identity
        assert holder and holder.startswith("kumaco-test-"), holder
        assert f"identity='{holder}'" in k.log()
        assert cluster.conditions(outside).get(UM) != "True"
        code = k.stop()
    log = k.log()
    assert code == 0, log
    assert_no_forbidden(cluster, ns, since, log)
    # On SIGTERM the leader released its Lease (client-go's ReleaseOnCancel).
    released = client.CoordinationV1Api(cluster.api).read_namespaced_lease("kumaco", ns)
    assert not released.spec.holder_identity

    # A restart (as after exit 3) takes the released Lease over (update) and loads the
    # same windows again: the repeated WindowLoaded/WindowInvalid Events are aggregated
    # into the existing ones with a patch of their series.
    since = time.time()
    with kumaco(base_install["kubeconfig"], ns, args, {}, tmp_path / "again.log") as k2:
        wait_for(
            lambda: (
                {
                    e.regarding.name
                    for e in client.EventsV1Api(cluster.api).list_namespaced_event(ns).items
                    if e.reason in ("WindowLoaded", "WindowInvalid")
                    and e.series
                    and e.series.count >= 2
                }
                == {"open", "broken"}
            ),
            20,  # a restart's start-up and first pass: 1-4 s measured (test_catch_up.py)
            "the repeated Events to be aggregated (series.count 2)",
        )
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease("kumaco", ns)
        assert lease.spec.holder_identity and lease.spec.holder_identity != holder
        code = k2.stop()
    assert code == 0, k2.log()
    # Nothing changed for the restart to write; it took the Lease over and patched Events.
    assert_no_forbidden(
        cluster,
        ns,
        since,
        k2.log(),
        [("watch", "nodes"), ("update", "leases"), ("patch", "events")],
    )


def test_base_rbac_grants_nothing_more(cluster: Cluster, base_install: dict[str, Any]) -> None:
    ns = base_install["ns"]
    sa = sa_client(base_install["kubeconfig"])
    other = cluster.namespace(f"kother-{base_install['run']}")

    # What every authenticated ServiceAccount may do anyway (self reviews, discovery).
    nobody_ns = cluster.namespace(f"knobody-{base_install['run']}")
    cluster.core.create_namespaced_service_account(
        nobody_ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    )
    baseline = effective_rules(sa_client(cluster.token_kubeconfig(nobody_ns, "nobody")), nobody_ns)

    # Exactly the documented rules, as the API server's authorizer computes them.
    assert effective_rules(sa, ns) - baseline == NODE_RULES | LEASE_RULES | WINDOW_RULES
    assert effective_rules(sa, other) - baseline == NODE_RULES

    allowed = [
        ("get", "nodes", {}),
        ("list", "nodes", {}),
        ("watch", "nodes", {}),
        ("patch", "nodes", {"subresource": "status"}),
        ("list", "configmaps", {"namespace": ns}),
        ("watch", "configmaps", {"namespace": ns}),
        ("create", "events", {"namespace": ns, "group": "events.k8s.io"}),
        ("patch", "events", {"namespace": ns, "group": "events.k8s.io"}),
        ("create", "leases", {"namespace": ns, "group": "coordination.k8s.io"}),
        ("update", "leases", {"namespace": ns, "group": "coordination.k8s.io", "name": "kumaco"}),
    ]
    denied = [
        ("get", "secrets", {"namespace": ns}),
        ("list", "secrets", {"namespace": ns}),
        ("list", "secrets", {}),
        ("patch", "nodes", {}),
        ("update", "nodes", {}),
        ("delete", "nodes", {}),
        ("update", "nodes", {"subresource": "status"}),
        ("get", "configmaps", {"namespace": other}),
        ("list", "configmaps", {"namespace": other}),
        ("watch", "configmaps", {"namespace": other}),
        ("list", "configmaps", {}),
        ("create", "configmaps", {"namespace": ns}),
        ("update", "configmaps", {"namespace": ns}),
        ("create", "events", {"namespace": ns}),  # core-group events: kumaco does not use them
        ("create", "events", {"namespace": other, "group": "events.k8s.io"}),
        ("list", "leases", {"namespace": ns, "group": "coordination.k8s.io"}),
        ("update", "leases", {"namespace": ns, "group": "coordination.k8s.io", "name": "other"}),
        ("get", "leases", {"namespace": ns, "group": "coordination.k8s.io", "name": "other"}),
        ("delete", "leases", {"namespace": ns, "group": "coordination.k8s.io", "name": "kumaco"}),
        ("create", "leases", {"namespace": other, "group": "coordination.k8s.io"}),
        ("create", "pods", {"namespace": ns}),
        ("create", "serviceaccounts", {"namespace": ns, "name": "kumaco", "subresource": "token"}),
    ]
    for verb, resource, kw in allowed:
        assert can(sa, verb, resource, **kw), f"kumaco may {verb} {resource} {kw}"
    for verb, resource, kw in denied:
        assert not can(sa, verb, resource, **kw), f"kumaco must not {verb} {resource} {kw}"

    # And the API server really refuses (403), not only the review.
    core = client.CoreV1Api(sa)
    node = cluster.node(f"kbase-{base_install['run']}-x", {RUN_LABEL: base_install["run"]})
    cluster.core.create_namespaced_config_map(other, {"metadata": {"name": "elsewhere"}})
    leases = client.CoordinationV1Api(cluster.api)
    other_lease = leases.create_namespaced_lease(
        ns, client.V1Lease(metadata=client.V1ObjectMeta(name="other"), spec=client.V1LeaseSpec())
    )
    attempts: dict[str, Callable[[], Any]] = {
        "list secrets": lambda: core.list_namespaced_secret(ns),
        "label a node": lambda: core.patch_node(node, {"metadata": {"labels": {"x": "y"}}}),
        "delete a node": lambda: core.delete_node(node),
        "read a ConfigMap elsewhere": lambda: core.read_namespaced_config_map("elsewhere", other),
        "update another Lease": lambda: client.CoordinationV1Api(sa).replace_namespaced_lease(
            "other", ns, other_lease
        ),
    }
    for what, attempt in attempts.items():
        with pytest.raises(ApiException) as info:
            attempt()
        assert info.value.status == 403, (what, status_of(info.value))


# ============================================================================ delegated


def test_delegated_overlay_manager_declares_windows_only_and_kumaco_acts_on_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:6]
    sys_ns, mnt_ns = f"kdel-{run}-sys", f"kdel-{run}-mnt"
    docs = remap(
        render("overlays/delegated", tmp_path),
        {SYSTEM_NS: sys_ns, MAINTENANCE_NS: mnt_ns},
        f"-{run}",
    )
    cluster.apply_for_real(by_kind(docs, "Namespace"))
    cluster.apply_for_real([d for d in docs if d["kind"] not in ("Namespace", "Deployment")])
    elsewhere = cluster.namespace(f"kdel-{run}-other")

    # The maintenance manager: an identity in the group the shipped RoleBinding names.
    (group,) = [
        s["name"]
        for s in one(docs, "RoleBinding", "maintenance-manager")["subjects"]
        if s["kind"] == "Group"
    ]
    manager = cluster.impersonating(f"alice-{run}", group)
    nobody = cluster.impersonating(f"bob-{run}", f"nobody-{run}")
    baseline = effective_rules(nobody, mnt_ns)
    assert effective_rules(manager, mnt_ns) - baseline == MANAGER_RULES
    assert effective_rules(manager, sys_ns) - baseline == set()
    assert effective_rules(manager, elsewhere) - baseline == set()

    as_manager = client.CoreV1Api(manager)
    nodes = [cluster.node(f"kdel-{run}-{i}", {RUN_LABEL: run}) for i in range(2)]
    as_manager.create_namespaced_config_map(
        mnt_ns, window("tonight", {**OPEN_NOW, "nodeSelector": ""})
    )
    refused: dict[str, Callable[[], Any]] = {
        "create a window in kumaco's namespace": lambda: as_manager.create_namespaced_config_map(
            sys_ns, window("sneaky", {**OPEN_NOW, "nodeSelector": ""})
        ),
        "create a window elsewhere": lambda: as_manager.create_namespaced_config_map(
            elsewhere, window("sneaky", {**OPEN_NOW, "nodeSelector": ""})
        ),
        "read secrets": lambda: as_manager.list_namespaced_secret(mnt_ns),
        "patch a node": lambda: as_manager.patch_node(
            nodes[0], {"metadata": {"labels": {"x": "y"}}}
        ),
        "patch node status": lambda: as_manager.patch_node_status(
            nodes[0], {"status": {"conditions": [{"type": UM, "status": "True"}]}}
        ),
        "create pods": lambda: as_manager.create_namespaced_pod(
            mnt_ns,
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        ),
    }
    for what, attempt in refused.items():
        with pytest.raises(ApiException) as info:
            attempt()
        assert info.value.status == 403, (what, status_of(info.value))

    # kumaco configured only by the rendered Deployment: KUMACO_* env, POD_NAMESPACE, RBAC.
    env = container_env(docs)
    assert env["KUMACO_NAMESPACES"] == mnt_ns
    kc = cluster.token_kubeconfig(sys_ns, "kumaco")
    since = time.time()
    with kumaco(
        kc, sys_ns, ["--node-selector", f"{RUN_LABEL}={run}"], env, tmp_path / "k.log"
    ) as k:
        # Start-up and the first pass (1-4 s measured, test_catch_up.py), then its Events.
        for node in nodes:
            wait_for(lambda n=node: cluster.conditions(n).get(UM) == "True", 20, f"{UM} on {node}")
        wait_for(
            lambda: (
                cluster.event_reasons(mnt_ns).get("tonight", set())
                >= {"WindowLoaded", "WindowStarted"}
            ),
            20,
            "Events on the manager's window",
        )
        k.assert_alive()
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease("kumaco", sys_ns)
        assert lease.spec.holder_identity
        code = k.stop()
    assert code == 0, k.log()
    assert_no_forbidden(cluster, sys_ns, since, k.log())


# ================================================================================ kured


def test_kured_overlay_grants_maintenance_in_progress_to_one_eligible_node(
    cluster: Cluster, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:6]
    ns = f"kkured-{run}"
    docs = remap(render("overlays/kured", tmp_path), {SYSTEM_NS: ns}, f"-{run}")
    cluster.apply_for_real(by_kind(docs, "Namespace"))
    cluster.apply_for_real([d for d in docs if d["kind"] not in ("Namespace", "Deployment")])
    eligible = [cluster.node(f"kkured-{run}-{i}", {RUN_LABEL: run}) for i in range(2)]
    inhibited = cluster.node(f"kkured-{run}-inhibited", {RUN_LABEL: run})
    healthy = cluster.node(f"kkured-{run}-healthy", {RUN_LABEL: run})
    for node in [*eligible, inhibited]:
        cluster.set_condition(node, "kured.dev/reboot-required", "True")
    cluster.set_condition(inhibited, "kured.dev/reboot-inhibited", "True")
    um, mip = "kured.dev/under-maintenance-window", "kured.dev/maintenance-in-progress"
    cluster.core.create_namespaced_config_map(ns, window("all", {**OPEN_NOW, "nodeSelector": ""}))
    every = [*eligible, inhibited, healthy]

    env = container_env(docs)
    kc = cluster.token_kubeconfig(ns, "kumaco")
    since = time.time()
    with kumaco(kc, ns, ["--node-selector", f"{RUN_LABEL}={run}"], env, tmp_path / "k.log") as k:

        def in_progress() -> list[str]:
            return [n for n in every if cluster.conditions(n).get(mip) == "True"]

        # Start-up and the first pass (1-4 s measured, test_catch_up.py); the grant is in it.
        for node in every:
            wait_for(lambda n=node: cluster.conditions(n).get(um) == "True", 20, f"{um} on {node}")
        wait_for(in_progress, 20, f"{mip} on one node")
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # and it stays at one
            granted = in_progress()
            assert len(granted) == 1, granted
            assert granted[0] in eligible, granted
            time.sleep(0.2)
        k.assert_alive()
        code = k.stop()
    assert code == 0, k.log()
    assert_no_forbidden(cluster, ns, since, k.log())


# ====================================================================== admission policy


@dataclass
class Policy:
    ns: str
    core: client.CoreV1Api

    def verdict(self, data: Mapping[str, str], labelled: bool = True) -> tuple[bool, str]:
        """(accepted, message) of a dry-run create of a ConfigMap with ``data``."""
        body: dict[str, Any] = {"metadata": {"generateName": "w-"}, "data": dict(data)}
        if labelled:
            body["metadata"]["labels"] = {WINDOW_LABEL: ""}
        try:
            self.core.create_namespaced_config_map(self.ns, body, dry_run="All")
        except ApiException as exc:
            return False, status_of(exc)[1]
        return True, ""


@pytest.fixture(scope="module")
def policy(
    control_plane: ControlPlane,
    api: client.ApiClient,
    kubeconfig_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Policy]:
    """components/admission-policy applied for real, its binding scoped to one test namespace.

    The component is applied as shipped except for unique names and, on a copy of the
    binding, a namespaceSelector: other modules' windows on this shared API server (some
    deliberately invalid) must not be affected.
    """
    tmp = tmp_path_factory.mktemp("policy")
    c = Cluster(control_plane, api, kubeconfig_path, tmp)
    run = uuid.uuid4().hex[:6]
    ns = c.namespace(f"kvap-{run}")
    docs = remap(render("components/admission-policy", tmp), {}, f"-{run}")
    binding = one(docs, "ValidatingAdmissionPolicyBinding")
    assert "matchResources" not in binding["spec"], "the shipped binding is cluster-wide"
    binding["spec"]["matchResources"] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    }
    try:
        c.apply_for_real(docs)
        p = Policy(ns, c.core)
        # Policies take effect asynchronously: wait until a known-bad window is rejected.
        # 20 s: the API server's policy informer (not timed), with room for a loaded machine.
        wait_for(lambda: not p.verdict({})[0], 20, "the admission policy to take effect", 0.2)
        yield p
    finally:
        c.cleanup()


WELL_FORMED = {"startTime": "0 3 * * 6", "duration": "1h", "nodeSelector": ""}


def spoiled(**changes: str | None) -> dict[str, str]:
    """A well-formed window's data with keys changed (None: removed)."""
    data = {**WELL_FORMED, **changes}
    return {k: v for k, v in data.items() if v is not None}


REJECTED = {  # id: (data, what the message must say)
    "no-startTime": (spoiled(startTime=None), "data.startTime is missing"),
    "no-duration": (spoiled(duration=None), "data.duration is missing"),
    "no-nodeSelector": (spoiled(nodeSelector=None), "data.nodeSelector is missing"),
    "empty": ({}, "data.startTime, data.duration, data.nodeSelector are missing"),
    "days": (spoiled(duration="1d"), "data.duration is not a Go duration"),
    "space": (spoiled(duration="1h 30m"), "data.duration is not a Go duration"),
    "no-unit": (spoiled(duration="90"), "data.duration is not a Go duration"),
    "zero": (spoiled(duration="0s"), "data.duration must be greater than zero"),
    "negative": (spoiled(duration="-1h"), "data.duration must be greater than zero"),
    "every": (spoiled(startTime="@every 1h"), "data.startTime: @every is not supported"),
    "tz-every": (spoiled(startTime="TZ=UTC @every 1h"), "data.startTime: @every is not supported"),
    "4-fields": (spoiled(startTime="0 3 * *"), "data.startTime is not a cron schedule"),
    "6-fields": (spoiled(startTime="0 0 3 * * 6"), "data.startTime is not a cron schedule"),
    "descriptor": (spoiled(startTime="@fortnightly"), "data.startTime is not a cron schedule"),
    "junk": (spoiled(startTime="0 3 * * 6;"), "data.startTime is not a cron schedule"),
    "too-long": (spoiled(duration="1" * 5000), "data.duration is longer than 4096 characters"),
    "freeze-yes": ({**WELL_FORMED, "freeze": "yes"}, 'data.freeze must be "true" or "false"'),
    "days-word": (
        {**WELL_FORMED, "daysOfMonth": "first"},
        "data.daysOfMonth is not a day-of-month field",
    ),
    "days-schedule": (
        {**WELL_FORMED, "daysOfMonth": "1-7 * SAT"},
        "data.daysOfMonth is not a day-of-month field",
    ),
    "budget-word": ({**WELL_FORMED, "maxInProgress": "two"}, "data.maxInProgress is not a count"),
    "budget-over": ({**WELL_FORMED, "maxInProgress": "101%"}, "data.maxInProgress is not a count"),
    "once-no-time": (
        spoiled(startTime="2027-01-15"),
        "data.startTime is not an RFC 3339 date-time",
    ),
    "once-junk": (
        spoiled(startTime="2027-01-15 at 2"),
        "data.startTime is not an RFC 3339 date-time",
    ),
    "once-days": (
        spoiled(startTime="2027-01-15T02:00:00Z", daysOfMonth="1-7", notAfter="2027-02-01"),
        "data.daysOfMonth, data.notAfter: applies to a cron startTime only",
    ),
    "bound-word": (
        spoiled(notBefore="next monday"),
        "data.notBefore: not a date (2027-02-01) or an RFC 3339 date-time",
    ),
    "bound-slash": (
        spoiled(notAfter="01/02/2027"),
        "data.notAfter: not a date (2027-02-01) or an RFC 3339 date-time",
    ),
    "freeze-budget": (
        {**WELL_FORMED, "freeze": "true", "maxInProgress": "1"},
        "data.maxInProgress: a freeze admits nobody",
    ),
}


@pytest.mark.parametrize(("data", "message"), REJECTED.values(), ids=REJECTED.keys())
def test_admission_policy_rejects_malformed_windows_naming_the_key(
    policy: Policy, data: dict[str, str], message: str
) -> None:
    accepted, reason = policy.verdict(data)
    assert not accepted
    assert message in reason, reason
    assert not isinstance(parse_window(policy.ns, "w", data), Window), "kumaco rejects it too"


ACCEPTED = [
    {"startTime": "0 3 * * 6", "duration": "4h", "nodeSelector": ""},
    {"startTime": "@daily", "duration": "1h30m", "nodeSelector": "pool=a"},
    {"startTime": "CRON_TZ=Europe/Berlin 0 3 * * SAT", "duration": "90m", "nodeSelector": ""},
    {"startTime": "TZ=UTC  @weekly ", "duration": ".5h", "nodeSelector": ""},
    {"startTime": "\t0\u00a03 * * mon-fri\n", "duration": "+1h0m0.5s", "nodeSelector": ""},
    {"startTime": "*/15 * * * *", "duration": "15m", "nodeSelector": "", "timeZone": "Asia/Tokyo"},
    {"startTime": "*-ignored 3 * * *", "duration": "1µs", "nodeSelector": ""},  # robfig's quirk
    {**OPEN_NOW, "nodeSelector": ""},
    {**WELL_FORMED, "maxInProgress": "0"},
    {**WELL_FORMED, "maxInProgress": "25%"},
    {**WELL_FORMED, "maxInProgress": "100%"},
    {**WELL_FORMED, "freeze": "true"},
    {**WELL_FORMED, "freeze": "false", "maxInProgress": "3"},
    # the first Saturday of the month
    {"startTime": "0 1 * * SAT", "daysOfMonth": "1-7", "duration": "3h", "nodeSelector": ""},
    {**WELL_FORMED, "daysOfMonth": " 1,15 "},
    {**WELL_FORMED, "daysOfMonth": "*/2"},
    # nodeSelector as a metav1.LabelSelector (kured's scheduler's format), YAML and JSON
    {
        **WELL_FORMED,
        "nodeSelector": "matchLabels: {pool: a}\nmatchExpressions:\n"
        "- {key: zone, operator: NotIn, values: [c]}\n",
    },
    {**WELL_FORMED, "nodeSelector": '{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}'},
    {**WELL_FORMED, "nodeSelector": "matchlabels: {pool: b}"},
    # one-shot and bounded windows
    {"startTime": "2027-01-15T02:00:00+01:00", "duration": "2h", "nodeSelector": ""},
    {
        "startTime": " 2027-01-15t02:00 ",
        "duration": "2h",
        "nodeSelector": "",
        "timeZone": "Europe/Berlin",
    },
    {**WELL_FORMED, "notBefore": "2027-01-01", "notAfter": "2027-03-01T00:00:00Z"},
    {**WELL_FORMED, "notAfter": "2027-03-01 06:30", "timeZone": "America/New_York"},
]


def test_admission_policy_accepts_valid_windows_and_leaves_other_configmaps_alone(
    policy: Policy,
) -> None:
    examples = yaml.safe_load_all((KUSTOMIZE / "examples" / "windows.yaml").read_text())
    for data in [*ACCEPTED, *(d["data"] for d in examples)]:
        assert isinstance(parse_window(policy.ns, "w", data), Window), data
        assert policy.verdict(data) == (True, ""), data
    # Not windows: no label, or another label, whatever the data.
    assert policy.verdict({"startTime": "@every 1h"}, labelled=False) == (True, "")
    assert policy.verdict({}, labelled=False) == (True, "")
    other = {"metadata": {"name": "other", "labels": {"app": "x"}}, "data": {"duration": "1d"}}
    policy.core.create_namespaced_config_map(policy.ns, other, dry_run="All")

    # UPDATE: a window cannot be broken, but can stop being a window.
    cm = policy.core.create_namespaced_config_map(
        policy.ns, window("real", {"startTime": "0 3 * * 6", "duration": "1h", "nodeSelector": ""})
    )
    try:
        with pytest.raises(ApiException) as info:
            policy.core.patch_namespaced_config_map("real", policy.ns, {"data": {"duration": "1d"}})
        assert "data.duration" in status_of(info.value)[1]
        policy.core.patch_namespaced_config_map(
            "real",
            policy.ns,
            {"metadata": {"labels": {WINDOW_LABEL: None}}, "data": {"duration": "1d"}},
        )
    finally:
        policy.core.delete_namespaced_config_map(cm.metadata.name, policy.ns)


# Schedules and durations assembled from the pieces of kumaco's grammar, each position
# from its own pool of valid forms, then sometimes spoiled: the property is only worth
# something if both verdicts of kumaco occur often (see --hypothesis-show-statistics).
_FIELDS = [
    ["*", "?", "0", "*/5", "0-30/10", "1,2", "59", ",", "+7"],  # minute
    ["*", "3", "1-5", "*/2", "23", "00"],  # hour
    ["*", "?", "1", "1-7", "31", "*/10"],  # day of month
    ["*", "JAN", "1-12", "jan-mar", "*/3", "Dec"],  # month
    ["*", "mon-fri", "SUN", "0", "6", "FR\u0130", "*-ignored", "?-x/2"],  # day of week
]
_JUNK = ["60", "5-1", "-1", "0/0", "1-2-3", "1/2/3", "\u00e9", "@", "L", "W", "1#2", "7", "*x", "x"]
_SPACES = [" "] * 12 + ["  ", "\t", "\u00a0", "\u2003", "\n", "\v", "\x1c", "\u180e"]
_PREFIXES = [""] * 6 + ["TZ=UTC ", "CRON_TZ=Europe/Berlin ", "TZ= ", "TZ=Nowhere ", "TZ=UTC\t"]
_DESCRIPTORS = ["@daily", "@weekly", "@hourly", "@annually", "@midnight", "@every 1h", "@Daily"]
_DATES = ["2027-01-15", "2027-02-29", "2028-02-29", "2027-13-01", "1677-12-31", "2027-1-15"]
_CLOCKS = ["", "T02:00", "t23:59:59", " 00:00:00", "T24:00", "T02:30:00.5", "T2:00"]
_OFFSETS = ["", "", "Z", "z", "+01:00", "-09:30", "+1:00", "+24:00"]


@st.composite
def date_times(draw: st.DrawFn) -> str:
    """Dates and date-times in the forms kumaco reads, sometimes spoiled."""
    clock = draw(st.sampled_from(_CLOCKS))
    text = (
        draw(st.sampled_from(_DATES)) + clock + (draw(st.sampled_from(_OFFSETS)) if clock else "")
    )
    lead = draw(st.sampled_from(["", "", " ", "\u00a0", "\x1c"]))
    return lead + text + draw(st.sampled_from(["", "", " ", "\n"]))


@st.composite
def start_times(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(_PREFIXES))
    if draw(st.integers(0, 5)) == 0:
        body = draw(st.sampled_from(_DESCRIPTORS))
    else:
        fields = [draw(st.sampled_from(pool)) for pool in _FIELDS]
        if draw(st.integers(0, 3)) == 0:  # spoil a field, or drop or add one
            i = draw(st.integers(0, 4))
            how = draw(st.sampled_from(["junk", "drop", "add"]))
            if how == "junk":
                fields[i] = draw(st.sampled_from(_JUNK))
            elif how == "drop":
                del fields[i]
            else:
                fields.insert(i, "*")
        body = fields[0] + "".join(draw(st.sampled_from(_SPACES)) + f for f in fields[1:])
    lead = draw(st.sampled_from(["", "", "", " ", "\t"]))
    trail = draw(st.sampled_from(["", "", "", " ", "\n"]))
    if draw(st.integers(0, 5)) == 0:
        return draw(date_times())
    return lead + prefix + body + trail


@st.composite
def durations(draw: st.DrawFn) -> str:
    parts = [
        draw(st.sampled_from(["1", "90", ".5", "1.", "0", "2.25", "007"]))
        + draw(st.sampled_from(["h", "m", "s", "ms", "us", "\u00b5s", "\u03bcs", "ns"]))
        for _ in range(draw(st.integers(1, 3)))
    ]
    text = draw(st.sampled_from(["", "", "", "+", "-"])) + "".join(parts)
    if draw(st.integers(0, 3)) == 0:  # spoil it
        text = draw(
            st.sampled_from(["0", "1", "1d", "", " 1h", "1h ", "1h 30m", "1H", ".h", text + "x"])
        )
    return text


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(
    start=start_times(),
    duration=durations(),
    budget=st.sampled_from(["0", "1", "12", "0%", "10%", "100%", "101%", "-1", "1.5", " 1", "x"]),
    freeze=st.sampled_from(["true", "false", "True", "", "1", "yes"]),
    days=st.sampled_from(
        [
            "1-7",
            "8-14",
            "*/2",
            "31",
            " 1,15 ",
            "?",
            "*-x",
            "+3",
            "0",
            "32",
            "L",
            "first",
            "1-7 *",
            ",",
        ]
    ),
    bound=date_times(),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "Australia/Lord_Howe"]),
)
def test_admission_policy_never_rejects_a_window_kumaco_accepts(
    policy: Policy,
    start: str,
    duration: str,
    budget: str,
    freeze: str,
    days: str,
    bound: str,
    zone: str,
) -> None:
    # One key at a time (the other valid), so that the policy's first failing check --
    # the one it reports -- is about that key.
    for key, data in (
        ("startTime", {"startTime": start, "duration": "1h", "nodeSelector": ""}),
        ("duration", {"startTime": "0 3 * * 6", "duration": duration, "nodeSelector": ""}),
        ("maxInProgress", {**WELL_FORMED, "maxInProgress": budget}),
        ("freeze", {**WELL_FORMED, "freeze": freeze}),
        ("daysOfMonth", {**WELL_FORMED, "daysOfMonth": days}),
        ("notBefore", {**WELL_FORMED, "notBefore": bound, "timeZone": zone}),
        ("notAfter", {**WELL_FORMED, "notAfter": bound, "timeZone": zone}),
        ("startTime", {"startTime": start, "duration": "1h", "nodeSelector": "", "timeZone": zone}),
    ):
        accepted, reason = policy.verdict(data)
        kumaco_accepts = isinstance(parse_window(policy.ns, "w", data), Window)
        event(
            f"{key}: kumaco {'accepts' if kumaco_accepts else 'rejects'},"
            f" policy {'accepts' if accepted else 'rejects'}"
        )
        assert accepted or not kumaco_accepts, f"kumaco accepts {data!r}; the policy: {reason}"


# ============================================================================== priority


def test_the_documented_priority_patch_passes_a_server_side_dry_run(
    cluster: Cluster, tmp_path: Path
) -> None:
    """docs/deploy.md's priorityClassName patch, as written, on the delegated layout."""
    doc = (REPO / "docs" / "deploy.md").read_text()
    m = re.search(
        r"```yaml\n(patches:\n  - target: \{kind: Deployment, name: kumaco\}\n.*?)```", doc, re.S
    )
    assert m and "priorityClassName" in m.group(1), "docs/deploy.md's priority patch"
    wrap = tmp_path / "priority"
    wrap.mkdir()
    patches = yaml.safe_load(m.group(1))["patches"]
    (wrap / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(KUSTOMIZE / "overlays" / "delegated", wrap)],
                "patches": patches,
            }
        )
    )
    docs = [d for d in yaml.safe_load_all(kubectl(None, "kustomize", str(wrap)).stdout) if d]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    run = uuid.uuid4().hex[:6]
    docs = remap(
        docs, {SYSTEM_NS: f"kprio-{run}-sys", MAINTENANCE_NS: f"kprio-{run}-mnt"}, f"-{run}"
    )
    cluster.apply_for_real(by_kind(docs, "Namespace"))
    result = cluster.apply([d for d in docs if d["kind"] != "Namespace"], "--dry-run=server")
    assert "deployment.apps/kumaco serverside-applied (server dry run)" in result.stdout
    assert "Warning:" not in result.stderr.replace("WARNING: version difference", ""), result.stderr
