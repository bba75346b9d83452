"""``kubectl kumaco status``: window ConfigMaps, nodes under maintenance and the leader.

Contract: :data:`STATUS` is the command (:mod:`kumaco.cmd.registry`; the cluster
only). It derives the :class:`~kumaco.core.instance.Instance` looked at from the
flags (:func:`~kumaco.cmd.flags.instance_from_args`; the Lease's namespace
defaults to the first namespace), reads what the report needs (:func:`gather`:
a failed read is recorded as a problem and reading goes on), runs the planner on
it (:func:`status_report`) and renders the answer through :data:`STATUSES`, the
table of its formats (:mod:`kumaco.views.report`). Exit 0, or 1 when something
could not be read (what was read is still printed; the problems go to standard
error).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from kumaco.cmd.cluster import Cluster, ClusterSource, configmap_selector
from kumaco.cmd.common import EXIT_OK, Output, now_ns
from kumaco.cmd.flags import (
    add_condition_flags,
    condition_flag,
    instance_from_args,
    selector_flag,
)
from kumaco.cmd.registry import EXIT_CLUSTER, KUBECTL, Command, Source
from kumaco.core.configmaps import windows_of
from kumaco.core.instance import DEFAULT_LEASE, Instance
from kumaco.core.nodes import NodeSet
from kumaco.core.planner import Policy, plan
from kumaco.core.waiting import waiters_as_written
from kumaco.core.windows import Window
from kumaco.views import report
from kumaco.views.listing import serialize
from kumaco.views.report import Snapshot, StatusReport


def use_color(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (to anything) or TERM=dumb."""
    if "NO_COLOR" in env or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def gather(cluster: Cluster, configmaps: str, node_selector: str, instance: Instance) -> Snapshot:
    """Read everything the status report needs; a failed read becomes a problem."""
    from kumaco.kube.errors import ApiError  # noqa: PLC0415
    from kumaco.kube.reader import (  # noqa: PLC0415
        get_lease,
        list_nodes,
        list_window_configmaps,
        problem,
    )

    found_cms, problems = list_window_configmaps(cluster.reader, cluster.namespaces, configmaps)
    found: tuple[Any, ...] | None = None
    try:
        owned = (instance.under_maintenance, instance.in_progress)
        found = tuple(list_nodes(cluster.reader, node_selector, owned))
    except ApiError as exc:
        problems.append(problem("list nodes", exc))
    lease = None
    try:
        lease = get_lease(cluster.reader, instance.lease_namespace, instance.lease_name)
    except ApiError as exc:
        problems.append(problem(f"get Lease {instance.lease_key}", exc))
    return Snapshot(
        tuple(found_cms),
        found,
        lease,
        tuple(problems),
        namespaces=cluster.namespaces,
        configmap_selector=configmaps,
        node_selector=node_selector,
    )


def status_report(
    snapshot: Snapshot,
    instance: Instance,
    now: int,
    context: str | None = None,
    require: tuple[str, ...] = (),
) -> StatusReport:
    """The report of ``snapshot`` at ``now``: its windows judged by the planner, as ``run`` does.

    ``require``: the required conditions kumaco runs with, which say which nodes wait for
    maintenance and since when (:func:`kumaco.core.waiting.waiters_as_written`).
    """
    entries = windows_of(snapshot.configmaps)
    valid = [e for e in entries if isinstance(e, Window)]
    policy = Policy(
        under_maintenance=instance.under_maintenance,
        in_progress=instance.in_progress,
        require=require,
    )
    answer = plan(valid, NodeSet(snapshot.nodes or ()), now, policy)
    waiting = waiters_as_written(snapshot.nodes or (), policy)
    return report.report(snapshot, instance, entries, answer, now, context, waiting)


@dataclass(frozen=True)
class Shown:
    """A report and whether to colour it (on a terminal)."""

    report: StatusReport
    color: bool


def _text(shown: Shown) -> str:
    return report.format_report(shown.report, color=shown.color)


STATUSES: Output[Shown] = Output(
    {
        "text": _text,
        "table": _text,
        "json": lambda shown: serialize(report.to_json(shown.report), "json"),
        "yaml": lambda shown: serialize(report.to_json(shown.report), "yaml"),
    },
    "text",
    "format (table: the same as text)",
    file_help=None,
)


def _status(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    assert isinstance(source, ClusterSource)
    cluster = source.cluster
    selector_flag("--node-selector", args.node_selector)
    instance = instance_from_args(args, args.leader_election_namespace or cluster.namespaces[0])
    snapshot = gather(cluster, configmap_selector(args), args.node_selector, instance)
    require = tuple(condition_flag("--require-condition", c) for c in args.require_condition or ())
    result = status_report(snapshot, instance, now_ns(), cluster.context, require)
    STATUSES.write(Shown(result, use_color(out, os.environ)), args, out)
    for p in result.problems:
        err.write(f"kubectl-kumaco status: {p}\n")
    return EXIT_CLUSTER if result.problems else EXIT_OK


def _status_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    p.add_argument("--node-selector", default="", metavar="SEL", help="nodes in scope")
    add_condition_flags(p)
    p.add_argument(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="a required condition kumaco runs with (repeatable): which nodes wait for "
        "maintenance and since when (without: the nodes under maintenance that wait)",
    )
    p.add_argument("--leader-election-id", default=DEFAULT_LEASE, metavar="NAME", help="the Lease")
    p.add_argument(
        "--leader-election-namespace",
        metavar="NS",
        help="namespace of the Lease (default: the first namespace)",
    )
    p.add_argument(
        "--field-manager",
        metavar="NAME",
        help="the instance's field manager (default: kumaco/<leader-election-id>)",
    )
    STATUSES.add_flags(p)


STATUS = Command(
    "status",
    _status,
    {KUBECTL: "windows, nodes under maintenance and the leader"},
    _status_flags,
)
