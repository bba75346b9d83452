"""``kubectl kumaco``: kumaco's views of a live cluster, and the timeline picture.

Contract
--------
:func:`main` is the ``kubectl-kumaco`` console script; kubectl runs it for
``kubectl kumaco ...`` (the plugin convention: an executable named
``kubectl-<name>`` on ``PATH``). Every command only reads the cluster
(GET and LIST, through :mod:`kumaco.cmd.cluster`):

``kubectl kumaco status [-o text|table|json|yaml]``
    Window ConfigMaps, nodes under maintenance and the leader
    (:mod:`kumaco.views.report`).
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
kubeconfig context's namespace, else ``default``) and
``--configmap-selector``. Without ``--from``, ``windows`` starts at the
current hour and ``timeline`` at 00:00 UTC today; ``--until`` defaults to
seven days after ``--from``. Neither ``kubernetes`` nor :mod:`kumaco.kube` is
imported until a command needs the cluster.

Exit codes: 0 done; 1 the cluster could not be read (credentials, network,
RBAC), with what was read still printed by ``status``; 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from kumaco import __version__
from kumaco.cmd import cluster as clusters
from kumaco.cmd.cli import MAX_OCCURRENCES, add_output_flags, print_windows, valid_windows
from kumaco.cmd.cluster import Cluster, ClusterError
from kumaco.cmd.common import EXIT_OK, EXIT_USAGE, now_ns, time_flag, write_output
from kumaco.cmd.flags import (
    UsageError,
    add_condition_flags,
    add_policy_flags,
    condition_names,
    policy_from_args,
    selector_flag,
)
from kumaco.cmd.forecast import add_forecast_flags, run_forecast
from kumaco.cmd.timeline import DAY, add_timeline_flags, draw, time_range
from kumaco.core.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.planner import plan
from kumaco.views import listing, report
from kumaco.views.listing import FORMATS

EXIT_CLUSTER = 1
PROG = "kubectl kumaco"


def use_color(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (to anything) or TERM=dumb."""
    if "NO_COLOR" in env or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _cluster_command(
    body: Callable[[argparse.Namespace, Cluster, TextIO, TextIO], int],
) -> Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]:
    """Connect, run ``body``, turn API failures into :class:`ClusterError`."""

    def run(args: argparse.Namespace, out: TextIO, err: TextIO, _stdin: TextIO) -> int:
        from kumaco.kube.errors import ApiError, TransportError  # noqa: PLC0415

        cluster = clusters.connect(args)
        try:
            return body(args, cluster, out, err)
        except TransportError as exc:
            raise ClusterError(f"cannot reach the API server: {exc}") from None
        except ApiError as exc:
            raise ClusterError(f"{exc.status} {exc.reason}: {exc.message}") from None
        finally:
            cluster.close()

    return run


def _configmap_selector(args: argparse.Namespace) -> str:
    selector: str = getattr(args, "configmap_selector", None) or DEFAULT_CONFIGMAP_SELECTOR
    selector_flag("--configmap-selector", selector)
    return selector


def _fail_on(problems: Sequence[str]) -> None:
    if problems:
        raise ClusterError("; ".join(problems))


def _status(args: argparse.Namespace, cluster: Cluster, out: TextIO, err: TextIO) -> int:
    selector_flag("--node-selector", args.node_selector)
    under_maintenance, in_progress = condition_names(args)
    scope = report.Scope(
        namespaces=cluster.namespaces,
        configmap_selector=_configmap_selector(args),
        node_selector=args.node_selector,
        under_maintenance=under_maintenance,
        in_progress=in_progress,
        lease_namespace=args.leader_election_namespace or cluster.namespaces[0],
        lease_name=args.leader_election_id,
        field_manager=args.field_manager or "",
    )
    snapshot = clusters.gather(cluster, scope)
    result = report.report(snapshot, scope, now_ns(), context=cluster.context)
    if args.output in ("json", "yaml"):
        out.write(listing.serialize(report.to_json(result), args.output))
    else:
        out.write(report.format_report(result, color=use_color(out, os.environ)))
    for p in result.problems:
        err.write(f"kubectl-kumaco status: {p}\n")
    return EXIT_CLUSTER if result.problems else EXIT_OK


def _windows(args: argparse.Namespace, cluster: Cluster, out: TextIO, err: TextIO) -> int:
    start, until = time_range(args, now_ns())
    entries, problems = clusters.window_entries(cluster, _configmap_selector(args))
    _fail_on(problems)
    print_windows(valid_windows(entries, err), start, until, args, out, err)
    return EXIT_OK


def _plan(args: argparse.Namespace, cluster: Cluster, out: TextIO, err: TextIO) -> int:
    policy = policy_from_args(args)
    at = time_flag(args.at) if args.at else now_ns()
    entries, problems = clusters.window_entries(cluster, _configmap_selector(args))
    _fail_on(problems)
    windows = valid_windows(entries, err)
    nodes = clusters.nodes(cluster, args.node_selector)
    write_output(listing.plan(plan(windows, nodes, at, policy), args.output), args.output_file, out)
    return EXIT_OK


def _forecast(args: argparse.Namespace, cluster: Cluster, out: TextIO, err: TextIO) -> int:
    policy = policy_from_args(args)
    entries, problems = clusters.window_entries(cluster, _configmap_selector(args))
    _fail_on(problems)
    nodes = clusters.nodes(cluster, args.node_selector, policy.owned)
    source = f"forecast · cluster{f' (context {cluster.context})' if cluster.context else ''}"
    return run_forecast(args, entries, nodes, policy, source, out, err)


def _timeline(args: argparse.Namespace, cluster: Cluster, out: TextIO, err: TextIO) -> int:
    now = time_flag(args.at) if args.at else now_ns()
    selector_flag("--node-selector", args.node_selector)
    entries, problems = clusters.window_entries(cluster, _configmap_selector(args))
    _fail_on(problems)
    nodes = clusters.nodes(cluster, args.node_selector)
    source = (
        f"cluster{f' (context {cluster.context})' if cluster.context else ''}: ConfigMaps "
        f"{_configmap_selector(args)} in {', '.join(cluster.namespaces)}"
    )
    return draw(args, entries, nodes, source, now, out, err)


# ----------------------------------------------------------------------------- parser


def _add_common(p: argparse.ArgumentParser) -> None:
    """Connection and namespace flags; SUPPRESS defaults let them go before or after the command."""
    d = argparse.SUPPRESS
    p.add_argument("--kubeconfig", default=d, metavar="PATH", help="kubeconfig file")
    p.add_argument("--context", default=d, metavar="NAME", help="kubeconfig context")
    p.add_argument("--as", dest="as_", default=d, metavar="USER", help="user to impersonate")
    p.add_argument(
        "--as-group",
        action="append",
        default=d,
        metavar="GROUP",
        help="group to impersonate (repeatable)",
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
        "--namespaces", default=d, metavar="A,B", help="several namespaces, comma-separated"
    )
    p.add_argument(
        "--configmap-selector",
        default=d,
        metavar="SEL",
        help=f"label selector of window ConfigMaps (default: {DEFAULT_CONFIGMAP_SELECTOR})",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``kubectl kumaco``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="kumaco's view of the cluster (read-only)"
    )
    parser.add_argument("--version", action="version", version=f"kubectl-kumaco {__version__}")
    _add_common(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    st = sub.add_parser("status", help="windows, nodes under maintenance and the leader")
    _add_common(st)
    st.add_argument("--node-selector", default="", metavar="SEL", help="nodes in scope")
    add_condition_flags(st)
    st.add_argument("--leader-election-id", default="kumaco", metavar="NAME", help="the Lease")
    st.add_argument(
        "--leader-election-namespace",
        metavar="NS",
        help="namespace of the Lease (default: the first namespace)",
    )
    st.add_argument(
        "--field-manager",
        metavar="NAME",
        help="the instance's field manager (default: kumaco/<leader-election-id>)",
    )
    st.add_argument(
        "--output",
        "-o",
        choices=("text", "table", "json", "yaml"),
        default="text",
        help="format (table: the same as text)",
    )
    st.set_defaults(func=_cluster_command(_status))

    w = sub.add_parser("windows", help="when the cluster's windows are open")
    _add_common(w)
    w.add_argument("--from", dest="from_", metavar="T", help="RFC 3339 (default: now)")
    w.add_argument("--until", metavar="T", help="RFC 3339 (default: --from + 7 days)")
    add_output_flags(w, (*FORMATS, "ics"), "text")
    w.add_argument("--limit", type=int, default=MAX_OCCURRENCES, help=argparse.SUPPRESS)
    w.set_defaults(func=_cluster_command(_windows))

    pl = sub.add_parser("plan", help="what kumaco would set on each node of the cluster")
    _add_common(pl)
    pl.add_argument("--at", metavar="T", help="the instant to plan for (default: now)")
    add_output_flags(pl, FORMATS, "text")
    add_policy_flags(pl)
    pl.set_defaults(func=_cluster_command(_plan))

    fc = sub.add_parser(
        "forecast", help="simulate a maintenance run on the cluster's windows and nodes"
    )
    _add_common(fc)
    add_forecast_flags(fc)
    add_policy_flags(fc)
    fc.set_defaults(func=_cluster_command(_forecast))

    tl = sub.add_parser("timeline", help="draw the cluster's windows as SVG or HTML")
    _add_common(tl)
    add_timeline_flags(tl, range_required=False)
    tl.set_defaults(func=_cluster_command(_timeline))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kubectl-kumaco`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    try:
        rc: int = args.func(args, out, err, sys.stdin)
    except UsageError as exc:
        err.write(f"kubectl-kumaco {args.command}: {exc}\n")
        return EXIT_USAGE
    except ClusterError as exc:
        err.write(f"kubectl-kumaco {args.command}: {exc}\n")
        return EXIT_CLUSTER
    except BrokenPipeError:
        return EXIT_OK
    return rc


__all__ = ["DAY", "main", "use_color"]
