"""``kumaco run``: wire settings, API access, election, controller, probes and signals.

Contract: :func:`run` takes a :class:`~kumaco.cmd.settings.Settings` and returns
the process exit code (see :mod:`kumaco.cmd.settings`). Its ``now_ns`` is the one wall
clock of the process -- the controller's instants and the Lease's times alike -- and is
:func:`kumaco.cmd.common.now_ns` unless a caller injects another (the tests run kumaco
through ``tests/support/env/shifted.py`` to put it a known time before a window opens,
instead of waiting for the wall clock: no flag or variable of the product changes it).
Its ``planner`` is the controller's (:func:`kumaco.core.planning.planner.plan`), injected only by
the test that proves the audit judge catches a kumaco granting too many
(tests/support/judges/violation.py).
SIGTERM and SIGINT stop the controller cleanly (in-flight writes finish, a leader
sends its queued notifications within ``--notify-flush-timeout`` and releases its Lease,
exit 0). With ``--notify-url`` it builds the controller's
:class:`~kumaco.notify.sender.Outbox`, counting each delivery in
``kumaco_notifications_total``; the URLs never reach a log (only their masked form).
Nothing here decides anything; it only connects the parts.
"""

from __future__ import annotations

import logging
import signal
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from kumaco import __version__
from kumaco.cmd.common import now_ns
from kumaco.cmd.observability import HealthServer, serve_metrics, setup_logging
from kumaco.cmd.settings import EXIT_START_FAILED, Settings, parse_bind_address
from kumaco.cmd.signals import SignalRelay
from kumaco.controller.loop import Controller, Planner
from kumaco.controller.metrics import Metrics
from kumaco.core.errors import error_text
from kumaco.core.planning.planner import plan
from kumaco.kube.client import Kube
from kumaco.kube.config import load_configuration
from kumaco.kube.election import AlwaysLeader, LeaseElection
from kumaco.kube.proxy import ProxyConfigError
from kumaco.kube.resources import KubeResources
from kumaco.notify.messages import Templates
from kumaco.notify.sender import Notifier, Outbox, endpoints

log = logging.getLogger("kumaco")


def _redacted(url: str | None) -> str:
    """A proxy URL for the log, without its password."""
    if url is None:
        return ""
    u = urllib.parse.urlsplit(url)
    if u.password is None:
        return url
    netloc = f"{u.username}:***@{u.hostname}" + (f":{u.port}" if u.port else "")
    return urllib.parse.urlunsplit(u._replace(netloc=netloc))


def _listen(
    settings: Settings, controller: Controller, metrics: Metrics
) -> tuple[HealthServer | None, Any] | None:
    """The health server (bound, not started) and the metrics server; None once logged why not.

    A port in use or an address not on this host is a start-up error naming its flag,
    not a traceback.
    """
    health_address = parse_bind_address(settings.health_probe_bind_address)
    metrics_address = parse_bind_address(settings.metrics_bind_address)
    health: HealthServer | None = None
    flag, address = "--health-probe-bind-address", settings.health_probe_bind_address
    try:
        if health_address:
            health = HealthServer(health_address, controller.healthy, lambda: controller.synced)
        flag, address = "--metrics-bind-address", settings.metrics_bind_address
        return health, serve_metrics(metrics, metrics_address) if metrics_address else None
    except OSError as exc:
        log.error(
            "cannot listen", extra={"flag": flag, "address": address, "error": error_text(exc, 500)}
        )
        if health is not None:
            health.server.server_close()
        return None


def _camel(flag: str) -> str:
    """``max-in-progress`` -> ``maxInProgress`` (the log's keys are lowerCamelCase)."""
    first, *rest = flag.split("-")
    return first + "".join(part.capitalize() for part in rest)


def _outbox(settings: Settings, metrics: Metrics) -> Outbox | None:
    """The notifications' outbox with ``--notify-url``, else None."""
    n = settings.notify
    if not n.enabled:
        return None
    targets = endpoints(n.urls)
    notifier = Notifier(
        targets,
        on_result=lambda event, result: metrics.notifications.labels(
            event=event, result=result
        ).inc(),
    )
    log.info(
        "notifications",
        extra={"endpoints": [t.name for t in targets], "events": list(n.events)},
    )
    templates = Templates(n.templates, instance=settings.leader_election_id)
    return Outbox(notifier, templates, n.events, n.flush_timeout)


def run(settings: Settings, now_ns: Callable[[], int] = now_ns, planner: Planner = plan) -> int:
    """Run the controller until stopped; return the exit code."""
    setup_logging(settings.log_format, settings.log_level, settings.identity)
    log.info(
        "starting",
        extra={
            "version": __version__,
            "identity": settings.identity,
            "namespaces": list(settings.namespaces),
            "nodeSelector": settings.node_selector,
            "leaderElect": settings.leader_elect,
            "policy": {_camel(flag): value for flag, value in settings.configuration},
        },
    )
    metrics = Metrics()
    metrics.set_policy(settings.configuration)
    try:
        configuration = load_configuration(settings.kubeconfig)
        # The controller's requests: the writers, a LIST at a time, the Events; watches
        # stream on connections of their own (taken from the same pool while they last).
        kube = Kube(
            configuration,
            settings.user_agent,
            observe=metrics.observe_request,
            pool_size=settings.write_concurrency + len(settings.namespaces) + 4,
        )
        # The Lease on a connection of its own: renewals never wait behind writes, and a
        # connection gone dead under the writers does not cost the lease (and vice versa).
        lease_kube = Kube(
            configuration, settings.user_agent, observe=metrics.observe_request, pool_size=2
        )
    except ProxyConfigError as exc:
        log.error("cannot use the proxy settings", extra={"error": error_text(exc, 500)})
        return EXIT_START_FAILED
    except Exception as exc:  # any failure to find credentials is fatal at start-up
        log.error("cannot load Kubernetes credentials", extra={"error": error_text(exc, 500)})
        return EXIT_START_FAILED
    log.info(
        "API server",
        extra={
            "server": configuration.host,
            "proxy": _redacted(kube.proxy.proxy),
            "proxySource": kube.proxy.source,
        },
    )
    holder: list[Controller] = []
    election: LeaseElection | AlwaysLeader
    if settings.leader_elect:
        election = LeaseElection(
            lease_kube,
            settings.leader_election_namespace,
            settings.leader_election_id,
            settings.identity,
            lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline,
            retry_period=settings.retry_period,
            on_started_leading=lambda: holder[0].wake() if holder else None,
            on_stopped_leading=lambda: holder[0].leadership_lost() if holder else None,
            wall=lambda: now_ns() / 1e9,
        )
    else:
        log.warning("leader election disabled: run exactly one replica (unsafe with more)")
        election = AlwaysLeader()
    controller = Controller(
        settings.controller_options(),
        settings.policy,
        KubeResources(kube),
        election,
        metrics,
        now_ns=now_ns,
        planner=planner,
        outbox=_outbox(settings, metrics),
    )
    holder.append(controller)

    servers = _listen(settings, controller, metrics)
    if servers is None:
        kube.close()
        lease_kube.close()
        return EXIT_START_FAILED
    health, metrics_server = servers
    if health is not None:
        health.start()

    def on_signal(signum: signal.Signals) -> None:
        log.info("stopping", extra={"signal": signum.name})
        controller.request_exit(0)

    # Relayed to a thread (kumaco.cmd.signals): the main thread runs the loop, which
    # waits on the Event request_exit sets; a handler setting it there could deadlock.
    with SignalRelay(dict.fromkeys((signal.SIGTERM, signal.SIGINT), on_signal)):
        election_thread = threading.Thread(target=election.run, name="election", daemon=True)
        election_thread.start()
        try:
            code = controller.run()
        finally:
            election.stop.set()
            if health is not None:
                health.stop()
            if metrics_server is not None:
                metrics_server.shutdown()
            kube.close()
            lease_kube.close()
    log.info("stopped", extra={"exitCode": code, "identity": settings.identity})
    return code
