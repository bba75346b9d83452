"""``kubectl kumaco``: kumaco's views of a live cluster, and the timeline picture.

Contract
--------
:func:`main` is the ``kubectl-kumaco`` console script; kubectl runs it for
``kubectl kumaco ...`` (the plugin convention: an executable named
``kubectl-<name>`` on ``PATH``). Every command only reads the cluster
(GET and LIST, through :class:`kumaco.views.report.Reader`):

``kubectl kumaco status [-o table|json]``
    Window ConfigMaps, nodes under maintenance and the leader
    (:mod:`kumaco.views.report`).
``kubectl kumaco windows [--from T] [--until T] [-o text|json]``
    ``kumaco windows`` with the windows read from the ConfigMaps; the same
    output, byte for byte, as the offline command on the same objects.
``kubectl kumaco plan [--at T] [policy flags] [-o text|json]``
    ``kumaco plan`` with windows from the ConfigMaps and nodes from a LIST;
    the same output as the offline command.
``kubectl kumaco timeline --output svg|html [-o PATH] [--from T] [--until T] [--at T]``
    The picture of :mod:`kumaco.views.timeline`, fed from the cluster.

Flags shared by all (before or after the command): ``--kubeconfig``,
``--context``, ``-n/--namespace``, ``--namespaces a,b`` (default: the
kubeconfig context's namespace, else ``default``) and
``--configmap-selector``. Without ``--from``, ``windows`` starts at the
current hour and ``timeline`` at 00:00 UTC today; ``--until`` defaults to
seven days after ``--from``.

:func:`cmd_timeline` is also the handler of the offline ``kumaco timeline
FILE...`` (registered by :func:`kumaco.cmd.cli.build_parser`); this module
imports neither ``kubernetes`` nor :mod:`kumaco.kube.client` until a command needs
the cluster, so offline commands never load the client.

Exit codes: 0 done; 1 the cluster could not be read (credentials, network,
RBAC), with what was read still printed by ``status``; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from kumaco import __version__
from kumaco.cmd.cli import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_policy_flags,
    load_objects,
    occurrences,
    parse_time,
    policy_from_args,
    print_plan,
    print_windows,
)
from kumaco.cmd.settings import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.core.durations import HOUR
from kumaco.core.errors import InvalidInput
from kumaco.core.manifests import node_views, window_entries
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import IN_PROGRESS, UNDER_MAINTENANCE, plan
from kumaco.core.selectors import parse_selector
from kumaco.core.windows import InvalidWindow, Window
from kumaco.views import timeline

if TYPE_CHECKING:
    from kumaco.views.report import Reader

EXIT_CLUSTER = 1
TIMELINE_LIMIT = 5000
DAY = 24 * HOUR
DEFAULT_SPAN = 7 * DAY
PROG = "kubectl kumaco"


class ClusterError(Exception):
    """The cluster could not be read: exit status 1."""


def use_color(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (to anything) or TERM=dumb."""
    if "NO_COLOR" in env or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _now_ns() -> int:
    return time.time_ns()


# ----------------------------------------------------------------------------- cluster access


@dataclass(frozen=True)
class _Cluster:
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


def _connect(args: argparse.Namespace) -> _Cluster:
    # Imported here: only commands that talk to the cluster load the Kubernetes client.
    from kumaco.kube.client import Kube, RetryPolicy, load_configuration  # noqa: PLC0415
    from kumaco.views.report import Reader, default_namespace  # noqa: PLC0415

    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    context_name, default_ns = default_namespace(kubeconfig, context)
    namespaces = _namespaces(args, default_ns)
    try:
        configuration = load_configuration(kubeconfig, context)
    except Exception as exc:  # the client raises many types for unusable credentials
        raise ClusterError(f"cannot load Kubernetes credentials: {exc}") from None
    kube = Kube(
        configuration,
        f"kubectl-kumaco/{__version__}",
        retry=RetryPolicy(attempts=3, initial=0.2, maximum=2.0, deadline=15.0),
        timeout=15.0,
    )
    return _Cluster(Reader(kube), context_name, namespaces, kube.close)


def _cluster_command(
    body: Callable[[argparse.Namespace, _Cluster, TextIO, TextIO], int],
) -> Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]:
    """Connect, run ``body``, turn API failures into :class:`ClusterError`."""

    def run(args: argparse.Namespace, out: TextIO, err: TextIO, _stdin: TextIO) -> int:
        from kumaco.kube.client import ApiError, TransportError  # noqa: PLC0415

        cluster = _connect(args)
        try:
            return body(args, cluster, out, err)
        except TransportError as exc:
            raise ClusterError(f"cannot reach the API server: {exc}") from None
        except ApiError as exc:
            raise ClusterError(f"{exc.status} {exc.reason}: {exc.message}") from None
        finally:
            cluster.close()

    return run


def _selector_flag(flag: str, text: str) -> None:
    try:
        parse_selector(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None


def _cluster_windows(
    args: argparse.Namespace, cluster: _Cluster
) -> tuple[list[Window | InvalidWindow], list[str]]:
    from kumaco.views.report import Scope, list_window_configmaps  # noqa: PLC0415
    from kumaco.views.report import window_entries as entries_of  # noqa: PLC0415

    selector = _configmap_selector(args)
    scope = Scope(namespaces=cluster.namespaces, configmap_selector=selector)
    items, problems = list_window_configmaps(cluster.reader, scope)
    return entries_of(items), problems


def _cluster_nodes(cluster: _Cluster, node_selector: str) -> NodeSet:
    from kumaco.views.report import list_nodes  # noqa: PLC0415

    return NodeSet(list_nodes(cluster.reader, node_selector))


def _configmap_selector(args: argparse.Namespace) -> str:
    selector: str = getattr(args, "configmap_selector", None) or DEFAULT_CONFIGMAP_SELECTOR
    _selector_flag("--configmap-selector", selector)
    return selector


def _fail_on(problems: Sequence[str]) -> None:
    if problems:
        raise ClusterError("; ".join(problems))


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _skip_invalid(entries: Sequence[Window | InvalidWindow], err: TextIO) -> list[Window]:
    """The valid windows; a note on ``err`` for each invalid one (as ``kumaco windows``)."""
    for e in entries:
        if isinstance(e, InvalidWindow):
            err.write(f"skipping invalid {e.key}: {_one_line(e.reason)}\n")
    return [e for e in entries if isinstance(e, Window)]


def _range(args: argparse.Namespace, now: int, align: int = HOUR) -> tuple[int, int]:
    """``--from``/``--until``; by default from ``now`` down to ``align``, for seven days."""
    start = parse_time(args.from_) if args.from_ else now - now % align
    until = parse_time(args.until) if args.until else start + DEFAULT_SPAN
    if until <= start:
        raise UsageError("--until must be after --from")
    return start, until


# ----------------------------------------------------------------------------- status


def _status(args: argparse.Namespace, cluster: _Cluster, out: TextIO, err: TextIO) -> int:
    from kumaco.views import report as status  # noqa: PLC0415

    for flag, text in (("--node-selector", args.node_selector),):
        _selector_flag(flag, text)
    scope = status.Scope(
        namespaces=cluster.namespaces,
        configmap_selector=_configmap_selector(args),
        node_selector=args.node_selector,
        under_maintenance=args.under_maintenance_condition,
        in_progress=args.in_progress_condition,
        lease_namespace=args.leader_election_namespace or cluster.namespaces[0],
        lease_name=args.leader_election_id,
    )
    snapshot = status.gather(cluster.reader, scope)
    result = status.report(snapshot, scope, _now_ns(), context=cluster.context)
    if args.output == "json":
        json.dump(status.to_json(result), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(status.format_report(result, color=use_color(out, os.environ)))
    for p in result.problems:
        err.write(f"kubectl-kumaco status: {p}\n")
    return EXIT_CLUSTER if result.problems else EXIT_OK


# ----------------------------------------------------------------------------- windows, plan


def _windows(args: argparse.Namespace, cluster: _Cluster, out: TextIO, err: TextIO) -> int:
    start, until = _range(args, _now_ns())
    entries, problems = _cluster_windows(args, cluster)
    _fail_on(problems)
    found, truncated = occurrences(_skip_invalid(entries, err), start, until, args.limit)
    if truncated:
        err.write(f"warning: output truncated to {args.limit} occurrences (--limit)\n")
    print_windows(found, args.output, out)
    return EXIT_OK


def _plan(args: argparse.Namespace, cluster: _Cluster, out: TextIO, err: TextIO) -> int:
    policy = policy_from_args(args)
    at = parse_time(args.at) if args.at else _now_ns()
    entries, problems = _cluster_windows(args, cluster)
    _fail_on(problems)
    windows = _skip_invalid(entries, err)
    nodes = _cluster_nodes(cluster, args.node_selector)
    print_plan(plan(windows, nodes, at, policy), args.output, out)
    return EXIT_OK


# ----------------------------------------------------------------------------- timeline


def add_timeline_flags(p: argparse.ArgumentParser, *, range_required: bool) -> None:
    """The flags of ``timeline`` (offline and cluster variants alike)."""
    later = "" if range_required else " (default: today 00:00 UTC)"
    p.add_argument(
        "--from", dest="from_", required=range_required, metavar="T", help="RFC 3339" + later
    )
    p.add_argument(
        "--until",
        required=range_required,
        metavar="T",
        help="RFC 3339" + ("" if range_required else " (default: --from + 7 days)"),
    )
    p.add_argument("--at", metavar="T", help="the instant marked as now (default: now)")
    p.add_argument(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope, for the node count of each window (default: all)",
    )
    p.add_argument("--output", choices=("svg", "html"), required=True, help="picture format")
    p.add_argument("-o", dest="path", metavar="PATH", help="write here (default: standard output)")
    p.add_argument("--limit", type=int, default=TIMELINE_LIMIT, help=argparse.SUPPRESS)


def _draw(
    args: argparse.Namespace,
    entries: Sequence[Window | InvalidWindow],
    nodes: NodeSet | None,
    source: str,
    now: int,
    out: TextIO,
    err: TextIO,
) -> int:
    start, until = _range(args, now, DAY)
    try:
        scope = parse_selector(args.node_selector)
    except InvalidInput as exc:
        raise UsageError(f"--node-selector: {exc.reason}") from None
    windows = [e for e in entries if isinstance(e, Window)]
    found, truncated = occurrences(windows, start, until, args.limit)
    if truncated:
        err.write(f"warning: picture truncated to {args.limit} occurrences\n")
    picture = timeline.build(
        entries,
        found,
        start=start,
        until=until,
        now=now,
        nodes=nodes,
        scope=scope if nodes is not None else None,
        truncated=truncated,
        source=source,
    )
    text = timeline.render_svg(picture) if args.output == "svg" else timeline.render_html(picture)
    if not args.path or args.path == "-":
        out.write(text)
        return EXIT_OK
    try:
        Path(args.path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o {args.path}: {exc}") from None
    return EXIT_OK


def cmd_timeline(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """``kumaco timeline FILE...``: the picture of the windows in files (offline).

    Usage errors are reported here (``kumaco timeline: ...``, exit 2) rather
    than raised, so the answer is the same whichever ``main`` dispatched it
    (``python -m kumaco.cmd.cli`` runs a second copy of :mod:`kumaco.cmd.cli`).
    """
    try:
        now = parse_time(args.at) if args.at else _now_ns()
        entries = window_entries(load_objects(args.files, stdin))
        if not entries:
            raise UsageError("no ConfigMap found in the input")
        nodes = NodeSet(node_views(load_objects([args.nodes], stdin))) if args.nodes else None
        source = "windows: " + ", ".join(args.files)
        if args.nodes:
            source += f" · nodes: {args.nodes}"
        return _draw(args, entries, nodes, source, now, out, err)
    except UsageError as exc:
        err.write(f"kumaco timeline: {exc}\n")
        return EXIT_USAGE


def _timeline(args: argparse.Namespace, cluster: _Cluster, out: TextIO, err: TextIO) -> int:
    now = parse_time(args.at) if args.at else _now_ns()
    _selector_flag("--node-selector", args.node_selector)
    entries, problems = _cluster_windows(args, cluster)
    _fail_on(problems)
    nodes = _cluster_nodes(cluster, args.node_selector)
    source = (
        f"cluster{f' (context {cluster.context})' if cluster.context else ''}: ConfigMaps "
        f"{_configmap_selector(args)} in {', '.join(cluster.namespaces)}"
    )
    return _draw(args, entries, nodes, source, now, out, err)


# ----------------------------------------------------------------------------- parser


def _add_common(p: argparse.ArgumentParser) -> None:
    """Connection and namespace flags; SUPPRESS defaults let them go before or after the command."""
    d = argparse.SUPPRESS
    p.add_argument("--kubeconfig", default=d, metavar="PATH", help="kubeconfig file")
    p.add_argument("--context", default=d, metavar="NAME", help="kubeconfig context")
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
    st.add_argument("--under-maintenance-condition", default=UNDER_MAINTENANCE, metavar="TYPE")
    st.add_argument("--in-progress-condition", default=IN_PROGRESS, metavar="TYPE")
    st.add_argument("--leader-election-id", default="kumaco", metavar="NAME", help="the Lease")
    st.add_argument(
        "--leader-election-namespace",
        metavar="NS",
        help="namespace of the Lease (default: the first namespace)",
    )
    st.add_argument("--output", "-o", choices=("table", "json"), default="table")
    st.set_defaults(func=_cluster_command(_status))

    w = sub.add_parser("windows", help="when the cluster's windows are open")
    _add_common(w)
    w.add_argument("--from", dest="from_", metavar="T", help="RFC 3339 (default: now)")
    w.add_argument("--until", metavar="T", help="RFC 3339 (default: --from + 7 days)")
    w.add_argument("--output", "-o", choices=("text", "json"), default="text")
    w.add_argument("--limit", type=int, default=100_000, help=argparse.SUPPRESS)
    w.set_defaults(func=_cluster_command(_windows))

    pl = sub.add_parser("plan", help="what kumaco would set on each node of the cluster")
    _add_common(pl)
    pl.add_argument("--at", metavar="T", help="the instant to plan for (default: now)")
    pl.add_argument("--output", "-o", choices=("text", "json"), default="text")
    add_policy_flags(pl)
    pl.set_defaults(func=_cluster_command(_plan))

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


if __name__ == "__main__":
    sys.exit(main())
