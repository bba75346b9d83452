"""One status of a cluster: read it, judge it with the planner, and its formats.

Contract: :func:`gather` reads what the report needs through
:class:`~kumaco.kube.reader.Reader` (a failed read is recorded as a problem and
reading goes on); :func:`status_report` runs the planner on a
:class:`~kumaco.views.status.Snapshot` at an instant, as ``run`` does, and
:data:`STATUSES` is the table of its formats (text/table, json, yaml;
:mod:`kumaco.views.status`), coloured only where :func:`use_color` says.
``kubectl kumaco status`` (:mod:`kumaco.cmd.status`) shows one;
``status --watch`` (:mod:`kumaco.cmd.statuswatch`) one after the other.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from kumaco.cmd.cluster import Cluster
from kumaco.cmd.common import Output
from kumaco.cmd.flags import condition_flag
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.instance import Instance
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.planning.waiting import waiters_as_written
from kumaco.core.windows.configmaps import windows_of
from kumaco.core.windows.window import Window
from kumaco.views import status as report
from kumaco.views import status_json
from kumaco.views.listing import serialize
from kumaco.views.status import Snapshot, StatusReport


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


def required(args: argparse.Namespace) -> tuple[str, ...]:
    """``--require-condition``, checked: the nodes waiting for maintenance are those asking."""
    given = getattr(args, "require_condition", None) or ()
    return tuple(condition_flag("--require-condition", c) for c in given)


def status_report(
    snapshot: Snapshot,
    instance: Instance,
    now: int,
    context: str | None = None,
    require: tuple[str, ...] = (),
) -> StatusReport:
    """The report of ``snapshot`` at ``now``: its windows judged by the planner, as ``run`` does.

    ``require``: the required conditions kumaco runs with, which say which nodes wait for
    maintenance and since when (:func:`kumaco.core.planning.waiting.waiters_as_written`).
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
        "json": lambda shown: serialize(status_json.to_json(shown.report), "json"),
        "yaml": lambda shown: serialize(status_json.to_json(shown.report), "yaml"),
    },
    "text",
    "format (table: the same as text; default: text)",
)
