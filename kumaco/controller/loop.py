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
Strategic merge patches on ``nodes/status`` (merged by condition ``type``,
so Ready, node-problem-detector's and kured's conditions are never touched)
carrying ``metadata.resourceVersion`` as a precondition: if the node changed
since kumaco read it -- say a blocking condition appeared -- the write fails
with 409, the node is re-read and the decision taken again. Only changed
conditions are sent; ``lastTransitionTime`` moves only when the status does;
nothing is written when nothing changed. Revocations go first and grants of
MaintenanceInProgress only after every revocation succeeded, so the number of
nodes in progress never exceeds the ceiling, even transiently. Every write is
fenced by the leader's lease deadline (client and server-side ``timeout``).

Config hash
-----------
The ``data`` of all watched window ConfigMaps is hashed once the caches are
synced. When it changes, the leader logs what changed and exits with
:data:`kumaco.cmd.settings.EXIT_CONFIG_CHANGED` after releasing the Lease, so a
restart rebuilds the state; a follower only logs and adopts the new hash (it
has no state to rebuild until it leads).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kumaco.cmd.observability import Metrics
from kumaco.cmd.settings import (
    EXIT_CONFIG_CHANGED,
    EXIT_LEADERSHIP_LOST,
    EXIT_OK,
    REPORTING_CONTROLLER,
    Settings,
)
from kumaco.controller.stores import (
    ConfigMapStore,
    NodeStore,
    WindowConfigMap,
    config_digest,
    config_hash,
    describe_config_change,
    leading_resource_version,
)
from kumaco.core.nodes import TRUE, Condition, NodeSet, format_instant
from kumaco.core.planner import Desired, Plan, Policy, plan
from kumaco.core.selectors import parse_selector
from kumaco.core.windows import InvalidWindow, Window, parse_window
from kumaco.kube.client import (
    STRATEGIC_MERGE,
    ApiError,
    Kube,
    Reflector,
    RetryPolicy,
    TransportError,
    retrying,
)
from kumaco.kube.events import (
    ENDED,
    INVALID,
    LOADED,
    NORMAL,
    STARTED,
    WARNING,
    EventRecorder,
    EventSpec,
)

log = logging.getLogger("kumaco.controller.loop")

RESYNC_SECONDS = 300.0  # re-evaluate at least this often (no I/O unless something changed)


class Election(Protocol):
    """What the controller needs of leader election."""

    @property
    def is_leader(self) -> bool: ...

    def write_deadline(self) -> float | None: ...

    def healthy(self, now: float | None = None) -> bool: ...

    def release(self) -> bool: ...


class Fenced(Exception):
    """The replica may no longer write: its lease deadline passed."""


@dataclass(frozen=True)
class NodeWrite:
    """One status patch for one node."""

    name: str
    resource_version: str | None
    conditions: tuple[dict[str, Any], ...]
    grant: bool
    desired: tuple[Desired, ...] = ()


@dataclass
class _Parsed:
    cm: WindowConfigMap
    result: Window | InvalidWindow


@dataclass
class Stats:
    """Counters a test or benchmark can read (the metrics hold the same)."""

    reconciles: int = 0
    writes: int = 0
    conflicts: int = 0
    failures: int = 0
    relists: int = 0
    last_plan_at: int | None = None
    write_log: list[tuple[str, float]] = field(default_factory=list)


def wall_now_ns() -> int:
    """The real wall clock, in ns since the epoch (the default clock)."""
    return time.time_ns()


class Controller:
    """Watches, plans and writes; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        kube: Kube,
        election: Election,
        metrics: Metrics,
        *,
        now_ns: Callable[[], int] = wall_now_ns,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.kube = kube
        self.election = election
        self.metrics = metrics
        self.now_ns = now_ns
        self.monotonic = monotonic
        self.stop = threading.Event()
        self._wake = threading.Event()
        self.exit_code: int | None = None
        self.policy = Policy(
            scope=parse_selector(settings.node_selector),
            under_maintenance=settings.under_maintenance_condition,
            in_progress=settings.in_progress_condition,
            ceiling=settings.max_in_progress,
            require=settings.require_conditions,
            block=settings.block_conditions,
        )
        self.nodes = NodeStore(on_change=self.wake)
        self.configmaps = ConfigMapStore(settings.namespaces, on_change=self.wake)
        self.events = EventRecorder(
            kube,
            instance=settings.leader_election_id,
            identity=settings.identity,
            controller=REPORTING_CONTROLLER,
            wall=lambda: dt.datetime.fromtimestamp(self.now_ns() / 1e9, dt.UTC),
            on_emit=lambda reason: metrics.events.labels(reason=reason).inc(),
        )
        self.stats = Stats()
        self.heartbeat = monotonic()
        self._parsed: dict[str, _Parsed] = {}
        self._baseline: dict[str, str] | None = None
        self._was_leader = False
        self._announced_loaded = False
        # window key -> (the run announced, its end if known)
        self._announced: dict[str, tuple[str, int | None]] = {}
        self._caught_up: set[str] = set()
        self._terminal: dict[str, tuple[str | None, tuple[Desired, ...]]] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(settings.write_concurrency, "write")
        self.reflectors: list[Reflector] = []

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
        s = self.settings
        self.reflectors = [
            Reflector(
                self.kube, "/api/v1/nodes", s.node_selector, self.nodes, self.stop, name="nodes"
            )
        ]
        for ns in s.namespaces:
            self.reflectors.append(
                Reflector(
                    self.kube,
                    f"/api/v1/namespaces/{ns}/configmaps",
                    s.configmap_selector,
                    self.configmaps.sink(ns),
                    self.stop,
                    name=f"configmaps/{ns}",
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
                next_change = self.now_ns() + int(self.settings.retry_period * 1e9)
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
        self.metrics.leader.set(0)
        self.request_exit(EXIT_LEADERSHIP_LOST)

    def _shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self.election.release():
            log.info("lease released for a fast takeover")

    # ------------------------------------------------------------------ one pass

    def step(self) -> int | None:
        """One level-triggered pass; returns the next instant (ns) to look again, if any."""
        entries = self._windows()
        if self._config_changed(entries):
            return None
        leader = self.election.is_leader
        self.metrics.leader.set(1 if leader else 0)
        if not leader:
            self._was_leader = False
            return None
        if not self._was_leader:
            self._rebuild()
            self._was_leader = True
            self._announced_loaded = False
            self._announced.clear()
            self._caught_up.clear()
        windows = [p.result for p in entries if isinstance(p.result, Window)]
        # Conditions first: a new leader's first writes must not wait behind one
        # Event per window ConfigMap (hundreds with a large or broken config).
        next_change = self.reconcile(windows)
        if not self._announced_loaded:
            self._announce_config(entries)
        return next_change

    def _windows(self) -> list[_Parsed]:
        """Parse each window ConfigMap once per data change."""
        current = self.configmaps.snapshot()
        parsed: dict[str, _Parsed] = {}
        for cm in current:
            old = self._parsed.get(cm.key)
            if old is not None and old.cm.data == cm.data and old.cm.uid == cm.uid:
                parsed[cm.key] = _Parsed(cm, old.result)
                continue
            result = parse_window(
                cm.namespace, cm.name, cm.data, has_binary_data=cm.has_binary_data
            )
            if isinstance(result, InvalidWindow):
                log.warning(
                    "window ignored",
                    extra={
                        "window": cm.key,
                        "namespace": cm.namespace,
                        "reason": result.reason[:500],
                    },
                )
            parsed[cm.key] = _Parsed(cm, result)
        self._parsed = parsed
        valid = sum(1 for p in parsed.values() if isinstance(p.result, Window))
        self.metrics.windows.labels(state="valid").set(valid)
        self.metrics.windows.labels(state="invalid").set(len(parsed) - valid)
        return list(parsed.values())

    def _config_changed(self, entries: list[_Parsed]) -> bool:
        digests = config_digest([p.cm for p in entries])
        if self._baseline is None:
            self._baseline = digests
            self.metrics.config_hash.labels(hash=config_hash(digests)[:16]).set(1)
            log.info(
                "windows loaded",
                extra={"config_hash": config_hash(digests)[:16], "windows": len(digests)},
            )
            return False
        if digests == self._baseline:
            return False
        change = describe_config_change(self._baseline, digests)
        before, after = config_hash(self._baseline)[:16], config_hash(digests)[:16]
        if self.election.is_leader:
            log.warning(
                "window ConfigMaps changed: exiting so that a restart rebuilds the state",
                extra={"config_hash_before": before, "config_hash_after": after, **change},
            )
            self.request_exit(EXIT_CONFIG_CHANGED)
            return True
        log.info(
            "window ConfigMaps changed; a follower adopts them without restarting",
            extra={"config_hash_before": before, "config_hash_after": after, **change},
        )
        self._baseline = digests
        return False

    def _rebuild(self) -> None:
        """A new leader re-reads nodes and ConfigMaps (consistent LISTs) before its first write."""
        s = self.settings
        nodes: list[Any] = []
        for page, _rv in self.kube.list_pages(
            "/api/v1/nodes", s.node_selector, shrink=self.nodes.shrink
        ):
            nodes.extend(self.nodes.trim(o) for o in page)
        self.nodes.replace(nodes)
        for ns in s.namespaces:
            items, _rv2 = self.kube.list_all(
                f"/api/v1/namespaces/{ns}/configmaps", s.configmap_selector
            )
            self.configmaps.sink(ns).replace([self.configmaps.trim(o) for o in items])
        self.stats.relists += 1
        log.info(
            "leading: view rebuilt from the cluster",
            extra={"nodes": len(nodes), "identity": s.identity},
        )

    def _announce_config(self, entries: list[_Parsed]) -> None:
        for p in entries:
            if isinstance(p.result, Window):
                w = p.result
                spec = EventSpec(
                    p.cm,
                    LOADED,
                    "Load",
                    f"window loaded: {w.describe()}",
                    NORMAL,
                    key=p.cm.data_digest(),
                )
            else:
                spec = EventSpec(
                    p.cm,
                    INVALID,
                    "Validate",
                    f"window ignored: {p.result.reason}",
                    WARNING,
                    key=p.cm.data_digest(),
                )
            self.events.emit(spec)
        self._announced_loaded = True

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, windows: list[Window]) -> int | None:
        """Plan at the current instant and write what differs; return the next change instant."""
        started = self.monotonic()
        now = self.now_ns()
        with self.nodes.read() as (nodeset, rvs):
            result = plan(windows, nodeset, now, self.policy)
            writes = self._diff(result, nodeset, rvs, now)
        self.stats.reconciles += 1
        self.stats.last_plan_at = now
        self._observe(result, windows)
        safe = [w for w in writes if not w.grant]
        grants = [w for w in writes if w.grant]
        if safe and not self._apply(safe):
            self._wake.set()  # something conflicted: re-plan from fresh state before any grant
        elif grants and not self._apply(grants):
            self._wake.set()
        self._announce_windows(result, windows)
        self.metrics.reconcile.observe(self.monotonic() - started)
        return result.next_change

    def _observe(self, result: Plan, windows: list[Window]) -> None:
        self.metrics.nodes.set(len(result.nodes))
        self.metrics.windows_open.set(sum(1 for st in result.windows.values() if st.open))
        self.metrics.under_maintenance.set(sum(1 for n in result.nodes if n.is_under_maintenance))
        self.metrics.in_progress.set(sum(1 for n in result.nodes if n.is_in_progress))

    def _diff(self, result: Plan, nodeset: NodeSet, rvs: Any, now: int) -> list[NodeWrite]:
        stamp = format_instant(now)
        writes: list[NodeWrite] = []
        for np in result.nodes:
            node = nodeset.get(np.name)
            if node is None:
                continue
            changed: list[dict[str, Any]] = []
            for d in np.desired:
                cur = node.condition(d.type)
                if cur is not None and (cur.status, cur.reason, cur.message) == (
                    d.status,
                    d.reason,
                    d.message,
                ):
                    continue
                same_status = (
                    cur is not None and cur.status == d.status and cur.last_transition_time
                )
                changed.append(
                    {
                        "type": d.type,
                        "status": d.status,
                        "reason": d.reason,
                        "message": d.message,
                        "lastTransitionTime": cur.last_transition_time
                        if same_status and cur
                        else stamp,
                        "lastHeartbeatTime": stamp,
                    }
                )
            if not changed:
                self._terminal.pop(np.name, None)
                continue
            rv = rvs.get(np.name)
            failed = self._terminal.get(np.name)
            if failed is not None and failed == (rv, np.desired):
                continue  # a terminal error for exactly this write; wait for the node to change
            grant = any(
                c["type"] == self.policy.in_progress and c["status"] == TRUE for c in changed
            ) and not node.is_true(self.policy.in_progress)
            writes.append(NodeWrite(np.name, rv, tuple(changed), grant, np.desired))
        return writes

    def _apply(self, writes: list[NodeWrite]) -> bool:
        """Write all, in parallel, fenced; True if every write landed."""
        deadline = self.election.write_deadline()
        if deadline is None:
            raise Fenced
        # One retry policy for the batch (a tenacity Retrying keeps per-call state, so the
        # write threads share it), bounded by the lease deadline.
        retry = retrying(
            RetryPolicy(deadline=max(0.1, deadline - self.monotonic())), sleep=self._sleep
        )
        futures = [self._pool.submit(self._write, w, deadline, retry) for w in writes]
        ok = True
        for f in concurrent.futures.as_completed(futures):
            try:
                ok = f.result() and ok
            except Fenced:
                ok = False
        summary: dict[str, int] = {}
        for w in writes:
            for c in w.conditions:
                key = f"{c['type']}={c['status']}"
                summary[key] = summary.get(key, 0) + 1
        log.info(
            "status writes", extra={"nodes": len(writes), "all_landed": ok, "conditions": summary}
        )
        return ok

    def _write(self, w: NodeWrite, deadline: float, retry: Any) -> bool:
        path = f"/api/v1/nodes/{w.name}/status"
        body = {
            "metadata": {"resourceVersion": w.resource_version},
            "status": {"conditions": list(w.conditions)},
        }
        if w.resource_version is None:
            body.pop("metadata")

        def once() -> Any:
            remaining = deadline - self.monotonic()
            if remaining <= 0.05 or self.election.write_deadline() is None:
                raise Fenced
            t = min(remaining, self.kube.timeout)
            query = {"fieldManager": self.settings.field_manager, "timeout": f"{max(1, int(t))}s"}
            return self.kube.request_raw("PATCH", path, query, body, STRATEGIC_MERGE, timeout=t)

        try:
            answer = retry(once)
        except ApiError as exc:
            return self._write_failed(w, exc)
        except TransportError as exc:
            self.stats.failures += 1
            self.metrics.writes.labels(result="error").inc()
            log.warning("status write failed", extra={"node": w.name, "error": str(exc)[:300]})
            return False
        rv = leading_resource_version(answer)
        written = [
            Condition(c["type"], c["status"], c["reason"], c["message"], c["lastTransitionTime"])
            for c in w.conditions
        ]
        if rv is None or not self.nodes.put_written(w.name, rv, written):
            self.nodes.put(json.loads(answer))
        self.stats.writes += 1
        self.stats.write_log.append((w.name, self.monotonic()))
        if len(self.stats.write_log) > 100_000:
            del self.stats.write_log[:50_000]
        self.metrics.writes.labels(result="ok").inc()
        conditions = {c["type"]: f"{c['status']} ({c['reason']})" for c in w.conditions}
        # A window opening writes every node it covers: those go in the batch summary;
        # a change of MaintenanceInProgress (what kured acts on) is logged per node.
        level = (
            logging.INFO
            if any(c["type"] == self.policy.in_progress for c in w.conditions)
            else logging.DEBUG
        )
        log.log(level, "conditions written", extra={"node": w.name, "conditions": conditions})
        return True

    def _sleep(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def _write_failed(self, w: NodeWrite, exc: ApiError) -> bool:
        if exc.status == 409:
            self.stats.conflicts += 1
            self.metrics.writes.labels(result="conflict").inc()
            log.info("status write conflicted; re-reading the node", extra={"node": w.name})
            with contextlib.suppress(ApiError, TransportError):
                self.nodes.put(self.kube.request("GET", f"/api/v1/nodes/{w.name}"))
            return False
        if exc.status == 404:
            self.nodes.forget(w.name)
            return False
        self.stats.failures += 1
        self.metrics.writes.labels(result="error").inc()
        self._terminal[w.name] = (w.resource_version, w.desired)
        log.error(
            "status write refused; not retried until the node changes",
            extra={
                "node": w.name,
                "status": exc.status,
                "reason": exc.reason,
                "error": exc.message[:300],
            },
        )
        return False

    # ------------------------------------------------------------------ window events

    def _announce_windows(self, result: Plan, windows: Iterable[Window]) -> None:
        """Started/ended Events once per occurrence (a run of merged occurrences).

        A run is named by its start; a run whose start lies beyond what is
        followed (a window that never closes) is named "unbounded".
        """
        counts: dict[str, int] = {}
        for np in result.nodes:
            for key in np.windows:
                counts[key] = counts.get(key, 0) + 1
        by_key = {w.key: w for w in windows}
        cms = {p.cm.key: p.cm for p in self._parsed.values()}
        for key, state in result.windows.items():
            w, cm = by_key.get(key), cms.get(key)
            if w is None or cm is None:
                continue
            announced = self._announced.get(key)
            if state.open:
                since = w.run_start(result.at)
                run = str(since) if since is not None else "unbounded"
                if announced is not None and announced[0] != run:
                    self._emit_ended(cm, w, announced[0], announced[1] or result.at)
                if announced is None or announced[0] != run:
                    opened = format_instant(since) if since is not None else "(long ago)"
                    closes = (
                        format_instant(state.closes)
                        if state.closes is not None
                        else "no scheduled end"
                    )
                    nodes = counts.get(key, 0)
                    note = (
                        f"window {key} opened at {opened} for {nodes} node(s); closes at {closes}"
                    )
                    spec = EventSpec(cm, STARTED, "Open", note, key=run, aggregate=False)
                    self.events.emit(spec)
                self._announced[key] = (run, state.closes)
            elif announced is not None:
                self._emit_ended(cm, w, announced[0], announced[1] or result.at)
                del self._announced[key]
            elif key not in self._caught_up:
                self._catch_up_ended(cm, w, result.at)
            self._caught_up.add(key)

    def _emit_ended(self, cm: WindowConfigMap, w: Window, run: str, end: int) -> None:
        opened = format_instant(int(run)) if run.isdigit() else "(long ago)"
        note = f"window {w.key} (opened at {opened}) ended at {format_instant(end)}"
        self.events.emit(EventSpec(cm, ENDED, "Close", note, key=run, aggregate=False))

    def _catch_up_ended(self, cm: WindowConfigMap, w: Window, now: int) -> None:
        """After a takeover: announce a run that ended while nobody led (at most once)."""
        lookback = int(self.settings.event_lookback * 1e9)
        last = None
        for iv in w.intervals(now - lookback, now):
            if now - lookback < iv.end <= now:
                last = iv
        if last is not None:
            self._emit_ended(cm, w, str(last.start), last.end)
