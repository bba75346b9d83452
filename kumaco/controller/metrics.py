"""Every metric kumaco exports, on a private Prometheus registry.

Contract: :class:`Metrics` owns its own ``CollectorRegistry`` (never the
global default one, so several controllers in one test process do not mix);
the controller and the I/O edge update it through its attributes and
callbacks, :func:`kumaco.cmd.observability.serve_metrics` exposes it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    """Every metric kumaco exports, on its own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.windows = Gauge(
            "kumaco_windows", "Window ConfigMaps by validity.", ["state"], registry=r
        )
        self.windows_open = Gauge("kumaco_windows_open", "Windows open now.", registry=r)
        self.under_maintenance = Gauge(
            "kumaco_nodes_under_maintenance",
            "Nodes in scope with UnderMaintenance=True (desired).",
            registry=r,
        )
        self.in_progress = Gauge(
            "kumaco_nodes_in_progress",
            "Nodes in scope with MaintenanceInProgress=True (desired).",
            registry=r,
        )
        self.nodes = Gauge("kumaco_nodes_in_scope", "Nodes in kumaco's scope.", registry=r)
        self.writes = Counter(
            "kumaco_condition_writes", "Node status writes by result.", ["result"], registry=r
        )
        self.api_errors = Counter(
            "kumaco_api_errors",
            "API errors by verb and HTTP status (0: no answer).",
            ["verb", "code"],
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
        self.leader = Gauge("kumaco_leader", "1 while this replica leads.", registry=r)
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
        self.config_hash = Gauge(
            "kumaco_config_info", "The config hash in force.", ["hash"], registry=r
        )

    def api_error(self, verb: str, code: int) -> None:
        self.api_errors.labels(verb=verb, code=str(code)).inc()
