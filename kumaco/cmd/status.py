"""``kubectl kumaco status``: window ConfigMaps, nodes under maintenance and the leader.

Contract: :data:`STATUS` is the command (:mod:`kumaco.cmd.registry`; the cluster
only). It derives the :class:`~kumaco.core.planning.instance.Instance` looked at from the
flags (:func:`~kumaco.cmd.flags.instance_from_args`; the Lease's namespace
defaults to the first namespace), reads what the report needs (:func:`gather`:
a failed read is recorded as a problem and reading goes on), runs the planner on
it (:func:`status_report`) and renders the answer through :data:`STATUSES`, the
table of its formats (these three: :mod:`kumaco.cmd.statusreport`). Exit 0, or 1 when something
could not be read (what was read is still printed; the problems go to standard
error). With ``--watch`` (``-w``) it shows the status again whenever the cluster
changes, until Ctrl-C (:mod:`kumaco.cmd.statuswatch`; exit 0).
"""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from kumaco.cmd.cluster import Cluster, ClusterSource, configmap_selector
from kumaco.cmd.common import EXIT_OK, now_ns
from kumaco.cmd.flags import add_condition_flags, instance_from_args, selector_flag
from kumaco.cmd.registry import EXIT_CLUSTER, KUBECTL, Command, Source
from kumaco.cmd.statusreport import (
    STATUSES,
    Shown,
    gather,
    required,
    status_report,
    use_color,
)
from kumaco.core.planning.instance import DEFAULT_LEASE, Instance

__all__ = ["STATUS", "STATUSES", "gather", "status_instance", "status_report", "use_color"]


def status_instance(args: argparse.Namespace, cluster: Cluster) -> Instance:
    """The instance ``status``'s flags name (``--node-selector`` checked on the way)."""
    selector_flag("--node-selector", args.node_selector)
    return instance_from_args(args, args.leader_election_namespace or cluster.namespaces[0])


def _status(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    assert isinstance(source, ClusterSource)
    cluster = source.cluster
    instance = status_instance(args, cluster)
    to_file = args.output_file not in (None, "", "-")
    if args.watch:
        from kumaco.cmd.statuswatch import watch  # noqa: PLC0415

        if not to_file:
            return watch(args, cluster, instance, out, err)
        # Every snapshot into the file, one after the other (as `kubectl get -w > FILE`).
        with open(args.output_file, "w", encoding="utf-8") as file:
            return watch(args, cluster, instance, file, err)
    snapshot = gather(cluster, configmap_selector(args), args.node_selector, instance)
    result = status_report(snapshot, instance, now_ns(), cluster.context, required(args))
    STATUSES.write(Shown(result, use_color(out, os.environ) and not to_file), args, out)
    for p in result.problems:
        err.write(f"kubectl-kumaco status: {p}\n")
    return EXIT_CLUSTER if result.problems else EXIT_OK


def _status_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    p.add_argument(
        "--node-selector", default="", metavar="SEL", help="nodes in scope (default: all nodes)"
    )
    add_condition_flags(p)
    p.add_argument(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="a required condition kumaco runs with (repeatable): which nodes wait for "
        "maintenance and since when (default: none: the nodes under maintenance that wait)",
    )
    p.add_argument(
        "--leader-election-id", default=DEFAULT_LEASE, metavar="NAME", help="the Lease name"
    )
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
    p.add_argument(
        "--watch",
        "-w",
        action="store_true",
        help="show the status again whenever it changes, until Ctrl-C: in place on a "
        "terminal, else successive snapshots",
    )
    STATUSES.add_flags(p)


STATUS = Command(
    "status",
    _status,
    {KUBECTL: "windows, nodes under maintenance and the leader"},
    _status_flags,
)
