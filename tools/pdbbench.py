"""What ``--respect-pdbs`` costs: kumaco's leader with and without it, over kwok's pods.

One control plane; ``nodes`` realistic Nodes (:func:`~tests.support.env.controlplane.seed_nodes`)
that kwok plays, and on them a realistic workload that kwok runs (its pod Stages,
:mod:`tests.support.env.kwok`): ``pods_per_node`` pods per node, of which
``daemonsets`` are DaemonSet pods (kube-system) and the rest replicas of Deployments and
StatefulSets (2-30 each, ~4 KB of spec: probes, resources, env, volumes; the
ServiceAccount admission adds its token volume) spread over ``namespaces`` namespaces;
``budgeted`` of the applications have a PodDisruptionBudget, ``exhausted`` of those with
no disruption allowed. No kube-controller-manager runs, so the bench writes each budget's
status as the disruption controller would.

Then, on the same cluster, one ``kumaco run`` leader at a time (a Lease nobody else
wants; a window open on every node, ``--max-in-progress 10%``, nobody requiring
maintenance, so both modes plan the same and write nothing after a warm-up run):
without ``--respect-pdbs``, then with it. Each is measured from its start to ready
(nodes and windows listed) and through its first pass to five
seconds without one (at most two minutes: CPU seconds; with the flag also when the pods
and budgets were listed, which admissions wait for and readiness does not), then over a
steady period of ``quiet`` seconds during which the workload lives -- ``churn`` pod
replacements a second (a pod deleted, kwok confirming it, a new one created) and one
budget's ``disruptionsAllowed`` flipping every ``flip_seconds`` (so the flag's refusals
change and its leader plans again) -- its CPU (% of one core), RSS at the end and peak
RSS. The result carries both and their ratios (with / without). Finally, with the flag,
a sample of nodes turns to need maintenance and the bench checks that kumaco refuses
exactly those a budget would refuse (computed from the server's pods and budgets).

:func:`pod_memory` is the in-process figure: bytes the store keeps per pod.

Usage: ``python hack/bench.py --respect-pdbs NODES`` (merged into docs/benchmarks.json
as ``respect_pdbs``); the CI short form is in tests/e2e/test_bench_small.py.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import gc
import hashlib
import json
import os
import random
import threading
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kumaco.controller.budgets import BudgetStore
from kumaco.core.objects.disruptions import refusals_of
from tests.support.env.controlplane import ControlPlane, ensure_assets, seed_nodes
from tests.support.env.harness import MIP, REQUIRED, Api, ApiError, Kumaco, cron_at, wait_for
from tests.support.env.kwok import Kwok, KwokSettings
from tests.support.judges.figures import commit_of
from tools.bench import (
    REPO,
    busy_percent,
    log,
    machine,
    machine_busy,
    proc_stats,
    settle,
)

IMAGES = ("ghcr.io/shop/api", "ghcr.io/shop/web", "quay.io/data/cache", "docker.io/library/nginx")
DAEMONSETS = ("kube-proxy", "node-exporter", "fluent-bit", "csi-node", "cilium")


@dataclass(frozen=True)
class Workload:
    """The pods and budgets on ``nodes`` nodes (see the module docstring)."""

    nodes: int
    pods_per_node: int = 25
    daemonsets: int = 3
    namespaces: int = 40
    #: Share of the applications with a PodDisruptionBudget, and of those, with none left.
    budgeted: float = 0.5
    exhausted: float = 0.02
    seed: int = 28


@dataclass
class App:
    namespace: str
    name: str
    kind: str  # Deployment, StatefulSet or DaemonSet
    labels: dict[str, str]
    pods: list[tuple[str, str]] = field(default_factory=list)  # (pod name, node)
    budget: int | None = None  # disruptions allowed, when it has a budget


def node_names(count: int) -> list[str]:
    return [f"node-{i:05d}" for i in range(count)]


def plan_workload(w: Workload) -> list[App]:
    """Which application runs which pods on which node (deterministic for ``w.seed``)."""
    rng = random.Random(w.seed)
    nodes = node_names(w.nodes)
    apps: list[App] = []
    for ds in DAEMONSETS[: w.daemonsets]:
        app = App("kube-system", ds, "DaemonSet", {"k8s-app": ds})
        app.pods = [(f"{ds}-{hashlib.sha1(n.encode()).hexdigest()[:5]}", n) for n in nodes]
        apps.append(app)
    slots = [n for n in nodes for _ in range(w.pods_per_node - w.daemonsets)]
    rng.shuffle(slots)
    i = 0
    while slots:
        ns = f"team-{i % w.namespaces:02d}"
        kind = "StatefulSet" if i % 7 == 0 else "Deployment"
        name = f"{rng.choice(('api', 'web', 'worker', 'cache', 'db'))}-{i:05d}"
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": ns}
        if kind == "Deployment":
            labels["pod-template-hash"] = hashlib.sha1(name.encode()).hexdigest()[:10]
        app = App(ns, name, kind, labels)
        replicas = min(len(slots), rng.randint(2, 30))
        for r in range(replicas):
            suffix = (
                str(r)
                if kind == "StatefulSet"
                else hashlib.sha1(f"{name}{r}".encode()).hexdigest()[:5]
            )
            app.pods.append((f"{name}-{suffix}", slots.pop()))
        if rng.random() < w.budgeted:
            app.budget = 0 if rng.random() < w.exhausted else 1
        apps.append(app)
        i += 1
    return apps


def pod_object(app: App, name: str, node: str) -> dict[str, Any]:
    """A pod as its controller would create it (bound: the scheduler's work is done)."""
    labels = dict(app.labels)
    if app.kind == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = name
    image = f"{IMAGES[len(app.name) % len(IMAGES)]}:v1.{len(name) % 9}.3"
    container = {
        "name": "app",
        "image": image,
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [
            {"name": "APP_NAME", "value": app.name},
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "256Mi"},
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 20},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": app.namespace,
            "labels": labels,
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet" if app.kind == "Deployment" else app.kind,
                    "name": app.name,
                    "uid": hashlib.md5(app.name.encode()).hexdigest(),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [container],
            "volumes": [
                {"name": "config", "configMap": {"name": f"{app.name}-config"}},
                {"name": "tmp", "emptyDir": {}},
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{t}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for t in ("not-ready", "unreachable")
            ],
        },
    }


def budget_object(app: App) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app.name, "namespace": app.namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(app.labels)}},
    }


def budget_status(app: App, allowed: int) -> dict[str, Any]:
    """The status the disruption controller would write (generation 1 observed)."""
    n = len(app.pods)
    return {
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "currentHealthy": n - 1 + allowed,
            "desiredHealthy": n - 1,
            "expectedPods": n,
        }
    }


# ----------------------------------------------------------------------------- the cluster


class Client:
    """Raw requests over one keep-alive connection per thread."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.local = threading.local()

    def send(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> int:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = self.cp.connection()
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": ctype, "User-Agent": "kumaco-bench-pods"}
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            resp.read()
        except OSError:
            self.local.conn = None
            raise
        return resp.status


def seed_workload(cp: ControlPlane, apps: list[App], workers: int = 16) -> dict[str, float]:
    """Namespaces (and their default ServiceAccount), budgets with status, then every pod."""
    api, client = Api(cp), Client(cp)
    t0 = time.monotonic()
    for ns in [*sorted({a.namespace for a in apps} - {"kube-system"}), "kube-system"]:
        if ns != "kube-system":
            api.namespace(ns)
        with contextlib.suppress(ApiError):
            api.request(
                "POST",
                f"/api/v1/namespaces/{ns}/serviceaccounts",
                {"metadata": {"name": "default"}},
            )
    for app in apps:
        if app.budget is not None:
            base = f"/apis/policy/v1/namespaces/{app.namespace}/poddisruptionbudgets"
            api.request("POST", base, budget_object(app))
            api.request(
                "PATCH",
                f"{base}/{app.name}/status",
                budget_status(app, app.budget),
                "application/merge-patch+json",
            )
    pods = [(app, name, node) for app in apps for name, node in app.pods]

    def create(item: tuple[App, str, str]) -> None:
        app, name, node = item
        code = client.send(
            "POST", f"/api/v1/namespaces/{app.namespace}/pods", pod_object(app, name, node)
        )
        if code not in (201, 409):
            raise RuntimeError(f"creating pod {app.namespace}/{name}: {code}")

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, pods))
    return {"pods": len(pods), "seconds": round(time.monotonic() - t0, 1)}


def pending(api: Api) -> bool:
    """Whether some pod is not Running yet (one page of one item is enough to tell)."""
    doc = api.request("GET", "/api/v1/pods?fieldSelector=status.phase%21%3DRunning&limit=1")
    return bool(doc.get("items"))


class PodChurn:
    """The workload living: pods replaced, budgets flipping (see the module docstring)."""

    def __init__(
        self, cp: ControlPlane, apps: list[App], per_second: float, flip_seconds: float
    ) -> None:
        self.client = Client(cp)
        self.rng = random.Random(7)
        self.movable = [a for a in apps if a.kind == "Deployment"]
        self.budgeted = [a for a in apps if a.budget is not None]
        self.per_second, self.flip_seconds = per_second, flip_seconds
        self.stop = threading.Event()
        self.counts = {"replaced": 0, "flipped": 0, "failed": 0}
        self.thread = threading.Thread(target=self._loop, daemon=True, name="pod-churn")
        self.serial = 0

    def _replace(self) -> None:
        app = self.rng.choice(self.movable)
        k = self.rng.randrange(len(app.pods))
        name, node = app.pods[k]
        base = f"/api/v1/namespaces/{app.namespace}/pods"
        self.serial += 1
        fresh = f"{app.name}-r{self.serial:05d}"
        ok = self.client.send("DELETE", f"{base}/{name}") in (200, 202)
        ok &= self.client.send("POST", base, pod_object(app, fresh, node)) == 201
        app.pods[k] = (fresh, node)
        self.counts["replaced" if ok else "failed"] += 1

    def _flip(self) -> None:
        app = self.rng.choice(self.budgeted)
        app.budget = 1 - (app.budget or 0)
        path = f"/apis/policy/v1/namespaces/{app.namespace}/poddisruptionbudgets/{app.name}/status"
        ok = (
            self.client.send(
                "PATCH", path, budget_status(app, app.budget), "application/merge-patch+json"
            )
            == 200
        )
        self.counts["flipped" if ok else "failed"] += 1

    def _loop(self) -> None:
        next_replace = next_flip = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            try:
                if self.per_second and now >= next_replace:
                    self._replace()
                    next_replace += self.rng.expovariate(self.per_second)
                if self.flip_seconds and now >= next_flip:
                    self._flip()
                    next_flip += self.flip_seconds
            except OSError:
                self.counts["failed"] += 1
            self.stop.wait(max(0.0, min(next_replace, next_flip) - time.monotonic()))

    def __enter__(self) -> PodChurn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


# ----------------------------------------------------------------------------- one mode


def run_mode(
    cp: ControlPlane,
    workdir: Path,
    ns: str,
    respect: bool,
    quiet: float,
    churn: PodChurn | None,
    tag: str,
) -> dict[str, Any]:
    """One kumaco leader: start to ready and settled, then a steady period (see the contract)."""
    flags = [
        *("--namespaces", ns, "--leader-election-namespace", ns),
        *("--max-in-progress", "10%", "--require-condition", REQUIRED, "--log-level", "info"),
        *(("--respect-pdbs",) if respect else ()),
    ]
    kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
    k = Kumaco(
        kubeconfig,
        flags,
        workdir / f"kumaco-{tag}.log",
        {"POD_NAME": f"bench-{tag}"},
        tag,
        cwd=REPO,
    )
    t0 = time.time()
    k.start()
    try:
        wait_for(k.ready, 3600, interval=0.5, what=f"kumaco ({tag}) ready")
        ready = time.time() - t0
        # With the flag, admissions wait for the LIST of every pod and budget (readiness
        # does not: the windows open before): when the last of the two was listed.
        listed: float | None = None
        if respect:
            both = ("pods", "poddisruptionbudgets")
            listed = (wait_for(lambda: listed_at(k, both), 3600, 1.0, "the LISTs") or t0) - t0
        # Start-up is over once the first pass is done and nothing is left to write: a
        # pass-free moment (with the flag the living workload wakes it now and then).
        wait_for(
            lambda: (k.metric("kumaco_reconcile_duration_seconds_count") or 0) >= 1,
            600,
            interval=0.5,
            what=f"kumaco ({tag}) planned once",
        )
        settle(k, until=time.time() + 120, quiet=5.0)
        at_settle = proc_stats(k.pid)
        passes0 = k.metric("kumaco_reconcile_duration_seconds_count") or 0.0
        counts0 = dict(churn.counts) if churn else {}
        t1, busy0 = time.time(), machine_busy()
        time.sleep(quiet)
        end = proc_stats(k.pid)
        t2 = time.time()
        out = {
            "respect_pdbs": respect,
            "ready_seconds": round(ready, 1),
            "pods_listed_seconds": None if listed is None else round(listed, 1),
            "startup_cpu_seconds": at_settle["cpu_seconds"],
            "steady_seconds": round(t2 - t1, 1),
            "steady_cpu_percent": round(
                100 * (end["cpu_seconds"] - at_settle["cpu_seconds"]) / (t2 - t1), 2
            ),
            "rss_mb": end["rss_mb"],
            "peak_rss_mb": end["peak_rss_mb"],
            "steady_passes": (k.metric("kumaco_reconcile_duration_seconds_count") or 0.0) - passes0,
            "machine_busy_percent": busy_percent(busy0, machine_busy()),
            "churn": {c: v - counts0.get(c, 0) for c, v in (churn.counts if churn else {}).items()},
        }
        log(f"{tag}: {json.dumps(out)}")
        return out
    finally:
        k.stop()


def listed_at(k: Kumaco, collections: tuple[str, ...]) -> float | None:
    """When the last of ``collections`` was first listed (its log line), None before."""
    seen: dict[str, float] = {}
    for r in k.logs():
        c = r.get("collection")
        if r.get("msg") == "listed" and c in collections and c not in seen:
            stamp = dt.datetime.fromisoformat(str(r["time"]).replace("Z", "+00:00"))
            seen[str(c)] = stamp.timestamp()
    return max(seen.values()) if len(seen) == len(collections) else None


def check_refusals(cp: ControlPlane, workdir: Path, ns: str, sample: int) -> dict[str, Any]:
    """With the flag: ``sample`` nodes need maintenance; kumaco refuses exactly the refused ones."""
    api = Api(cp)
    pods = api.request("GET", "/api/v1/pods")["items"]
    budgets = api.request("GET", "/apis/policy/v1/poddisruptionbudgets")["items"]
    refused = refusals_of(pods, budgets)
    every = sorted(x["metadata"]["name"] for x in api.request("GET", "/api/v1/nodes")["items"])
    names = sorted(refused)[: sample // 2] + [n for n in every if n not in refused][: sample // 2]
    stamp = "2026-01-01T00:00:00Z"
    for n in names:
        api.set_condition(n, REQUIRED, "True", stamp)
    flags = [
        *("--namespaces", ns, "--leader-election-namespace", ns),
        *("--max-in-progress", "100%", "--require-condition", REQUIRED, "--respect-pdbs"),
    ]
    kubeconfig = cp.write_kubeconfig(workdir / "admin.kubeconfig")
    k = Kumaco(
        kubeconfig,
        flags,
        workdir / "kumaco-check.log",
        {"POD_NAME": "bench-check"},
        "check",
        cwd=REPO,
    )
    k.start()
    try:

        def reasons() -> dict[str, str]:
            """Each sampled node's reason, once every one is decided on the listed pods."""
            found = {n: api.conditions(n).get(MIP) or {} for n in names}
            got = {n: c.get("reason", "") for n, c in found.items()}
            done = all(
                r in ("MaintenanceAllowed", "DisruptionBudgetExhausted") for r in got.values()
            ) and not any("not listed yet" in c.get("message", "") for c in found.values())
            return got if done else {}

        got = wait_for(reasons, 900, interval=2.0, what="the sample decided")
    finally:
        k.stop()
    wrong = [n for n in names if (got[n] == "DisruptionBudgetExhausted") != (n in refused)]
    return {
        "nodes_refused_in_cluster": len(refused),
        "sample": len(names),
        "sample_refused": sum(1 for n in names if n in refused),
        "disagreements": wrong,
    }


# ----------------------------------------------------------------------------- the run


def pdb_cost(
    w: Workload,
    workdir: Path,
    *,
    quiet: float = 300.0,
    churn_per_second: float = 2.0,
    flip_seconds: float = 15.0,
    kwok_parallelism: int = 16,
    sample: int = 40,
) -> dict[str, Any]:
    """The whole measurement (see the module docstring); the result so far if a phase fails."""
    res: dict[str, Any] = {
        "nodes": w.nodes,
        "settings": {
            **vars(w),
            "quiet_seconds": quiet,
            "pod_replacements_per_second": churn_per_second,
            "budget_flip_seconds": flip_seconds,
            "kwok_parallelism": kwok_parallelism,
        },
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "machine": machine(),
        "kumaco_commit": commit_of(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    cp = ControlPlane(ensure_assets(), log_dir=workdir / "controlplane")
    cp.start()
    try:
        t0 = time.monotonic()
        seed_nodes(cp, w.nodes, heartbeat_spread=300.0)
        res["seed_nodes_seconds"] = round(time.monotonic() - t0, 1)
        apps = plan_workload(w)
        settings = KwokSettings(lease_seconds=0, parallelism=kwok_parallelism, pods=True)
        with Kwok(cp, workdir / "kwok", settings) as kwok:
            res["seed_workload"] = seed_workload(cp, apps)
            res["budgets"] = sum(1 for a in apps if a.budget is not None)
            res["budgets_exhausted"] = sum(1 for a in apps if a.budget == 0)
            log(f"workload: {json.dumps(res['seed_workload'])}, {res['budgets']} budgets")
            t1 = time.monotonic()
            api = Api(cp)
            wait_for(lambda: not pending(api), 7200, interval=10.0, what="kwok running every pod")
            res["pods_running_seconds"] = round(time.monotonic() - t1, 1)
            ns = api.namespace("kumaco-bench")
            start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
            api.window(
                ns, "all", {"startTime": cron_at(start), "duration": "48h", "nodeSelector": ""}
            )
            res["warm_up"] = run_mode(cp, workdir, ns, False, 10.0, None, "warm-up")
            with PodChurn(cp, apps, churn_per_second, flip_seconds) as churn:
                res["off"] = run_mode(cp, workdir, ns, False, quiet, churn, "off")
                res["on"] = run_mode(cp, workdir, ns, True, quiet, churn, "on")
            res["ratios"] = {
                key: round(res["on"][key] / res["off"][key], 2)
                for key in ("rss_mb", "peak_rss_mb", "steady_cpu_percent", "startup_cpu_seconds")
                if res["off"][key]
            }
            res["check"] = check_refusals(cp, workdir, ns, sample)
            assert cp.apiserver is not None and cp.etcd is not None
            res["processes"] = {
                "kube-apiserver": proc_stats(cp.apiserver.pid),
                "etcd": proc_stats(cp.etcd.pid),
                "kwok": proc_stats(kwok.pid),
            }
    except Exception as exc:
        res["error"] = f"{type(exc).__name__}: {exc}"
        log(f"respect-pdbs benchmark failed: {res['error']}")
    finally:
        res["load_after"] = [round(x, 2) for x in os.getloadavg()]
        cp.stop()
    return res


def pod_memory(w: Workload) -> dict[str, Any]:
    """Bytes the controller's store keeps per pod, for ``w``'s pods (tracemalloc)."""
    apps = plan_workload(w)
    raws = []
    for app in apps:
        for name, node in app.pods:
            obj = pod_object(app, name, node)
            obj["status"] = {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            raws.append(json.dumps(obj).encode())
    budgets = [
        json.dumps({**budget_object(a), **budget_status(a, a.budget)}).encode()
        for a in apps
        if a.budget is not None
    ]
    gc.collect()
    tracemalloc.start()
    store = BudgetStore()
    store.budgets_sink().replace([store.budgets_sink().trim(json.loads(b)) for b in budgets])
    store.pods_sink().replace([store.pods_sink().trim(json.loads(r)) for r in raws])
    gc.collect()
    kept, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "pods": len(raws),
        "pods_kept": len(store),
        "bytes_per_pod": round(kept / len(raws)),
        "json_bytes_per_pod": round(sum(map(len, raws)) / len(raws)),
        "nodes_refused": len(store.refusals()),
    }
