"""Nodes that leave the controller's scope: ``UnderMaintenance=False`` (OutOfScope), once.

(With ``--planned-lead``, ``MaintenancePlanned=False`` (OutOfScope) in the same write.)

Contract: :class:`Departures` handles the nodes the node watch no longer
delivers -- deleted, or relabelled out of ``--node-selector`` -- on the leader.
:meth:`Departures.check` reads each node the store reports departed
(:meth:`~kumaco.controller.stores.NodeStore.departed`): a node that is gone
(404) or cannot be read is only logged; one that is back in scope is left to
the watch. :meth:`Departures.sweep` LISTs every node (no selector) when a
replica begins to lead, for those that left while nobody led. A node out of
scope gets the core's :func:`~kumaco.core.planning.planner.out_of_scope` write, fenced,
through :meth:`~kumaco.controller.writer.StatusWriter.write_out_of_scope`;
``MaintenanceInProgress`` is left to the consumer to finish.
"""

from __future__ import annotations

import logging
from typing import Any

from kumaco.controller.stores import NodeStore
from kumaco.controller.writer import StatusWriter
from kumaco.core.errors import error_text
from kumaco.core.objects.nodes import node_view
from kumaco.core.planning.changes import out_of_scope
from kumaco.core.planning.policy import Policy
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.resources import Resources

log = logging.getLogger("kumaco.controller")


class Departures:
    """The leader's handling of nodes that left the scope; see the module contract."""

    def __init__(
        self,
        api: Resources,
        nodes: NodeStore,
        writer: StatusWriter,
        policy: Policy,
    ) -> None:
        self.api = api
        self.nodes = nodes
        self.writer = writer
        self.policy = policy

    def check(self, now: int) -> None:
        """Nodes that left the watch: deleted, or relabelled out of the scope."""
        for name in sorted(self.nodes.departed()):
            try:
                obj = self.api.get_node(name)
            except ApiError as exc:
                if exc.status != 404:
                    log.warning(
                        "cannot read a departed node",
                        extra={"node": name, "error": error_text(exc)},
                    )
                continue
            except TransportError as exc:
                log.warning(
                    "cannot read a departed node", extra={"node": name, "error": error_text(exc)}
                )
                continue
            self.leave(obj, now)

    def sweep(self, now: int) -> None:
        """Every node out of the scope (those that left it while no replica led)."""
        for page, _rv in self.api.nodes("").list_pages(shrink=self.nodes.tuning.shrink):
            for obj in page:
                view = node_view(obj, self.policy.owned)
                if view is not None and not self.policy.scope.matches(view.labels):
                    self.leave(obj, now)

    def leave(self, obj: Any, now: int) -> None:
        """Write what a node out of the scope gets (nothing if it is back in scope)."""
        view = node_view(obj, self.policy.owned)
        if view is None or self.policy.scope.matches(view.labels):
            return  # back in scope (the watch brings it back) or unusable
        rv = obj.get("metadata", {}).get("resourceVersion")
        change, holding = out_of_scope(view, rv, now, self.policy)
        if holding:
            log.info(
                "node left the scope while in maintenance: MaintenanceInProgress is left for "
                "the consumer to finish",
                extra={"node": view.name},
            )
        if change is not None and self.writer.write_out_of_scope(change):
            log.info(
                "node left the scope: UnderMaintenance=False (OutOfScope)",
                extra={"node": view.name},
            )
