"""The fleet run's own logic, without a cluster: cgroup files read, verdicts, the record kept.

tools/cluster_fleet.py and tests/support/env/clusterfleet.py measure kumaco's pods on the real
cluster (tests/e2e/test_cluster_fleet.py); here, what they compute from what they read: a
container's memory from its cgroup v1 files, an OOM kill or restart found in a pod's status or
its cgroup, the resources patch, and a run replacing the run of its size in the record.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import yaml

from tests.support.env.cluster import Cluster
from tests.support.env.clusterfleet import ContainerMemory, oom_kills, restarts
from tools.cluster_fleet import BASE_RESOURCES, FleetRun, keep, resources_patch

MIB = 1024 * 1024


def _cgroup(path: Path, *, usage: int, inactive: int, rss: int, oom: int = 0) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (path / "memory.max_usage_in_bytes").write_text(f"{usage + 10 * MIB}\n")
    (path / "memory.limit_in_bytes").write_text(f"{256 * MIB}\n")
    (path / "memory.failcnt").write_text("0\n")
    (path / "memory.stat").write_text(
        f"cache 5\nrss {rss}\ntotal_rss {rss}\ntotal_rss_huge 0\ntotal_inactive_file {inactive}\n"
    )
    (path / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom}\n")
    return path


def test_a_container_s_memory_is_read_from_its_cgroup_files(tmp_path: Path) -> None:
    cg = _cgroup(tmp_path / "c", usage=80 * MIB, inactive=20 * MIB, rss=50 * MIB)
    m = ContainerMemory("p", cg)
    m.sample()
    (cg / "memory.usage_in_bytes").write_text(f"{70 * MIB}\n")
    m.sample()
    m.finish()
    assert m.peak_working_set_mib == 60.0  # usage less inactive file pages, the peak kept
    assert m.peak_rss_mib == 50.0
    assert m.max_usage_mib == 90.0 and m.limit_mib == 256.0
    assert m.samples == 2 and m.failcnt == 0 and m.oom_kills == 0


def test_oom_kills_are_read_from_oom_control(tmp_path: Path) -> None:
    assert oom_kills(_cgroup(tmp_path / "a", usage=1, inactive=0, rss=1, oom=2)) == 2
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    assert oom_kills(tmp_path / "b") == 0  # a kernel that keeps no count


def _pod(name: str, uid: str, restart_count: int = 0, reason: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"name": "kumaco", "restartCount": restart_count}
    if reason:
        status["lastState"] = {"terminated": {"reason": reason, "exitCode": 137}}
    return {
        "metadata": {"name": name, "uid": uid},
        "spec": {"nodeName": "kumaco-real-1"},
        "status": {"containerStatuses": [status]},
    }


def _run(tmp_path: Path, after: list[dict[str, Any]]) -> FleetRun:
    cluster = cast(Cluster, SimpleNamespace(real=[object(), object()]))
    run = FleetRun(cluster, 10, *BASE_RESOURCES)
    run.pods = [_pod("a", "1"), _pod("b", "2")]
    run.pods_after = after
    run.leader = "a"
    for name in ("a", "b"):
        m = ContainerMemory(name, _cgroup(tmp_path / name, usage=MIB, inactive=0, rss=MIB))
        m.finish()
        run.memory.append(m)
    return run


def test_an_oom_kill_or_a_restart_is_not_none(tmp_path: Path) -> None:
    clean = _run(tmp_path, [_pod("a", "1"), _pod("b", "2")])
    assert clean.oom() == []
    assert clean.record()["oom"] == "none" and clean.record()["restarts"] == 0
    assert clean.record()["nodes"] == 12
    killed = _run(tmp_path, [_pod("a", "1", 1, "OOMKilled"), _pod("b", "2")])
    assert killed.oom() == ["a/kumaco: restartCount 1, last termination OOMKilled"]
    assert killed.record()["restarts"] == 1
    replaced = _run(tmp_path, [_pod("a", "1"), _pod("c", "3")])
    assert replaced.oom() == ["the pods changed: ['2', '3']"]
    assert restarts(_pod("x", "9", 2, "Error")) == [("kumaco", 2, "Error")]


def test_the_resources_patch_sets_request_and_limit() -> None:
    assert resources_patch(*BASE_RESOURCES) == ""
    doc = yaml.safe_load(resources_patch("256Mi", "384Mi"))
    ops = yaml.safe_load(doc["patches"][0]["patch"])
    assert {o["path"].rsplit("/", 2)[-2]: o["value"] for o in ops} == {
        "requests": "256Mi",
        "limits": "384Mi",
    }


def test_a_run_replaces_the_run_of_its_size(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    keep(out, {"fleet_nodes": 5000, "v": 1}, "prog")
    keep(out, {"fleet_nodes": 1000, "v": 2}, "prog")
    doc = keep(out, {"fleet_nodes": 5000, "v": 3}, "prog")
    assert doc == json.loads(out.read_text())
    assert [(r["fleet_nodes"], r["v"]) for r in doc["runs"]] == [(1000, 2), (5000, 3)]
