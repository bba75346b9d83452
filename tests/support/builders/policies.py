"""Policies for tests, built from each rule's configuration as the flags would build them.

Contract: :func:`policy_of` takes the condition names of a
:class:`~kumaco.core.planning.policy.Policy` and, by keyword, each rule's configuration (the
value its flag parses to: a :class:`~kumaco.core.windows.ceilings.Ceiling`, nanoseconds, an
:class:`~kumaco.core.planning.rates.AdmissionRate`, a label key, a bool), and returns the policy
with the rules of :data:`~kumaco.core.planning.rulebook.RULEBOOK` those values put in force, in
the rulebook's order (:func:`~kumaco.core.planning.rulebook.build`, the one place rules are
made). ``rules=`` replaces them altogether (a test's own rules).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kumaco.core.planning.policy import Policy, Rule
from kumaco.core.planning.rates import AdmissionRate
from kumaco.core.planning.rulebook import RULEBOOK, build
from kumaco.core.planning.rulebook import flags as rule_flags
from kumaco.core.windows.ceilings import Ceiling


def policy_of(
    ceiling: Ceiling | None = None,
    *,
    ceilings_per: tuple[tuple[str, Ceiling], ...] = (),
    release_delay: int = 0,
    in_progress_timeout: int | None = None,
    count_unavailable: bool = False,
    count_released_unavailable: int = 0,
    admission_cutoff: int = 0,
    respect_pdbs: bool = False,
    admission_rate: AdmissionRate | None = None,
    one_group_at_a_time: str | None = None,
    node_min_interval: int = 0,
    rules: tuple[Rule, ...] | None = None,
    **fields: Any,
) -> Policy:
    """A policy with the rules these values configure (see the module contract)."""
    keywords = {
        "ceiling": ceiling,
        "ceilings_per": ceilings_per,
        "release_delay": release_delay,
        "in_progress_timeout": in_progress_timeout,
        "count_unavailable": count_unavailable,
        "count_released_unavailable": count_released_unavailable,
        "admission_cutoff": admission_cutoff,
        "respect_pdbs": respect_pdbs,
        "admission_rate": admission_rate,
        "one_group_at_a_time": one_group_at_a_time,
        "node_min_interval": node_min_interval,
    }
    values: dict[str, object] = {_FLAG_OF[k]: v for k, v in keywords.items()}
    known = {f.name for f in rule_flags(RULEBOOK)}
    assert set(values) == known, f"a rule's flag has no keyword here: {known ^ set(values)}"
    return Policy(rules=build(values) if rules is None else rules, **fields)


_FLAG_OF = {
    "ceiling": "--max-in-progress",
    "ceilings_per": "--max-in-progress-per",
    "release_delay": "--release-delay",
    "in_progress_timeout": "--in-progress-timeout",
    "count_unavailable": "--count-unavailable",
    "count_released_unavailable": "--count-released-unavailable",
    "admission_cutoff": "--admission-cutoff",
    "respect_pdbs": "--respect-pdbs",
    "admission_rate": "--admission-rate",
    "one_group_at_a_time": "--one-group-at-a-time",
    "node_min_interval": "--node-min-interval",
}


def reconfigured(policy: Policy, **values: object) -> Policy:
    """``policy`` with the rules those keywords name (as :func:`policy_of`'s) configured anew.

    A value that turns a rule off removes it; the others keep their place, in the
    rulebook's order, and a test's own rules stay after them.
    """
    by_flag = {_FLAG_OF[k]: v for k, v in values.items()}
    classes = {cls.flag.name: cls for cls in RULEBOOK if cls.flag is not None}
    changed = {classes[f] for f in by_flag}
    kept = [r for r in policy.rules if type(r) not in changed]
    kept += [r for f, v in by_flag.items() if (r := classes[f].configured(v)) is not None]
    order = {cls: i for i, cls in enumerate(RULEBOOK)}
    ordered = sorted(kept, key=lambda r: order.get(type(r), len(order)))
    return dataclasses.replace(policy, rules=tuple(ordered))


def setting(policy: Policy, name: str) -> Any:
    """A rule's configuration in ``policy`` by :func:`policy_of`'s keyword (off: its off value)."""
    flag = _FLAG_OF[name]
    cls = next(c for c in RULEBOOK if c.flag is not None and c.flag.name == flag)
    rule = policy.rule(cls)
    if cls.flag is not None and cls.flag.kind == "bool":
        return rule is not None
    off: dict[str, object] = {"ceilings_per": (), "in_progress_timeout": None}
    if rule is None:
        return off.get(
            name, None if name in ("ceiling", "admission_rate", "one_group_at_a_time") else 0
        )
    assert dataclasses.is_dataclass(rule)
    (field,) = dataclasses.fields(rule)
    return getattr(rule, field.name)
