"""The transport benchmark's short form (hack/bench_transport.py), as CI runs it.

It keeps the benchmark working and prints its ratio; it asserts no time (this
machine is shared): only that every write of both clients landed.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import RUN_LABEL, Api, unique
from tools.transport_bench import measure


def test_transport_benchmark_short_form(control_plane: ControlPlane, kubeconfig_path: Path) -> None:
    raw = Api(control_plane)
    run = unique("tbench")
    names = [f"{run}-{i}" for i in range(5)]
    for n in names:
        raw.node(n, {RUN_LABEL: run})
    result = measure(control_plane, kubeconfig_path, names, writes=200, rounds=2, warmup=20)
    print("transport bench (short):", result["median_ms"], "ratio", result["median_ratio"])
    assert result["median_ratio"] > 0
    conds = raw.conditions(names[0])
    assert conds["example.com/Bench"]["reason"] == "Bench"
