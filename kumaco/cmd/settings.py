"""Settings of ``kumaco run``: one frozen object, built once from flags and env, passed down.

Contract: :func:`settings_from_args` is the only place that reads flags,
environment variables (``KUMACO_<FLAG>``, e.g. ``KUMACO_MAX_IN_PROGRESS``;
a flag on the command line wins) and the pod's identity (``POD_NAME``,
``POD_NAMESPACE``, the service-account namespace file). Everything else
receives a :class:`Settings` -- or the part of it it needs: the
:class:`~kumaco.core.planning.instance.Instance` (condition types, field manager, Lease;
derived once, with the policy, by :func:`~kumaco.cmd.flags.policy_from_args`), the
:class:`~kumaco.core.planning.planner.Policy` and the
:class:`~kumaco.controller.loop.ControllerOptions`. Bad values are usage
errors with the flag's name. Flag names follow controller-runtime where one
exists; the policy flags are :mod:`kumaco.cmd.flags`'s, shared with ``plan``.

Exit codes of ``kumaco run`` (documented in docs/reference.md):

* 0 -- stopped by SIGTERM/SIGINT;
* 1 -- cannot start (no API access, bad configuration);
* 2 -- command-line usage error;
* 3 -- the window ConfigMaps' data changed: a controlled exit so that a
  restart rebuilds the state (:data:`EXIT_CONFIG_CHANGED`);
* 4 -- leadership lost (the Lease could not be renewed in time).
"""

from __future__ import annotations

import argparse
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kumaco import __version__
from kumaco.cmd.flags import (
    NAMESPACES_METAVAR,
    UsageError,
    add_policy_flags,
    apply_env_defaults,
    parse_bool,
    policy_from_args,
    selector_flag,
)
from kumaco.cmd.notifications import NotifySettings, add_notify_flags, notify_settings
from kumaco.controller.options import (
    EXIT_CONFIG_CHANGED,
    EXIT_LEADERSHIP_LOST,
    EXIT_OK,
    ControllerOptions,
)
from kumaco.core.errors import InvalidInput
from kumaco.core.planning.instance import Instance
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import SECOND, parse_go_duration
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.kube.config import SA_NAMESPACE_FILE, own_namespace

EXIT_START_FAILED = 1
EXIT_USAGE = 2

__all__ = [
    "DEFAULT_CONFIGMAP_SELECTOR",
    "EXIT_CONFIG_CHANGED",
    "EXIT_LEADERSHIP_LOST",
    "EXIT_OK",
    "EXIT_START_FAILED",
    "EXIT_USAGE",
    "Settings",
    "UsageError",
    "add_run_flags",
    "apply_env_defaults",
    "make_identity",
    "own_namespace",
    "parse_bind_address",
    "settings_from_args",
]


@dataclass(frozen=True)
class Settings:
    """Everything ``kumaco run`` was told, validated."""

    kubeconfig: str | None
    namespaces: tuple[str, ...]
    configmap_selector: str
    node_selector: str
    #: Who it is: condition types, field manager, Lease (the same value as the policy's).
    instance: Instance
    policy: Policy
    leader_elect: bool
    lease_duration: float
    renew_deadline: float
    retry_period: float
    metrics_bind_address: str
    health_probe_bind_address: str
    log_format: str
    log_level: str
    identity: str
    write_concurrency: int
    event_lookback: float
    config_settle: float
    watch_silence_timeout: float = 130.0
    #: The effective value of each policy flag and name, as (flag without ``--``, text):
    #: what the start-up log and ``kumaco_policy_info`` show (:func:`effective_configuration`).
    configuration: tuple[tuple[str, str], ...] = ()
    #: ``--notify-url`` and the rest (:mod:`kumaco.cmd.notifications`); no URL: none sent.
    notify: NotifySettings = field(default_factory=NotifySettings)

    @property
    def leader_election_id(self) -> str:
        return self.instance.lease_name

    @property
    def leader_election_namespace(self) -> str:
        return self.instance.lease_namespace

    @property
    def field_manager(self) -> str:
        return self.instance.field_manager

    @property
    def user_agent(self) -> str:
        return f"kumaco/{__version__} ({self.identity})"

    @property
    def max_in_progress(self) -> Ceiling | None:
        return self.policy.ceiling

    @property
    def require_conditions(self) -> tuple[str, ...]:
        return self.policy.require

    @property
    def block_conditions(self) -> tuple[str, ...]:
        return self.policy.block

    def controller_options(self) -> ControllerOptions:
        """What the controller needs besides the policy."""
        return ControllerOptions(
            namespaces=self.namespaces,
            configmap_selector=self.configmap_selector,
            node_selector=self.node_selector,
            lease_name=self.leader_election_id,
            identity=self.identity,
            field_manager=self.field_manager,
            write_concurrency=self.write_concurrency,
            event_lookback=self.event_lookback,
            retry_period=self.retry_period,
            config_settle=self.config_settle,
            watch_silence=self.watch_silence_timeout,
            notify_waiting_after=self.notify.waiting_after,
        )


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """Register the flags of ``kumaco run`` (each also read from ``KUMACO_<FLAG>``)."""
    add = p.add_argument
    add(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    add(
        "--namespaces",
        metavar=NAMESPACES_METAVAR,
        help="comma-separated namespaces holding window ConfigMaps (default: its own)",
    )
    add(
        "--configmap-selector",
        default=DEFAULT_CONFIGMAP_SELECTOR,
        metavar="SEL",
        help="label selector of window ConfigMaps",
    )
    add_policy_flags(p)
    add(
        "--leader-elect",
        type=parse_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="elect one active replica with a Lease; false: this replica acts alone "
        "(development only, unsafe with more than one)",
    )
    add("--leader-election-id", default="kumaco", metavar="NAME", help="the Lease name")
    add(
        "--leader-election-namespace",
        metavar="NS",
        help="namespace of the Lease (default: its own)",
    )
    add(
        "--leader-elect-lease-duration",
        default="15s",
        metavar="DURATION",
        help="how long a Lease holds without renewal",
    )
    add(
        "--leader-elect-renew-deadline",
        default="10s",
        metavar="DURATION",
        help="the leader stops acting when it could not renew for this long",
    )
    add(
        "--leader-elect-retry-period",
        default="2s",
        metavar="DURATION",
        help="how often to try to acquire or renew the Lease",
    )
    add(
        "--metrics-bind-address",
        default=":8080",
        metavar="ADDRESS",
        help='Prometheus metrics address; "0" disables',
    )
    add(
        "--health-probe-bind-address",
        default=":8081",
        metavar="ADDRESS",
        help='/healthz and /readyz address; "0" disables',
    )
    add("--log-format", choices=("json", "text"), default="json", help="log line format")
    add(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="the least severe level logged",
    )
    add(
        "--field-manager",
        metavar="NAME",
        help="field manager of condition writes (default: kumaco/<leader-election-id>); "
        "conditions last written by another kumaco/... manager are left alone",
    )
    add(
        "--config-settle",
        default="2s",
        metavar="DURATION",
        help="after a change of the window ConfigMaps, wait this long for more changes, "
        "then exit once",
    )
    add(
        "--write-concurrency",
        type=int,
        default=16,
        metavar="N",
        help="parallel status writes",
    )
    add(
        "--watch-silence-timeout",
        default="130s",
        metavar="DURATION",
        help="a watch that receives nothing (no event, no bookmark) for this long is taken "
        "as a dead connection and resumed on a new one; the API server sends a bookmark "
        "about every minute",
    )
    add(
        "--event-lookback",
        default="5m",
        metavar="DURATION",
        help="after a takeover, a window whose occurrence ended this recently (while "
        "nobody led) still gets its WindowEnded Event",
    )
    add_notify_flags(p)


def make_identity(env: Mapping[str, str]) -> str:
    """``POD_NAME`` (or the hostname) plus a random suffix, unique per process."""
    base = env.get("POD_NAME") or socket.gethostname() or "kumaco"
    return f"{base}_{secrets.token_hex(4)}"


def _duration(flag: str, text: str) -> float:
    try:
        ns = parse_go_duration(text)
    except InvalidInput as exc:
        raise UsageError(f"--{flag}: {exc.reason}") from None
    if ns <= 0:
        raise UsageError(f"--{flag}: must be greater than 0")
    return ns / SECOND


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def effective_configuration(
    args: argparse.Namespace, namespaces: tuple[str, ...], instance: Instance
) -> tuple[tuple[str, str], ...]:
    """Each policy flag's effective value and the names kumaco acts under.

    The value is the flag's, or ``KUMACO_<FLAG>``'s, else its default; the names are its
    namespaces, selectors, Lease and field manager. Every flag that
    :func:`~kumaco.cmd.flags.add_policy_flags` declares is listed, so a new rule's flag
    shows without more code; an unset flag is ``""``, a repeatable one comma-separated,
    a boolean ``true``/``false``.
    """
    probe = argparse.ArgumentParser(add_help=False)
    add_policy_flags(probe)
    pairs = [
        ("namespaces", ",".join(namespaces)),
        ("configmap-selector", str(args.configmap_selector)),
    ]
    for action in probe._actions:
        flag = max(action.option_strings, key=len).removeprefix("--")
        pairs.append((flag, _text(getattr(args, action.dest))))
    pairs += [
        ("leader-election-id", instance.lease_name),
        ("leader-election-namespace", instance.lease_namespace),
        ("field-manager", instance.field_manager),
    ]
    return tuple(pairs)


def settings_from_args(
    args: argparse.Namespace, env: Mapping[str, str], sa_file: Path = SA_NAMESPACE_FILE
) -> Settings:
    """Validate the parsed flags into :class:`Settings`."""
    own = own_namespace(env, sa_file)
    namespaces = tuple(n.strip() for n in (args.namespaces or own or "").split(",") if n.strip())
    if not namespaces:
        raise UsageError("--namespaces: no namespace given and POD_NAMESPACE is not set")
    lease_ns = args.leader_election_namespace or own or namespaces[0]
    instance, policy = policy_from_args(args, lease_ns)
    selector_flag("--configmap-selector", args.configmap_selector)
    lease = _duration("leader-elect-lease-duration", args.leader_elect_lease_duration)
    renew = _duration("leader-elect-renew-deadline", args.leader_elect_renew_deadline)
    retry = _duration("leader-elect-retry-period", args.leader_elect_retry_period)
    if not retry < renew < lease:
        raise UsageError("leader election needs retry-period < renew-deadline < lease-duration")
    if args.write_concurrency < 1:
        raise UsageError("--write-concurrency: must be at least 1")
    return Settings(
        kubeconfig=args.kubeconfig or None,
        namespaces=namespaces,
        configmap_selector=args.configmap_selector,
        node_selector=args.node_selector,
        instance=instance,
        policy=policy,
        leader_elect=args.leader_elect,
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        log_format=args.log_format,
        log_level=args.log_level,
        identity=make_identity(env),
        write_concurrency=args.write_concurrency,
        event_lookback=_duration("event-lookback", args.event_lookback),
        config_settle=_duration("config-settle", args.config_settle),
        watch_silence_timeout=_duration("watch-silence-timeout", args.watch_silence_timeout),
        configuration=effective_configuration(args, namespaces, instance),
        notify=notify_settings(args),
    )


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``:8080``, ``127.0.0.1:8080`` or ``[::1]:8080``; ``0`` or empty disables."""
    if text in ("", "0"):
        return None
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - a pod serves probes and metrics on all interfaces
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"bind address {text!r}: the port is not a number") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"bind address {text!r}: the port is out of range")
    return host, number
