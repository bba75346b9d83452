"""Read-only access to a cluster, for ``kubectl kumaco``: GET one object, LIST a collection.

Contract: :class:`Reader` is a facade over :class:`~kumaco.kube.client.Kube`
that can only ``GET`` and ``LIST``; there is no way to write through it, so
``get``/``list`` on configmaps and nodes and ``get`` on leases and on kumaco's
Deployment are all the RBAC its users need. An API error on one read raises
:class:`~kumaco.kube.errors.ApiError` (the helpers below record it as a
problem and go on); an unreachable server raises
:class:`~kumaco.kube.errors.TransportError`.
"""

from __future__ import annotations

from typing import Any

from kumaco.core.objects.nodes import NodeView, Sharing, node_view
from kumaco.kube.client import Kube
from kumaco.kube.errors import ApiError


class Reader:
    """Read-only access: GET one object, LIST a collection. There is no way to write."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    def get(self, path: str) -> Any | None:
        """The object at ``path``, or None if it does not exist (404)."""
        try:
            return self._kube.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, label_selector: str = "") -> list[dict[str, Any]]:
        """Every item of a collection (paginated LIST)."""
        items, _rv = self._kube.list_all(path, label_selector)
        return items


def problem(what: str, exc: ApiError) -> str:
    """One line saying which read failed and how."""
    return f"cannot {what}: {exc.status} {exc.reason}: {exc.message}".rstrip(": ")


def list_window_configmaps(
    reader: Reader, namespaces: tuple[str, ...], selector: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The window ConfigMaps of every namespace, and the namespaces that could not be read."""
    items: list[dict[str, Any]] = []
    problems: list[str] = []
    for ns in namespaces:
        try:
            items += reader.list(f"/api/v1/namespaces/{ns}/configmaps", selector)
        except ApiError as exc:
            problems.append(problem(f"list ConfigMaps in namespace {ns}", exc))
    return items, problems


def list_nodes(reader: Reader, node_selector: str, owned: tuple[str, ...] = ()) -> list[NodeView]:
    """The nodes in scope (the server applies the selector), trimmed to views.

    ``owned``: condition types whose writers (field managers) to keep.
    """
    sharing = Sharing()
    return [
        v
        for o in reader.list("/api/v1/nodes", node_selector)
        if (v := node_view(o, owned, sharing=sharing))
    ]


def get_lease(reader: Reader, namespace: str, name: str) -> Any | None:
    """The Lease ``namespace/name``, or None if there is none."""
    return reader.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")


def list_pods_and_budgets(reader: Reader) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every Pod and every PodDisruptionBudget of the cluster (``--respect-pdbs``)."""
    return (
        reader.list("/api/v1/pods"),
        reader.list("/apis/policy/v1/poddisruptionbudgets"),
    )


def get_deployment(reader: Reader, namespace: str, name: str) -> Any | None:
    """The Deployment ``namespace/name`` (kumaco's own, for its settings), or None."""
    return reader.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
