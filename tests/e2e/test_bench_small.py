"""The benchmark's small form (100 nodes, 5 windows) on its own control plane, as CI runs it.

It keeps hack/bench.py (tests/support/bench.py) working and asserts the invariants that are counts,
not times, read from kube-apiserver's own apiserver_request_total: exactly one
status write per node at start-up and per window opening, and zero writes
(other than Lease renewals) and zero LISTs during a quiet period.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.bench import Scale, check, run_scale


def test_small_benchmark_keeps_its_count_invariants(tmp_path: Path) -> None:
    res = run_scale(Scale(nodes=100, windows=5, repeats=1, quiet=30), tmp_path)
    print(
        "bench (small):",
        {k: res[k] for k in ("open_seconds", "close_seconds", "open_ratio_to_floor", "leader")},
    )
    assert check(res) == []
    assert res["startup"]["requests"]["PATCH nodes/status"] == 100
    assert res["opening_requests"]["PATCH nodes/status"] == 100
    assert not any(k in ("LIST nodes", "LIST configmaps") for k in res["quiet"]["requests"])
