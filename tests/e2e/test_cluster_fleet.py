"""The base's memory limit holds with kumaco's pods over a kwok fleet on the real cluster.

The short form of ``python hack/cluster_fleet.py`` (tools/cluster_fleet.py's contract): the
real cluster's two real nodes and :data:`FLEET` kwok nodes around them (kwok playing their
kubelets against the real cluster's API server: Leases, 5-minute status heartbeats; tainted,
so nothing is scheduled there), one window open on every node before kumaco starts, kumaco
installed as a deployer does (delegated overlay, ``components/ha``, the base's resources:
request 128Mi, limit 256Mi). Judged from the kubelet's side: every node gets
``kured.dev/UnderMaintenance=True`` from the leader; the three replicas run on the real nodes
only; no container is OOM-killed or restarted (``restartCount`` 0, no last termination, no
OOM kill in the container's memory cgroup) and each container's high-water mark
(``memory.max_usage_in_bytes``, its whole life) stays under the 256 MiB limit the cgroup
enforces.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.env.cluster import Cluster
from tests.support.env.clusterfleet import FLEET_TAINT, list_nodes
from tests.support.judges.figures import Figures
from tools.cluster_fleet import BASE_RESOURCES, FleetRun, fleet_run

pytestmark = pytest.mark.real_server("the real cluster's kube-apiserver runs in its fixture")

FLEET = 1500  # kwok nodes: the short form; hack/cluster_fleet.py --nodes 5000 the long one
LIMIT_MIB = 256  # the base's memory limit (kustomize/base/deployment.yaml)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetRun]:
    work = tmp_path_factory.mktemp("cluster-fleet")
    cluster = Cluster(nodes=2, keep_logs=work / "logs")
    cluster.start()
    try:
        with fleet_run(cluster, work, FLEET, hold=15) as measured:
            yield measured
    finally:
        cluster.stop()


def test_every_node_gets_under_maintenance_from_the_leader(run: FleetRun) -> None:
    total = FLEET + len(run.cluster.real)
    print(
        f"{total} nodes UnderMaintenance=True {run.timings['all_under_maintenance_seconds']:.0f}s"
    )
    assert run.under_maintenance == (total, total)


def test_kumaco_runs_on_the_real_nodes_only(run: FleetRun) -> None:
    assert run.cluster.cp is not None
    real = {n.name for n in run.cluster.real}
    assert len(run.pods_after) == 3
    assert {p["spec"]["nodeName"] for p in run.pods_after} == real
    fleet = [n for n in list_nodes(run.cluster.cp) if n["metadata"]["name"] not in real]
    assert len(fleet) == FLEET
    assert all(FLEET_TAINT in n["spec"].get("taints", []) for n in fleet)


def test_the_base_memory_limit_holds(run: FleetRun, figures: Figures) -> None:
    record = run.record()
    assert (run.request, run.limit) == BASE_RESOURCES
    for m in run.memory:
        print(
            f"{m.pod}{' (leader)' if m.pod == run.leader else ''}: high-water "
            f"{m.max_usage_mib:.1f} MiB, peak working set {m.peak_working_set_mib:.1f} MiB, "
            f"limit {m.limit_mib:.0f} MiB, failcnt {m.failcnt}, OOM kills {m.oom_kills}"
        )
        assert m.limit_mib == LIMIT_MIB  # the cgroup enforces the base's limit
        assert m.samples > 0
        assert m.max_usage_mib < LIMIT_MIB
        assert m.oom_kills == 0
    assert run.sampler_errors == []
    assert record["oom"] == "none", record["oom"]
    assert record["restarts"] == 0
    figures.record(
        "cluster_fleet",
        nodes=record["nodes"],
        leader_max_usage_mib=record["leader"]["max_usage_mib"],
        follower_max_usage_mib=record["follower_max_usage_mib"],
        limit_mib=LIMIT_MIB,
    )
