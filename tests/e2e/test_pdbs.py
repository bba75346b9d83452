"""``--respect-pdbs`` against the real API server: its eviction API, kwok's pods, kumaco run.

* The eviction decision kumaco reads off pods and budgets
  (:mod:`kumaco.core.objects.disruptions`) is the API server's own: for pods in every state
  (running ready or not, pending, finished, terminating) under budgets of every kind
  (none, one, two, empty or null selector, matchExpressions, no disruption left, still
  being processed, an unhealthy application, ``AlwaysAllow``, too many disrupted pods),
  kumaco says "refused" exactly when a dry-run eviction of the pod is refused.
* ``kumaco run --respect-pdbs`` as components/respect-pdbs deploys it -- its environment,
  and the ServiceAccount with the base's RBAC and the component's read-only grant, a
  TokenRequest token -- over kwok nodes whose pods kwok runs: the nodes with a pod of a
  budget that allows no disruption are not admitted (``DisruptionBudgetExhausted``,
  naming the budget) while a node without one is; when the budget allows one, the oldest
  request goes; when it falls to zero again the holder keeps its place (a watcher sees
  no revocation); and the API server's audit log shows kumaco watching pods (a streaming
  list: no LIST of pods), listing and watching budgets, and not one request refused (403). ``kubectl kumaco plan --respect-pdbs``
  then reads the cluster's pods and budgets and answers exactly what ``kumaco plan
  --pods/--pdbs`` answers offline on what ``kubectl get pods,pdb -A -o yaml`` prints.

The test control plane runs no kube-controller-manager, so no disruption controller
computes the budgets' status: the tests write ``status`` themselves through the status
subresource, as that controller would (``disruptionsAllowed``, ``currentHealthy``,
``desiredHealthy``, ``expectedPods``, ``observedGeneration``). Pods need the namespace's
``default`` ServiceAccount, which nobody else creates here either.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumaco.core.objects.disruptions import blamed, budget_of, pod_entry
from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    Api,
    ApiError,
    Kumaco,
    NodeWatcher,
    condition_status,
    cron_at,
    unique,
    wait_for,
)
from tests.support.env.kwok import Kwok, KwokSettings
from tests.support.env.manifests import KUSTOMIZE, PDB_RULES, container_env, kubectl, rules_of
from tests.support.env.plugin import VENV_BIN
from tests.support.env.plugin import kubectl as plugin
from tests.support.judges.audit import forbidden, requests_of

HOLD = "kumaco.test/hold"
NOW = "2026-01-01T00:00:00Z"


def setup_namespace(raw: Api, name: str) -> str:
    raw.namespace(name)
    raw.request(
        "POST", f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}}
    )
    return name


def make_pod(
    raw: Api,
    ns: str,
    name: str,
    node: str,
    labels: dict[str, str],
    *,
    finalizers: tuple[str, ...] = (),
    annotations: dict[str, str] | None = None,
) -> None:
    meta: dict[str, Any] = {"name": name, "labels": labels, "finalizers": list(finalizers)}
    if annotations:
        meta["annotations"] = annotations
    raw.request(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "nodeName": node,
                "automountServiceAccountToken": False,
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
            },
        },
    )


def set_pod_status(raw: Api, ns: str, name: str, phase: str, ready: bool) -> None:
    conditions = [
        {"type": t, "status": "True" if ready else "False", "lastTransitionTime": NOW}
        for t in ("ContainersReady", "Ready")
    ]
    raw.request(
        "PATCH",
        f"/api/v1/namespaces/{ns}/pods/{name}/status",
        {"status": {"phase": phase, "startTime": NOW, "conditions": conditions}},
        "application/merge-patch+json",
    )


def make_pdb(
    raw: Api, ns: str, name: str, selector: dict[str, Any] | None, policy: str | None = None
) -> None:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    if policy is not None:
        spec["unhealthyPodEvictionPolicy"] = policy
    raw.request(
        "POST",
        f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def set_pdb_status(raw: Api, ns: str, name: str, **status: Any) -> None:
    """Write the status a disruption controller would (none runs here)."""
    full = {
        "observedGeneration": 1,
        "disruptionsAllowed": 0,
        "currentHealthy": 2,
        "desiredHealthy": 2,
        "expectedPods": 2,
        **status,
    }
    raw.request(
        "PATCH",
        f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}/status",
        {"status": full},
        "application/merge-patch+json",
    )


def dry_run_eviction(raw: Api, ns: str, name: str) -> int:
    """The API server's answer to evicting the pod (dry run: nothing is deleted)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": ns},
        "deleteOptions": {"dryRun": ["All"]},
    }
    try:
        raw.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction?dryRun=All", body)
    except ApiError as exc:
        return exc.status
    return 201


# ----------------------------------------------------------------------------- the eviction API

DB = {"matchLabels": {"app": "db"}}
#: scenario -> its budgets: (name, selector, status, unhealthyPodEvictionPolicy).
SCENARIOS: dict[str, list[tuple[str, Any, dict[str, Any], str | None]]] = {
    "zero": [("db", DB, {}, None)],
    "one": [("db", DB, {"disruptionsAllowed": 1}, None)],
    "processing": [("db", DB, {"disruptionsAllowed": 1, "observedGeneration": 0}, None)],
    "unhealthy-app": [("db", DB, {"currentHealthy": 1}, None)],
    "healthy-app": [("db", DB, {"currentHealthy": 3}, None)],
    "always-allow": [("db", DB, {"currentHealthy": 1}, "AlwaysAllow")],
    "if-healthy": [("db", DB, {"currentHealthy": 1}, "IfHealthyBudget")],
    "desired-zero": [("db", DB, {"currentHealthy": 0, "desiredHealthy": 0}, None)],
    "two": [("a", DB, {"disruptionsAllowed": 5}, None), ("b", {}, {"disruptionsAllowed": 5}, None)],
    "empty-selector": [("all", {}, {}, None)],
    "null-selector": [("none", None, {}, None)],
    "expressions": [
        (
            "not-web",
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            {},
            None,
        )
    ],
    "no-budget": [],
    "disrupted": [
        (
            "db",
            DB,
            {"disruptionsAllowed": 1, "disruptedPods": {f"gone-{i}": NOW for i in range(2001)}},
            None,
        )
    ],
}
#: pod -> (labels, phase, ready, terminating).
PODS: dict[str, tuple[dict[str, str], str, bool, bool]] = {
    "db-ready": ({"app": "db"}, "Running", True, False),
    "db-unready": ({"app": "db"}, "Running", False, False),
    "db-pending": ({"app": "db"}, "Pending", False, False),
    "db-succeeded": ({"app": "db"}, "Succeeded", False, False),
    "db-failed": ({"app": "db"}, "Failed", False, False),
    "db-terminating": ({"app": "db"}, "Running", True, True),
    "web-ready": ({"app": "web"}, "Running", True, False),
}


@dataclass
class Cleanup:
    raw: Api
    terminating: list[tuple[str, str]] = field(default_factory=list)

    def run(self) -> None:
        for ns, name in self.terminating:  # let them go (no kubelet confirms their end)
            path = f"/api/v1/namespaces/{ns}/pods/{name}"
            try:
                self.raw.request(
                    "PATCH",
                    path,
                    {"metadata": {"finalizers": None}},
                    "application/merge-patch+json",
                )
                self.raw.request("DELETE", f"{path}?gracePeriodSeconds=0")
            except ApiError:
                pass


@pytest.fixture
def cleanup(raw: Api) -> Iterator[Cleanup]:
    c = Cleanup(raw)
    yield c
    c.run()


def test_kumaco_refuses_exactly_what_the_eviction_api_refuses(raw: Api, cleanup: Cleanup) -> None:
    run = unique("evict")
    cases: list[tuple[str, str]] = []
    for scenario, budgets in SCENARIOS.items():
        ns = setup_namespace(raw, f"{run}-{scenario}")
        for name, selector, status, policy in budgets:
            make_pdb(raw, ns, name, selector, policy)
            set_pdb_status(raw, ns, name, **status)
        for pod, (labels, phase, ready, terminating) in PODS.items():
            make_pod(raw, ns, pod, f"{run}-node", labels, finalizers=(HOLD,) if terminating else ())
            if phase != "Pending":
                set_pod_status(raw, ns, pod, phase, ready)
            if terminating:
                cleanup.terminating.append((ns, pod))
                raw.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod}")
            cases.append((ns, pod))
    # kumaco's reading of what the server lists, pod by pod, against the server's answer.
    listed_pods = raw.request("GET", "/api/v1/pods")["items"]
    listed_budgets = raw.request("GET", "/apis/policy/v1/poddisruptionbudgets")["items"]
    entries = {(e.namespace, e.name): e for o in listed_pods if (e := pod_entry(o)) is not None}
    budgets = [b for o in listed_budgets if (b := budget_of(o)) is not None]
    disagree, table = [], []
    for ns, pod in cases:
        entry = entries[(ns, pod)]
        mine = (
            ()
            if entry.view is None
            else blamed(entry.view, [b for b in budgets if b.namespace == ns])
        )
        code = dry_run_eviction(raw, ns, pod)
        table.append(f"{ns.removeprefix(run + '-'):15} {pod:15} server {code} kumaco {list(mine)}")
        if (code != 201) != bool(mine):
            disagree.append(table[-1])
    print("\n".join(table))
    refused = sum(1 for line in table if "server 201" not in line)
    assert refused >= 15 and len(table) - refused >= 15, "both answers are exercised"
    assert not disagree, "\n".join(disagree)


# ----------------------------------------------------------------------------- kumaco run


def component_rbac(tmp: Path, ns: str, run: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The base and components/respect-pdbs rendered into ``ns``: the RBAC, and the env."""
    wrap = tmp / "with-respect-pdbs"
    wrap.mkdir()
    (wrap / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "namespace": ns,
                "resources": [os.path.relpath(KUSTOMIZE / "base", wrap)],
                "components": [os.path.relpath(KUSTOMIZE / "components" / "respect-pdbs", wrap)],
            }
        )
    )
    docs = [d for d in yaml.safe_load_all(kubectl(None, "kustomize", str(wrap)).stdout) if d]
    env = container_env(docs)
    rbac = []
    for d in docs:
        if d["kind"] in ("Deployment", "NetworkPolicy"):
            continue
        if d["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            d["metadata"]["name"] += f"-{run}"
        if d.get("roleRef", {}).get("kind") == "ClusterRole":
            d["roleRef"]["name"] += f"-{run}"
        rbac.append(d)
    assert any(rules_of(d) == PDB_RULES for d in rbac if d["kind"] == "ClusterRole")
    return rbac, env


def mip(raw: Api, node: str) -> tuple[str | None, str, str]:
    c = raw.conditions(node).get(MIP) or {}
    return c.get("status"), c.get("reason", ""), c.get("message", "")


def test_kumaco_run_waits_for_the_budget_with_kwok_pods_and_the_component_rbac(
    control_plane: ControlPlane, raw: Api, tmp_path: Path
) -> None:
    run = unique("pdbrun")
    ns, app = setup_namespace(raw, run), setup_namespace(raw, f"{run}-app")
    rbac, env = component_rbac(tmp_path, ns, run)
    assert env["KUMACO_RESPECT_PDBS"] == "true"
    path = tmp_path / "rbac.yaml"
    path.write_text(yaml.safe_dump_all(rbac))
    kubectl(
        control_plane.write_kubeconfig(tmp_path / "admin.kubeconfig"),
        "apply",
        "--server-side",
        "-f",
        str(path),
    )
    # Three nodes needing maintenance, the oldest requests on the two running the database.
    nodes = [f"{run}-{i}" for i in range(3)]
    for i, name in enumerate(nodes):
        stamp = f"2026-01-0{i + 1}T00:00:00Z"
        raw.node(
            name,
            {RUN_LABEL: run},
            [{"type": REQUIRED, "status": "True", "lastTransitionTime": stamp}],
        )
    settings = KwokSettings(lease_seconds=0, parallelism=2, scope=f"{RUN_LABEL}={run}", pods=True)
    with Kwok(control_plane, tmp_path / "kwok", settings):
        for i, name in enumerate(nodes[:2]):
            make_pod(raw, app, f"db-{i}", name, {"app": "db"})
        make_pod(raw, app, "web-0", nodes[2], {"app": "web"})

        def running() -> bool:
            pods = raw.request("GET", f"/api/v1/namespaces/{app}/pods")["items"]
            return len(pods) == 3 and all(
                p["status"].get("phase") == "Running"
                and any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in p["status"].get("conditions", [])
                )
                for p in pods
            )

        wait_for(running, 60, what="kwok running the pods, Ready")
        make_pdb(raw, app, "db", DB)
        set_pdb_status(raw, app, "db", disruptionsAllowed=0)
        start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
        raw.window(ns, "all", {"startTime": cron_at(start), "duration": "24h", "nodeSelector": ""})
        kubeconfig = control_plane.write_token_kubeconfig(
            tmp_path / "sa.kubeconfig", raw.service_account_token(ns, "kumaco")
        )
        flags = [
            *("--namespaces", ns, "--leader-election-namespace", ns),
            *("--node-selector", f"{RUN_LABEL}={run}"),
            *("--max-in-progress", "1", "--require-condition", REQUIRED),
        ]
        since = time.time()
        k = Kumaco(
            kubeconfig,
            flags,
            tmp_path / "kumaco.log",
            env={"KUMACO_RESPECT_PDBS": env["KUMACO_RESPECT_PDBS"], "POD_NAMESPACE": ns},
        )
        with NodeWatcher(raw, run) as watcher:
            k.start()
            try:
                # The two database nodes wait, naming the budget; the third takes the place.
                # Start-up and the first pass: 1-4 s measured elsewhere; room for a loaded CI.
                wait_for(lambda: mip(raw, nodes[2])[0] == "True", 30, what="the free node admitted")
                for name in nodes[:2]:
                    assert mip(raw, name) == (
                        "False",
                        "DisruptionBudgetExhausted",
                        f"draining it now would be refused by PodDisruptionBudget {app}/db",
                    ), name
                # Its maintenance ends; the budget still allows nothing: nobody goes.
                raw.set_condition(nodes[2], REQUIRED, "False")
                wait_for(lambda: mip(raw, nodes[2])[0] == "False", 15, what="the release")
                time.sleep(2)
                assert [mip(raw, n)[1] for n in nodes[:2]] == ["DisruptionBudgetExhausted"] * 2
                # The budget allows one disruption: the oldest request goes.
                set_pdb_status(raw, app, "db", disruptionsAllowed=1, currentHealthy=3)
                wait_for(lambda: mip(raw, nodes[0])[0] == "True", 15, what="the oldest admitted")
                assert mip(raw, nodes[1])[1] == "ConcurrencyCeilingReached"
                # Its own drain takes the budget back to zero: it keeps its place.
                set_pdb_status(raw, app, "db", disruptionsAllowed=0)
                wait_for(
                    lambda: mip(raw, nodes[1])[1] == "DisruptionBudgetExhausted",
                    15,
                    what="the other one refused again",
                )
                assert mip(raw, nodes[0])[0] == "True"
            finally:
                code = k.stop()
            held = [o for o in watcher.seen if o.name == nodes[0]]
            admitted = next(
                i for i, o in enumerate(held) if condition_status(o.conditions, MIP) == "True"
            )
            assert all(condition_status(o.conditions, MIP) == "True" for o in held[admitted:]), (
                "revoked"
            )
            for name in nodes[:2]:
                before = [
                    o
                    for o in watcher.seen
                    if o.name == name and condition_status(o.conditions, MIP) == "True"
                ]
                assert name == nodes[0] or not before, f"{name} admitted while refused"
    assert code == 0, k.log_messages()
    user = f"system:serviceaccount:{ns}:kumaco"
    seen = {(e.verb, e.resource) for e in requests_of(control_plane.audit_log, user, since)}
    assert {
        ("watch", "pods"),
        ("list", "poddisruptionbudgets"),
        ("watch", "poddisruptionbudgets"),
    } <= seen, sorted(seen)
    # The pods by a streaming list (sendInitialEvents) the API server accepted: no LIST.
    assert ("list", "pods") not in seen, sorted(seen)
    assert forbidden(control_plane.audit_log, user, since) == []

    # kubectl kumaco plan --respect-pdbs reads the same pods and budgets from the cluster,
    # and kumaco plan offline the same from the files kubectl prints: one answer.
    admin = tmp_path / "admin.kubeconfig"
    policy = [*flags[4:], "--respect-pdbs"]
    at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    online = plugin("plan", "--kubeconfig", str(admin), "-n", ns, "--at", at, *policy, "-o", "json")
    rows = {r["name"]: r for r in json.loads(online.stdout)["nodes"]}
    assert [(rows[n]["reason"], rows[n]["disruptionBudgets"]) for n in nodes] == [
        ("MaintenanceAllowed", []),  # the holder (the budget refuses it too: it is never revoked)
        ("DisruptionBudgetExhausted", [f"{app}/db"]),
        ("MaintenanceFinished", []),  # released, idle
    ]
    dumps = {}
    for what, path in (
        ("pods,pdb", "workloads.yaml"),
        ("nodes", "nodes.yaml"),
        ("configmaps", "windows.yaml"),
    ):
        where = ["-n", ns] if what == "configmaps" else ["-A"]
        out = kubectl(admin, "get", what, *where, "-o", "yaml").stdout
        (tmp_path / path).write_text(out)
        dumps[what] = str(tmp_path / path)
    both = dumps["pods,pdb"]
    cmd = [str(VENV_BIN / "kumaco"), "plan", "--windows", dumps["configmaps"]]
    cmd += ["--nodes", dumps["nodes"], "--at", at, *policy, "--pods", both, "--pdbs", both]
    offline = subprocess.run(
        [*cmd, "-o", "json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == online.stdout
