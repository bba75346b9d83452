"""A follower's one write: the release of a holder whose machine rebooted, without a leader.

Contract
--------
kured's reboot-daemon reboots a node whenever ``MaintenanceInProgress`` is True after
a boot. A holder that comes back while no replica leads (a leader lost, the Lease
not yet taken over: up to one lease duration) would be rebooted again. The release
of such a holder only lowers what is in progress, so it need not wait for a leader:
:meth:`FollowerReleases.step`, called on every pass of a replica that is *not*
leading, writes exactly that release and nothing else.

* What to write comes from the planner and :func:`kumaco.core.planning.planner.changes`, as the
  leader's writes do (same windows, policy, refusals, clock; the message is the
  planner's, never built here): of the writes the answer needs, only those
  :func:`released_by_reboot` keeps -- ``MaintenanceInProgress`` going from True to not
  True with a message :func:`kumaco.core.objects.boots.reboot_of` reads as a release by an
  observed reboot -- and of each, only that one condition. No grant, no
  ``UnderMaintenance``, no Event, no other release (a cleared requirement, a timeout:
  those wait for the leader).
* The planner runs only while some node in scope holds ``MaintenanceInProgress`` (a
  release needs a holder): an idle fleet costs a follower no plan.
* Each write is a strategic merge patch of that one condition, with the resourceVersion
  the decision was taken on as its precondition, under the instance's field manager (the
  leader's): a 409 means someone else -- the leader, another follower, the kubelet --
  wrote the node since; the write is dropped. A write is sent at most once per node
  and resourceVersion, whatever its outcome, and never retried: a later pass that
  still sees the holder on a *newer* version decides again.
* Not fenced by the Lease (a follower holds none); checked instead: nothing is sent
  while this replica leads (:attr:`Election.is_leader`, asked before each write).
* A landed write is stored through (the follower's view becomes what was sent), logged
  (``released a rebooted holder while not leading``: ``node``, ``bootBefore``,
  ``bootAfter``) and counted with every other outcome in
  ``kumaco_follower_releases_total{result}``.

Why the ceiling and the single writer of admissions hold: docs/design.md ("A release
without a leader").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kumaco.controller.metrics import Metrics
from kumaco.controller.stores import NodeStore
from kumaco.controller.writer import Election
from kumaco.core.errors import error_text
from kumaco.core.objects.boots import reboot_of
from kumaco.core.objects.disruptions import Refusals
from kumaco.core.objects.nodes import TRUE, Condition, NodeSet
from kumaco.core.planning.changes import Changes, ConditionWrite, changes
from kumaco.core.planning.policy import Plan, Policy
from kumaco.core.windows.window import Window
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.resources import Resources
from kumaco.kube.wire import leading_resource_version

log = logging.getLogger("kumaco.controller")

#: :func:`kumaco.core.planning.planner.plan`'s signature (the controller's ``planner`` seam).
PlanFunction = Callable[[Iterable[Window], NodeSet, int, Policy, Refusals], Plan]


@dataclass(frozen=True, slots=True)
class Release:
    """One release by an observed reboot: the node, its version, the one condition, the boots."""

    name: str
    resource_version: str
    condition: ConditionWrite
    boots: tuple[str, str]


def released_by_reboot(due: Changes, nodes: NodeSet, in_progress: str) -> list[Release]:
    """The releases by an observed reboot among ``due``, each reduced to its one condition.

    A write of ``in_progress`` to a status other than True, on a node that holds it
    now, whose message is a release by an observed reboot; a node without a known
    resourceVersion is left out (a follower never writes without a precondition).
    """
    out: list[Release] = []
    for change in due:
        node = nodes.get(change.name)
        if node is None or not node.is_true(in_progress) or change.resource_version is None:
            continue
        for c in change.conditions:
            boots = reboot_of(c.message) if c.type == in_progress and c.status != TRUE else None
            if boots is not None:
                out.append(Release(change.name, change.resource_version, c, boots))
    return out


class FollowerReleases:
    """The releases a replica writes while it does not lead; see the module contract."""

    def __init__(
        self,
        api: Resources,
        store: NodeStore,
        election: Election,
        metrics: Metrics,
        policy: Policy,
        *,
        field_manager: str,
        planner: PlanFunction,
        refusals: Callable[[NodeSet], Refusals],
    ) -> None:
        self.api = api
        self.store = store
        self.election = election
        self.metrics = metrics
        self.policy = policy
        self.field_manager = field_manager
        self.planner = planner
        self.refusals = refusals
        self._sent: set[tuple[str, str]] = set()  # (node, resourceVersion) written once

    def step(self, windows: list[Window], now: int) -> int:
        """Plan at ``now``, the pass's instant; write each release not yet sent; how many landed."""
        in_progress = self.policy.in_progress
        with self.store.read() as (nodeset, versions):
            if not any(n.is_true(in_progress) for n in nodeset):
                self._sent.clear()
                return 0
            result = self.planner(windows, nodeset, now, self.policy, self.refusals(nodeset))
            due = changes(result, nodeset, versions, now, self.policy)
            todo = released_by_reboot(due, nodeset, in_progress)
        keys = {(r.name, r.resource_version) for r in todo}
        self._sent &= keys  # forget what no longer needs a write: memory stays bounded
        landed = 0
        for r in todo:
            if (r.name, r.resource_version) in self._sent:
                continue  # sent once on this version already: never again
            if self.election.is_leader:
                break  # the leader writes its own releases (fenced, in order)
            self._sent.add((r.name, r.resource_version))
            landed += self._write(r)
        return landed

    def _write(self, r: Release) -> bool:
        body = {
            "metadata": {"resourceVersion": r.resource_version},
            "status": {"conditions": [r.condition.as_json()]},
        }
        counted = self.metrics.follower_releases
        try:
            answer = self.api.patch_node_status(
                r.name, body, field_manager=self.field_manager, timeout=self.api.timeout
            )
        except ApiError as exc:
            if exc.status == 409:
                counted.labels(result="conflict").inc()
                log.info(
                    "a release while not leading conflicted (the node changed): dropped",
                    extra={"node": r.name},
                )
            else:
                counted.labels(result="unknown" if exc.status >= 500 else "error").inc()
                log.warning(
                    "a release while not leading failed: dropped",
                    extra={"node": r.name, "status": exc.status, "error": error_text(exc)},
                )
            return False
        except TransportError as exc:
            counted.labels(result="unknown" if exc.sent else "error").inc()
            log.warning(
                "a release while not leading failed: dropped",
                extra={"node": r.name, "error": error_text(exc)},
            )
            return False
        c = r.condition
        rv = leading_resource_version(answer)
        if rv is not None:
            written = Condition(c.type, c.status, c.reason, c.message, c.last_transition_time)
            self.store.put_written(r.name, rv, [written])
        counted.labels(result="ok").inc()
        old, new = r.boots
        log.info(
            "released a rebooted holder while not leading",
            extra={"node": r.name, "bootBefore": old, "bootAfter": new},
        )
        return True
