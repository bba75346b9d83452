"""``--respect-pdbs`` offline, black-box through the installed ``kumaco`` script.

A hand-computed case: four nodes needing maintenance in one open window, at most two at
once, and the pods and budgets ``kubectl get pods,pdb -A -o yaml`` prints for them:

* n1 (the oldest request) runs ``shop/db-0``, covered by ``shop/db`` with no disruption
  allowed: refused, naming ``shop/db``;
* n2 runs a DaemonSet's pod and a mirror pod, both covered by ``kube-system/all`` (empty
  selector, nothing allowed): a drain skips them, so n2 is admitted;
* n3 runs an unready ``shop/web-1`` whose budget ``shop/web`` has no disruption left but
  a healthy application (currentHealthy 3 >= desiredHealthy 2), and ``other/db-0``, which
  ``shop/db`` (another namespace) does not cover: admitted;
* n4 runs ``shop/api-0``, covered by ``shop/api`` and ``shop/front``, each with room: the
  eviction API refuses a pod with two budgets, so n4 is refused, naming both.

So n2 and n3 take the two places; n1 and n4 wait with ``DisruptionBudgetExhausted``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.builders.cli import LABEL, NIGHTLY, REQ, cm, kumaco
from tests.support.builders.kubeobjects import DS, pdb, pod

AT = "2027-01-13T03:00:00Z"


def nodes(tmp: Path) -> Path:
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {
                "conditions": [
                    {"type": REQ, "status": "True", "lastTransitionTime": f"2027-01-0{i}T00:00:00Z"}
                ]
            },
        }
        for i in range(1, 5)
    ]
    path = tmp / "nodes.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def workloads(tmp: Path) -> Path:
    items: list[dict[str, Any]] = [
        pod("db-0", node="n1"),
        pod("agent-x", ns="kube-system", node="n2", labels={"app": "agent"}, owner=DS),
        pod(
            "kube-proxy-n2",
            ns="kube-system",
            node="n2",
            labels={"k8s-app": "kube-proxy"},
            annotations={"kubernetes.io/config.mirror": "abc"},
        ),
        pod("web-1", node="n3", labels={"app": "web"}, ready=False),
        pod("db-0", ns="other", node="n3"),
        pod("api-0", node="n4", labels={"app": "api", "tier": "front"}),
        pdb("db"),
        pdb("all", ns="kube-system", selector={}),
        pdb("web", selector={"matchLabels": {"app": "web"}}, current=3, desired=2),
        pdb(
            "api",
            selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["api"]}]},
            allowed=3,
        ),
        pdb("front", selector={"matchLabels": {"tier": "front"}}, allowed=1),
    ]
    for item in items:
        item["apiVersion"] = "policy/v1" if item["kind"] == "PodDisruptionBudget" else "v1"
    path = tmp / "workloads.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def args(tmp: Path, ceiling: str = "2") -> list[str]:
    w = tmp / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    both = str(workloads(tmp))
    return [
        *("plan", "--windows", str(w), "--nodes", str(nodes(tmp)), "--at", AT),
        *("--max-in-progress", ceiling, "--require-condition", REQ),
        *("--respect-pdbs", "--pods", both, "--pdbs", both),
    ]


def test_plan_respects_the_budgets_as_computed_by_hand(tmp_path: Path) -> None:
    done = kumaco(*args(tmp_path), "-o", "json")
    assert done.returncode == 0, done.stderr
    rows = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    got = {
        name: (r["maintenanceInProgress"], r["reason"], r["disruptionBudgets"])
        for name, r in rows.items()
    }
    assert got == {
        "n1": (False, "DisruptionBudgetExhausted", ["shop/db"]),
        "n2": (True, "MaintenanceAllowed", []),
        "n3": (True, "MaintenanceAllowed", []),
        "n4": (False, "DisruptionBudgetExhausted", ["shop/api", "shop/front"]),
    }
    assert rows["n1"]["message"] == (
        "draining it now would be refused by PodDisruptionBudget shop/db"
    )
    assert rows["n4"]["message"] == (
        "draining it now would be refused by PodDisruptionBudgets shop/api, shop/front"
    )
    assert rows["n1"]["countsToward"] == [] and rows["n1"]["ceiling"] is None
    text = kumaco(*args(tmp_path)).stdout.splitlines()
    assert text[0] == f"at {AT}; in progress 2 of at most 2"
    assert [line.split()[3] for line in text[2:]] == [
        "DisruptionBudgetExhausted",
        "MaintenanceAllowed",
        "MaintenanceAllowed",
        "DisruptionBudgetExhausted",
    ]
    assert text[2].endswith("refused by PDB shop/db")
    assert text[5].endswith("refused by PDB shop/api,shop/front")


def test_a_refused_node_takes_no_place_the_next_one_does(tmp_path: Path) -> None:
    done = kumaco(*args(tmp_path, ceiling="1"), "-o", "json")
    rows = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    assert [rows[n]["reason"] for n in ("n1", "n2", "n3", "n4")] == [
        "DisruptionBudgetExhausted",
        "MaintenanceAllowed",
        "ConcurrencyCeilingReached",
        "DisruptionBudgetExhausted",
    ]
    assert rows["n3"]["ceiling"] == {"name": "global", "limit": 1, "heldBy": ["n2"]}


def test_without_the_flag_the_budgets_are_not_read(tmp_path: Path) -> None:
    plain = [a for a in args(tmp_path) if a != "--respect-pdbs"]
    plain = plain[: plain.index("--pods")]
    rows = json.loads(kumaco(*plain, "-o", "json").stdout)["nodes"]
    assert [(r["name"], r["reason"]) for r in rows] == [
        ("n1", "MaintenanceAllowed"),
        ("n2", "MaintenanceAllowed"),
        ("n3", "ConcurrencyCeilingReached"),
        ("n4", "ConcurrencyCeilingReached"),
    ]


def test_forecast_keeps_the_budgets_as_they_are(tmp_path: Path) -> None:
    a = args(tmp_path)
    a[0] = "forecast"
    a[a.index("--at") : a.index("--at") + 2] = ["--from", AT, "--until", "2027-01-13T04:30:00Z"]
    done = kumaco(*a, "--maintenance-duration", "30m", "-o", "json")
    assert done.returncode == 1, done.stderr  # n1 and n4 never get a turn
    turns = {n["name"]: (n["admitted"], n["finished"]) for n in json.loads(done.stdout)["nodes"]}
    assert turns == {
        "n2": (AT, "2027-01-13T03:30:00Z"),
        "n3": (AT, "2027-01-13T03:30:00Z"),
        "n1": (None, None),
        "n4": (None, None),
    }


def test_bad_offline_input_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    full = args(tmp_path)
    no_pdbs = full[: full.index("--pdbs")]
    done = kumaco(*no_pdbs)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kumaco plan: --respect-pdbs: give --pdbs FILE offline (kubectl get pods,pdb -A -o "
        "yaml, to both --pods and --pdbs)\n"
    )
    no_flag = [a for a in full if a != "--respect-pdbs"]
    done = kumaco(*no_flag)
    assert (done.returncode, done.stderr) == (
        2,
        "kumaco plan: --pods and --pdbs are read only with --respect-pdbs\n",
    )
    only_nodes = [*full[: full.index("--pods")], "--pods", str(nodes(tmp_path)), "--pdbs", full[-1]]
    done = kumaco(*only_nodes)
    assert (done.returncode, done.stderr) == (
        2,
        f"kumaco plan: --pods {nodes(tmp_path)}: no Pod in it\n",
    )
    no_ceiling = [a for a in full if a not in ("--max-in-progress", "2")]
    done = kumaco(*no_ceiling)
    assert done.returncode == 2
    assert "--respect-pdbs, --require-condition: need --max-in-progress" in done.stderr
