"""The rulebook: every admission rule kumaco knows, in order, and the rules built from flags.

Contract: pure. :data:`RULEBOOK` is the one ordered list of rule classes -- within a
stage (:data:`~kumaco.core.planning.policy.STAGES`) the first rule that stops a node decides, for
holders and candidates alike. Each class carries its own flag
(:attr:`~kumaco.core.planning.policy.Rule.flag`: name, parser, help, whether it needs a ceiling),
so the command line, the environment variables, ``kumaco_policy_info`` and the start-up
log follow the rulebook without more code. :func:`build` is the one place rules are made
from their flags' parsed values; :func:`needing_a_ceiling` names every flag given that
decides MaintenanceInProgress while ``--max-in-progress``, which turns it on, is not.

Adding a rule is writing its class (its module, its tests, a row in docs/reference.md's
table) and adding it here; one that needs new cluster data also declares it
(:attr:`~kumaco.core.planning.policy.Rule.cluster_reads`) and the planner's input grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kumaco.core.errors import InvalidInput
from kumaco.core.planning.ceiling_rules import GlobalCeiling, GroupCeilings, WindowBudgets
from kumaco.core.planning.pacing_rules import AdmissionRateLimit, NodeMinInterval, OneGroupAtATime
from kumaco.core.planning.pdb_rule import RespectDisruptionBudgets
from kumaco.core.planning.policy import Flag, Rule
from kumaco.core.planning.rules import (
    Blocked,
    Cutoff,
    FinishedIdle,
    Frozen,
    InProgressTimeout,
    RebootObserved,
    ReleaseDelay,
    ReleasedUnavailable,
    ReportedSinceReboot,
    Required,
    RequirementCleared,
    TimedOutUntilCleared,
    Unavailable,
    WindowClosed,
)

__all__ = ["CEILING_FLAG", "RULEBOOK", "Rulebook", "build", "flags", "needing_a_ceiling"]

#: An ordered tuple of rule classes (:data:`RULEBOOK`, or a test's with a rule of its own).
Rulebook = Sequence[type[Rule]]

#: Every rule, in the order it is applied within its stage.
RULEBOOK: tuple[type[Rule], ...] = (
    RebootObserved,
    RequirementCleared,
    InProgressTimeout,
    TimedOutUntilCleared,
    ReleaseDelay,
    ReleasedUnavailable,
    FinishedIdle,
    ReportedSinceReboot,
    NodeMinInterval,  # first of ADMIT: a node kept out keeps its reason, and its last end
    Frozen,
    WindowClosed,
    Required,
    Blocked,
    Cutoff,
    RespectDisruptionBudgets,
    Unavailable,
    GlobalCeiling,
    GroupCeilings,
    WindowBudgets,
    OneGroupAtATime,
    AdmissionRateLimit,
)

#: The flag that turns MaintenanceInProgress on (its rule is the global ceiling).
CEILING_FLAG = "--max-in-progress"


def flags(rulebook: Rulebook = RULEBOOK) -> tuple[Flag, ...]:
    """The flags of the rulebook's rules, in its order."""
    return tuple(cls.flag for cls in rulebook if cls.flag is not None)


def build(values: Mapping[str, object], rulebook: Rulebook = RULEBOOK) -> tuple[Rule, ...]:
    """The rules in force: each flag's parsed value by flag name (absent or unset: off).

    Raises :class:`~kumaco.core.errors.InvalidInput`, its reason led by the flag's name,
    when a rule refuses its value as a whole (a key given twice).
    """
    out: list[Rule] = []
    for cls in rulebook:
        try:
            rule = cls.configured(values.get(cls.flag.name) if cls.flag is not None else None)
        except InvalidInput as exc:
            name = cls.flag.name if cls.flag is not None else cls.__name__
            raise InvalidInput(f"{name}: {exc.reason}") from None
        if rule is not None:
            out.append(rule)
    return tuple(out)


def needing_a_ceiling(
    given: Sequence[str], rulebook: Rulebook = RULEBOOK, also: Sequence[str] = ()
) -> tuple[str, ...]:
    """The flags of ``given`` that decide MaintenanceInProgress, if ``--max-in-progress`` is not.

    Without a ceiling kumaco does not manage MaintenanceInProgress, so such a flag would
    be accepted and do nothing: the caller refuses them, all at once. ``also``: flags of
    no rule that need it too (the required and blocking conditions).
    """
    if CEILING_FLAG in given:
        return ()
    needing = {f.name for f in flags(rulebook) if f.needs_ceiling} | set(also)
    return tuple(name for name in given if name in needing)
