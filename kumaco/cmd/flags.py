"""Flags shared by several commands, defined and validated once.

Contract: :func:`add_policy_flags` registers the flags that make up a
:class:`~kumaco.core.planner.Policy` (scope, condition names, the ceiling and
its rules) on ``kumaco run``, ``kumaco plan`` and ``kubectl kumaco plan`` alike;
:func:`policy_from_args` is the one place they are validated, raising
:class:`UsageError` naming the flag. :func:`apply_env_defaults` lets
``KUMACO_<FLAG>`` set any flag's default (the command line still wins).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from kumaco.core.errors import InvalidInput
from kumaco.core.planner import IN_PROGRESS, UNDER_MAINTENANCE, Policy, parse_ceiling
from kumaco.core.selectors import Selector, parse_selector


class UsageError(Exception):
    """A flag, an environment value or an input that cannot be used: exit status 2."""


def env_name(flag: str) -> str:
    """``--max-in-progress`` -> ``KUMACO_MAX_IN_PROGRESS``."""
    return "KUMACO_" + flag.lstrip("-").upper().replace("-", "_")


def add_policy_flags(p: argparse.ArgumentParser) -> None:
    """Scope, condition names and the ceiling: the flags that make a :class:`Policy`."""
    p.add_argument(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope (label selector; default: all nodes)",
    )
    p.add_argument(
        "--max-in-progress",
        metavar="N|P%",
        help="ceiling of concurrent MaintenanceInProgress nodes (unset: not managed)",
    )
    p.add_argument(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="condition that must be True for MaintenanceInProgress (repeatable)",
    )
    p.add_argument(
        "--block-condition",
        action="append",
        metavar="TYPE",
        help="condition that, when True, blocks MaintenanceInProgress (repeatable)",
    )
    p.add_argument("--under-maintenance-condition", default=UNDER_MAINTENANCE, metavar="TYPE")
    p.add_argument("--in-progress-condition", default=IN_PROGRESS, metavar="TYPE")


def selector_flag(flag: str, text: str) -> Selector:
    """A label selector given to ``flag``; :class:`UsageError` naming the flag if bad."""
    try:
        return parse_selector(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None


def policy_from_args(args: argparse.Namespace) -> Policy:
    """The planner policy from the flags of :func:`add_policy_flags`."""
    scope = selector_flag("--node-selector", args.node_selector)
    try:
        ceiling = (
            parse_ceiling(args.max_in_progress) if args.max_in_progress not in (None, "") else None
        )
    except InvalidInput as exc:
        raise UsageError(f"--max-in-progress: {exc.reason}") from None
    return Policy(
        scope=scope,
        under_maintenance=args.under_maintenance_condition,
        in_progress=args.in_progress_condition,
        ceiling=ceiling,
        require=tuple(args.require_condition or ()),
        block=tuple(args.block_condition or ()),
    )


def parse_bool(text: str) -> bool:
    """A boolean flag value, as Go's strconv.ParseBool and a few more spellings accept."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes", "y", "on"):
        return True
    if value in ("0", "f", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true/false)")


def apply_env_defaults(p: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """Let ``KUMACO_<FLAG>`` set each flag's default (so the command line still wins).

    A repeatable flag takes a comma-separated value.
    """
    for action in p._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.dest in ("help",):
            continue
        value = env.get(env_name(longs[0]))
        if value is None:
            continue
        if isinstance(action, argparse._AppendAction):
            p.set_defaults(**{action.dest: [v.strip() for v in value.split(",") if v.strip()]})
        elif action.type is not None and callable(action.type):
            try:
                p.set_defaults(**{action.dest: action.type(value)})
            except (argparse.ArgumentTypeError, ValueError) as exc:
                raise UsageError(f"{env_name(longs[0])}: {exc}") from None
        else:
            p.set_defaults(**{action.dest: value})
