"""The typed resource API of kumaco's I/O edge: the controller's requests, by what they act on.

Contract
--------
:class:`Resources` is everything the controller asks of the API server, in its
own terms: list and watch Nodes and window ConfigMaps (a :class:`Collection`; with
``--respect-pdbs`` also every Pod and PodDisruptionBudget),
get a Node, patch a Node's status, create and patch an Event. Callers never
build a path, a query string or a content type; :class:`KubeResources` is the
one place that does, on :class:`~kumaco.kube.client.Kube`. Each method is one
request on the wire, exactly as the caller would have sent it through
:class:`~kumaco.kube.client.Kube`:

* reads (:meth:`Resources.get_node`, a collection's LIST pages) are retried per
  :mod:`kumaco.kube.retry` for a GET;
* Events are POSTed (create) or merge-PATCHed (aggregate) through
  :meth:`Kube.request`, which retries a write only where it cannot have reached
  the server;
* :meth:`Resources.patch_node_status` is a strategic merge patch sent once
  (:meth:`Kube.request_raw`: the caller's write policy decides about retries),
  with the field manager and a server-side ``timeout`` in milliseconds equal to
  the client's, answering the raw bytes;
* a collection's watch is :meth:`Kube.watch` on its path and label selector.

:meth:`KubeResources.lease` is one Lease as a collection (``fieldSelector
metadata.name=NAME``, which RBAC's ``resourceNames`` can narrow), for a reader
that watches who leads (``kubectl kumaco status --watch``); it is not part of
:class:`Resources`, the controller's protocol.

A fake of :class:`Resources` (the controller's unit tests) records these calls
as typed actions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypedDict

from kumaco.kube.client import Kube
from kumaco.kube.wire import MERGE, STRATEGIC_MERGE

Page = tuple[list[dict[str, Any]], str | None]
Shrink = Callable[[bytes], bytes]


class Collection(Protocol):
    """One collection, narrowed by a label selector: what a reflector lists and watches."""

    def list_pages(self, page: int = 250, shrink: Shrink | None = None) -> Iterator[Page]:
        """LIST page by page; the last page carries the list's resourceVersion."""
        ...

    def list_all(self) -> tuple[list[dict[str, Any]], str]:
        """The whole LIST at once, and its resourceVersion."""
        ...

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        known: Callable[[bytes], str | None] | None = None,
        shrink: Shrink | None = None,
        silence: float = 130.0,
    ) -> Iterator[dict[str, Any]]:
        """Watch events from ``resource_version`` (see :meth:`Kube.watch`)."""
        ...


class Streamed(Collection, Protocol):
    """A :class:`Collection` that can also be read as a streaming list (``sendInitialEvents``)."""

    def stream(
        self, timeout_seconds: int, *, shrink: Shrink | None = None, silence: float = 130.0
    ) -> Iterator[dict[str, Any]]:
        """Every object as ``ADDED``, the ``k8s.io/initial-events-end`` bookmark, then changes."""
        ...


class Resources(Protocol):
    """What the controller needs of the API server (see the module contract)."""

    @property
    def timeout(self) -> float:
        """The longest a request may take (a write's own timeout never exceeds it)."""
        ...

    def nodes(self, label_selector: str = "") -> Collection: ...

    def configmaps(self, namespace: str, label_selector: str = "") -> Collection: ...

    def pods(self) -> Streamed:
        """Every Pod of the cluster (``--respect-pdbs``), listed by streaming."""
        ...

    def poddisruptionbudgets(self) -> Collection:
        """Every policy/v1 PodDisruptionBudget of the cluster (``--respect-pdbs``)."""
        ...

    def get_node(self, name: str) -> Any: ...

    def patch_node_status(
        self, name: str, body: dict[str, Any], *, field_manager: str, timeout: float
    ) -> bytes: ...

    def create_event(self, namespace: str, body: dict[str, Any]) -> Any: ...

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> Any: ...


class _Fields(TypedDict, total=False):
    """The field selector of a collection, passed on only when it has one."""

    field_selector: str


class KubeCollection:
    """A :class:`Collection` at ``path`` on :class:`Kube` (and a field selector, if given)."""

    def __init__(
        self, kube: Kube, path: str, label_selector: str, field_selector: str = ""
    ) -> None:
        self.kube = kube
        self.path = path
        self.label_selector = label_selector
        self.fields: _Fields = {"field_selector": field_selector} if field_selector else {}

    def list_pages(self, page: int = 250, shrink: Shrink | None = None) -> Iterator[Page]:
        return self.kube.list_pages(self.path, self.label_selector, page, shrink, **self.fields)

    def list_all(self) -> tuple[list[dict[str, Any]], str]:
        return self.kube.list_all(self.path, self.label_selector, **self.fields)

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        known: Callable[[bytes], str | None] | None = None,
        shrink: Shrink | None = None,
        silence: float = 130.0,
    ) -> Iterator[dict[str, Any]]:
        return self.kube.watch(
            self.path,
            resource_version,
            self.label_selector,
            timeout_seconds,
            known=known,
            shrink=shrink,
            silence=silence,
            **self.fields,
        )

    def stream(
        self, timeout_seconds: int, *, shrink: Shrink | None = None, silence: float = 130.0
    ) -> Iterator[dict[str, Any]]:
        return self.kube.watch(
            self.path,
            "",
            self.label_selector,
            timeout_seconds,
            shrink=shrink,
            silence=silence,
            initial_events=True,
            **self.fields,
        )


def _events(namespace: str) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"


class KubeResources:
    """:class:`Resources` on :class:`Kube`: the paths, queries and content types."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    @property
    def timeout(self) -> float:
        return self.kube.timeout

    def nodes(self, label_selector: str = "") -> KubeCollection:
        return KubeCollection(self.kube, "/api/v1/nodes", label_selector)

    def configmaps(self, namespace: str, label_selector: str = "") -> KubeCollection:
        return KubeCollection(
            self.kube, f"/api/v1/namespaces/{namespace}/configmaps", label_selector
        )

    def pods(self) -> KubeCollection:
        return KubeCollection(self.kube, "/api/v1/pods", "")

    def poddisruptionbudgets(self) -> KubeCollection:
        return KubeCollection(self.kube, "/apis/policy/v1/poddisruptionbudgets", "")

    def lease(self, namespace: str, name: str) -> KubeCollection:
        """The Lease ``namespace/name`` as a collection of at most one (see the contract)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return KubeCollection(self.kube, path, "", f"metadata.name={name}")

    def get_node(self, name: str) -> Any:
        return self.kube.request("GET", f"/api/v1/nodes/{name}")

    def patch_node_status(
        self, name: str, body: dict[str, Any], *, field_manager: str, timeout: float
    ) -> bytes:
        # The server gives up at the same time as the client (in milliseconds: a
        # whole-second value could outlive a deadline less than a second away).
        query = {"fieldManager": field_manager, "timeout": f"{int(timeout * 1000)}ms"}
        path = f"/api/v1/nodes/{name}/status"
        return self.kube.request_raw("PATCH", path, query, body, STRATEGIC_MERGE, timeout=timeout)

    def create_event(self, namespace: str, body: dict[str, Any]) -> Any:
        return self.kube.request("POST", _events(namespace), body=body)

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> Any:
        return self.kube.request(
            "PATCH", f"{_events(namespace)}/{name}", body=body, content_type=MERGE
        )
