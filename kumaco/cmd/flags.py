"""Flags shared by several commands, defined and validated once.

Contract: :func:`add_policy_flags` registers the flags that make up a
:class:`~kumaco.core.planner.Policy` (scope, condition names, the ceiling and
its rules) on ``kumaco run``, ``kumaco plan`` and ``kubectl kumaco plan`` alike;
:func:`policy_from_args` is the one place they are validated, raising
:class:`UsageError` naming the flag, and it derives the
:class:`~kumaco.core.instance.Instance` with them (:func:`instance_from_args`: the
condition types and, for ``run`` and ``status``, the field manager and the Lease).
:func:`apply_env_defaults` lets
``KUMACO_<FLAG>`` set any flag's default (the command line still wins), and
:func:`unknown_env` refuses a ``KUMACO_*`` variable that sets no flag (but the
development tools' own, :data:`NOT_FLAGS`), naming the closest flag.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Mapping
from typing import TypedDict

from kumaco.core.ceilings import Ceiling
from kumaco.core.durations import overflow_hint, parse_go_duration
from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.instance import Instance, default_field_manager
from kumaco.core.labelsyntax import qualified_name_problems
from kumaco.core.planner import (
    IN_PROGRESS,
    MAINTENANCE_PLANNED,
    UNDER_MAINTENANCE,
    Policy,
    parse_ceiling,
)
from kumaco.core.rates import AdmissionRate, parse_admission_rate
from kumaco.core.selectors import Selector, parse_selector


class UsageError(Exception):
    """A flag, an environment value or an input that cannot be used: exit status 2."""


ENV_PREFIX = "KUMACO_"
#: The metavar of every comma-separated list of namespaces (``--namespaces``).
NAMESPACES_METAVAR = "NS[,NS...]"
#: ``KUMACO_`` variables that are not flags: those of kumaco's own development tools
#: (hack/, tools/, tests/, .ci/), which ``kumaco`` never reads; any other unknown
#: ``KUMACO_*`` variable stops ``run``, ``plan`` and ``forecast`` (:func:`unknown_env`).
NOT_FLAGS = frozenset(
    {
        "KUMACO_CACHE_DIR",
        "KUMACO_CLUSTER_IMAGE",
        "KUMACO_CLUSTER_RUN",
        "KUMACO_CONTAINERS_CONF_TARGET",
        "KUMACO_DEBIAN_SOURCES",
        "KUMACO_E2E_PROOF",
        "KUMACO_E2E_WORKERS",
        "KUMACO_FIGURES",
        "KUMACO_FIGURES_COMMAND",
        "KUMACO_IMAGE_ENGINE",
        "KUMACO_IMAGE_KEEP",
        "KUMACO_IMAGE_OUT",
        "KUMACO_IMAGE_REBUILD",
        "KUMACO_KURED_V2_TREE",
        "KUMACO_SETUP_DONE",
        "KUMACO_UNIT_WORKERS",
        "KUMACO_ZIPAPP_REBUILD",
    }
)


def env_name(flag: str) -> str:
    """``--max-in-progress`` -> ``KUMACO_MAX_IN_PROGRESS``."""
    return ENV_PREFIX + flag.lstrip("-").upper().replace("-", "_")


def env_names(p: argparse.ArgumentParser) -> dict[str, str]:
    """The ``KUMACO_<FLAG>`` variable of each long flag of ``p`` -> the flag."""
    out: dict[str, str] = {}
    for action in p._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in ("help", "version"):
            out[env_name(longs[0])] = longs[0]
    return out


def unknown_env(env: Mapping[str, str], known: Mapping[str, str], command: str) -> None:
    """A :class:`UsageError` for the first ``KUMACO_*`` variable that sets no flag.

    ``known``: variable -> flag (:func:`env_names`); the message names the closest flag
    (``KUMACO_REQUIRE_CONDITIONS`` -> ``KUMACO_REQUIRE_CONDITION``, ``--require-condition``).
    """
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in known or name in NOT_FLAGS:
            continue
        # Compared without the prefix every name shares (it would make any two close).
        suffixes = {k.removeprefix(ENV_PREFIX): k for k in known}
        close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1)
        hint = (
            f"did you mean {suffixes[close[0]]} ({known[suffixes[close[0]]]})?"
            if close
            else f"each flag of kumaco {command} is KUMACO_<FLAG> (kumaco {command} --help)"
        )
        raise UsageError(f"environment variable {name} sets no flag: {hint}")


def add_policy_flags(p: argparse.ArgumentParser) -> None:
    """Scope, condition names, the ceilings and their rules: the flags that make a :class:`Policy`.

    The same flags, with the same meaning, on ``kumaco run``, ``kumaco plan``,
    ``kumaco forecast`` and ``kubectl kumaco plan``/``forecast``.
    """
    add = p.add_argument
    add(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope (label selector; default: all nodes)",
    )
    add(
        "--max-in-progress",
        metavar="N|P%",
        help="ceiling of nodes with MaintenanceInProgress at once (default: unset, "
        "MaintenanceInProgress is not managed)",
    )
    add(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="condition that must be True to be admitted, and whose clearing ends a "
        "maintenance (repeatable; default: none)",
    )
    add(
        "--block-condition",
        action="append",
        metavar="TYPE",
        help="condition that, when True, stops new admissions (repeatable; default: none)",
    )
    add(
        "--max-in-progress-per",
        action="append",
        metavar="KEY=N|P%",
        help="at most N (or P%%) in progress per value of the node label KEY; nodes without it "
        "form one group (repeatable, e.g. topology.kubernetes.io/zone=1; default: none)",
    )
    add(
        "--release-delay",
        metavar="DURATION",
        help="a node released less than DURATION ago still counts toward the ceilings "
        "(kured's --lock-release-delay; default: off)",
    )
    add(
        "--in-progress-timeout",
        metavar="DURATION",
        help="revoke MaintenanceInProgress held longer than DURATION (kured's --lock-ttl; "
        "default: off, only reported)",
    )
    add(
        "--count-unavailable",
        type=parse_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="nodes not Ready or cordoned count toward the ceilings",
    )
    add(
        "--admission-cutoff",
        metavar="DURATION",
        help="admit a node only if its maintenance window stays open at least DURATION longer "
        "(default: off)",
    )
    add(
        "--respect-pdbs",
        type=parse_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="admit no node whose drain a PodDisruptionBudget would refuse now (needs "
        "--max-in-progress; run: watches pods and PDBs, offline: --pods and --pdbs; "
        "default: off)",
    )
    add(
        "--planned-lead",
        metavar="DURATION",
        help="set MaintenancePlanned=True on a node DURATION before a window puts it under "
        "maintenance (KEP-5683's advance notice; default: off)",
    )
    add_fleet_flags(p)
    add_condition_flags(p)


def add_fleet_flags(p: argparse.ArgumentParser) -> None:
    """Issue 28's rules: the admission rate, one group at a time, spacing per node."""
    add = p.add_argument
    add(
        "--admission-rate",
        metavar="N/DURATION",
        help="at most N nodes start maintenance in any sliding DURATION, on top of the "
        "ceilings (e.g. 10/1h; default: off)",
    )
    add(
        "--one-group-at-a-time",
        metavar="KEY",
        help="nodes in maintenance all share one value of the node label KEY; the next "
        "group goes when this one has no eligible node left (e.g. topology.kubernetes.io/zone; "
        "default: off)",
    )
    add(
        "--node-min-interval",
        metavar="DURATION",
        help="a node whose previous maintenance ended less than DURATION ago is not admitted "
        "again (default: off)",
    )


class FleetFields(TypedDict):
    """The :class:`Policy` fields of :func:`add_fleet_flags`."""

    admission_rate: AdmissionRate | None
    one_group_at_a_time: str | None
    node_min_interval: int


def fleet_policy(args: argparse.Namespace) -> FleetFields:
    """The :class:`Policy` fields of :func:`add_fleet_flags`, validated (flag-named errors)."""
    rate = None
    if args.admission_rate not in (None, ""):
        try:
            rate = parse_admission_rate(args.admission_rate)
        except InvalidInput as exc:
            raise UsageError(f"--admission-rate: {exc.reason}") from None
    key = args.one_group_at_a_time or None
    if key is not None:
        problems = qualified_name_problems(key)
        if problems:
            raise UsageError(
                f"--one-group-at-a-time: {excerpt(key)} is not a label key: "
                f"{'; '.join(problems)} (e.g. topology.kubernetes.io/zone)"
            )
    return {
        "admission_rate": rate,
        "one_group_at_a_time": key,
        "node_min_interval": duration_flag("--node-min-interval", args.node_min_interval),
    }


def add_condition_flags(p: argparse.ArgumentParser) -> None:
    """``--under-maintenance-condition``, ``--in-progress-condition``, ``--planned-condition``.

    Declared once, for :func:`add_policy_flags` and ``kubectl kumaco status``; read with
    :func:`instance_from_args`.
    """
    p.add_argument(
        "--under-maintenance-condition",
        default=UNDER_MAINTENANCE,
        metavar="TYPE",
        help="the node condition that says a maintenance window is open",
    )
    p.add_argument(
        "--in-progress-condition",
        default=IN_PROGRESS,
        metavar="TYPE",
        help="the node condition that admits a node to its maintenance",
    )
    p.add_argument(
        "--planned-condition",
        default=MAINTENANCE_PLANNED,
        metavar="TYPE",
        help="the node condition that gives advance notice of a maintenance (with --planned-lead)",
    )


def instance_from_args(args: argparse.Namespace, lease_namespace: str | None = None) -> Instance:
    """The instance the flags name, derived once (a bad condition type names its flag).

    Its condition types come from :func:`add_condition_flags`. With ``lease_namespace``
    (``run`` and ``status``, which have ``--leader-election-id`` and ``--field-manager``)
    also its Lease and field manager (default ``kumaco/<leader-election-id>``); without
    (``plan``, ``forecast``: they write nothing) only the condition types.
    """
    under_maintenance = condition_flag(
        "--under-maintenance-condition", args.under_maintenance_condition
    )
    in_progress = condition_flag("--in-progress-condition", args.in_progress_condition)
    planned = condition_flag("--planned-condition", args.planned_condition)
    for flag, other in (
        ("--under-maintenance-condition", under_maintenance),
        ("--in-progress-condition", in_progress),
    ):
        if planned == other:
            raise UsageError(
                f"--planned-condition: {excerpt(planned)} is also {flag}; "
                "each condition kumaco writes needs a type of its own"
            )
    if lease_namespace is None:
        return Instance(under_maintenance, in_progress, planned=planned)
    lease: str = args.leader_election_id
    return Instance(
        under_maintenance,
        in_progress,
        lease_name=lease,
        lease_namespace=lease_namespace,
        field_manager=args.field_manager or default_field_manager(lease),
        planned=planned,
    )


def selector_flag(flag: str, text: str) -> Selector:
    """A label selector given to ``flag``; :class:`UsageError` naming the flag if bad."""
    try:
        return parse_selector(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None


def condition_flag(flag: str, text: str) -> str:
    """A condition type given to ``flag``: a Kubernetes qualified name, as metav1.Condition's."""
    problems = qualified_name_problems(text)
    if problems:
        raise UsageError(
            f"{flag}: {excerpt(text)} is not a condition type: {'; '.join(problems)} "
            "(e.g. kured.dev/RebootRequired)"
        )
    return text


def duration_flag(flag: str, text: str | None) -> int:
    """A Go duration given to ``flag`` (ns); unset or empty is 0 (off)."""
    if text in (None, ""):
        return 0
    assert text is not None
    try:
        ns = parse_go_duration(text)
    except InvalidInput as exc:
        why = overflow_hint(text)
        fix = f"; {why}" if why else " (e.g. 90s, 10m, 1h30m)"
        raise UsageError(f"{flag}: {exc.reason}{fix}") from None
    if ns < 0:
        raise UsageError(f"{flag}: must not be negative")
    return ns


def ceiling_flag(flag: str, text: str) -> Ceiling:
    """A ceiling (``N`` or ``P%``) given to ``flag``."""
    try:
        return parse_ceiling(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None


def per_label_ceilings(values: list[str] | None) -> tuple[tuple[str, Ceiling], ...]:
    """``KEY=N|P%`` values of ``--max-in-progress-per``."""
    out: list[tuple[str, Ceiling]] = []
    for value in values or ():
        key, sep, ceiling = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(
                f"--max-in-progress-per: {excerpt(value)} is not KEY=N or KEY=P% "
                "(e.g. topology.kubernetes.io/zone=1)"
            )
        problems = qualified_name_problems(key)
        if problems:
            raise UsageError(
                f"--max-in-progress-per: {excerpt(key)} is not a label key: {'; '.join(problems)}"
            )
        if any(k == key for k, _c in out):
            raise UsageError(f"--max-in-progress-per: {key} is given twice")
        out.append((key, ceiling_flag("--max-in-progress-per", ceiling.strip())))
    return tuple(out)


def policy_from_args(
    args: argparse.Namespace, lease_namespace: str | None = None
) -> tuple[Instance, Policy]:
    """The instance (:func:`instance_from_args`) and the planner policy of :func:`add_policy_flags`.

    The policy writes under the instance's condition types and field manager.
    """
    scope = selector_flag("--node-selector", args.node_selector)
    ceiling = (
        ceiling_flag("--max-in-progress", args.max_in_progress)
        if args.max_in_progress not in (None, "")
        else None
    )
    timeout = duration_flag("--in-progress-timeout", args.in_progress_timeout)
    instance = instance_from_args(args, lease_namespace)
    return instance, Policy(
        scope=scope,
        under_maintenance=instance.under_maintenance,
        in_progress=instance.in_progress,
        ceiling=ceiling,
        require=tuple(
            condition_flag("--require-condition", c) for c in args.require_condition or ()
        ),
        block=tuple(condition_flag("--block-condition", c) for c in args.block_condition or ()),
        ceilings_per=per_label_ceilings(args.max_in_progress_per),
        release_delay=duration_flag("--release-delay", args.release_delay),
        in_progress_timeout=timeout or None,
        count_unavailable=bool(args.count_unavailable),
        admission_cutoff=duration_flag("--admission-cutoff", args.admission_cutoff),
        manager=instance.field_manager,
        respect_pdbs=respect_pdbs_flag(args, ceiling),
        planned_lead=duration_flag("--planned-lead", args.planned_lead),
        planned=instance.planned,
        **fleet_policy(args),
    )


def respect_pdbs_flag(args: argparse.Namespace, ceiling: Ceiling | None) -> bool:
    """``--respect-pdbs``: it decides MaintenanceInProgress, so it needs ``--max-in-progress``."""
    if not args.respect_pdbs:
        return False
    if ceiling is None:
        raise UsageError(
            "--respect-pdbs: needs --max-in-progress (PodDisruptionBudgets stop admissions "
            "to MaintenanceInProgress, which kumaco manages only under a ceiling)"
        )
    return True


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
