"""The controller loop: observe -> plan -> apply -> sleep until the next transition or event.

Contract
--------
:class:`Controller` keeps every node's maintenance conditions equal to the
planner's answer (:func:`kumaco.core.planner.plan`). It is level-triggered: watch
events only update the stores and wake the loop; each pass recomputes from
the full state. Time comes from an injected wall clock (``now_ns``); the loop
sleeps until the planner's ``next_change`` (a window opening or closing), so
a window opening at 03:00:00 is applied within moments, with no polling.

Only the leader acts (the seam is :attr:`Controller.election`, anything with
``is_leader``/``write_deadline``): it reconciles windows, writes node
conditions, emits window Events and enforces the ceiling. Followers keep warm
caches. On becoming leader, the view is rebuilt with a fresh LIST before the
first write, so that the old leader's last writes are seen and the
MaintenanceInProgress ceiling holds across failover.

Writes
------
The writes are the core's :func:`kumaco.core.planner.changes` (only changed
conditions; ``lastTransitionTime`` moves only when the status does; nothing
when nothing changed), sent by :class:`~kumaco.controller.writer.StatusWriter`:
revocations before grants, resourceVersion preconditions, fenced by the
leader's lease deadline. Window Events are decided by
:class:`~kumaco.controller.announce.Announcer` and sent by
:class:`~kumaco.kube.events.EventRecorder`.

Config hash
-----------
The ``data`` of all watched window ConfigMaps is hashed once the caches are
synced. When it changes, the leader logs what changed and exits with
:data:`EXIT_CONFIG_CHANGED` after releasing the Lease, so a
restart rebuilds the state; a follower only logs and adopts the new hash (it
has no state to rebuild until it leads).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kumaco.controller.announce import ENDED, Announcer
from kumaco.controller.metrics import Metrics
from kumaco.controller.options import (
    EXIT_CONFIG_CHANGED,
    EXIT_LEADERSHIP_LOST,
    EXIT_OK,
    ControllerOptions,
)
from kumaco.controller.stores import ConfigMapStore, NodeStore, planner_conditions
from kumaco.controller.writer import Election, Fenced, StatusWriter
from kumaco.core.configmaps import (
    WindowConfigMap,
    config_digest,
    config_hash,
    describe_config_change,
    window_of,
)
from kumaco.core.errors import error_text
from kumaco.core.nodes import TRUE, node_view
from kumaco.core.planner import TIMED_OUT, Changes, Plan, Policy, changes, out_of_scope, plan
from kumaco.core.times import parse_timestamp
from kumaco.core.windows import InvalidWindow, Window
from kumaco.kube.client import Kube
from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.events import (
    INVALID,
    LOADED,
    NORMAL,
    REPORTING_CONTROLLER,
    WARNING,
    EventRecorder,
    EventSpec,
)
from kumaco.kube.reflector import Reflector

log = logging.getLogger("kumaco.controller")

RESYNC_SECONDS = 300.0  # re-evaluate at least this often (no I/O unless something changed)

__all__ = [
    "EXIT_CONFIG_CHANGED",
    "EXIT_LEADERSHIP_LOST",
    "EXIT_OK",
    "Controller",
    "ControllerOptions",
    "Election",
]


@dataclass
class _Parsed:
    cm: WindowConfigMap
    result: Window | InvalidWindow


class Controller:
    """Watches, plans and writes; see the module docstring."""

    def __init__(
        self,
        options: ControllerOptions,
        policy: Policy,
        kube: Kube,
        election: Election,
        metrics: Metrics,
        *,
        now_ns: Callable[[], int],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.policy = policy
        self.kube = kube
        self.election = election
        self.metrics = metrics
        self.now_ns = now_ns
        self.monotonic = monotonic
        self.stop = threading.Event()
        self._wake = threading.Event()
        self.exit_code: int | None = None
        self.nodes = NodeStore(
            on_change=self.wake,
            owned=policy.owned,
            manager=policy.manager,
            keep=planner_conditions(policy),
            heartbeats=frozenset(policy.require),
        )
        self.configmaps = ConfigMapStore(options.namespaces, on_change=self.wake)
        self.events = EventRecorder(
            kube,
            instance=options.instance,
            identity=options.identity,
            controller=REPORTING_CONTROLLER,
            wall=lambda: dt.datetime.fromtimestamp(self.now_ns() / 1e9, dt.UTC),
            on_emit=lambda reason: metrics.events.labels(reason=reason).inc(),
        )
        self.writer = StatusWriter(
            kube,
            self.nodes,
            election,
            metrics,
            field_manager=options.field_manager,
            in_progress=policy.in_progress,
            concurrency=options.write_concurrency,
            monotonic=monotonic,
            stop=self.stop,
        )
        self.announcer = Announcer(int(options.event_lookback * 1e9))
        self.heartbeat = monotonic()
        self._parsed: dict[str, _Parsed] = {}
        self._baseline: dict[str, str] | None = None
        self._baseline_windows: dict[str, Window] = {}
        self._baseline_cms: dict[str, WindowConfigMap] = {}
        # A change of the window ConfigMaps being waited out: (digests last seen, when).
        self._changing: tuple[dict[str, str], float] | None = None
        self._conflicts_seen: set[tuple[str, str, str, str]] = set()
        self._was_leader = False
        self._announced_loaded = False
        self.reflectors: list[Reflector] = []
        # Exported from the start: a replica that never syncs counts as "not leading".
        metrics.set_leading(options.instance, False)

    # ------------------------------------------------------------------ wiring

    def wake(self) -> None:
        self._wake.set()

    @property
    def synced(self) -> bool:
        return self.nodes.synced.is_set() and self.configmaps.synced

    def healthy(self) -> bool:
        """The loop turns and the election loop is not stuck."""
        now = self.monotonic()
        return now - self.heartbeat < RESYNC_SECONDS + 60 and self.election.healthy(now)

    def start_watches(self) -> None:
        o = self.options
        self.reflectors = [
            Reflector(
                self.kube,
                "/api/v1/nodes",
                o.node_selector,
                self.nodes,
                self.stop,
                name="nodes",
                silence=o.watch_silence,
                on_restart=self.metrics.watch_restarted,
            )
        ]
        for ns in o.namespaces:
            self.reflectors.append(
                Reflector(
                    self.kube,
                    f"/api/v1/namespaces/{ns}/configmaps",
                    o.configmap_selector,
                    self.configmaps.sink(ns),
                    self.stop,
                    name=f"configmaps/{ns}",
                    silence=o.watch_silence,
                    on_restart=self.metrics.watch_restarted,
                )
            )
        for r in self.reflectors:
            r.start()

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        """Run until stopped; return the process exit code."""
        self.start_watches()
        next_change: int | None = None
        while not self.stop.is_set():
            self.heartbeat = self.monotonic()
            self.metrics.heartbeat.set(self.now_ns() / 1e9)
            timeout = RESYNC_SECONDS
            if next_change is not None:
                timeout = min(timeout, max(0.0, (next_change - self.now_ns()) / 1e9))
            if self._wake.wait(timeout):
                self._wake.clear()
            if self.stop.is_set():
                break
            if not self.synced:
                continue
            try:
                next_change = self.step()
            except Fenced:
                # A renewal that began before the write deadline may still land late (a
                # slow API server): look again one retry period later instead of waiting
                # for the next event. If the lease is lost instead, the process exits.
                log.warning("writes stopped: the lease deadline passed")
                next_change = self.now_ns() + int(self.options.retry_period * 1e9)
            except Exception:  # the loop must survive anything a pass throws
                log.exception("reconcile failed; retrying")
                self.stop.wait(1.0)
                self._wake.set()
        self._shutdown()
        return self.exit_code if self.exit_code is not None else EXIT_OK

    def request_exit(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
        self.stop.set()
        self._wake.set()

    def leadership_lost(self) -> None:
        self.metrics.set_leading(self.options.instance, False)
        self.request_exit(EXIT_LEADERSHIP_LOST)

    def _shutdown(self) -> None:
        self.writer.shutdown()
        if self.election.release():
            log.info("lease released for a fast takeover")

    # ------------------------------------------------------------------ one pass

    def step(self) -> int | None:
        """One level-triggered pass; returns the next instant (ns) to look again, if any."""
        entries = self._windows()
        hold = self._config_changed(entries)
        if hold is not None or self.exit_code is not None:
            return hold
        window_change = self._observe_windows(entries)
        leader = self.election.is_leader
        self.metrics.set_leading(self.options.instance, leader)
        if not leader:
            self._was_leader = False
            return window_change  # followers keep the window gauges right too
        if not self._was_leader:
            self._rebuild()
            self._was_leader = True
            self._announced_loaded = False
            self.announcer.reset()
        windows = [p.result for p in entries if isinstance(p.result, Window)]
        # Conditions first: a new leader's first writes must not wait behind one
        # Event per window ConfigMap (hundreds with a large or broken config).
        next_change = self.reconcile(windows)
        self._departures()
        if not self._announced_loaded:
            self._announce_config(entries)
        return next_change

    def _windows(self) -> list[_Parsed]:
        """Parse each window ConfigMap once per data change."""
        parsed: dict[str, _Parsed] = {}
        for cm in self.configmaps.snapshot():
            old = self._parsed.get(cm.key)
            if old is not None and old.cm.data == cm.data and old.cm.uid == cm.uid:
                parsed[cm.key] = _Parsed(cm, old.result)
                continue
            result = window_of(cm)
            if isinstance(result, InvalidWindow):
                log.warning(
                    "window ignored",
                    extra={
                        "window": cm.key,
                        "namespace": cm.namespace,
                        "reason": error_text(result.reason, 500),
                    },
                )
            parsed[cm.key] = _Parsed(cm, result)
        self._parsed = parsed
        valid = sum(1 for p in parsed.values() if isinstance(p.result, Window))
        self.metrics.windows.labels(state="valid").set(valid)
        self.metrics.windows.labels(state="invalid").set(len(parsed) - valid)
        return list(parsed.values())

    def _config_changed(self, entries: list[_Parsed]) -> int | None:
        """Handle a change of the window ConfigMaps; an instant to look again if the pass stops.

        A follower adopts a change at once. The leader waits until no further
        change came for ``config_settle`` (GitOps tools apply many ConfigMaps
        within a second), writing nothing meanwhile, then logs the whole change,
        announces the end of open windows whose ConfigMap was deleted, and
        exits once so that a restart rebuilds the state.
        """
        digests = config_digest(p.cm for p in entries)
        if self._baseline is None:
            self._set_baseline(digests, entries)
            self.metrics.set_config_hash(config_hash(digests)[:16])
            log.info(
                "windows loaded",
                extra={"configHash": config_hash(digests)[:16], "windows": len(digests)},
            )
            return None
        if digests == self._baseline:
            self._changing = None  # a change that was undone within the settle time
            return None
        change = describe_config_change(self._baseline, digests)
        before, after = config_hash(self._baseline)[:16], config_hash(digests)[:16]
        if not self.election.is_leader:
            log.info(
                "window ConfigMaps changed; a follower adopts them without restarting",
                extra={"configHashBefore": before, "configHashAfter": after, **change},
            )
            self.metrics.set_config_hash(after)
            self._set_baseline(digests, entries)
            return None
        now, settle = self.monotonic(), self.options.config_settle
        if self._changing is None or self._changing[0] != digests:
            if self._changing is None:
                log.info(
                    "window ConfigMaps changing; waiting for the changes to settle",
                    extra={"configSettleSeconds": settle, **change},
                )
            self._changing = (digests, now)
        quiet_until = self._changing[1] + settle
        if now < quiet_until:
            return self.now_ns() + int((quiet_until - now) * 1e9) + 1
        self._announce_deleted(change["removed"])
        log.warning(
            "window ConfigMaps changed: exiting so that a restart rebuilds the state",
            extra={"configHashBefore": before, "configHashAfter": after, **change},
        )
        self.request_exit(EXIT_CONFIG_CHANGED)
        return None

    def _set_baseline(self, digests: dict[str, str], entries: list[_Parsed]) -> None:
        self._baseline = digests
        self._baseline_windows = {
            p.cm.key: p.result for p in entries if isinstance(p.result, Window)
        }
        self._baseline_cms = {p.cm.key: p.cm for p in entries}

    def _announce_deleted(self, removed: list[str]) -> None:
        """WindowEnded for an open window whose ConfigMap was deleted (before the exit)."""
        now = self.now_ns()
        for key in removed:
            w, cm = self._baseline_windows.get(key), self._baseline_cms.get(key)
            if w is None or cm is None:
                continue
            a = self.announcer.deleted(w, now)
            if a is not None:
                self.events.emit(
                    EventSpec(cm, a.reason, "Close", a.note, key=a.run, aggregate=False)
                )

    def _rebuild(self) -> None:
        """A new leader re-reads nodes and ConfigMaps (consistent LISTs) before its first write."""
        o = self.options
        nodes: list[Any] = []
        for page, _rv in self.kube.list_pages(
            "/api/v1/nodes", o.node_selector, shrink=self.nodes.shrink
        ):
            nodes.extend(self.nodes.trim(obj) for obj in page)
        self.nodes.replace(nodes)
        for ns in o.namespaces:
            items, _rv2 = self.kube.list_all(
                f"/api/v1/namespaces/{ns}/configmaps", o.configmap_selector
            )
            self.configmaps.sink(ns).replace([self.configmaps.trim(obj) for obj in items])
        if o.node_selector:
            # Nodes that left the scope while no replica of this instance led.
            for page, _rv in self.kube.list_pages("/api/v1/nodes", "", shrink=self.nodes.shrink):
                for obj in page:
                    view = node_view(obj, self.policy.owned)
                    if view is not None and not self.policy.scope.matches(view.labels):
                        self._leave_scope(obj)
        log.info(
            "leading: view rebuilt from the cluster",
            extra={"nodes": len(nodes), "identity": o.identity},
        )

    def _announce_config(self, entries: list[_Parsed]) -> None:
        for p in entries:
            if isinstance(p.result, Window):
                note, reason, kind = f"window loaded: {p.result.describe()}", LOADED, NORMAL
            else:
                note, reason, kind = f"window ignored: {p.result.reason}", INVALID, WARNING
            action = "Load" if reason == LOADED else "Validate"
            self.events.emit(EventSpec(p.cm, reason, action, note, kind, key=p.cm.data_digest()))
        self._announced_loaded = True

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, windows: list[Window]) -> int | None:
        """Plan at the current instant and write what differs; return the next change instant."""
        started = self.monotonic()
        now = self.now_ns()
        with self.nodes.read() as (nodeset, versions):
            result = plan(windows, nodeset, now, self.policy)
            due = changes(result, nodeset, versions, now, self.policy)
            self._report(due, nodeset, result)
            self._observe_holders(result, nodeset, now)
        self._observe(result)
        if not self.writer.apply(self.writer.pending(due)):
            self._wake.set()  # something conflicted: re-plan from fresh state
        self._announce_windows(result, windows, now)
        self.metrics.reconcile.observe(self.monotonic() - started)
        return result.next_change

    def _observe(self, result: Plan) -> None:
        self.metrics.nodes.set(len(result.nodes))
        self.metrics.windows_open.set(sum(1 for st in result.windows.values() if st.open))
        self.metrics.under_maintenance.set(sum(1 for n in result.nodes if n.is_under_maintenance))
        self.metrics.in_progress.set(sum(1 for n in result.nodes if n.is_in_progress))

    def _observe_windows(self, entries: list[_Parsed]) -> int | None:
        """The per-window gauges, on every replica; returns the next window transition."""
        now = self.now_ns()
        states = []
        soonest: int | None = None
        for p in entries:
            if not isinstance(p.result, Window):
                continue
            st = p.result.state_at(now)
            nxt = st.closes if st.open else st.opens
            states.append(
                (p.cm.namespace, p.cm.name, st.open, math.inf if nxt is None else nxt / 1e9)
            )
            change = st.next_change
            if change is not None and (soonest is None or change < soonest):
                soonest = change
        self.metrics.set_windows(states)
        return soonest

    def _observe_holders(self, result: Plan, nodeset: Any, now: int) -> None:
        """Since when each node that holds MaintenanceInProgress has held it."""
        since: dict[str, float] = {}
        for n in result.nodes:
            if not n.is_in_progress:
                continue
            node = nodeset.get(n.name)
            cur = None if node is None else node.condition(self.policy.in_progress)
            at = None
            if cur is not None and cur.status == TRUE:
                at = parse_timestamp(cur.last_transition_time)
            since[n.name] = (at if at is not None else now) / 1e9
        self.metrics.set_holders(since)

    def _announce_windows(self, result: Plan, windows: list[Window], now: int) -> None:
        """WindowStarted/WindowEnded Events, once per occurrence (see :mod:`.announce`)."""
        cms = {p.cm.key: p.cm for p in self._parsed.values()}
        known = {w.key: w for w in windows if w.key in cms}
        for a in self.announcer.step(result, known, now):
            action = "Close" if a.reason == ENDED else "Open"
            spec = EventSpec(cms[a.window], a.reason, action, a.note, key=a.run, aggregate=False)
            self.events.emit(spec)

    # ------------------------------------------------------------------ ownership and scope

    def _report(self, due: Changes, nodeset: Any, result: Plan) -> None:
        """Log each new conflict, in-progress timeout and release once; keep the gauges."""
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
                    w.type == self.policy.in_progress
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
                    w.type == self.policy.in_progress
                    and w.reason == TIMED_OUT
                    and node is not None
                    and node.is_true(w.type)
                ):
                    self.metrics.timeouts.inc()
                    log.warning(
                        "MaintenanceInProgress held too long: revoked (--in-progress-timeout)",
                        extra={"node": change.name, "conditionMessage": w.message},
                    )

    def _departures(self) -> None:
        """Nodes that left the watch: deleted, or relabelled out of the scope."""
        for name in sorted(self.nodes.departed()):
            try:
                obj = self.kube.request("GET", f"/api/v1/nodes/{name}")
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
            self._leave_scope(obj)

    def _leave_scope(self, obj: Any) -> None:
        view = node_view(obj, self.policy.owned)
        if view is None or self.policy.scope.matches(view.labels):
            return  # back in scope (the watch brings it back) or unusable
        rv = obj.get("metadata", {}).get("resourceVersion")
        change, holding = out_of_scope(view, rv, self.now_ns(), self.policy)
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
