"""``kumaco forecast`` and ``kubectl kumaco forecast``: will the window be long enough.

Contract: :data:`FORECAST` is the command (:mod:`kumaco.cmd.registry`), its body
written once for files and the cluster: it simulates with
:func:`kumaco.core.planning.forecast.forecast` -- the planner ``kumaco run`` uses, with the
same policy flags -- and prints through :data:`FORECASTS`, the table of its
formats: text, JSON, YAML, or the timeline picture with a lane per node. Exit 0
when every node that needs maintenance finishes before ``--until``, 1 when some do
not, 2 on bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from kumaco.cmd.common import (
    EXIT_INVALID,
    EXIT_OK,
    Output,
    add_range_flags,
    now_ns,
    time_flag,
    uncarried_conditions,
)
from kumaco.cmd.flags import UsageError, duration_flag, policy_from_args
from kumaco.cmd.registry import KUBECTL, KUMACO, PLANNER_INPUT, Command, Source
from kumaco.core.errors import InvalidInput
from kumaco.core.planning.forecast import DurationRule, Forecast, forecast, parse_duration_rule
from kumaco.core.windows.window import InvalidWindow, Window, occurrences
from kumaco.views import listing, timeline


@dataclass(frozen=True)
class ForecastRun:
    """A forecast and what its picture shows: the windows, the range, the input's origin."""

    result: Forecast
    entries: Sequence[Window | InvalidWindow]
    windows: Sequence[Window]
    start: int
    until: int
    source: str


def _picture(run: ForecastRun) -> timeline.Timeline:
    found, truncated = occurrences(run.windows, run.start, run.until, 5000)
    return timeline.build(
        run.entries,
        found,
        start=run.start,
        until=run.until,
        now=run.start,
        truncated=truncated,
        source=run.source,
        turns=tuple(
            timeline.Turn(t.name, t.admitted, t.finished, t.windows) for t in run.result.turns
        ),
    )


def _listed(render: Callable[[Forecast], str]) -> Callable[[ForecastRun], str]:
    return lambda run: render(run.result)


FORECASTS: Output[ForecastRun] = Output(
    {
        **{name: _listed(render) for name, render in listing.FORECAST.items()},
        "svg": lambda run: timeline.render_svg(_picture(run)),
        "html": lambda run: timeline.render_html(_picture(run)),
    },
    "text",
    "format (svg and html: the timeline with a lane per node; default: text)",
)


def add_forecast_flags(p: argparse.ArgumentParser, _cluster: bool = False) -> None:
    """``--from``/``--until``, the maintenance durations and the output of ``forecast``."""
    add_range_flags(p, None)
    p.add_argument(
        "--maintenance-duration",
        required=True,
        metavar="DURATION",
        help="how long one node's maintenance takes (Go duration, e.g. 30m)",
    )
    p.add_argument(
        "--maintenance-duration-per",
        action="append",
        metavar="LABEL=VALUE:DURATION",
        help="another duration for the nodes with this label value (repeatable; the first "
        "match wins; default: none), e.g. nvidia.com/gpu.present=true:45m",
    )
    FORECASTS.add_flags(p)


def _rules(values: Sequence[str] | None) -> list[DurationRule]:
    rules = []
    for value in values or ():
        try:
            rules.append(parse_duration_rule(value))
        except InvalidInput as exc:
            raise UsageError(f"--maintenance-duration-per: {exc.reason}") from None
    return rules


def _forecast(args: argparse.Namespace, source: Source, out: TextIO, err: TextIO) -> int:
    """Simulate and print; the exit code says whether every node fits."""
    _instance, policy = policy_from_args(args)
    entries = source.windows(err)
    nodes = source.nodes(policy.owned)
    refusals = source.refusals(policy)
    for u in uncarried_conditions(policy, nodes):
        if u.flag == "--require-condition":  # nobody needs maintenance: a check of nothing
            raise UsageError(u.text("no node needs maintenance and the forecast checks nothing"))
        err.write(f"warning: {u.text('it blocks no node')}\n")
    now = now_ns()
    start = time_flag(args.from_, now, "--from")
    until = time_flag(args.until, now, "--until")
    if until <= start:
        raise UsageError("--until must be after --from")
    duration = duration_flag("--maintenance-duration", args.maintenance_duration)
    if duration <= 0:
        raise UsageError("--maintenance-duration: must be greater than 0")
    windows = [e for e in entries if isinstance(e, Window)]
    for e in entries:
        if isinstance(e, InvalidWindow):
            err.write(listing.skipped(e))
    try:
        result = forecast(
            windows,
            nodes,
            start,
            until,
            policy,
            duration,
            _rules(args.maintenance_duration_per),
            refusals,
        )
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
    source_text = f"forecast · {source.origin()}"
    FORECASTS.write(ForecastRun(result, entries, windows, start, until, source_text), args, out)
    return EXIT_OK if result.all_finished else EXIT_INVALID


FORECAST = Command(
    "forecast",
    _forecast,
    {
        KUMACO: "simulate a maintenance run: who gets a turn when, and what does not fit (offline)",
        KUBECTL: "simulate a maintenance run on the cluster's windows and nodes",
    },
    add_forecast_flags,
    files=PLANNER_INPUT,
    policy=True,
    env=True,
    reads_nodes=True,
)
