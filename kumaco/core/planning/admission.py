"""The admission lifecycle of ``MaintenanceInProgress``: the rules applied stage by stage.

Contract: pure. :class:`Lifecycle` is the second half of
:func:`kumaco.core.planning.planner.plan` (each rule's docstring states it): given the nodes in
scope, their UnderMaintenance answer (:mod:`kumaco.core.planning.under_maintenance`) and the policy,
it applies the policy's rules (:attr:`~kumaco.core.planning.policy.Policy.rules`; the stages are
described in :mod:`kumaco.core.planning.policy`) to decide every node's ``MaintenanceInProgress``
with a :class:`~kumaco.core.planning.policy.Verdict` naming the rule, and the instants at which
its answer changes by time alone (the earliest :meth:`~kumaco.core.planning.policy.Rule.next_change`
of the rules it consulted). Within a stage the first rule that stops a node decides;
which rules there are, their order and their messages live in the rules only
(:mod:`kumaco.core.planning.rulebook`), for holders and candidates alike; a node not holding
MaintenanceInProgress takes its places all the same when a rule counts it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from kumaco.core.objects.boots import admitted_on, boot_token, with_boot
from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals
from kumaco.core.objects.nodes import FALSE, TRUE, Condition, NodeSet, NodeView
from kumaco.core.planning.policy import (
    ADMIT,
    ALLOWED,
    CEILING,
    GLOBAL,
    HELD,
    HOLD,
    SETTLE,
    Desired,
    Ground,
    Place,
    Policy,
    Rule,
    Scene,
    Stop,
    Verdict,
)
from kumaco.core.planning.under_maintenance import OpenWindows, UnderAnswer
from kumaco.core.time.durations import SECOND
from kumaco.core.time.instants import parse_timestamp, transitioned


def _admission_key(node: NodeView, require: Sequence[str]) -> tuple[int, int, str]:
    times = [
        parse_timestamp(c.last_transition_time)
        for r in require
        if (c := node.condition(r)) is not None
    ]
    if not times:
        return (0, 0, node.name)
    if any(t is None for t in times):
        return (1, 0, node.name)
    return (0, max(t for t in times if t is not None), node.name)


class Lifecycle:
    """MaintenanceInProgress for every node in scope (see the module contract)."""

    def __init__(
        self,
        nodes: NodeSet,
        in_scope: frozenset[str],
        under: Mapping[str, UnderAnswer],
        ws: OpenWindows,
        policy: Policy,
        now: int,
        refusals: Refusals = NO_REFUSALS,
    ) -> None:
        self.nodes, self.in_scope, self.under = nodes, in_scope, under
        self.refusals = refusals
        self.policy, self.now = policy, now
        self.desired: dict[str, Desired] = {}
        self.verdicts: dict[str, Verdict] = {}
        self.next_change: int | None = None
        self.in_progress = 0
        #: The holders this plan releases, as they settle from now on.
        self._released: dict[str, Scene] = {}
        rules = policy.rules
        self._stage: dict[str, tuple[Rule, ...]] = {
            stage: tuple(r for r in rules if r.stage == stage) for stage in (HOLD, SETTLE, ADMIT)
        }
        #: The rules that count a node not holding it toward its ceilings (:meth:`Rule.counts`).
        self._counters = tuple(r for r in rules if type(r).counts is not Rule.counts)
        #: The rules that keep a record in the messages (:meth:`Rule.record`).
        self._recorders = tuple(r for r in rules if type(r).record is not Rule.record)
        ground = Ground(
            policy,
            nodes,
            in_scope,
            {name: under[name].windows for name in in_scope},
            ws.selected,
            ws.budgets,
            frozenset(k for k, frozen in ws.freeze.items() if frozen),
            now,
        )
        #: Every ceiling in force, in rule order; by node, the ones counting it when it
        #: occupies places, and for each ceiling rule, the ones that can stop it.
        self.pools: list[Place] = []
        self._covering: dict[str, list[Place]] = {name: [] for name in in_scope}
        self._ceilings: list[tuple[Rule, dict[str, tuple[Place, ...]]]] = []
        for rule in (r for r in rules if r.stage == CEILING):
            stopping: dict[str, list[Place]] = {}
            for place in rule.places(ground):
                self.pools.append(place)
                for name in in_scope if place.members is None else place.members:
                    self._covering.setdefault(name, []).append(place)
                for name in in_scope if place.stops is None else place.stops:
                    stopping.setdefault(name, []).append(place)
            self._ceilings.append((rule, {n: tuple(ps) for n, ps in stopping.items()}))

    @property
    def ceiling(self) -> int | None:
        """The global ceiling's limit (None: no rule keeps one)."""
        return next((p.limit for p in self.pools if p.name == GLOBAL), None)

    # ---------------------------------------------------------------- helpers

    def _later(self, t: int | None) -> None:
        if t is not None and t > self.now and (self.next_change is None or t < self.next_change):
            self.next_change = t

    def _set(self, name: str, status: str, reason: str, message: str, verdict: Verdict) -> None:
        node = self.nodes.get(name)
        if self._recorders:
            held = node.condition(self.policy.in_progress) if node is not None else None
            for rule in self._recorders:
                message = rule.record(message, held, status, self.policy, self.now)
        self.desired[name] = Desired(self.policy.in_progress, status, reason, message)
        boot = self._boot(node) if node is not None else None
        self.verdicts[name] = verdict if boot is None else replace(verdict, boot=boot)

    @staticmethod
    def _boot(node: NodeView) -> str | None:
        """The node's boot ID as messages keep it (None: it reports none)."""
        return None if node.boot_id is None else boot_token(node.boot_id)

    def _scene(self, node: NodeView) -> Scene:
        under = self.under[node.name]
        held = node.condition(self.policy.in_progress)
        since = transitioned(held.last_transition_time) if held is not None else None
        return Scene(
            self.policy,
            self.now,
            under.windows,
            under.freezes,
            under.closes,
            held,
            since,
            self._boot(node),
            refused_by=self.refusals.get(node.name, ()),
        )

    def _occupy(self, name: str) -> tuple[str, ...]:
        """Count ``name`` in every ceiling that covers it; return their names.

        A window's budget covers every node the window selects, open for it or not
        (a holder whose window closed still counts toward that window's budget).
        """
        places = self._covering.get(name, [])
        for p in places:
            p.occupants.add(name)
        return tuple(p.name for p in places)

    def _first_stop(self, stage: str, node: NodeView, scene: Scene) -> Stop | None:
        """The first of a stage's rules that stops ``node`` (each rule consulted sets a wake-up)."""
        for rule in self._stage[stage]:
            self._later(rule.next_change(node, scene))
            stop = rule.check(node, scene)
            if stop is not None:
                return stop
        return None

    def _stop(self, name: str, reason: str, stop: Stop, counts: tuple[str, ...] = ()) -> None:
        """``name`` goes (or stays) False with ``reason``, as ``stop`` says."""
        self._set(name, FALSE, reason, stop.message, replace(stop.verdict, counts_toward=counts))

    def _ceiling_stops(self, node: NodeView, scene: Scene) -> Iterator[Stop]:
        for rule, stopping in self._ceilings:
            stop = rule.check(node, replace(scene, places=stopping.get(node.name, ())))
            if stop is not None:
                yield stop

    # ---------------------------------------------------------------- the stages

    def run(self) -> None:
        scenes: list[tuple[NodeView, Scene]] = []
        candidates: list[tuple[NodeView, Scene]] = []
        for name in sorted(self.in_scope):
            node = self.nodes.get(name)
            if node is None:
                continue
            scene = self._scene(node)
            if self._hold(node, scene) or self._settle(node, scene):
                scenes.append((node, self._released.get(name, scene)))
                continue
            scenes.append((node, scene))
            if (stop := self._first_stop(ADMIT, node, scene)) is not None:
                self._stop(name, stop.verdict.rule, stop)
                continue
            candidates.append((node, scene))
        for node, scene in scenes:
            # Not holding it (now) and counted all the same: it takes a place whatever
            # happens to it.
            desired = self.desired.get(node.name)
            if desired is not None and desired.status == TRUE:
                continue
            counting = [r for r in self._counters if r.counts(node, scene)]
            for rule in counting:
                # A count that ends by time alone (a counting rule of no other stage has
                # its wake-up asked nowhere else).
                self._later(rule.next_change(node, scene))
            if counting:
                counts = self._occupy(node.name)
                if node.name in self.verdicts:
                    self.verdicts[node.name] = replace(
                        self.verdicts[node.name], counts_toward=counts
                    )
        ordered = sorted(candidates, key=lambda c: _admission_key(c[0], self.policy.require))
        for place in self.pools:
            place.line_up(tuple(node.name for node, _scene in ordered))
        waiting = [(node, scene) for node, scene in ordered if not self._admit(node, scene)]
        # Why each waits is read off the ceilings once every admission is made, so that the
        # answer is the same when planned again after the admissions were written.
        for node, scene in waiting:
            for rule, stopping in self._ceilings:
                self._later(
                    rule.next_change(node, replace(scene, places=stopping.get(node.name, ())))
                )
            stop = next(self._ceiling_stops(node, scene))
            counts = tuple(p.name for p in self.pools if node.name in p.occupants)
            self._stop(node.name, stop.verdict.rule, stop, counts)
        self.in_progress = sum(1 for d in self.desired.values() if d.status == TRUE)

    def _hold(self, node: NodeView, scene: Scene) -> bool:
        """A node holding it: kept (counting toward its ceilings), or released by a rule."""
        cur = scene.held
        if cur is None or cur.status != TRUE:
            return False
        if (stop := self._first_stop(HOLD, node, scene)) is not None:
            self._release(node, scene, stop)
            return True
        # Why it would not be admitted now (it is not revoked for that).
        stops = [s for r in self._stage[ADMIT] if (s := r.check(node, scene)) is not None]
        why_not = next((s.held for s in stops if s.held is not None), None)
        if not self.policy.require and why_not is not None:
            # Nothing marks the end of a maintenance: held while admissible, as before.
            return False
        counts = self._occupy(node.name)
        # The boot it was admitted on; a holder admitted before its node reported one
        # (or by another scheduler) takes the boot it has now.
        admitted = admitted_on(cur.message)
        mark = admitted if admitted is not None else scene.boot
        if why_not is None:
            message = with_boot(self._allowed_message(), mark)
            self._set(node.name, TRUE, ALLOWED, message, Verdict(ALLOWED, counts_toward=counts))
        else:
            require = ", ".join(self.policy.require)
            message = with_boot(f"{why_not}; waiting for {require} to clear", mark)
            blocking = tuple(b for s in stops for b in s.verdict.blocking)
            verdict = Verdict(HELD, blocking=blocking, counts_toward=counts)
            self._set(node.name, TRUE, HELD, message, verdict)
        return True

    def _release(self, node: NodeView, scene: Scene, stop: Stop) -> None:
        """A holder a rule released: it goes False now.

        It settles from now on as it will when planned again (a release delay keeps
        its places).
        """
        reason = stop.verdict.rule
        released = replace(
            scene,
            held=Condition(self.policy.in_progress, FALSE, reason, stop.message),
            since=self.now,
        )
        # Settling from now on: each settling rule sets its wake-up; whether it takes its
        # places all the same is asked with the other nodes' (:meth:`run`).
        self._first_stop(SETTLE, node, released)
        self._released[node.name] = released
        for place in self.pools:
            place.released(node.name, self.now)
        self._set(node.name, FALSE, reason, stop.message, stop.verdict)

    def _settle(self, node: NodeView, scene: Scene) -> bool:
        """A node not holding it that a rule keeps out, its condition as written."""
        cur = scene.held
        if cur is None or cur.status == TRUE:
            return False
        if (stop := self._first_stop(SETTLE, node, scene)) is None:
            return False
        self._stop(node.name, cur.reason, stop)
        return True

    def _admit(self, node: NodeView, scene: Scene) -> bool:
        """Admit ``node`` if no ceiling rule stops it; whether it was."""
        if next(self._ceiling_stops(node, scene), None) is not None:
            return False
        name = node.name
        counts = self._occupy(name)
        for _rule, stopping in self._ceilings:
            for place in stopping.get(name, ()):
                place.admitted(name)
        message = with_boot(self._allowed_message(), scene.boot)
        self._set(name, TRUE, ALLOWED, message, Verdict(ALLOWED, counts_toward=counts))
        # Admitted now: its lastTransitionTime will read this second (Kubernetes truncates
        # it), so the holding rules count from the end of that second. Without this the
        # controller, whose own write wakes nobody, would sleep past an in-progress timeout
        # until something else changed.
        held = replace(
            scene,
            held=Condition(self.policy.in_progress, TRUE, ALLOWED, message),
            since=self.now - self.now % SECOND + SECOND,
        )
        for rule in self._stage[HOLD]:
            self._later(rule.next_change(node, held))
        return True

    def _allowed_message(self) -> str:
        req = ", ".join(f"{r}=True" for r in self.policy.require)
        return (
            "in an open maintenance window" + (f" with {req}" if req else "") + " and not blocked"
        )


# ----------------------------------------------------------------------------- changes
