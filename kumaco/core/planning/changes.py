"""The writes that bring nodes to the planner's answer, and who owns each condition.

Contract: pure. :func:`changes` diffs a :class:`~kumaco.core.planning.policy.Plan` against the
nodes as they are and returns the status writes (revocations before grants) and the
conditions another kumaco instance owns (reported, never written);
:func:`written_by_another` is the one ownership rule (also ``kubectl kumaco
status``'s); :func:`out_of_scope` is the write that hands back a node leaving the scope. The
controller sends these; ``kumaco forecast`` applies them to its simulated nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kumaco.core.objects.nodes import FALSE, TRUE, NodeSet, NodeView
from kumaco.core.planning.policy import (
    OUT_OF_SCOPE,
    Desired,
    Plan,
    Policy,
)
from kumaco.core.time.instants import format_exact_instant, format_instant

#: Field managers of kumaco instances are ``kumaco/<instance>``.
KUMACO_MANAGER_PREFIX = "kumaco/"


def written_by_another(owner: str, manager: str) -> bool:
    """Whether a condition last written by field manager ``owner`` is another kumaco instance's.

    ``manager`` is this instance's own field manager; any writer that is not a
    ``kumaco/...`` manager (a person, a script) owns nothing.
    """
    return owner.startswith(KUMACO_MANAGER_PREFIX) and owner != manager


@dataclass(frozen=True, slots=True)
class ConditionWrite:
    """One condition as a status write sends it (a NodeCondition)."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str
    last_heartbeat_time: str

    def as_json(self) -> dict[str, str]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
            "lastHeartbeatTime": self.last_heartbeat_time,
        }


@dataclass(frozen=True, slots=True)
class NodeChange:
    """The status write one node needs: only the conditions that differ from its current ones.

    ``grant`` is True when the write gives the node MaintenanceInProgress it does
    not hold yet; ``resource_version`` is the version the decision was taken on
    (the write's precondition).
    """

    name: str
    resource_version: str | None
    conditions: tuple[ConditionWrite, ...]
    grant: bool
    desired: tuple[Desired, ...]


@dataclass(frozen=True, slots=True)
class Conflict:
    """A condition kumaco would change but another kumaco instance last wrote."""

    node: str
    type: str
    owner: str


@dataclass(frozen=True)
class Changes:
    """The writes a plan needs: every revocation and other change first, then the grants.

    Sent in that order -- and grants only once every revocation landed -- the
    number of nodes holding MaintenanceInProgress never exceeds the ceiling,
    even transiently. ``conflicts`` are the conditions left alone because
    another kumaco instance owns them.
    """

    revocations: tuple[NodeChange, ...]
    grants: tuple[NodeChange, ...]
    conflicts: tuple[Conflict, ...] = ()

    def __iter__(self) -> Iterator[NodeChange]:
        yield from self.revocations
        yield from self.grants

    def __len__(self) -> int:
        return len(self.revocations) + len(self.grants)


def changes(
    result: Plan,
    nodes: NodeSet,
    versions: Mapping[str, str | None],
    now: int,
    policy: Policy,
    *,
    exact: bool = False,
) -> Changes:
    """The writes that bring every node of ``result`` to its desired conditions at ``now``.

    A condition is written when its status, reason or message differs;
    ``lastTransitionTime`` keeps the current value while the status stays the
    same and becomes ``now`` when it changes. A node whose conditions are all
    as desired gets no write (no heartbeat writes). A condition last written by
    another kumaco instance (a field manager ``kumaco/...`` other than
    ``policy.manager``) is not written: it is reported as a :class:`Conflict`.
    Any other writer (a person, a script) is corrected.

    ``now`` is written to the second, as Kubernetes keeps it (a write at 12:00:03.7 reads
    12:00:03; :func:`~kumaco.core.planning.rules.transitioned` counts from the end of that second,
    so a release delay is never shorter than configured). ``exact``: to the microsecond
    instead, which reads as exact -- for ``kumaco forecast``, whose simulated writes
    happen at known instants (a release at 02:30:00 settles until 02:40:00, not 02:40:01).
    """
    stamp = format_exact_instant(now) if exact else format_instant(now)
    revocations: list[NodeChange] = []
    grants: list[NodeChange] = []
    conflicts: list[Conflict] = []
    for np in result.nodes:
        node = nodes.get(np.name)
        if node is None:
            continue
        differ = [
            (d, cur)
            for d in np.desired
            if (cur := node.condition(d.type)) is None
            or (cur.status, cur.reason, cur.message) != (d.status, d.reason, d.message)
        ]
        if policy.manager:
            for d, _cur in differ:
                owner = node.owners.get(d.type, "")
                if written_by_another(owner, policy.manager):
                    conflicts.append(Conflict(np.name, d.type, owner))
            taken = {c.type for c in conflicts if c.node == np.name}
            differ = [(d, cur) for d, cur in differ if d.type not in taken]
        written = tuple(
            ConditionWrite(
                d.type,
                d.status,
                d.reason,
                d.message,
                cur.last_transition_time
                if cur is not None and cur.status == d.status and cur.last_transition_time
                else stamp,
                stamp,
            )
            for d, cur in differ
        )
        if not written:
            continue
        grant = any(
            c.type == policy.in_progress and c.status == TRUE for c in written
        ) and not node.is_true(policy.in_progress)
        change = NodeChange(np.name, versions.get(np.name), written, grant, np.desired)
        (grants if grant else revocations).append(change)
    return Changes(tuple(revocations), tuple(grants), tuple(conflicts))


def out_of_scope(
    node: NodeView, version: str | None, now: int, policy: Policy
) -> tuple[NodeChange | None, bool]:
    """What this instance writes on a node that left its scope, and whether it is holding.

    Its own ``UnderMaintenance`` (last written by ``policy.manager``) becomes
    False with reason ``OutOfScope``, and so does its ``MaintenancePlanned`` with a
    planned lead; its ``MaintenanceInProgress`` is left alone: a holder finishes its
    maintenance (the second answer says the node holds it), anything else already
    says False.
    """
    holding = (
        policy.ceiling is not None
        and node.is_true(policy.in_progress)
        and node.owners.get(policy.in_progress) == policy.manager
    )
    stamp = format_instant(now)
    writes: list[ConditionWrite] = []
    for ctype in (policy.under_maintenance, *((policy.planned,) if policy.planned_lead else ())):
        cur = node.condition(ctype)
        if (
            cur is None
            or node.owners.get(ctype) != policy.manager
            or (cur.status, cur.reason) == (FALSE, OUT_OF_SCOPE)
        ):
            continue
        writes.append(
            ConditionWrite(
                ctype,
                FALSE,
                OUT_OF_SCOPE,
                "this node left kumaco's scope (its --node-selector)",
                cur.last_transition_time
                if cur.status == FALSE and cur.last_transition_time
                else stamp,
                stamp,
            )
        )
    if not writes:
        return None, holding
    desired = tuple(Desired(w.type, w.status, w.reason, w.message) for w in writes)
    return NodeChange(node.name, version, tuple(writes), False, desired), holding
