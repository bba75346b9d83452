"""``kubectl kumaco``'s connection to a cluster: credentials, namespaces, and what it reads.

Contract: :func:`connect` loads credentials as kubectl would
(``--kubeconfig``, ``--context``, ``--as``, ``--as-group``, ``--request-timeout``;
:mod:`kumaco.kube.config`) and picks the
namespaces (``-n``/``--namespaces``, else the context's, else ``default``);
:func:`gather` reads what the status report needs into a
:class:`~kumaco.views.report.Snapshot`, recording a failed read as a problem
and reading on. Only reads: GET and LIST through :class:`~kumaco.kube.reader.Reader`.
The Kubernetes client is imported only when a command connects, so offline
commands never load it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kumaco import __version__
from kumaco.cmd.flags import UsageError
from kumaco.core.configmaps import windows_of
from kumaco.core.durations import SECOND, parse_go_duration
from kumaco.core.errors import InvalidInput
from kumaco.core.nodes import NodeSet
from kumaco.core.windows import InvalidWindow, Window
from kumaco.views.report import Scope, Snapshot

if TYPE_CHECKING:
    from kumaco.kube.reader import Reader


class ClusterError(Exception):
    """The cluster could not be read: exit status 1."""


@dataclass(frozen=True)
class Cluster:
    """A connection: the reader, the context's name, the namespaces meant, and how to close."""

    reader: Reader
    context: str | None
    namespaces: tuple[str, ...]
    close: Callable[[], None]


def _namespaces(args: argparse.Namespace, default: str) -> tuple[str, ...]:
    names: list[str] = []
    if getattr(args, "namespace", None):
        names.append(args.namespace.strip())
    names += [n.strip() for n in (getattr(args, "namespaces", None) or "").split(",")]
    unique = tuple(dict.fromkeys(n for n in names if n))
    return unique or (default,)


def connect(args: argparse.Namespace) -> Cluster:
    """Credentials and namespaces from the connection flags; :class:`ClusterError` if none."""
    # Imported here: only commands that talk to the cluster load the Kubernetes client.
    from kumaco.kube.client import Kube  # noqa: PLC0415
    from kumaco.kube.config import default_namespace, load_configuration  # noqa: PLC0415
    from kumaco.kube.proxy import ProxyConfigError  # noqa: PLC0415
    from kumaco.kube.reader import Reader  # noqa: PLC0415
    from kumaco.kube.retry import RetryPolicy  # noqa: PLC0415

    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    context_name, default_ns = default_namespace(kubeconfig, context)
    namespaces = _namespaces(args, default_ns)
    try:
        configuration = load_configuration(kubeconfig, context)
    except Exception as exc:  # the client raises many types for unusable credentials
        raise ClusterError(f"cannot load Kubernetes credentials: {exc}") from None
    timeout = request_timeout(getattr(args, "request_timeout", None))
    try:
        kube = Kube(
            configuration,
            f"kubectl-kumaco/{__version__}",
            retry=RetryPolicy(attempts=3, initial=0.2, maximum=2.0, deadline=max(15.0, timeout)),
            timeout=timeout,
            impersonate=getattr(args, "as_", None) or None,
            impersonate_groups=tuple(getattr(args, "as_group", None) or ()),
            pool_size=2,
        )
    except ProxyConfigError as exc:
        raise ClusterError(f"cannot use the proxy settings: {exc}") from None
    return Cluster(Reader(kube), context_name, namespaces, kube.close)


DEFAULT_TIMEOUT = 15.0


def request_timeout(text: str | None) -> float:
    """``--request-timeout`` as kubectl takes it: seconds, or a Go duration; 0 is the default."""
    if text in (None, "", "0"):
        return DEFAULT_TIMEOUT
    assert text is not None
    try:
        seconds = (
            float(text) if text.replace(".", "", 1).isdigit() else parse_go_duration(text) / SECOND
        )
    except InvalidInput as exc:
        raise UsageError(f"--request-timeout: {exc.reason} (e.g. 30s, 1m)") from None
    if seconds <= 0:
        raise UsageError("--request-timeout: must be greater than 0")
    return seconds


def window_entries(
    cluster: Cluster, selector: str
) -> tuple[list[Window | InvalidWindow], list[str]]:
    """The cluster's windows (valid or not, sorted) and the namespaces that could not be read."""
    from kumaco.kube.reader import list_window_configmaps  # noqa: PLC0415

    items, problems = list_window_configmaps(cluster.reader, cluster.namespaces, selector)
    return windows_of(items), problems


def nodes(cluster: Cluster, node_selector: str, owned: tuple[str, ...] = ()) -> NodeSet:
    """The nodes in scope (the server applies the selector)."""
    from kumaco.kube.reader import list_nodes  # noqa: PLC0415

    return NodeSet(list_nodes(cluster.reader, node_selector, owned))


def gather(cluster: Cluster, scope: Scope) -> Snapshot:
    """Read everything the status report needs; a failed read becomes a problem."""
    from kumaco.kube.errors import ApiError  # noqa: PLC0415
    from kumaco.kube.reader import (  # noqa: PLC0415
        get_lease,
        list_nodes,
        list_window_configmaps,
        problem,
    )

    configmaps, problems = list_window_configmaps(
        cluster.reader, scope.namespaces, scope.configmap_selector
    )
    found: tuple[Any, ...] | None = None
    try:
        owned = (scope.under_maintenance, scope.in_progress)
        found = tuple(list_nodes(cluster.reader, scope.node_selector, owned))
    except ApiError as exc:
        problems.append(problem("list nodes", exc))
    lease = None
    try:
        lease = get_lease(cluster.reader, scope.lease_ns, scope.lease_name)
    except ApiError as exc:
        problems.append(problem(f"get Lease {scope.lease_ns}/{scope.lease_name}", exc))
    return Snapshot(tuple(configmaps), found, lease, tuple(problems))
