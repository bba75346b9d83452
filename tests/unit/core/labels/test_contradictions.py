"""Tests for kumaco.core.labels.contradictions: selectors whose requirements never hold together.

The table pins the sentences; the property checks the verdict against brute force: a
key's set and existence requirements contradict each other exactly when no label set
(the key absent, or any value of a universe wider than the values written) matches.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kumaco.core.labels.contradictions import contradictions
from kumaco.core.labels.node_selector import parse_label_selector
from kumaco.core.labels.requirements import Operator, Requirement
from kumaco.core.labels.selectors import parse_selector

CASES = [
    (
        "zone=zone-a,zone=zone-b",
        [
            "zone cannot equal zone-a and zone-b at once (the comma is AND); for any of "
            "them, write zone in (zone-a,zone-b)"
        ],
    ),
    (
        "zone==a,zone in (b,c)",
        [
            "zone cannot equal a and one of (b,c) at once (the comma is AND); for any of "
            "them, write zone in (a,b,c)"
        ],
    ),
    ("k=a,k!=a", ["k must be a and must not be (k=a,k!=a)"]),
    (
        "k in (a,b),k notin (a,b,c)",
        ["k must be one of (a,b) and must not be (k in (a,b),k notin (a,b,c))"],
    ),
    ("k in (a,b),k!=a,k!=b", ["k must be one of (a,b) and must not be (k in (a,b),k!=a,k!=b)"]),
    ("k,!k", ["k must exist and must not (k,!k)"]),
    ("k=a,!k", ["k must exist and must not (k=a,!k)"]),
    # Satisfiable: nothing to say.
    ("", []),
    ("zone in (zone-a,zone-b)", []),
    ("k in (a,b),k notin (a)", []),
    ("k=a,k in (a,b)", []),
    ("k!=a,!k", []),
    ("a=1,b=2", []),
    ("k>3,k<9", []),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_sentences(text: str, expected: list[str]) -> None:
    assert contradictions(parse_selector(text).requirements) == expected


def test_a_label_selector_mapping_goes_through_the_same_requirements() -> None:
    selector = parse_label_selector(
        "matchLabels: {zone: zone-a}\n"
        "matchExpressions: [{key: zone, operator: In, values: [zone-b]},"
        " {key: pool, operator: Exists}, {key: pool, operator: DoesNotExist}]"
    )
    assert contradictions(selector.requirements) == [
        "pool must exist and must not (pool,!pool)",
        "zone cannot equal zone-a and zone-b at once (the comma is AND); for any of them, "
        "write zone in (zone-a,zone-b)",
    ]


VALUES = ("a", "b", "c")
_SET_OPS = (
    Operator.EQUALS,
    Operator.DOUBLE_EQUALS,
    Operator.IN,
    Operator.NOT_EQUALS,
    Operator.NOT_IN,
)


@st.composite
def requirement(draw: st.DrawFn) -> Requirement:
    op = draw(st.sampled_from((*_SET_OPS, Operator.EXISTS, Operator.DOES_NOT_EXIST)))
    if op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        return Requirement("k", op)
    if op in (Operator.IN, Operator.NOT_IN):
        return Requirement(
            "k", op, tuple(sorted(draw(st.sets(st.sampled_from(VALUES), min_size=1))))
        )
    return Requirement("k", op, (draw(st.sampled_from(VALUES)),))


@given(st.lists(requirement(), min_size=1, max_size=4))
def test_a_contradiction_is_said_exactly_when_no_label_set_matches(reqs: list[Requirement]) -> None:
    label_sets = [{}, *({"k": v} for v in (*VALUES, "other"))]
    matchable = any(all(r.matches(labels) for r in reqs) for labels in label_sets)
    assert bool(contradictions(reqs)) == (not matchable)
