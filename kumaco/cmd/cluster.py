"""``kubectl kumaco``'s connection to a cluster: credentials, namespaces, and what it reads.

Contract: :func:`connect` loads credentials as kubectl would
(``--kubeconfig``, ``--context``, ``--as``, ``--as-group``, ``--request-timeout``;
:mod:`kumaco.kube.config`), reads kumaco's Deployment (``--deployment``, default
``kumaco-system/kumaco``: :mod:`kumaco.cmd.deployed`; when the default one is not
there or not readable, none) and picks the namespaces (``-n``/``--namespaces``, else
those the deployed kumaco watches, else the context's, else ``default``);
a :class:`ClusterSource` is the cluster as ``kubectl kumaco``'s commands read
it: the window ConfigMaps (a namespace that cannot be read fails the command:
:class:`ClusterError`) and the nodes in scope, after checking the selectors it
sends. Only reads: GET and LIST through :class:`~kumaco.kube.reader.Reader`,
and for ``status --watch`` LIST and WATCH through the typed collections of
:class:`~kumaco.kube.resources.KubeResources` (the connection pool then holds
one connection per watch).
The Kubernetes client is imported only when a command connects, so offline
commands never load it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from kumaco import __version__
from kumaco.cmd.deployed import (
    DEFAULT_DEPLOYMENT,
    Deployed,
    DeploymentError,
    deployed_settings,
    deployment_ref,
)
from kumaco.cmd.flags import UsageError, selector_flag
from kumaco.core.errors import InvalidInput
from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals, refusals_of
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.pdb_rule import PDBS
from kumaco.core.planning.policy import Policy
from kumaco.core.time.durations import SECOND, parse_go_duration
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR, windows_of
from kumaco.core.windows.window import InvalidWindow, Window

if TYPE_CHECKING:
    from kumaco.kube.reader import Reader
    from kumaco.kube.resources import KubeResources


class ClusterError(Exception):
    """The cluster could not be read: exit status 1."""


@dataclass(frozen=True)
class Cluster:
    """A connection: the reader, the context's name, the namespaces meant, and how to close.

    ``resources``: the same connection's collections, to watch (``status --watch``).
    ``deployed``: the settings of kumaco's Deployment, when one was read.
    """

    reader: Reader
    context: str | None
    namespaces: tuple[str, ...]
    close: Callable[[], None]
    resources: KubeResources | None = None
    deployed: Deployed | None = None


def _namespaces(args: argparse.Namespace, default: tuple[str, ...]) -> tuple[str, ...]:
    names: list[str] = []
    if getattr(args, "namespace", None):
        names.append(args.namespace.strip())
    names += [n.strip() for n in (getattr(args, "namespaces", None) or "").split(",")]
    unique = tuple(dict.fromkeys(n for n in names if n))
    return unique or default


def read_deployed(reader: Reader, args: argparse.Namespace) -> Deployed | None:
    """The settings of kumaco's Deployment: ``--deployment``'s, or the default's if readable.

    A Deployment named with ``--deployment`` must be there and readable
    (:class:`ClusterError` otherwise); the default one is read if it is, quietly not
    if it is not there or not allowed (the flags keep kubectl's defaults then), nor, for
    ``status --watch``, which waits for a server it cannot reach, if it cannot be reached.
    """
    from kumaco.kube.errors import ApiError, TransportError  # noqa: PLC0415
    from kumaco.kube.reader import get_deployment, problem  # noqa: PLC0415

    given = getattr(args, "deployment", None)
    ref = deployment_ref(DEFAULT_DEPLOYMENT if given is None else given)
    if ref is None:
        return None
    try:
        found = get_deployment(reader, *ref)
    except TransportError as exc:
        if given is None and getattr(args, "watch", False):
            return None  # a watch waits for the server (its header names what it looks at)
        raise ClusterError(f"cannot reach the API server: {exc}") from None
    except ApiError as exc:
        if given is None:
            return None
        raise ClusterError(problem(f"get Deployment {'/'.join(ref)}", exc)) from None
    if found is None:
        if given is None:
            return None
        raise ClusterError(f"no Deployment {'/'.join(ref)} (--deployment)")
    try:
        return deployed_settings(found)
    except DeploymentError as exc:
        raise ClusterError(str(exc)) from None


def connect(args: argparse.Namespace) -> Cluster:
    """Credentials and namespaces from the connection flags; :class:`ClusterError` if none."""
    # Imported here: only commands that talk to the cluster load the Kubernetes client.
    from kumaco.kube.client import Kube  # noqa: PLC0415
    from kumaco.kube.config import default_namespace, load_configuration  # noqa: PLC0415
    from kumaco.kube.proxy import ProxyConfigError  # noqa: PLC0415
    from kumaco.kube.reader import Reader  # noqa: PLC0415
    from kumaco.kube.resources import KubeResources  # noqa: PLC0415
    from kumaco.kube.retry import RetryPolicy  # noqa: PLC0415

    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    context_name, default_ns = default_namespace(kubeconfig, context)
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
            # a watch holds a connection per collection: each namespace's, the nodes', the
            # Lease's (the namespaces as the command line names them; a Deployment naming
            # more makes the pool open a few more connections than it keeps)
            pool_size=len(_namespaces(args, (default_ns,))) + 3
            if getattr(args, "watch", False)
            else 2,
        )
    except ProxyConfigError as exc:
        raise ClusterError(f"cannot use the proxy settings: {exc}") from None
    reader = Reader(kube)
    try:
        deployed = read_deployed(reader, args)
    except (ClusterError, UsageError):
        kube.close()
        raise
    default = deployed.namespaces if deployed is not None else (default_ns,)
    namespaces = _namespaces(args, default)
    return Cluster(reader, context_name, namespaces, kube.close, KubeResources(kube), deployed)


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


def configmap_selector(args: argparse.Namespace) -> str:
    """``--configmap-selector`` (default: the controller's), checked."""
    selector: str = getattr(args, "configmap_selector", None) or DEFAULT_CONFIGMAP_SELECTOR
    selector_flag("--configmap-selector", selector)
    return selector


@dataclass(frozen=True)
class ClusterSource:
    """A command's input read from the cluster (``kubectl kumaco``).

    ``reads_nodes``: the command lists nodes with ``--node-selector``, which is then
    checked before anything is read.
    """

    cluster: Cluster
    args: argparse.Namespace
    reads_nodes: bool = False

    def windows(self, err: TextIO) -> list[Window | InvalidWindow]:
        """The window ConfigMaps; a namespace that cannot be read is a :class:`ClusterError`."""
        if self.reads_nodes:
            selector_flag("--node-selector", self.args.node_selector)
        entries, problems = window_entries(self.cluster, configmap_selector(self.args))
        if problems:
            raise ClusterError("; ".join(problems))
        return entries

    @property
    def has_nodes(self) -> bool:
        return True

    def nodes(self, owned: tuple[str, ...] = ()) -> NodeSet:
        """The nodes ``--node-selector`` selects (the server applies it)."""
        return nodes(self.cluster, self.args.node_selector, owned)

    def refusals(self, policy: Policy) -> Refusals:
        """With ``--respect-pdbs``: the answers of every Pod and PodDisruptionBudget listed."""
        if not policy.reads_cluster(PDBS):
            return NO_REFUSALS
        from kumaco.kube.reader import list_pods_and_budgets  # noqa: PLC0415

        pods, budgets = list_pods_and_budgets(self.cluster.reader)
        return refusals_of(pods, budgets)

    def origin(self, detailed: bool = False) -> str:
        """What the input was, for a picture's caption: the cluster (and its context)."""
        context = self.cluster.context
        name = f"cluster{f' (context {context})' if context else ''}"
        if not detailed:
            return name
        return (
            f"{name}: ConfigMaps {configmap_selector(self.args)} in "
            f"{', '.join(self.cluster.namespaces)}"
        )
