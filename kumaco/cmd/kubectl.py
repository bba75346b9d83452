"""``kubectl kumaco``: kumaco's views of a live cluster, and the timeline picture.

Contract
--------
:func:`main` is the ``kubectl-kumaco`` console script; kubectl runs it for
``kubectl kumaco ...`` (the plugin convention: an executable named
``kubectl-<name>`` on ``PATH``). Its commands are :data:`PROGRAM`'s, from the
registry (:mod:`kumaco.cmd.registry`), each reading the cluster through a
:class:`~kumaco.cmd.cluster.ClusterSource`. Every command only reads the cluster
(GET, LIST and, for ``status --watch``, WATCH, through :mod:`kumaco.cmd.cluster`):

``kubectl kumaco status [-w] [-o text|table|json|yaml]``
    Window ConfigMaps, nodes under maintenance and the leader
    (:mod:`kumaco.cmd.status`, :mod:`kumaco.views.status`); with ``-w/--watch``,
    again whenever the cluster changes, until interrupted (:mod:`kumaco.cmd.statuswatch`).
``kubectl kumaco windows [--from T] [--until T] [-o text|json|yaml|ics]``
    ``kumaco windows`` with the windows read from the ConfigMaps; the same
    output, byte for byte, as the offline command on the same objects.
``kubectl kumaco plan [--at T] [policy flags] [-o text|json|yaml]``
    ``kumaco plan`` with windows from the ConfigMaps and nodes from a LIST;
    the same output as the offline command.
``kubectl kumaco forecast --from T --until T --maintenance-duration D [policy flags]``
    ``kumaco forecast`` with windows and nodes read from the cluster.
``kubectl kumaco timeline [-o svg|html] [--output-file PATH] [--from T] [--until T] [--at T]``
    The picture of :mod:`kumaco.views.timeline`, fed from the cluster.

Flags shared by all (before or after the command): ``--kubeconfig``,
``--context``, ``-n/--namespace``, ``--namespaces a,b`` (default: the
namespaces the deployed kumaco watches, else the kubeconfig context's
namespace, else ``default``), ``--configmap-selector`` and ``--deployment
NS/NAME``: kumaco's Deployment (default ``kumaco-system/kumaco``, where the
overlays install it, when it is there and readable), whose container's
``kumaco run`` settings are the defaults of every flag of the same name --
the namespaces, the Lease, the condition names, the scope and the policy --
so that ``kubectl kumaco status`` and ``plan`` need none of them; a flag given
wins, and the flags taken are named on standard error
(:mod:`kumaco.cmd.deployed`). Without ``--from``, ``windows`` starts at the
current hour and ``timeline`` at 00:00 UTC today; ``--until`` defaults to
seven days after ``--from``. Neither ``kubernetes`` nor :mod:`kumaco.kube` is
imported until a command needs the cluster.

Exit codes: 0 done; 1 the cluster could not be read (credentials, network,
RBAC), with what was read still printed by ``status``; 2 usage error.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kumaco.cmd import cluster as clusters
from kumaco.cmd.deployed import DEFAULT_DEPLOYMENT
from kumaco.cmd.flags import NAMESPACES_METAVAR
from kumaco.cmd.forecast import FORECAST
from kumaco.cmd.listings import PLAN, WINDOWS
from kumaco.cmd.registry import EXIT_CLUSTER, KUBECTL, Program
from kumaco.cmd.status import STATUS, use_color
from kumaco.cmd.timeline import DAY, TIMELINE
from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR

PROG = KUBECTL


def _add_common(p: argparse.ArgumentParser) -> None:
    """Connection and namespace flags; SUPPRESS defaults let them go before or after the command."""
    d = argparse.SUPPRESS
    p.add_argument(
        "--kubeconfig",
        default=d,
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    p.add_argument(
        "--context", default=d, metavar="NAME", help="kubeconfig context (default: its current)"
    )
    p.add_argument(
        "--as", dest="as_", default=d, metavar="USER", help="user to impersonate (default: none)"
    )
    p.add_argument(
        "--as-group",
        action="append",
        default=d,
        metavar="GROUP",
        help="group to impersonate (repeatable; default: none)",
    )
    p.add_argument(
        "--request-timeout",
        default=d,
        metavar="DURATION",
        help="how long to wait for one answer (e.g. 30s; default 15s)",
    )
    p.add_argument(
        "-n",
        "--namespace",
        default=d,
        metavar="NS",
        help="namespace of window ConfigMaps (default: the context's, else default)",
    )
    p.add_argument(
        "--namespaces",
        default=d,
        metavar=NAMESPACES_METAVAR,
        help="several namespaces, comma-separated (default: -n's)",
    )
    p.add_argument(
        "--configmap-selector",
        default=d,
        metavar="SEL",
        help=f"label selector of window ConfigMaps (default: {DEFAULT_CONFIGMAP_SELECTOR})",
    )
    p.add_argument(
        "--deployment",
        default=d,
        metavar="NS/NAME",
        help="kumaco's Deployment, whose settings (namespaces, Lease, condition names, "
        "policy) are the defaults of the other flags; '' reads none "
        f"(default: {DEFAULT_DEPLOYMENT}, if it is there and readable)",
    )


def _connect(args: argparse.Namespace) -> clusters.Cluster:
    return clusters.connect(args)


PROGRAM = Program(
    KUBECTL,
    "kubectl-kumaco",
    "kumaco's view of the cluster (read-only)",
    (STATUS, WINDOWS, PLAN, FORECAST, TIMELINE),
    connection=_add_common,
    connect=_connect,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``kubectl kumaco``."""
    return PROGRAM.build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kubectl-kumaco`` console script."""
    return PROGRAM.main(argv)


__all__ = ["DAY", "EXIT_CLUSTER", "PROG", "build_parser", "main", "use_color"]
