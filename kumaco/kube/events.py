"""Kubernetes Events for the maintenance manager, on the window ConfigMap, in its namespace.

Contract: :class:`EventRecorder` writes ``events.k8s.io/v1`` Events with
``reportingController: kured.dev/kumaco`` and ``reportingInstance`` set to
the replica's identity. It needs only ``create`` and ``patch`` on events.

Names are deterministic: a digest of the kumaco instance (the Lease name),
the ConfigMap's uid and what the event is about. That gives, without reading
any Event back:

* aggregation -- a repeated identical event (the same ConfigMap loaded or
  rejected again, e.g. after a restart) finds its name taken (409) and bumps
  the Event's ``series`` (count and lastObservedTime) instead of adding one;
* once per occurrence -- "window started/ended" carries the occurrence's
  start in its name, so a new leader re-announcing an occurrence the old
  leader already announced finds the name taken and stays silent.

Events are best effort: a failure is logged and counted, never raised. Their
POST and PATCH go through :class:`~kumaco.kube.resources.Resources` (on
:meth:`~kumaco.kube.client.Kube.request`), which retries a write only where it
cannot have reached the API server (no connection, 429): an
Event whose answer was lost is not sent again -- a re-sent aggregation PATCH would
count one occurrence twice, a re-sent POST would turn into an aggregation.
Events expire with the API server's ``--event-ttl`` (1h by default); after
that a repeat starts a new Event.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kumaco.core.errors import error_text
from kumaco.core.windows.configmaps import WindowConfigMap
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.resources import Resources

log = logging.getLogger("kumaco.kube.events")

#: The ``reportingController`` of kumaco's Events.
REPORTING_CONTROLLER = "kured.dev/kumaco"
NORMAL, WARNING = "Normal", "Warning"
LOADED, INVALID, STARTED, ENDED = "WindowLoaded", "WindowInvalid", "WindowStarted", "WindowEnded"
MAX_NOTE = 1024


@dataclass(frozen=True)
class EventSpec:
    """One thing to tell the maintenance manager about one window ConfigMap."""

    regarding: WindowConfigMap
    reason: str
    action: str
    note: str
    type: str = NORMAL
    #: What makes two events "the same" (with the reason and the ConfigMap uid).
    key: str = ""
    #: Repeats bump the series (True) or are dropped as already announced (False).
    aggregate: bool = True


def _micro(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    """Create-or-aggregate Events through :class:`~kumaco.kube.resources.Resources`."""

    def __init__(
        self,
        api: Resources,
        instance: str,
        identity: str,
        controller: str,
        wall: Callable[[], dt.datetime],
        on_emit: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        self.api = api
        self.instance = instance
        self.identity = identity[:128]
        self.controller = controller
        self.wall = wall
        self.on_emit = on_emit
        self._counts: dict[str, int] = {}

    def name_of(self, spec: EventSpec) -> str:
        digest = hashlib.sha256(
            f"{self.instance}\0{spec.regarding.uid}\0{spec.reason}\0{spec.key}".encode()
        ).hexdigest()[:16]
        return f"{spec.regarding.name[:200]}.{digest}"

    def emit(self, spec: EventSpec) -> bool:
        """Create the Event, or aggregate into the existing one; True if anything was written."""
        ns = spec.regarding.namespace
        name = self.name_of(spec)
        now = _micro(self.wall())
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"app.kubernetes.io/managed-by": "kumaco"},
            },
            "eventTime": now,
            "reportingController": self.controller,
            "reportingInstance": self.identity,
            "action": spec.action,
            "reason": spec.reason,
            "note": spec.note[:MAX_NOTE],
            "type": spec.type,
            "regarding": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "namespace": ns,
                "name": spec.regarding.name,
                "uid": spec.regarding.uid,
            },
        }
        try:
            self.api.create_event(ns, body)
            self._counts[name] = 1
        except ApiError as exc:
            if exc.status != 409:
                return self._failed(spec, exc)
            if not spec.aggregate:
                return False  # already announced (by us or a previous leader)
            return self._aggregate(spec, name, now)
        except TransportError as exc:
            return self._failed(spec, exc)
        self._emitted(spec)
        return True

    def _aggregate(self, spec: EventSpec, name: str, now: str) -> bool:
        ns = spec.regarding.namespace
        try:
            count = self._counts.get(name)
            if count is None:
                # First repeat seen by this process: an empty merge patch changes nothing
                # and answers with the Event, so the count is learnt with patch rights only.
                current = self.api.patch_event(ns, name, {})
                series = (current or {}).get("series") or {}
                count = int(series.get("count") or 1)
            patch = {
                "series": {"count": count + 1, "lastObservedTime": now},
                "note": spec.note[:MAX_NOTE],
            }
            self.api.patch_event(ns, name, patch)
            self._counts[name] = count + 1
        except (ApiError, TransportError) as exc:
            return self._failed(spec, exc)
        self._emitted(spec)
        return True

    def _emitted(self, spec: EventSpec) -> None:
        self.on_emit(spec.reason)
        log.info(
            "event",
            extra={
                "reason": spec.reason,
                "window": spec.regarding.key,
                "namespace": spec.regarding.namespace,
                "note": spec.note[:200],
            },
        )

    @staticmethod
    def _failed(spec: EventSpec, exc: Exception) -> bool:
        log.warning(
            "could not record an event",
            extra={"reason": spec.reason, "window": spec.regarding.key, "error": error_text(exc)},
        )
        return False
