"""Kubernetes objects as the API server returns them (JSON dicts), for the unit tests.

A Node with its conditions (:func:`node`), a maintenance-window ConfigMap (:func:`cm`),
a Pod and a PodDisruptionBudget (:func:`pod`, :func:`pdb`), and the names they share
(the condition types, the namespace and selector of the windows, the field manager).
Builders only: each call returns a fresh dict, nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NS = "maintenance"


SELECTOR = "kured.dev/maintenance-window"


MANAGER = "kumaco/test"


UM, MIP, REQ, BLOCK = (
    "kured.dev/UnderMaintenance",
    "MaintenanceInProgress",
    "kured.dev/RebootRequired",
    "kured.dev/RebootInhibited",
)


def cm(
    name: str,
    selector: str = "",
    start: str = "0 2 * * *",
    uid: str = "",
    duration: str = "3h",
    **extra: str,
) -> dict[str, Any]:
    """A window ConfigMap; ``extra``: its optional keys (``timeZone``, ``notAfter``, ...)."""
    return {
        "metadata": {"namespace": NS, "name": name, "uid": uid or f"uid-{name}"},
        "data": {"startTime": start, "duration": duration, "nodeSelector": selector, **extra},
    }


def node(
    name: str, rv: str, labels: Mapping[str, str] | None = None, **conds: str
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": rv, "labels": dict(labels or {})},
        "status": {
            "conditions": [
                {
                    "type": t.replace("__", "/").replace("_", "."),
                    "status": s,
                    "lastTransitionTime": "2026-11-01T00:00:00Z",
                }
                for t, s in conds.items()
            ]
        },
    }


def um_true(window: str = "maintenance/w") -> str:
    return f"maintenance window {window} open until 2026-12-01T05:00:00Z"


def pod(
    name: str = "p",
    *,
    ns: str = "shop",
    node: str | None = "n1",
    labels: dict[str, str] | None = None,
    phase: str | None = "Running",
    ready: bool = True,
    owner: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    terminating: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {"app": "db"}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if annotations is not None:
        meta["annotations"] = annotations
    if terminating:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": str(ready)}]}
    if phase is not None:
        status["phase"] = phase
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": {} if node is None else {"nodeName": node},
        "status": status,
    }


def pdb(
    name: str = "db",
    *,
    ns: str = "shop",
    selector: Any = None,
    allowed: int = 0,
    generation: int = 1,
    observed: int = 1,
    current: int = 2,
    desired: int = 2,
    policy: str | None = None,
    disrupted: int = 0,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "db"}} if selector is None else selector
    }
    if selector == "null":
        spec["selector"] = None
    if policy is not None:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns, "generation": generation},
        "spec": spec,
        "status": {
            "disruptionsAllowed": allowed,
            "observedGeneration": observed,
            "currentHealthy": current,
            "desiredHealthy": desired,
            "disruptedPods": {f"p{i}": "2027-01-01T00:00:00Z" for i in range(disrupted)},
        },
    }


DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": True}
