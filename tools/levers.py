"""The performance levers, measured: what each would save per watch event, per opening, per node.

Contract: in-process micro-benchmarks over a realistic Node as the API server
sends it (:func:`realistic_node`: ~50 images, a dozen labels, kubelet's and
node-problem-detector's conditions, the managedFields of four writers), each
variant timed interleaved with the others in the same process (best of
several rounds), so the ratios hold on a noisy machine:

* the whole event path for a node watch event (``json.loads``,
  :meth:`NodeStore.trim`, :meth:`NodeStore.apply`; key ``today``: what kumaco's
  watch ran until the 50,000-node work), against
  - cutting the image list out before decoding (``drop_images``: the LIST and,
    since then, the watch do it),
  - recognising the echo of kumaco's own write from its first bytes and
    skipping it (:meth:`NodeStore.known`, the echo-skip: removed once at 5,000
    nodes, wired again for 50,000);
* compact node views (interned strings, shared owner maps,
  :mod:`kumaco.core.objects.nodes`): bytes kept per node and the per-event cost, with
  the interning off and on (a store given ``Sharing(interning=False)``: the
  product's own seam, nothing patched);
* protobuf (:func:`protobuf_list_cost`): the API server's CPU and the bytes of
  one LIST of every node in JSON and in ``application/vnd.kubernetes.protobuf``.

``python hack/bench.py --levers`` prints them; docs/benchmarks.md ("Levers")
turns them into decisions.
"""

from __future__ import annotations

import gc
import json
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from kumaco.controller.stores import NodeStore
from kumaco.core.objects.nodes import Sharing
from kumaco.kube.wire import drop_images
from tests.support.builders.policies import policy_of
from tests.support.env.controlplane import NPD_CONDITIONS, ControlPlane, node_object

UM = "kured.dev/UnderMaintenance"
MIP = "MaintenanceInProgress"
OWNED = (UM, MIP)
MANAGER = "kumaco/kumaco"


def _fields(types: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {".": {}, "f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}}
    entry["f:message"] = {}
    entry |= {"f:reason": {}, "f:status": {}, "f:type": {}}
    return {"f:status": {"f:conditions": {f'k:{{"type":"{t}"}}': entry for t in types}}}


def realistic_node(i: int, resource_version: int) -> dict[str, Any]:
    """A Node as a watch event carries it after kwok, NPD and kumaco wrote to it."""
    node = node_object(i, random.Random(i), npd=True)
    stamp = "2026-12-01T03:00:35Z"
    old = node["metadata"]
    # The API server writes metadata in this order: name and resourceVersion come first.
    meta = node["metadata"] = {
        "name": old["name"],
        "uid": f"00000000-0000-4000-8000-{i:012d}",
        "resourceVersion": str(resource_version),
        "creationTimestamp": stamp,
        "labels": old["labels"],
    }
    labels: dict[str, Any] = {f"f:{k}": {} for k in meta["labels"]}
    meta["managedFields"] = [
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": stamp,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, **labels}}},
        },
        *[
            {
                "manager": manager,
                "operation": "Update",
                "apiVersion": "v1",
                "time": stamp,
                "fieldsType": "FieldsV1",
                "fieldsV1": _fields(types),
                "subresource": "status",
            }
            for manager, types in (
                (MANAGER, [UM, MIP]),
                ("kwok", ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]),
                ("node-problem-detector", [t for t, *_ in NPD_CONDITIONS]),
            )
        ],
    ]
    conds = node["status"]["conditions"]
    for ctype in (UM, MIP):
        conds.append(
            {
                "type": ctype,
                "status": "False",
                "reason": "OutsideWindow" if ctype == UM else "NotUnderMaintenance",
                "message": "no maintenance window is open",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        )
    return node


def _event(node: dict[str, Any]) -> bytes:
    return b'{"type":"MODIFIED","object":' + json.dumps(node, separators=(",", ":")).encode() + b"}"


def _best_us(
    variants: dict[str, Callable[[], object]], n: int = 3000, rounds: int = 5
) -> dict[str, float]:
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n * 1e6)
    return {k: round(v, 1) for k, v in best.items()}


def event_costs() -> dict[str, Any]:
    """Microseconds of kumaco's CPU per node watch event, by path (see the module docstring)."""
    node = realistic_node(500, 1000)
    line = _event(node)
    store = NodeStore(owned=OWNED, manager=MANAGER)
    store.replace([store.trim(node)])  # the echo: the store already has this version
    plain = NodeStore(owned=OWNED, manager=MANAGER, sharing=Sharing(interning=False))
    plain.replace([plain.trim(node)])

    def today() -> None:
        store.apply("MODIFIED", store.trim(json.loads(line)["object"]))

    def shrunk() -> None:
        store.apply("MODIFIED", store.trim(json.loads(drop_images(line))["object"]))

    def echo_skipped() -> None:
        if store.known(line) is None:
            today()

    def no_intern() -> None:
        plain.apply("MODIFIED", plain.trim(json.loads(line)["object"]))

    costs = _best_us(
        {
            "decode_only": lambda: json.loads(line),
            "today": today,
            "drop_images": shrunk,
            "echo_skipped": echo_skipped,
            "interning_off": no_intern,
        }
    )
    return {
        "event_bytes": len(line),
        "event_bytes_without_images": len(drop_images(line)),
        "us": costs,
    }


def store_bytes_per_node(count: int = 5000) -> dict[str, int]:
    """Bytes a NodeStore keeps per realistic node: interning off, on, and keeping only the
    conditions the planner reads (as the controller does).
    """
    raws = [drop_images(_event(realistic_node(i, 1000 + i))) for i in range(count)]
    from kumaco.controller.stores import planner_conditions

    keep = planner_conditions(policy_of(require=("kured.dev/RebootRequired",)))
    out: dict[str, int] = {}
    for label, on, kept_types in (
        ("interning_off", False, None),
        ("interning_on", True, None),
        ("interning_on_planner_conditions_only", True, keep),
    ):
        gc.collect()
        tracemalloc.start()
        store = NodeStore(
            owned=OWNED, manager=MANAGER, keep=kept_types, sharing=Sharing(interning=on)
        )
        store.replace([store.trim(json.loads(r)["object"]) for r in raws])
        gc.collect()
        kept, _peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del store
        out[label] = round(kept / count)
    return out


def protobuf_list_cost(cp: ControlPlane, pid: int, rounds: int = 3) -> dict[str, Any]:
    """The API server's CPU seconds and the bytes of one LIST of every node, JSON vs protobuf."""
    from tools.bench import proc_stats

    out: dict[str, Any] = {}
    for label, accept in (
        ("json", "application/json"),
        ("protobuf", "application/vnd.kubernetes.protobuf"),
    ):
        cpu, size = [], 0
        for _ in range(rounds):
            c0 = proc_stats(pid)["cpu_seconds"]
            size = 0
            path = "/api/v1/nodes?limit=500"
            conn = cp.connection()
            try:
                while True:
                    conn.request("GET", path, headers={"Accept": accept})
                    resp = conn.getresponse()
                    body = resp.read()
                    size += len(body)
                    cont = _continue_token(body, accept)
                    if not cont:
                        break
                    path = f"/api/v1/nodes?limit=500&continue={cont}"
            finally:
                conn.close()
            cpu.append(proc_stats(pid)["cpu_seconds"] - c0)
        out[label] = {"apiserver_cpu_seconds": round(min(cpu), 2), "bytes": size}
    return out


def _continue_token(body: bytes, accept: str) -> str:
    if accept == "application/json":
        return str(json.loads(body)["metadata"].get("continue") or "")
    # A protobuf List's continue token is the only base64 token in its ListMeta; find it
    # without protobuf types (it is an opaque printable string after field 2 of ListMeta).
    marker = body.find(b"eyJ")  # base64 of '{"' -- continue tokens are base64 JSON
    if marker < 0:
        return ""
    end = marker
    while end < len(body) and (chr(body[end]).isalnum() or chr(body[end]) in "-_="):
        end += 1
    return body[marker:end].decode()


def levers(cp: ControlPlane | None = None, apiserver_pid: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"event": event_costs(), "store": store_bytes_per_node()}
    if cp is not None and apiserver_pid is not None:
        out["protobuf_list"] = protobuf_list_cost(cp, apiserver_pid)
    return out


def lever_benchmarks(nodes: int) -> dict[str, Any]:
    """``hack/bench.py --levers NODES``: the micro-benchmarks, and a LIST on a fresh control plane."""
    import tempfile
    from pathlib import Path

    from tests.support.env.controlplane import ensure_assets, seed_nodes

    with tempfile.TemporaryDirectory(prefix="kumaco-levers-") as tmp:
        cp = ControlPlane(ensure_assets(), log_dir=Path(tmp))
        cp.start()
        try:
            seed_nodes(cp, nodes, npd=True)
            assert cp.apiserver is not None
            out = levers(cp, cp.apiserver.pid)
        finally:
            cp.stop()
    out["protobuf_list"]["nodes"] = nodes
    return out
