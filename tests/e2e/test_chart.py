"""The Helm chart installed on the real kube-apiserver, read back by ``kubectl kumaco``.

(That ``helm template`` renders exactly what ``kubectl kustomize`` renders, and ``helm lint
--strict``, need no server: tests/unit/deploy/test_chart.py.)

Proven here, with helm v3 built from the Go module proxy (tests/support/env/helm.py):

* ``helm install`` of charts/kumaco in the delegated layout with kured's policy
  (``windowNamespaces``, ``kured.enabled``) into a namespace labelled as the quick start
  says: the release is deployed and the API server holds exactly the objects ``helm
  template`` renders;
* kumaco, configured only by the installed Deployment's environment and run as its
  ServiceAccount (a TokenRequest token), opens a window in the watched namespace and
  grants ``kured.dev/maintenance-in-progress`` to one eligible node, without a single 403
  (the API server's audit log);
* ``kubectl kumaco`` as a viewer bound by the chart's viewer RBAC, with no flag but
  ``--deployment``: ``status`` finds the windows' namespace, the Lease in kumaco's
  namespace and kured's condition names in the Deployment, ``plan`` its policy, equal to
  the offline ``kumaco plan`` given every flag, and names the flags it took on standard
  error; every request of the viewer was a GET or a LIST and none was refused;
* ``helm uninstall`` removes it all, the cluster-scoped objects included.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.support.env import admin
from tests.support.env.helm import ensure_helm
from tests.support.env.manifests import kubectl, one
from tests.support.env.plugin import kumaco_cli
from tests.support.judges.audit import forbidden, requests_of
from tests.support.judges.rbac import assert_no_forbidden

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kumaco"
VENV_BIN = Path(sys.executable).parent
RUN_LABEL = admin.RUN_LABEL
UM, MIP = "kured.dev/under-maintenance-window", "kured.dev/maintenance-in-progress"
cluster = admin.cluster  # the fixture: admin access, everything removed at the end
PSA = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "warn", "audit")}


def helm(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # An install or uninstall of some twenty objects (not timed): 300 s catches a hang.
    done = subprocess.run(
        [str(ensure_helm()), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def plugin(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # One read of this small scene (not timed): 120 s catches a hang.
    return subprocess.run(
        [str(VENV_BIN / "kubectl-kumaco"), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def first_watched_document(kubeconfig: Path, *args: str) -> dict[str, Any]:
    """``kubectl kumaco ARGS`` (a ``--watch -o json``): its first document, then SIGINT,
    which must end it with status 0 and no traceback."""
    proc = subprocess.Popen(
        [str(VENV_BIN / "kubectl-kumaco"), "--kubeconfig", str(kubeconfig), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    text, doc = "", None
    # The first LISTs of a small scene (about a second measured): 60 s for a loaded machine.
    deadline = time.monotonic() + 60
    try:
        while doc is None and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                text += os.read(proc.stdout.fileno(), 1 << 16).decode()
                with contextlib.suppress(ValueError):
                    doc, _end = json.JSONDecoder().raw_decode(text.strip())
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0 and b"Traceback" not in err, err.decode()
    assert isinstance(doc, dict), text[-2000:]
    return doc


def on_server(cluster: admin.Cluster, d: dict[str, Any]) -> dict[str, Any]:
    """The object ``d`` names, as the API server holds it (kubectl get -o json)."""
    ns = ["-n", d["metadata"]["namespace"]] if "namespace" in d["metadata"] else []
    kind = f"{d['kind'].lower()}.{d['apiVersion'].split('/')[0]}"
    if "/" not in d["apiVersion"]:
        kind = d["kind"].lower()
    got = kubectl(cluster.kubeconfig, "get", kind, d["metadata"]["name"], *ns, "-o", "json")
    return dict(json.loads(got.stdout))


def test_helm_install_runs_kumaco_and_kubectl_kumaco_reads_its_settings(
    cluster: admin.Cluster, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:6]
    ns, mnt = f"kchart-{run}", f"kchart-{run}-mnt"
    kc = cluster.kubeconfig
    # The release's namespace, created and labelled beforehand (docs/deploy.md, With Helm).
    cluster.namespace(ns, PSA)
    cluster.defer(lambda: cluster.core.delete_namespace(mnt))
    values = {
        "windowNamespaces": [mnt],
        "kured": {"enabled": True},
        "viewers": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kumaco-viewers"},
            {"kind": "ServiceAccount", "name": "viewer", "namespace": ns},
        ],
    }
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    rendered = [
        d
        for d in yaml.safe_load_all(
            helm(kc, "template", "kumaco", str(CHART), "-n", ns, "-f", str(values_file)).stdout
        )
        if d
    ]
    installed = helm(kc, "install", "kumaco", str(CHART), "-n", ns, "-f", str(values_file))
    cluster.defer(lambda: helm(kc, "uninstall", "kumaco", "-n", ns, "--wait=false"))
    assert "STATUS: deployed" in installed.stdout, installed.stdout
    assert f"--deployment {ns}/kumaco" in installed.stdout  # NOTES.txt
    for d in rendered:  # on the server as rendered (the server adds its own fields)
        got = on_server(cluster, d)
        for key in ("rules", "subjects", "roleRef"):
            assert got.get(key) == d.get(key), (d["kind"], d["metadata"]["name"], key)
        assert got["metadata"]["labels"].items() >= d["metadata"]["labels"].items()
        if d["kind"] == "Deployment":  # the server adds defaults (a fieldRef's apiVersion)
            literal = [
                (e["name"], e.get("value"))
                for e in got["spec"]["template"]["spec"]["containers"][0]["env"]
            ]
            assert literal == [
                (e["name"], e.get("value"))
                for e in d["spec"]["template"]["spec"]["containers"][0]["env"]
            ]

    # kumaco, configured by the installed Deployment, as its ServiceAccount.
    eligible = [cluster.node(f"kchart-{run}-{i}", {RUN_LABEL: run}) for i in range(2)]
    for node in eligible:
        cluster.set_condition(node, "kured.dev/reboot-required", "True")
    cluster.core.create_namespaced_config_map(
        mnt, admin.window("tonight", {**admin.OPEN_NOW, "nodeSelector": ""})
    )
    installed_env = {
        e["name"]: e["value"]
        for e in on_server(cluster, one(rendered, "Deployment"))["spec"]["template"]["spec"][
            "containers"
        ][0]["env"]
        if "value" in e
    }
    since = time.time()
    with admin.kumaco(
        cluster.token_kubeconfig(ns, "kumaco"),
        ns,
        ["--node-selector", f"{RUN_LABEL}={run}"],
        installed_env,
        tmp_path / "kumaco.log",
    ) as k:
        # Start-up and the first pass (1-4 s measured, test_catch_up.py): 20 s for load.
        for node in eligible:
            admin.wait_for(lambda n=node: cluster.conditions(n).get(UM) == "True", 20, UM)
        admin.wait_for(
            lambda: [n for n in eligible if cluster.conditions(n).get(MIP) == "True"], 20, MIP
        )

        # kubectl kumaco as the viewer: the settings come from the Deployment.
        viewer = "viewer"
        cluster.core.create_namespaced_service_account(
            ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=viewer))
        )
        as_viewer = cluster.token_kubeconfig(ns, viewer)
        looked = time.time()
        only = ["--deployment", f"{ns}/kumaco", "--node-selector", f"{RUN_LABEL}={run}"]
        status = plugin(as_viewer, "status", *only, "-o", "json")
        assert status.returncode == 0, status.stderr
        assert status.stderr == (
            f"kubectl-kumaco status: settings of Deployment {ns}/kumaco: --namespaces={mnt} "
            f"--under-maintenance-condition={UM} --in-progress-condition={MIP} "
            f"--require-condition=kured.dev/reboot-required --leader-election-namespace={ns}\n"
        )
        doc = json.loads(status.stdout)
        assert doc["namespaces"] == [mnt] and doc["problems"] == []
        assert doc["conditions"] == {"underMaintenance": UM, "inProgress": MIP}
        assert doc["leader"]["lease"] == f"{ns}/kumaco" and doc["leader"]["current"] is True
        assert [w["name"] for w in doc["windows"]] == ["tonight"]
        assert sum(n["inProgress"] for n in doc["nodes"]) == 1

        online = plugin(as_viewer, "plan", *only, "-o", "json")
        assert online.returncode == 0, online.stderr
        assert online.stderr.startswith(
            f"kubectl-kumaco plan: settings of Deployment {ns}/kumaco: --namespaces={mnt} "
            "--max-in-progress=1 --require-condition=kured.dev/reboot-required "
        )
        planned = json.loads(online.stdout)
        at = planned["at"]
        windows_file, nodes_file = tmp_path / "windows.json", tmp_path / "nodes.json"
        windows_file.write_text(
            kubectl(kc, "get", "cm", "-n", mnt, "-l", admin.WINDOW_LABEL, "-o", "json").stdout
        )
        nodes_file.write_text(
            kubectl(kc, "get", "nodes", "-l", f"{RUN_LABEL}={run}", "-o", "json").stdout
        )
        flags = [
            arg
            for name, value in installed_env.items()
            if name != "KUMACO_NAMESPACES"
            for arg in (f"--{name[7:].lower().replace('_', '-')}", value)
        ]
        offline = kumaco_cli(
            "plan",
            *("--windows", str(windows_file), "--nodes", str(nodes_file), "--at", at),
            *("--node-selector", f"{RUN_LABEL}={run}", *flags, "-o", "json"),
        )
        assert offline.returncode == 0, offline.stderr
        assert json.loads(offline.stdout) == planned

        # status --watch as the viewer: the shipped roles grant its list-then-watch.
        watched = first_watched_document(as_viewer, "status", "--watch", *only, "-o", "json")
        assert watched["problems"] == [] and watched["leader"]["current"] is True
        assert sum(n["inProgress"] for n in watched["nodes"]) == 1
        k.assert_alive()
        assert k.stop() == 0, k.log()
    assert_no_forbidden(cluster, ns, since, k.log())
    user = f"system:serviceaccount:{ns}:{viewer}"
    seen = requests_of(cluster.cp.audit_log, user, looked)
    assert {(e.verb, e.resource) for e in seen} >= {
        ("get", "deployments"),
        ("get", "leases"),
        ("list", "configmaps"),
        ("list", "nodes"),
    }
    assert {(e.verb, e.resource) for e in seen} >= {
        ("watch", "nodes"),
        ("watch", "configmaps"),
        ("watch", "leases"),
    }
    assert {e.verb for e in seen} <= {"get", "list", "watch"}
    assert forbidden(cluster.cp.audit_log, user, looked) == []

    # helm uninstall removes everything it installed, cluster-scoped objects included.
    helm(kc, "uninstall", "kumaco", "-n", ns)
    for kind, name in (("clusterrole", "kumaco"), ("clusterrolebinding", "kumaco-viewer")):
        gone = kubectl(kc, "get", kind, name, check=False)
        assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stdout
