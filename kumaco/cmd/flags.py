"""Flags shared by several commands, defined and validated once.

Contract: :func:`add_policy_flags` registers the flags that make up a
:class:`~kumaco.core.planning.policy.Policy` (scope, condition names, and each admission rule's
own flag, read from the rulebook) on ``kumaco run``, ``kumaco plan`` and ``kubectl
kumaco plan`` alike; :func:`policy_from_args` is the one place they are validated,
raising :class:`UsageError` naming the flag (a rule's flag given without
``--max-in-progress`` is refused, all such flags named at once), and it derives the
:class:`~kumaco.core.planning.instance.Instance` with them (:func:`instance_from_args`: the
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

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.labels.selectors import Selector, parse_selector
from kumaco.core.labels.syntax import qualified_name_problems
from kumaco.core.planning.instance import Instance, default_field_manager
from kumaco.core.planning.policy import (
    IN_PROGRESS,
    MAINTENANCE_PLANNED,
    UNDER_MAINTENANCE,
    Flag,
    Policy,
    Rule,
)
from kumaco.core.planning.rulebook import CEILING_FLAG, RULEBOOK, Rulebook, build, needing_a_ceiling
from kumaco.core.planning.rulebook import flags as rule_flags_of
from kumaco.core.time.durations import parse_flag_duration


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


def add_policy_flags(p: argparse.ArgumentParser, rulebook: Rulebook = RULEBOOK) -> None:
    """Scope, condition names and the rules' flags: the flags that make a :class:`Policy`.

    The same flags, with the same meaning, on ``kumaco run``, ``kumaco plan``,
    ``kumaco forecast`` and ``kubectl kumaco plan``/``forecast``. Each rule's flag is
    the rule's own (:attr:`~kumaco.core.planning.policy.Rule.flag`), read from ``rulebook``
    (:data:`~kumaco.core.planning.rulebook.RULEBOOK`, or a test's), which :func:`policy_from_args`
    then builds the rules with.
    """
    add = p.add_argument
    add(
        "--node-selector",
        default="",
        metavar="SEL",
        help="nodes in scope (label selector; default: all nodes)",
    )
    rule_flags = sorted(rule_flags_of(rulebook), key=lambda f: f.name != CEILING_FLAG)
    _add_rule_flag(p, rule_flags[0])
    add(
        "--require-condition",
        action="append",
        metavar="TYPE",
        help="condition that must be True to be admitted, and whose clearing ends a "
        "maintenance (repeatable; needs --max-in-progress; default: none)",
    )
    add(
        "--block-condition",
        action="append",
        metavar="TYPE",
        help="condition that, when True, stops new admissions (repeatable; needs "
        "--max-in-progress; default: none)",
    )
    for flag in rule_flags[1:]:
        _add_rule_flag(p, flag)
    add(
        "--planned-lead",
        metavar="DURATION",
        help="set MaintenancePlanned=True on a node DURATION before a window puts it under "
        "maintenance (KEP-5683's advance notice; default: off)",
    )
    add_condition_flags(p)
    p.set_defaults(rulebook_=tuple(rulebook))


def _add_rule_flag(p: argparse.ArgumentParser, flag: Flag) -> None:
    """A rule's flag as argparse takes it (its text is parsed by :func:`rules_from_args`)."""
    help_text = flag.help
    if flag.needs_ceiling and CEILING_FLAG not in help_text:
        help_text += f"; needs {CEILING_FLAG}"
    if flag.kind == "bool":
        p.add_argument(
            flag.name,
            type=parse_bool,
            nargs="?",
            const=True,
            default=False,
            metavar=flag.metavar or "BOOL",
            help=help_text,
        )
    elif flag.kind == "repeat":
        p.add_argument(flag.name, action="append", metavar=flag.metavar, help=help_text)
    else:
        p.add_argument(flag.name, metavar=flag.metavar, help=help_text)


def _given(value: object) -> bool:
    return value not in (None, "", False, [], ())


def rules_from_args(args: argparse.Namespace, rulebook: Rulebook) -> tuple[Rule, ...]:
    """The rules the flags configure, each flag's text parsed by its rule (errors name it).

    A flag that decides MaintenanceInProgress given without ``--max-in-progress`` is
    refused, every such flag at once (:func:`~kumaco.core.planning.rulebook.needing_a_ceiling`),
    and so are ``--require-condition`` and ``--block-condition``: kumaco manages
    MaintenanceInProgress only under a ceiling, so they would do nothing.
    """
    values: dict[str, object] = {}
    given: list[str] = []
    for flag in rule_flags_of(rulebook):
        raw = getattr(args, flag.dest, None)
        if not _given(raw):
            continue
        given.append(flag.name)
        try:
            if flag.kind == "bool":
                values[flag.name] = bool(raw)
            elif flag.kind == "repeat":
                values[flag.name] = tuple(flag.parse(str(v)) for v in raw or ())
            else:
                values[flag.name] = flag.parse(str(raw))
        except InvalidInput as exc:
            raise UsageError(f"{flag.name}: {exc.reason}") from None
    for name in ("--require-condition", "--block-condition"):
        if _given(getattr(args, name.lstrip("-").replace("-", "_"), None)):
            given.append(name)
    idle = needing_a_ceiling(given, rulebook, also=("--require-condition", "--block-condition"))
    if idle:
        one = len(idle) == 1
        raise UsageError(
            f"{', '.join(idle)}: {'needs' if one else 'need'} {CEILING_FLAG}: "
            f"{'it decides' if one else 'they decide'} which nodes get MaintenanceInProgress, "
            f"which kumaco manages only under a ceiling (set {CEILING_FLAG}, e.g. "
            f"{CEILING_FLAG}=1, or drop {'it' if one else 'them'})"
        )
    try:
        return build(values, rulebook)
    except InvalidInput as exc:  # the reason names the flag
        raise UsageError(exc.reason) from None


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
        return parse_flag_duration(text)
    except InvalidInput as exc:
        raise UsageError(f"{flag}: {exc.reason}") from None


def policy_from_args(
    args: argparse.Namespace, lease_namespace: str | None = None
) -> tuple[Instance, Policy]:
    """The instance (:func:`instance_from_args`) and the planner policy of :func:`add_policy_flags`.

    The policy writes under the instance's condition types and field manager; its rules
    are built from the rulebook the flags were added with (:func:`rules_from_args`).
    """
    scope = selector_flag("--node-selector", args.node_selector)
    require = tuple(condition_flag("--require-condition", c) for c in args.require_condition or ())
    block = tuple(condition_flag("--block-condition", c) for c in args.block_condition or ())
    rules = rules_from_args(args, getattr(args, "rulebook_", RULEBOOK))
    instance = instance_from_args(args, lease_namespace)
    return instance, Policy(
        scope=scope,
        under_maintenance=instance.under_maintenance,
        in_progress=instance.in_progress,
        require=require,
        block=block,
        manager=instance.field_manager,
        rules=rules,
        planned_lead=duration_flag("--planned-lead", args.planned_lead),
        planned=instance.planned,
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
