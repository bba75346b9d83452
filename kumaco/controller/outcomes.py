"""What the leader's decisions mean for people: conflicts, releases and timeouts, told once.

Contract: :class:`Reporter` is given each pass's
:class:`~kumaco.core.planning.planner.Changes` with the node set and plan they were
computed from (before anything is written). It keeps the
``kumaco_condition_conflicts`` gauge, logs a conflict (a condition another
kumaco instance owns, left alone) only when it is new or its state changed,
and logs and counts each release of MaintenanceInProgress by its cause
(``kumaco_releases_total``) and each revocation by ``--in-progress-timeout``
(``kumaco_in_progress_timeouts_total``). It sends nothing and reads no clock.
"""

from __future__ import annotations

import logging

from kumaco.controller.metrics import Metrics
from kumaco.core.objects.nodes import TRUE, NodeSet
from kumaco.core.planning.changes import Changes
from kumaco.core.planning.policy import TIMED_OUT, Plan

log = logging.getLogger("kumaco.controller")


class Reporter:
    """The leader's report of its decisions; see the module contract."""

    def __init__(self, metrics: Metrics, in_progress: str) -> None:
        self.metrics = metrics
        self.in_progress = in_progress
        self._conflicts_seen: set[tuple[str, str, str, str]] = set()

    def report(self, due: Changes, nodeset: NodeSet, result: Plan) -> None:
        """Log each new conflict once, and each release and in-progress timeout; count them."""
        self.metrics.conflicts.set(len(due.conflicts))
        seen: set[tuple[str, str, str, str]] = set()
        for c in due.conflicts:
            cur = nodeset.get(c.node)
            state = "" if cur is None else str(cur.condition(c.type))
            key = (c.node, c.type, c.owner, state)
            seen.add(key)
            if key not in self._conflicts_seen:
                log.warning(
                    "condition owned by another kumaco instance; not written",
                    extra={"node": c.node, "condition": c.type, "owner": c.owner},
                )
        self._conflicts_seen = seen
        for change in due:
            for w in change.conditions:
                node = nodeset.get(change.name)
                decided = result.node(change.name)
                cause = decided.verdict.cause if decided and decided.verdict else None
                if (
                    w.type == self.in_progress
                    and w.status != TRUE
                    and cause is not None
                    and node is not None
                    and node.is_true(w.type)
                ):
                    self.metrics.releases.labels(cause=cause).inc()
                    log.info(
                        "MaintenanceInProgress released",
                        extra={"node": change.name, "cause": cause, "conditionMessage": w.message},
                    )
                if (
                    w.type == self.in_progress
                    and w.reason == TIMED_OUT
                    and node is not None
                    and node.is_true(w.type)
                ):
                    self.metrics.timeouts.inc()
                    log.warning(
                        "MaintenanceInProgress held too long: revoked (--in-progress-timeout)",
                        extra={"node": change.name, "conditionMessage": w.message},
                    )
