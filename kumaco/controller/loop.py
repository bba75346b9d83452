"""The controller loop: observe -> plan -> apply -> sleep until the next transition or event.

Contract
--------
:class:`Controller` keeps every node's maintenance conditions equal to the
planner's answer (:func:`kumaco.core.planning.planner.plan`). It is level-triggered: watch
events only update the stores and wake the loop; each pass recomputes from
the full state. Time comes from an injected wall clock (``now_ns``); the loop
sleeps until the planner's ``next_change`` (a window opening or closing), so
a window opening at 03:00:00 is applied within moments, with no polling. The
planner is :func:`~kumaco.core.planning.planner.plan` unless a caller injects another
``planner`` (a test seam: tests/support/judges/violation.py runs a kumaco whose
planner oversteps the ceiling, to prove the audit judge catches it).

The API server is reached only through the typed
:class:`~kumaco.kube.resources.Resources` given at construction (the seam of the
unit tests). Only the leader acts (the seam is :attr:`Controller.election`,
anything with ``is_leader``/``write_deadline``): it reconciles windows, writes
node conditions, emits window Events and enforces the ceiling; nodes that left
the scope are handled by :class:`~kumaco.controller.scope.Departures`.
Followers keep warm caches (and the window gauges,
:meth:`~kumaco.controller.metrics.Metrics.observe_windows`), and write one thing: the
release of a holder whose machine rebooted
(:class:`~kumaco.controller.releases.FollowerReleases`). On becoming leader,
the view is rebuilt with a fresh LIST before the first write, so that the old
leader's last writes are seen and the MaintenanceInProgress ceiling holds across
failover. With ``--respect-pdbs`` every replica also watches every Pod and
PodDisruptionBudget (:class:`~kumaco.controller.budgets.BudgetStore`; not relisted on
becoming leader: no write depends on them being newer) and plans with their answers;
until both are listed it plans as if every node were refused (windows open, nobody is
admitted).

Writes
------
The writes are the core's :func:`kumaco.core.planning.planner.changes` (only changed
conditions; ``lastTransitionTime`` moves only when the status does; nothing
when nothing changed), sent by :class:`~kumaco.controller.writer.StatusWriter`:
revocations before grants, resourceVersion preconditions, fenced by the
leader's lease deadline. A pass that wrote is followed at once by another, planned
from what it wrote (:meth:`Controller.settle`), until one writes nothing: ``run``
reaches the fixed point ``kumaco plan`` would compute over the same nodes, without
waiting for an unrelated event (at most :data:`MAX_WRITING_PASSES` passes).
Window Events are decided by :class:`~kumaco.controller.announce.Announcer` and sent by
:class:`~kumaco.kube.events.EventRecorder`.

Notifications
-------------
With an ``outbox`` (``--notify-url``), the leader tells people the moments it decided,
once each, in the order they happened within a pass: the windows opened (only when its
``WindowStarted`` Event was created: a new leader finding the Event's name taken stays
silent), then the nodes' moments (:class:`~kumaco.controller.moments.NodeMoments`:
observed before planning and again after the writes, so its own admissions and a
follower's releases alike), then the nodes whose wait reached ``--notify-waiting-after``
(:class:`~kumaco.controller.moments.WaitingMoments`, only when ``waiting-too-long`` is
chosen: the pass's next change then includes the instant the next wait reaches it, so
the message is on time), then the windows closed (the same rule, ``WindowEnded``),
and a window found invalid when its ``WindowInvalid`` Event is recorded. Publishing
never blocks (:class:`~kumaco.notify.sender.Outbox`); on stopping, the leader sends what
is queued, bounded by ``--notify-flush-timeout``, before it releases its Lease.

Config hash
-----------
The ``data`` of all watched window ConfigMaps is hashed once the caches are
synced (:class:`~kumaco.core.windows.config_change.ConfigChange` decides, this loop acts).
When it changes, the leader waits for it to settle, logs what changed and exits with
:data:`EXIT_CONFIG_CHANGED` after releasing the Lease, so a
restart rebuilds the state; a follower only logs and adopts the new hash (it
has no state to rebuild until it leads).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kumaco.controller.announce import (
    ENDED,
    EXPIRED,
    PLANNED,
    STARTED,
    Announcement,
    Announcer,
)
from kumaco.controller.budgets import BudgetStore
from kumaco.controller.metrics import Metrics
from kumaco.controller.moments import NodeMoments, WaitingMoments
from kumaco.controller.options import (
    EXIT_CONFIG_CHANGED,
    EXIT_LEADERSHIP_LOST,
    EXIT_OK,
    ControllerOptions,
)
from kumaco.controller.outcomes import Reporter
from kumaco.controller.releases import FollowerReleases
from kumaco.controller.scope import Departures
from kumaco.controller.stores import ConfigMapStore, NodeStore, planner_conditions
from kumaco.controller.writer import Election, Fenced, StatusWriter
from kumaco.core.errors import error_text
from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals, not_listed
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.changes import changes
from kumaco.core.planning.pdb_rule import PDBS
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Plan, Policy
from kumaco.core.planning.waiting import waiters
from kumaco.core.time.durations import SECOND
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.core.windows.config_change import (
    Adopted,
    ConfigChange,
    Loaded,
    ParsedWindow,
    Settled,
    Settling,
)
from kumaco.core.windows.configmaps import WindowConfigMap, window_of
from kumaco.core.windows.window import InvalidWindow, Window
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
from kumaco.kube.resources import Collection, Resources
from kumaco.kube.store import Sink
from kumaco.notify.messages import CLOSED, ENDED_EVENT, OPENED, WAITING_EVENT, Moment, listed
from kumaco.notify.messages import INVALID as INVALID_EVENT
from kumaco.notify.sender import Outbox

log = logging.getLogger("kumaco.controller")

RESYNC_SECONDS = 300.0  # re-evaluate at least this often (no I/O unless something changed)
#: Passes per wake-up (:meth:`Controller.settle`): a pass that wrote is planned again at
#: once from what it wrote, until a pass writes nothing; a planner that never settles is
#: stopped here, logged and counted, and waits for the next event or instant.
MAX_WRITING_PASSES = 10

#: What the controller plans with: :func:`kumaco.core.planning.planner.plan`'s signature.
Planner = Callable[[Iterable[Window], NodeSet, int, Policy, Refusals], Plan]

__all__ = [
    "EXIT_CONFIG_CHANGED",
    "EXIT_LEADERSHIP_LOST",
    "EXIT_OK",
    "Controller",
    "ControllerOptions",
    "Election",
    "Planner",
]


class Controller:
    """Watches, plans and writes; see the module docstring."""

    def __init__(
        self,
        options: ControllerOptions,
        policy: Policy,
        api: Resources,
        election: Election,
        metrics: Metrics,
        *,
        now_ns: Callable[[], int],
        monotonic: Callable[[], float] = time.monotonic,
        planner: Planner = plan,
        outbox: Outbox | None = None,
    ) -> None:
        self.options = options
        self.policy = policy
        self.api = api
        self.election = election
        self.metrics = metrics
        self.now_ns = now_ns
        self.monotonic = monotonic
        self.planner = planner
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
        #: With ``--respect-pdbs`` only: pods and PodDisruptionBudgets (nothing otherwise).
        self.budgets = BudgetStore(on_change=self.wake) if policy.reads_cluster(PDBS) else None
        self.events = EventRecorder(
            api,
            instance=options.lease_name,
            identity=options.identity,
            controller=REPORTING_CONTROLLER,
            wall=lambda: dt.datetime.fromtimestamp(self.now_ns() / 1e9, dt.UTC),
            on_emit=lambda reason: metrics.events.labels(reason=reason).inc(),
        )
        self.writer = StatusWriter(
            api,
            self.nodes,
            election,
            metrics,
            field_manager=options.field_manager,
            in_progress=policy.in_progress,
            concurrency=options.write_concurrency,
            monotonic=monotonic,
            stop=self.stop,
        )
        self.departures = Departures(api, self.nodes, self.writer, policy)
        self.follower_releases = FollowerReleases(
            api,
            self.nodes,
            election,
            metrics,
            policy,
            field_manager=options.field_manager,
            planner=planner,
            refusals=self._refusals,
        )
        self.announcer = Announcer(int(options.event_lookback * 1e9))
        self.reporter = Reporter(metrics, policy.in_progress)
        #: ``--notify-url``: the leader's notifications (None: none).
        self.outbox = outbox
        self.node_moments = NodeMoments(policy.in_progress) if outbox is not None else None
        #: ``waiting-too-long`` chosen: the waits told (None: not told, no wake-up for it).
        self.waiting_moments = (
            WaitingMoments() if outbox is not None and WAITING_EVENT in outbox.events else None
        )
        self.config = ConfigChange(options.config_settle)
        self.heartbeat = monotonic()
        self._parsed: dict[str, ParsedWindow] = {}
        self._was_leader = False
        self._announced_loaded = False
        #: Whether the current pass sent writes (:meth:`settle` plans again if so).
        self._wrote = False
        self.reflectors: list[Reflector[Any]] = []
        # Exported from the start: a replica that never syncs counts as "not leading".
        metrics.set_leading(options.lease_name, False)

    # ------------------------------------------------------------------ wiring

    def wake(self) -> None:
        self._wake.set()

    @property
    def synced(self) -> bool:
        """Nodes and windows listed (pods and budgets need not be: see :meth:`_refusals`)."""
        return self.nodes.synced.is_set() and self.configmaps.synced

    def healthy(self) -> bool:
        """The loop turns and the election loop is not stuck."""
        now = self.monotonic()
        return now - self.heartbeat < RESYNC_SECONDS + 60 and self.election.healthy(now)

    def start_watches(self) -> None:
        o = self.options
        watched: list[tuple[str, Collection, Sink[Any]]] = [
            ("nodes", self.api.nodes(o.node_selector), self.nodes)
        ]
        for ns in o.namespaces:
            collection = self.api.configmaps(ns, o.configmap_selector)
            watched.append((f"configmaps/{ns}", collection, self.configmaps.sink(ns)))
        if self.budgets is not None:
            watched.append(("pods", self.api.pods(), self.budgets.pods_sink()))
            watched.append(
                (
                    "poddisruptionbudgets",
                    self.api.poddisruptionbudgets(),
                    self.budgets.budgets_sink(),
                )
            )
        self.reflectors = [
            Reflector(
                collection,
                sink,
                self.stop,
                name=name,
                silence=o.watch_silence,
                on_restart=self.metrics.watch_restarted,
            )
            for name, collection, sink in watched
        ]
        for r in self.reflectors:
            r.start()

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        """Run until stopped; return the process exit code."""
        if self.outbox is not None:
            self.outbox.start()
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
                next_change = self.settle()
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

    def settle(self) -> int | None:
        """Passes until one writes nothing: a pass that wrote is planned again at once.

        kumaco's own writes are stored through (:class:`~.writer.StatusWriter`) and their
        echoes wake nobody, so without this a state reachable only through its own write
        would wait for an unrelated event (``kumaco plan`` over the nodes as written would
        say what ``run`` has not done yet). At most :data:`MAX_WRITING_PASSES` passes; a
        wake-up that hits the bound is logged and counted (``kumaco_reconcile_pass_limit``)
        and the loop waits for the next event or instant. Returns the last pass's next
        change.
        """
        next_change: int | None = None
        for _pass in range(MAX_WRITING_PASSES):
            self._wrote = False
            next_change = self.step()
            if not self._wrote or self.stop.is_set():
                return next_change
        log.warning(
            "the plan did not settle: every pass wrote; waiting for the next event",
            extra={"passes": MAX_WRITING_PASSES},
        )
        self.metrics.pass_limit.inc()
        return next_change

    def request_exit(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
        self.stop.set()
        self._wake.set()

    def leadership_lost(self) -> None:
        self.metrics.set_leading(self.options.lease_name, False)
        self.request_exit(EXIT_LEADERSHIP_LOST)

    def _shutdown(self) -> None:
        self.writer.shutdown()
        if self.outbox is not None:
            # Before the Lease goes: what this leader decided, it also tells.
            self.outbox.close()
        if self.election.release():
            log.info("lease released for a fast takeover")

    # ------------------------------------------------------------------ one pass

    def step(self) -> int | None:
        """One level-triggered pass; returns the next instant (ns) to look again, if any.

        The pass reads kumaco's clock once: every decision, write and metric of it is of
        that one instant (a plan, its window Events and its release stamps never disagree
        about what time it is).
        """
        now = self.now_ns()
        entries = self._windows()
        hold = self._config_changed(entries, now)
        if hold is not None or self.exit_code is not None:
            return hold
        window_change = self.metrics.observe_windows(entries, now)
        leader = self.election.is_leader
        self.metrics.set_leading(self.options.lease_name, leader)
        if not leader:
            self._was_leader = False
            # A rebooted holder's release waits for no leader (see releases.py).
            windows = [p.result for p in entries if isinstance(p.result, Window)]
            self.follower_releases.step(windows, now)
            return window_change  # followers keep the window gauges right too
        if not self._was_leader:
            self._rebuild(now)
            self._was_leader = True
            self._announced_loaded = False
            self.announcer.reset()
            if self.node_moments is not None:
                # The previous leader's last word (LeaseElection.took_over_after; None
                # for a first leader or without an election): moments after it are told.
                # Never further back than --event-lookback (a Lease left long ago).
                took_over = parse_timestamp(getattr(self.election, "took_over_after", None))
                lookback = now - self.announcer.lookback
                since = None if took_over is None else max(took_over, lookback)
                self.node_moments.reset(since)
                if self.waiting_moments is not None:
                    self.waiting_moments.reset(since)
        windows = [p.result for p in entries if isinstance(p.result, Window)]
        # Conditions first: a new leader's first writes must not wait behind one
        # Event per window ConfigMap (hundreds with a large or broken config).
        next_change = self.reconcile(windows, now)
        self.departures.check(now)
        if not self._announced_loaded:
            self._announce_config(entries)
        return next_change

    def _windows(self) -> list[ParsedWindow]:
        """Parse each window ConfigMap once per data change."""
        parsed: dict[str, ParsedWindow] = {}
        for cm in self.configmaps.snapshot():
            old = self._parsed.get(cm.key)
            if old is not None and old.cm.data == cm.data and old.cm.uid == cm.uid:
                parsed[cm.key] = ParsedWindow(cm, old.result)
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
            parsed[cm.key] = ParsedWindow(cm, result)
        self._parsed = parsed
        valid = sum(1 for p in parsed.values() if isinstance(p.result, Window))
        self.metrics.windows.labels(state="valid").set(valid)
        self.metrics.windows.labels(state="invalid").set(len(parsed) - valid)
        return list(parsed.values())

    def _config_changed(self, entries: list[ParsedWindow], now: int) -> int | None:
        """Act on :class:`~kumaco.core.windows.config_change.ConfigChange`'s answer for this pass.

        Returns an instant to look again if the pass stops there (the leader
        writes nothing while a change settles); after a settled change the
        leader logs it, announces the end of open windows whose ConfigMap was
        deleted, and exits once so that a restart rebuilds the state.
        """
        d = self.config.observe(entries, leader=self.election.is_leader, now=self.monotonic())
        if isinstance(d, Loaded):
            self.metrics.set_config_hash(d.hash)
            log.info("windows loaded", extra={"configHash": d.hash, "windows": d.windows})
        elif isinstance(d, Adopted):
            log.info(
                "window ConfigMaps changed; a follower adopts them without restarting",
                extra={"configHashBefore": d.before, "configHashAfter": d.after, **d.change},
            )
            self.metrics.set_config_hash(d.after)
        elif isinstance(d, Settling):
            if d.first:
                log.info(
                    "window ConfigMaps changing; waiting for the changes to settle",
                    extra={"configSettleSeconds": self.config.settle, **d.change},
                )
            return now + int(d.wait * 1e9) + 1
        elif isinstance(d, Settled):
            self._announce_deleted(d.deleted, now)
            log.warning(
                "window ConfigMaps changed: exiting so that a restart rebuilds the state",
                extra={"configHashBefore": d.before, "configHashAfter": d.after, **d.change},
            )
            self.request_exit(EXIT_CONFIG_CHANGED)
        return None

    def _announce_deleted(
        self, deleted: tuple[tuple[Window, WindowConfigMap], ...], now: int
    ) -> None:
        """WindowEnded for an open window whose ConfigMap was deleted (before the exit)."""
        for w, cm in deleted:
            a = self.announcer.deleted(w, now)
            if a is not None:
                spec = EventSpec(cm, a.reason, "Close", a.note, key=a.run, aggregate=False)
                if self.events.emit(spec) and self.outbox is not None:
                    self.outbox.tell([_closed(a, now)])

    def _rebuild(self, now: int) -> None:
        """A new leader re-reads nodes and ConfigMaps (consistent LISTs) before its first write."""
        o = self.options
        nodes: list[Any] = []
        for page, _rv in self.api.nodes(o.node_selector).list_pages(
            shrink=self.nodes.tuning.shrink
        ):
            nodes.extend(self.nodes.trim(obj) for obj in page)
        self.nodes.replace(nodes)
        for ns in o.namespaces:
            items, _rv2 = self.api.configmaps(ns, o.configmap_selector).list_all()
            self.configmaps.sink(ns).replace([self.configmaps.trim(obj) for obj in items])
        if o.node_selector:
            self.departures.sweep(now)  # nodes that left the scope while nobody led
        log.info(
            "leading: view rebuilt from the cluster",
            extra={"nodes": len(nodes), "identity": o.identity},
        )

    def _announce_config(self, entries: list[ParsedWindow]) -> None:
        for p in entries:
            if isinstance(p.result, Window):
                note, reason, kind = f"window loaded: {p.result.describe()}", LOADED, NORMAL
            else:
                note, reason, kind = f"window ignored: {p.result.reason}", INVALID, WARNING
            action = "Load" if reason == LOADED else "Validate"
            spec = EventSpec(p.cm, reason, action, note, kind, key=p.cm.data_digest())
            if self.events.emit(spec) and reason == INVALID and self.outbox is not None:
                assert isinstance(p.result, InvalidWindow)
                fields = (("window", p.cm.key), ("reason", str(p.result.reason)))
                self.outbox.tell([Moment(INVALID_EVENT, p.cm.key, fields)])
        self._announced_loaded = True

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, windows: list[Window], now: int) -> int | None:
        """Plan at the pass's instant and write what differs; return the next change instant."""
        started = self.monotonic()
        moments = self.node_moments
        seen: list[Moment] = []
        with self.nodes.read() as (nodeset, versions):
            if moments is not None:  # what changed since the last pass (a follower's release)
                seen += moments.observe(nodeset, now)
            result = self.planner(windows, nodeset, now, self.policy, self._refusals(nodeset))
            due = changes(result, nodeset, versions, now, self.policy)
            self.reporter.report(due, nodeset, result)
            self.metrics.observe_holders(result, nodeset, self.policy.in_progress, now)
            self.metrics.observe_waiting(result, nodeset, self.policy, now)
            waiting, waiting_change = self._waiting(result, nodeset, now)
        self.metrics.observe_plan(result)
        pending = self.writer.pending(due)
        self._wrote = self._wrote or len(pending) > 0
        if not self.writer.apply(pending):
            self._wake.set()  # something conflicted: re-plan from fresh state
        if moments is not None and pending:  # this pass's own writes, stored through
            with self.nodes.read() as (written, _versions):
                seen += moments.observe(written, now, result)
        told = self._announce_windows(result, windows, now)
        if self.outbox is not None:
            opened = [m for m in told if m.event == OPENED]
            closed = [m for m in told if m.event != OPENED]
            self.outbox.tell([*opened, *seen, *waiting, *closed])
        self.metrics.reconcile.observe(self.monotonic() - started)
        return _earliest(result.next_change, waiting_change)

    def _waiting(self, result: Plan, nodeset: NodeSet, now: int) -> tuple[list[Moment], int | None]:
        """The waits that reached ``--notify-waiting-after``, and when the next one does."""
        if self.waiting_moments is None:
            return [], None
        return self.waiting_moments.observe(
            waiters(result, nodeset, self.policy),
            nodeset,
            now,
            round(self.options.notify_waiting_after * SECOND),
        )

    def _refusals(self, nodeset: NodeSet) -> Refusals:
        """The budgets refusing each node's drain; every node refused until they are listed.

        So a new leader opens its windows at once, however long the LIST of every pod
        takes, and admits nobody before it knows the budgets.
        """
        if self.budgets is None:
            return NO_REFUSALS
        if not self.budgets.synced:
            return not_listed(n.name for n in nodeset)
        return self.budgets.refusals()

    def _announce_windows(self, result: Plan, windows: list[Window], now: int) -> list[Moment]:
        """WindowStarted/Ended/Planned Events, once per occurrence (see :mod:`.announce`).

        Returns the moments of the Events created (none with no outbox).
        """
        cms = {p.cm.key: p.cm for p in self._parsed.values()}
        known = {w.key: w for w in windows if w.key in cms}
        told: list[Moment] = []
        for a in (
            *self.announcer.step(result, known, now),
            *self.announcer.leads(result),
            *self.announcer.expired(result, known),
        ):
            if a.window not in known:
                continue
            action = {ENDED: "Close", PLANNED: "Plan", EXPIRED: "Close"}.get(a.reason, "Open")
            cm = cms[a.window]
            key = cm.data_digest() if a.reason == EXPIRED else a.run
            spec = EventSpec(cm, a.reason, action, a.note, key=key, aggregate=False)
            if self.events.emit(spec) and self.outbox is not None:
                if a.reason == ENDED:
                    told.append(_closed(a, now))
                elif a.reason == STARTED:
                    told.append(_opened(a, result))
                elif a.reason == EXPIRED:
                    told.append(_expired(a, known[a.window]))
        return told


def _opened_at(a: Announcement) -> str:
    return format_instant(int(a.run)) if a.run.isdigit() else "(long ago)"


def _earliest(a: int | None, b: int | None) -> int | None:
    """The earlier of two instants to look again (None: none)."""
    if a is None or b is None:
        return a if b is None else b
    return min(a, b)


def _opened(a: Announcement, result: Plan) -> Moment:
    """A window's opening: how many nodes and which (one message, however many)."""
    names = [n.name for n in result.nodes if a.window in n.windows]
    state = result.windows.get(a.window)
    closes = state.closes if state is not None else None
    fields = (
        ("window", a.window),
        ("count", str(len(names))),
        ("nodes", listed(names)),
        ("opened", _opened_at(a)),
        ("closes", format_instant(closes) if closes is not None else "no scheduled end"),
    )
    return Moment(OPENED, a.window, fields)


def _expired(a: Announcement, w: Window) -> Moment:
    """A dated window that will never open again (told when its WindowExpired is created)."""
    return Moment(ENDED_EVENT, a.window, (("window", a.window), ("why", w.why_ended())))


def _closed(a: Announcement, now: int) -> Moment:
    closed = format_instant(a.end if a.end is not None else now)
    fields = (("window", a.window), ("opened", _opened_at(a)), ("closed", closed))
    return Moment(CLOSED, a.window, fields)
