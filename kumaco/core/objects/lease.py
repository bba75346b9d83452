"""The coordination.k8s.io/v1 Lease of leader election, as data: read and written here only.

Contract: pure functions, no I/O.

* :func:`parse_lease` reads the election's part of a Lease (:class:`LeaseRecord`) from
  what the server returned, and never raises on what is stored there: a missing or odd
  ``spec``, a holder or time that is not a string, or a count that is not an integer
  reads as empty (``""``, ``None``, ``0``). A Lease whose duration reads 0 is expired
  after a second (the election's rule), so a damaged Lease is taken over, not obeyed.
* :func:`lease_object` builds the whole object a create (POST) or an update (PUT, with
  the ``resourceVersion`` it was read at) sends; :func:`released` the spec that gives
  the Lease up (no holder, a one-second duration, as client-go's ``ReleaseOnCancel``).
* :func:`micro_time` writes a ``MicroTime`` (RFC 3339, microseconds, UTC).

The election (:mod:`kumaco.kube.election`) and ``kubectl kumaco status``
(:mod:`kumaco.views.status`) both read Leases through :func:`parse_lease`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LeaseRecord", "lease_object", "micro_time", "parse_lease", "released"]

API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class LeaseRecord:
    """The election-relevant part of a Lease's spec."""

    holder: str
    duration: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int


def _count(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_lease(obj: Mapping[str, Any] | None) -> LeaseRecord:
    """The election's part of ``obj`` (a Lease as the server returned it); see the contract."""
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    return LeaseRecord(
        holder=_text(spec.get("holderIdentity")) or "",
        duration=_count(spec.get("leaseDurationSeconds")),
        acquire_time=_text(spec.get("acquireTime")),
        renew_time=_text(spec.get("renewTime")),
        transitions=_count(spec.get("leaseTransitions")),
    )


def micro_time(epoch_seconds: float) -> str:
    """``epoch_seconds`` as a Kubernetes ``MicroTime``."""
    return dt.datetime.fromtimestamp(epoch_seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def released(transitions: int, now: str) -> LeaseRecord:
    """The spec that gives a Lease up: no holder, a one-second duration."""
    return LeaseRecord("", 1, now, now, transitions)


def lease_object(
    name: str, namespace: str, record: LeaseRecord, resource_version: str | None = None
) -> dict[str, Any]:
    """The Lease a POST (no ``resource_version``) or a PUT sends, with ``record`` as its spec."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {
        "apiVersion": API_VERSION,
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": record.holder or None,
            "leaseDurationSeconds": record.duration,
            "acquireTime": record.acquire_time,
            "renewTime": record.renew_time,
            "leaseTransitions": record.transitions,
        },
    }
