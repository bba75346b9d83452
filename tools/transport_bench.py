"""Client CPU per status write: kumaco's transport against the plainest client (the floor).

Contract: :func:`measure` sends small strategic-merge PATCHes to ``nodes/<n>/status``
on a real API server (a condition flipping True/False over ``nodes`` nodes, so each
is a real write whose ~12 KB answer is read whole), one thread, keep-alive, TLS with
the kubeconfig's client certificate, with two clients in turn each round (order
rotated): ``kumaco`` -- :meth:`kumaco.kube.client.Kube.request_raw` of whichever
kumaco is imported (the one in the tree, or an older one put first on ``sys.path``
by ``hack/bench_transport.py --kumaco-src``) -- and ``floor`` -- a bare
``http.client.HTTPSConnection``. Client CPU is ``time.process_time()`` over the
writes of a round (after a warm-up); the API server and etcd run in other
processes. Returns the settings, the CPU milliseconds per write of each client per
round, and their ratio per round: compare ratios (the machine is shared and noisy).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.env.controlplane import ControlPlane

STRATEGIC_MERGE = "application/strategic-merge-patch+json"


def _body(i: int) -> bytes:
    status = "True" if i % 2 else "False"
    condition = {"type": "example.com/Bench", "status": status, "reason": "Bench", "message": "x"}
    return json.dumps({"status": {"conditions": [condition]}}, separators=(",", ":")).encode()


def _clients(
    cp: ControlPlane, kubeconfig: Path, names: list[str]
) -> dict[str, Callable[[int], int]]:

    from kumaco.kube.client import Kube
    from kumaco.kube.config import load_configuration

    paths = [f"/api/v1/nodes/{n}/status" for n in names]
    bodies = [_body(0), _body(1)]
    kube = Kube(load_configuration(str(kubeconfig)), "kumaco-bench/transport")

    def kumaco(i: int) -> int:
        data = kube.request_raw(
            "PATCH", paths[i % len(paths)], body=bodies[i % 2], content_type=STRATEGIC_MERGE
        )
        return len(data)

    conn = cp.connection()
    headers = {
        "Accept": "application/json",
        "Content-Type": STRATEGIC_MERGE,
        "User-Agent": "kumaco-bench/floor",
    }

    def floor(i: int) -> int:
        conn.request("PATCH", paths[i % len(paths)], body=bodies[i % 2], headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"PATCH answered {resp.status}: {data[:200]!r}")
        return len(data)

    return {"kumaco": kumaco, "floor": floor}


def measure(
    cp: ControlPlane,
    kubeconfig: Path,
    names: list[str],
    writes: int,
    rounds: int,
    warmup: int = 100,
) -> dict[str, Any]:
    """See the module contract."""
    import kumaco

    clients = _clients(cp, kubeconfig, names)
    for fn in clients.values():
        for i in range(warmup):
            fn(i)
    per_round: dict[str, list[float]] = {name: [] for name in clients}
    order = list(clients)
    for r in range(rounds):
        for name in order[r % 2 :] + order[: r % 2]:
            fn = clients[name]
            t0 = time.process_time()
            for i in range(writes):
                fn(i)
            per_round[name].append(round((time.process_time() - t0) / writes * 1000, 4))
    ratios = [round(k / f, 3) for k, f in zip(per_round["kumaco"], per_round["floor"], strict=True)]
    return {
        "settings": {"nodes": len(names), "writes_per_round": writes, "rounds": rounds},
        "kumaco_source": str(Path(kumaco.__file__).resolve().parent),
        "python": platform.python_version(),
        "urllib3": importlib.metadata.version("urllib3"),
        "cpu_ms_per_write": per_round,
        "median_ms": {k: round(statistics.median(v), 4) for k, v in per_round.items()},
        "ratio_kumaco_to_floor": ratios,
        "median_ratio": round(statistics.median(ratios), 3),
    }
