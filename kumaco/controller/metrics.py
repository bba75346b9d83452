"""Every metric kumaco exports, on a private Prometheus registry.

Contract: :class:`Metrics` owns its own ``CollectorRegistry`` (never the
global default one, so several controllers in one test process do not mix),
with the process, platform and garbage-collector collectors of
``prometheus_client``; the controller and the I/O edge update it through its
attributes and callbacks (:meth:`Metrics.observe_request` for every API
request, :meth:`Metrics.watch_restarted` for every watch that ended),
:func:`kumaco.cmd.observability.serve_metrics` exposes it. The names, labels
and meanings are listed in docs/observability.md (Metrics); alerts on them are in
kustomize/components/monitoring.

Gauges about the nodes (under maintenance, in progress, conflicts, holders)
are the leader's: on a follower they stay 0 or empty. Gauges about the
windows are kept by every replica. The ``observe_*`` methods turn what the
controller computed (a plan, the parsed windows, the node set) into gauges;
they read no clock (``now`` is passed in).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
)

from kumaco import __version__
from kumaco.core.objects.nodes import TRUE, NodeSet
from kumaco.core.planning.policy import Plan, Policy
from kumaco.core.planning.waiting import oldest_wait
from kumaco.core.time.instants import parse_timestamp
from kumaco.core.windows.config_change import ParsedWindow
from kumaco.core.windows.window import Window

WRITE_RESULTS = ("ok", "conflict", "error", "unknown")
#: client-go's rest_client_request_duration_seconds buckets, up to a minute.
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class Metrics:
    """Every metric kumaco exports, on its own registry."""

    def __init__(self, version: str = __version__) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.build_info = Gauge(
            "kumaco_build_info", "kumaco's version (always 1).", ["version"], registry=r
        )
        self.build_info.labels(version=version).set(1)
        self.windows = Gauge(
            "kumaco_windows", "Window ConfigMaps by validity.", ["state"], registry=r
        )
        for state in ("valid", "invalid"):
            self.windows.labels(state=state)
        self.windows_open = Gauge("kumaco_windows_open", "Windows open now.", registry=r)
        self.windows_ended = Gauge(
            "kumaco_windows_ended",
            "Valid windows whose dates (a one-shot startTime, notAfter) leave no occurrence "
            "to come: they will never open again (delete them).",
            registry=r,
        )
        self.window_open = Gauge(
            "kumaco_window_open",
            "1 while the window is open, 0 while it is closed (valid windows only).",
            ["namespace", "window"],
            registry=r,
        )
        self.window_next = Gauge(
            "kumaco_window_next_transition_timestamp_seconds",
            "When the window next opens (if closed) or closes (if open), as a Unix time; "
            "+Inf when no such instant is known (open with no end in sight, or never again).",
            ["namespace", "window"],
            registry=r,
        )
        self._window_labels: set[tuple[str, str]] = set()
        self.under_maintenance = Gauge(
            "kumaco_nodes_under_maintenance",
            "Nodes in scope with UnderMaintenance=True (desired; the leader's view).",
            registry=r,
        )
        self.in_progress = Gauge(
            "kumaco_nodes_in_progress",
            "Nodes in scope with MaintenanceInProgress=True (desired; the leader's view).",
            registry=r,
        )
        self.in_progress_since = Gauge(
            "kumaco_in_progress_since_timestamp_seconds",
            "Since when each node holding MaintenanceInProgress has held it, as a Unix time "
            "(the condition's lastTransitionTime; the leader's view).",
            ["node"],
            registry=r,
        )
        self._holders: set[str] = set()
        self.nodes = Gauge("kumaco_nodes_in_scope", "Nodes in kumaco's scope.", registry=r)
        self.writes = Counter(
            "kumaco_condition_writes",
            "Node status writes by result: ok, conflict (409: re-read), error (refused, or "
            "not sent), unknown (timed out or broken after sending: not sent again, re-read).",
            ["result"],
            registry=r,
        )
        for result in WRITE_RESULTS:
            self.writes.labels(result=result)
        self.api_requests = Counter(
            "kumaco_api_requests",
            "Requests to the API server by verb, resource and HTTP status (<error>: no answer).",
            ["verb", "resource", "code"],
            registry=r,
        )
        self.api_duration = Histogram(
            "kumaco_api_request_duration_seconds",
            "Time from sending a request to its answer's headers (for a watch: until it "
            "started streaming).",
            ["verb", "resource"],
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.watch_restarts = Counter(
            "kumaco_watch_restarts",
            "Watches that ended, by collection and reason: closed (by the server, normal), "
            "silent (no byte for --watch-silence-timeout: a dead connection), expired (410: "
            "relisted), error.",
            ["collection", "reason"],
            registry=r,
        )
        self.events = Counter(
            "kumaco_events", "Kubernetes Events emitted by reason.", ["reason"], registry=r
        )
        self.reconcile = Histogram(
            "kumaco_reconcile_duration_seconds",
            "Time to plan and apply once.",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.heartbeat = Gauge(
            "kumaco_loop_heartbeat_timestamp_seconds",
            "When the controller loop last turned, as a Unix time (it turns at least every "
            "300 s, also on followers).",
            registry=r,
        )
        self.leader = Gauge("kumaco_leader", "1 while this replica leads.", registry=r)
        self.leader_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        self.conflicts = Gauge(
            "kumaco_condition_conflicts",
            "Conditions on nodes in scope that this instance would change but another kumaco "
            "instance last wrote (left alone).",
            registry=r,
        )
        self.timeouts = Counter(
            "kumaco_in_progress_timeouts",
            "MaintenanceInProgress revoked by --in-progress-timeout.",
            registry=r,
        )
        self.releases = Counter(
            "kumaco_releases",
            "Holders released from MaintenanceInProgress, by cause: RequiredConditionCleared "
            "(a required condition went False), RebootObserved (status.nodeInfo.bootID changed "
            "since admission), InProgressTimeout (--in-progress-timeout).",
            ["cause"],
            registry=r,
        )
        for cause in ("RequiredConditionCleared", "RebootObserved", "InProgressTimeout"):
            self.releases.labels(cause=cause)
        self.pass_limit = Counter(
            "kumaco_reconcile_pass_limit",
            "Wake-ups after which the leader stopped planning again although its last pass "
            "still wrote (the bound on passes per wake-up: a planner that would flap).",
            registry=r,
        )
        self.follower_releases = Counter(
            "kumaco_follower_releases",
            "Releases by an observed reboot written by a replica while it did not lead (a "
            "holder back from its reboot while no replica led), by result: ok, conflict "
            "(someone else wrote the node first; dropped), error, unknown (never resent).",
            ["result"],
            registry=r,
        )
        for result in WRITE_RESULTS:
            self.follower_releases.labels(result=result)
        self.notifications = Counter(
            "kumaco_notifications",
            "Notifications (--notify-url) by event and result, one per endpoint: sent, failed "
            "(after the retries), dropped (the queue was full, or kumaco stopped first).",
            ["event", "result"],
            registry=r,
        )
        self.config_hash = Gauge(
            "kumaco_config_info", "The config hash in force.", ["hash"], registry=r
        )
        self.policy = Info(
            "kumaco_policy",
            "The effective configuration: one label per policy flag and name (always 1).",
            registry=r,
        )
        self.oldest_waiting = Gauge(
            "kumaco_oldest_waiting_seconds",
            "The longest a node in scope has waited for maintenance: it asks (its required "
            "conditions True) and only the schedule or the fleet keeps it out (no open window, "
            "the admission cutoff, a ceiling, a budget, another group, the admission rate); "
            "seconds since its request, at the last pass (0 when none waits; the leader's view).",
            registry=r,
        )

    def observe_request(self, verb: str, resource: str, code: str, seconds: float) -> None:
        """One API request (the :class:`kumaco.kube.client.Kube` ``observe`` callback)."""
        self.api_requests.labels(verb=verb, resource=resource, code=code).inc()
        self.api_duration.labels(verb=verb, resource=resource).observe(seconds)

    def watch_restarted(self, collection: str, reason: str) -> None:
        """One watch ended (the :class:`kumaco.kube.reflector.Reflector` callback)."""
        self.watch_restarts.labels(collection=collection, reason=reason).inc()

    def set_leading(self, lease: str, leading: bool) -> None:
        self.leader.set(1 if leading else 0)
        self.leader_status.labels(name=lease).set(1 if leading else 0)

    def set_policy(self, configuration: Iterable[tuple[str, str]]) -> None:
        """``kumaco_policy_info``: each flag's effective value, the flag in snake_case."""
        self.policy.info({flag.replace("-", "_"): value for flag, value in configuration})

    def set_config_hash(self, digest: str) -> None:
        """Exactly one ``kumaco_config_info`` series: the hash in force."""
        self.config_hash.clear()
        self.config_hash.labels(hash=digest).set(1)

    def set_windows(self, states: Iterable[tuple[str, str, bool, float]]) -> None:
        """Every valid window's (namespace, name, open, next transition); others are removed."""
        seen: set[tuple[str, str]] = set()
        for namespace, name, is_open, next_transition in states:
            seen.add((namespace, name))
            self.window_open.labels(namespace=namespace, window=name).set(1 if is_open else 0)
            self.window_next.labels(namespace=namespace, window=name).set(next_transition)
        for namespace, name in self._window_labels - seen:
            self.window_open.remove(namespace, name)
            self.window_next.remove(namespace, name)
        self._window_labels = seen

    def set_holders(self, since: dict[str, float]) -> None:
        """The nodes holding MaintenanceInProgress and since when; others are removed."""
        for node, at in since.items():
            self.in_progress_since.labels(node=node).set(at)
        for node in self._holders - since.keys():
            self.in_progress_since.remove(node)
        self._holders = set(since)

    # ------------------------------------------------------------------ observations

    def observe_plan(self, result: Plan) -> None:
        """The leader's node gauges from its plan."""
        self.nodes.set(len(result.nodes))
        self.windows_open.set(sum(1 for st in result.windows.values() if st.open))
        self.under_maintenance.set(sum(1 for n in result.nodes if n.is_under_maintenance))
        self.in_progress.set(sum(1 for n in result.nodes if n.is_in_progress))

    def observe_windows(self, entries: Sequence[ParsedWindow], now: int) -> int | None:
        """The per-window gauges at ``now``; returns the soonest window transition, if any.

        That is when these gauges go stale (every replica wakes for it).
        """
        states = []
        soonest: int | None = None
        ended = 0
        for p in entries:
            if not isinstance(p.result, Window):
                continue
            st = p.result.state_at(now)
            ended += st.ended
            nxt = st.closes if st.open else st.opens
            states.append(
                (p.cm.namespace, p.cm.name, st.open, math.inf if nxt is None else nxt / 1e9)
            )
            change = st.next_change
            if change is not None and (soonest is None or change < soonest):
                soonest = change
        self.set_windows(states)
        self.windows_ended.set(ended)
        return soonest

    def observe_waiting(self, result: Plan, nodeset: NodeSet, policy: Policy, now: int) -> None:
        """``kumaco_oldest_waiting_seconds`` from the plan (:mod:`kumaco.core.planning.waiting`)."""
        self.oldest_waiting.set(oldest_wait(result, nodeset, policy) / 1e9)

    def observe_holders(self, result: Plan, nodeset: NodeSet, in_progress: str, now: int) -> None:
        """Since when each node that holds ``in_progress`` (MaintenanceInProgress) has held it."""
        since: dict[str, float] = {}
        for n in result.nodes:
            if not n.is_in_progress:
                continue
            node = nodeset.get(n.name)
            cur = None if node is None else node.condition(in_progress)
            at = None
            if cur is not None and cur.status == TRUE:
                at = parse_timestamp(cur.last_transition_time)
            since[n.name] = (at if at is not None else now) / 1e9
        self.set_holders(since)
