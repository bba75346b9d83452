"""The benchmark's short forms, each on its own control plane, as CI runs them.

They keep hack/bench.py (tools/bench.py) working and assert the
invariants that are counts, not times, read from the API server's audit log
(kumaco's user agent): at most one successful status write per node at
start-up and per window opening, and -- while no window changes -- no LIST and
no write except one to each node that joined.

* Nodes that never change by themselves (100 nodes, 5 windows).
* A cluster that lives (200 nodes): kwok's kubelets report status every 10 s
  and renew their Leases; node-problem-detector heartbeats every 10 s; reboots,
  relabelling and replacements compressed from a fleet's day (x600) -- about
  one of each every ten seconds.
* What ``--respect-pdbs`` costs (60 kwok nodes running 600 pods, a budget flipping every
  15 s): both modes measured, and kumaco's refusals checked against the budgets.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.env.kwok import KwokSettings
from tools.bench import Scale, check, conflicts, run_scale
from tools.churn import ChurnRates
from tools.pdbbench import Workload, pdb_cost


def _show(label: str, res: dict[str, object]) -> None:
    keys = ("open_seconds", "close_seconds", "open_ratio_to_floor", "steady", "openings")
    print(f"bench ({label}):", {k: res.get(k) for k in keys})


def test_small_benchmark_keeps_its_count_invariants(tmp_path: Path) -> None:
    res = run_scale(Scale(nodes=100, windows=5, repeats=1, quiet=30, floor_rounds=1), tmp_path)
    _show("static", res)
    assert check(res) == []
    assert res["startup"]["kumaco"]["PATCH nodes/status"] == 100
    [opening] = res["openings"]
    assert opening["kumaco"]["PATCH nodes/status"] == 100
    assert opening["kumaco_max_writes_per_node"] == 1
    steady = res["steady"]
    assert not any(k.startswith(("PATCH", "LIST")) for k in steady["kumaco"]), steady["kumaco"]


def test_small_benchmark_in_a_living_cluster(tmp_path: Path) -> None:
    churn = ChurnRates(npd_heartbeat=10, problem_seconds=10, reboot_seconds=5, scale=600)
    kwok = KwokSettings(status_period=10, lease_seconds=40, parallelism=4)
    sc = Scale(nodes=200, windows=5, repeats=1, quiet=30, floor_rounds=1, kwok=kwok, churn=churn)
    res = run_scale(sc, tmp_path)
    _show("living", res)
    assert check(res) == []
    steady = res["steady"]
    # The cluster lived while kumaco was quiet: heartbeats, NPD, reboots, relabelling, replacements.
    assert steady["churn"].get("npd-heartbeat", 0) > 200
    assert steady["churn"].get("reboot", 0) + steady["churn"].get("label", 0) > 0
    assert steady["heartbeat_age_seconds"]["max"] < 60
    # kumaco wrote only to the nodes that joined, once each; it listed nothing.
    assert steady["kumaco"].get("PATCH nodes/status", 0) == steady["kumaco_writes_to_added_nodes"]
    assert not any(k.startswith("LIST") for k in steady["kumaco"])
    [opening] = res["openings"]
    assert opening["kumaco_max_writes_per_node"] == 1
    # A 409 is a node that changed between kumaco's read and its write (a heartbeat landed):
    # each is re-read once (GET) and written again, so no node is written twice.
    gets = opening["kumaco"].get("GET one nodes", 0) + opening["kumaco"].get("GET one nodes 404", 0)
    assert gets <= conflicts({"requests": opening["kumaco"]}) + opening["deleted"] + 5
    print(
        "409s in the opening:", conflicts({"requests": opening["kumaco"]}), "of", opening["nodes"]
    )


def test_small_respect_pdbs_benchmark(tmp_path: Path) -> None:
    """hack/bench.py --respect-pdbs, small: 60 kwok nodes, 10 pods each, both modes measured.

    Counts, not times: the flag's leader refuses exactly the sampled nodes a budget
    refuses; while the workload lives, a budget flipping wakes it and not the other.
    """
    res = pdb_cost(Workload(60, pods_per_node=10), tmp_path, quiet=15, churn_per_second=0.5)
    print("bench (respect-pdbs):", {k: res.get(k) for k in ("off", "on", "ratios", "check")})
    assert "error" not in res, res["error"]
    check_ = res["check"]
    assert check_["disagreements"] == []
    assert 0 < check_["sample_refused"] < check_["sample"], "both kinds of node are sampled"
    assert res["on"]["churn"]["flipped"] >= 1 and res["on"]["steady_passes"] >= 1
    assert res["off"]["steady_passes"] == 0, "without the flag pods and budgets wake nobody"
    assert set(res["ratios"]) >= {"rss_mb", "peak_rss_mb", "startup_cpu_seconds"}
