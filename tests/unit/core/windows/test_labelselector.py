"""Tests for kumaco.core.labels.node_selector: a ``nodeSelector`` written as a metav1.LabelSelector.

The hand-written tables pin the meaning and apimachinery's error texts (checked against
k8s.io/apimachinery v0.36.3); the ``oracle`` tests re-check them, and hypothesis-made
LabelSelectors, against ``hack/oracle`` (sigs.k8s.io/yaml ``UnmarshalStrict`` +
``metav1.LabelSelectorAsSelector``), and show what kured's own scheduler makes of them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.labels.node_selector import (
    LabelSelectorError,
    NotAMapping,
    parse_label_selector,
    read_label_selector,
)
from kumaco.core.labels.selectors import parse_selector
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import InvalidWindow, Window
from tests.support.judges.oracle import Oracle
from tests.support.judges.strategies import label_keys, label_sets, label_values, selector_texts

NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
    "or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
EMPTY_SET = "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
MUST_BE_EMPTY = "values set must be empty for exists and does not exist"

# (nodeSelector text, Selector.String() of LabelSelectorAsSelector)
ACCEPTED: list[tuple[str, str]] = [
    ("matchLabels: {zone: a}", "zone=a"),
    ('{"matchLabels": {"zone": "a"}}', "zone=a"),
    # kured's scheduler reads these lowercase spellings (gopkg.in/yaml.v3 lowercases field names)
    ("matchlabels: {zone: a}", "zone=a"),
    ("MatchLabels: {zone: a}", "zone=a"),
    (
        "matchexpressions: [{key: zone, operator: In, values: [a]}]",
        "zone in (a)",
    ),
    (
        "matchLabels:\n  node-role.kubernetes.io/worker: ''\n  kubernetes.io/os: linux\n"
        "matchExpressions:\n"
        "- {key: topology.kubernetes.io/zone, operator: NotIn, values: [zone-c, zone-b]}\n"
        "- {key: kured.dev/skip, operator: DoesNotExist}\n"
        "- {key: gpu, operator: Exists, values: []}\n",
        "gpu,kubernetes.io/os=linux,!kured.dev/skip,node-role.kubernetes.io/worker=,"
        "topology.kubernetes.io/zone notin (zone-b,zone-c)",
    ),
    # values are sorted, duplicates kept, as Requirement.String() does
    ("matchExpressions: [{key: z, operator: In, values: [b, a, a]}]", "z in (a,a,b)"),
    # the same key in matchLabels and matchExpressions: both kept, matchLabels first
    (
        "matchLabels: {z: a}\nmatchExpressions: [{key: z, operator: Exists}]",
        "z=a,z",
    ),
    # empty LabelSelectors select everything
    ("{}", ""),
    ("matchLabels: {}", ""),
    ("matchLabels:", ""),
    ("matchLabels: null\nmatchExpressions: []", ""),
    # null strings are "", unquoted decimal integers and true/false are their text
    ("matchLabels: {a: ~, b: 42, c: true, d: false}", "a=,b=42,c=true,d=false"),
    ("matchExpressions: [{key: a, operator: In, values: [null, 1]}]", "a in (,1)"),
    ("matchLabels: {a: !!str 012}", "a=012"),
    ("matchLabels: {1: x}", "1=x"),
    ("matchLabels: {zone: &z a, rack: *z}", "rack=a,zone=a"),
]

# (text, stage, reason) -- "selector" reasons are apimachinery's, word for word
REJECTED: list[tuple[str, str, str]] = [
    (
        "matchExpressions: [{key: zone, operator: In}]",
        "selector",
        EMPTY_SET,
    ),
    (
        "matchExpressions: [{key: zone, operator: NotIn, values: []}]",
        "selector",
        EMPTY_SET,
    ),
    (
        "matchExpressions: [{key: zone, operator: Exists, values: [a, 'b<&>']}]",
        "selector",
        '[values: Invalid value: ["a","b\\u003c\\u0026\\u003e"]: ' + MUST_BE_EMPTY + ", "
        f'values[1][zone]: Invalid value: "b<&>": {VALUE_RULE}]',
    ),
    (
        "matchExpressions: [{key: zone, operator: in, values: [a]}]",
        "selector",
        '"in" is not a valid label selector operator',
    ),
    ("matchExpressions: [{key: zone}]", "selector", '"" is not a valid label selector operator'),
    ("matchExpressions: [null]", "selector", '"" is not a valid label selector operator'),
    ("matchLabels: {-zone: a}", "selector", f'key: Invalid value: "-zone": name part {NAME_RULE}'),
    ("matchLabels: {zone: a_}", "selector", f'values[0][zone]: Invalid value: "a_": {VALUE_RULE}'),
    # an unquoted negative number is its text, an invalid label value
    ("matchLabels: {zone: -7}", "selector", f'values[0][zone]: Invalid value: "-7": {VALUE_RULE}'),
    (
        "matchExpressions: [{key: z_, operator: In, values: [a_, b]}]",
        "selector",
        f'[key: Invalid value: "z_": name part {NAME_RULE}, '
        f'values[0][z_]: Invalid value: "a_": {VALUE_RULE}]',
    ),
    (
        "matchExpressions: [{key: '', operator: DoesNotExist}]",
        "selector",
        'key: Invalid value: "": name part must be non-empty; name part ' + NAME_RULE,
    ),
    # shapes Go rejects too (sigs.k8s.io/yaml UnmarshalStrict)
    ("matchLabel: {zone: a}", "decode", "unknown field 'matchLabel' in the LabelSelector"),
    ("matchLabels: [zone]", "decode", "matchLabels must be a map of label keys to values"),
    ("matchLabels: {zone: [a]}", "decode", "matchLabels[zone] must be a string, got a list"),
    ("matchExpressions: {key: a}", "decode", "matchExpressions must be a list"),
    ("matchExpressions: [{key: a, operator: In, value: [b]}]", "decode", "unknown field 'value'"),
    ("matchLabels: {a: b}\nmatchLabels: {c: d}", "decode", "has the field matchLabels twice"),
    ("matchLabels: {a: b, a: c}", "decode", "has the label key 'a' twice"),
    # kumaco's own refusals, where Go would accept something readers disagree on
    ("matchLabels: {a: yes}", "strict", "'yes' is read by YAML as a boolean"),
    ("matchLabels: {a: 012}", "strict", "'012' is read by YAML as a number"),
    ("matchLabels: {a: 1.0}", "strict", "'1.0' is read by YAML as a number"),
    ("matchExpressions: [{key: a, operator: In, values: [on]}]", "strict", "'on' is read"),
    ("matchLabels: {a: b}\nmatchlabels: {c: d}", "strict", "(as matchLabels and matchlabels)"),
    ("matchLabels: {1: a, '1': b}", "strict", "has the label key '1' twice"),
    ("matchLabels: !!set {a}", "strict", "has the YAML tag"),
]


def outcome(text: str) -> dict[str, Any]:
    try:
        selector = parse_label_selector(text)
    except LabelSelectorError as error:
        return {"error": error.reason, "stage": error.stage}
    return {"selector": str(selector), "empty": selector.empty}


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
def test_accepted_label_selectors(text: str, expected: str) -> None:
    selector = parse_label_selector(text)
    assert str(selector) == expected
    # What kumaco shows is a selector string that means the same.
    shown = parse_selector(str(selector))
    for labels in [*LABELS_FOR_ORACLE, {"z": "a"}, {"gpu": "", "kubernetes.io/os": "linux"}]:
        assert shown.matches(labels) == selector.matches(labels)


@pytest.mark.parametrize(("text", "stage", "reason"), REJECTED)
def test_rejected_label_selectors(text: str, stage: str, reason: str) -> None:
    with pytest.raises(LabelSelectorError) as caught:
        parse_label_selector(text)
    assert caught.value.stage == stage
    if stage == "selector":
        assert caught.value.reason == reason
    else:
        assert reason in caught.value.reason
    assert caught.value.fix


def test_matching_ands_match_labels_and_expressions() -> None:
    selector = parse_label_selector(
        "matchLabels: {role: worker}\n"
        "matchExpressions: [{key: zone, operator: NotIn, values: [c]}, "
        "{key: skip, operator: DoesNotExist}]"
    )
    assert selector.matches({"role": "worker"})  # NotIn matches a node without the key
    assert selector.matches({"role": "worker", "zone": "a"})
    assert not selector.matches({"role": "worker", "zone": "c"})
    assert not selector.matches({"role": "worker", "skip": ""})
    assert not selector.matches({"zone": "a"})
    assert parse_label_selector("{}").matches({})


@given(selector_texts())
@settings(max_examples=500, suppress_health_check=list(HealthCheck))
def test_no_selector_string_is_read_as_a_label_selector(text: str) -> None:
    """A valid selector string is never a YAML mapping, so it never changes meaning."""
    try:
        parse_selector(text)
    except InvalidInput:
        return
    assert isinstance(read_label_selector(text), NotAMapping)


@given(st.text(max_size=300))
@settings(max_examples=500, suppress_health_check=list(HealthCheck))
def test_any_text_is_a_selector_a_non_mapping_or_a_label_selector_error(text: str) -> None:
    try:
        found = read_label_selector(text)
    except LabelSelectorError as error:
        assert error.reason
        assert error.stage in ("decode", "strict", "selector")
        return
    if not isinstance(found, NotAMapping):
        parse_selector(str(found))  # what kumaco shows is always a valid selector string


def test_deep_nesting_and_bad_yaml_are_not_mappings() -> None:
    assert isinstance(read_label_selector("[" * 3000), NotAMapping)
    assert isinstance(read_label_selector("{" * 3000), NotAMapping)
    found = read_label_selector("matchLabels: {zone: a")
    assert isinstance(found, NotAMapping)
    assert "not valid YAML/JSON" in found.problem


def test_huge_literals_are_bounded() -> None:
    message = outcome("matchLabels: {zone: " + "a" * 3000 + "_}")["error"]
    assert len(message) < 1500
    assert message.isprintable()


# ---------------------------------------------------------------------------
# Through parse_window: what validate/windows/plan see


def window(selector: str) -> Window | InvalidWindow:
    data = {"startTime": "0 2 * * *", "duration": "1h", "nodeSelector": selector}
    return parse_window("kube-system", "kured-maintenance-x", data)


def test_window_shows_the_equivalent_selector_string() -> None:
    found = window("matchLabels: {zone: a}\nmatchExpressions: [{key: gpu, operator: Exists}]")
    assert isinstance(found, Window)
    assert found.selector_text == "gpu,zone=a"
    assert "nodes: gpu,zone=a" in found.describe()
    assert window("{}").selector_text == ""  # type: ignore[union-attr]


def test_window_selector_strings_stay_as_written() -> None:
    found = window("zone in (b,a),  rack")
    assert isinstance(found, Window)
    assert found.selector_text == "zone in (b,a),  rack"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("matchExpressions: [{key: zone, operator: in, values: [a]}]", "(case-sensitive)"),
        ("matchExpressions: [{key: zone, operator: In}]", "at least one value"),
        ("matchLabel: {zone: a}", "use only the fields matchLabels, matchExpressions"),
        ("matchLabels: {zone: yes}", 'quote it: "yes"'),
        ("matchLabels: {zone: a", "not valid YAML/JSON"),
    ],
)
def test_window_errors_name_the_key_the_reason_and_the_fix(text: str, says: str) -> None:
    found = window(text)
    assert isinstance(found, InvalidWindow)
    assert [e.key for e in found.errors] == ["nodeSelector"]
    assert says in found.errors[0].message
    assert found.errors[0].message.isprintable()


@given(st.text(max_size=200))
@settings(max_examples=300, suppress_health_check=list(HealthCheck))
def test_parse_window_never_raises_on_any_node_selector(text: str) -> None:
    assert isinstance(window(text), Window | InvalidWindow)


# ---------------------------------------------------------------------------
# Differential tests against apimachinery (hack/oracle, needs go)

OPERATORS = st.sampled_from(
    ["In", "NotIn", "Exists", "DoesNotExist", "In", "NotIn", "in", "Equals", "", "exists"]
)
SCALARS = st.one_of(
    label_values(valid_only=False),
    label_values(valid_only=False),
    st.integers(0, 99999),
    st.booleans(),
    st.none(),
)
KEYS = label_keys(valid_only=False)


@st.composite
def label_selector_docs(draw: st.DrawFn) -> tuple[str, str, int]:
    """A LabelSelector as YAML (block or flow) or JSON, as JSON, and how many matchLabels
    entries are bad."""
    doc: dict[str, Any] = {}
    if draw(st.booleans()):
        name = draw(st.sampled_from(["matchLabels", "matchlabels", "MATCHLABELS"]))
        doc[name] = draw(st.none() | st.dictionaries(KEYS, SCALARS, max_size=4))
    if draw(st.booleans()):
        name = draw(st.sampled_from(["matchExpressions", "matchexpressions"]))
        expression = st.fixed_dictionaries(
            {},
            optional={
                "key": KEYS,
                "operator": OPERATORS,
                "values": st.none() | st.lists(SCALARS, max_size=4),
            },
        )
        doc[name] = draw(st.none() | st.lists(expression | st.none(), max_size=4))
    if draw(st.integers(0, 9)) == 0:
        doc[draw(st.sampled_from(["matchLabel", "nodeSelector", "key"]))] = {}
    style = draw(st.sampled_from(["json", "block", "flow"]))
    if style == "json":
        text = json.dumps(doc)
    else:
        text = yaml.safe_dump(doc, default_flow_style=style == "flow", width=10**6)
    labels = next((v for k, v in doc.items() if k.lower() == "matchlabels"), None) or {}
    bad = sum(
        1 for k, v in labels.items() if "error" in outcome(json.dumps({"matchLabels": {k: v}}))
    )
    return text, json.dumps(doc), bad


def exact_message_expected(text: str, error: LabelSelectorError, bad_labels: int) -> bool:
    """Whether kumaco promises apimachinery's exact text: Go reports the first bad
    matchLabels entry in its random map order, and kumaco excerpts long or odd literals
    and counts errors beyond 8 (as it does for selector strings)."""
    return (
        bad_labels <= 1
        and text.isprintable()
        and len(text) <= 400
        and "more errors]" not in error.reason
    )


def assert_same(
    oracle: Oracle,
    text: str,
    bad_labels: int,
    labels: list[dict[str, str]],
) -> None:
    """kumaco and apimachinery agree on ``text``; where kumaco refuses an unquoted scalar
    ("strict"), Go must indeed not read that scalar as the string written."""
    theirs = oracle.label_selector(text, labels)
    try:
        selector = parse_label_selector(text)
    except LabelSelectorError as error:
        if error.stage == "strict":
            literal = error.literal
            assert literal, (text, error.reason)
            probe = oracle.label_selector(f"matchLabels: {{k: {literal}}}")
            assert probe.get("selector") != f"k={literal}", (text, literal, probe)
            assert f'"{literal}"' not in probe.get("error", ""), (text, literal, probe)
            return
        assert "error" in theirs, (text, error.reason, theirs)
        assert theirs["stage"] == error.stage, (text, error.reason, theirs)
        if error.stage == "selector" and exact_message_expected(text, error, bad_labels):
            assert error.reason == theirs["error"], text
        return
    assert "error" not in theirs, (text, str(selector), theirs)
    ours = {
        "selector": str(selector),
        "empty": selector.empty,
        "matches": [selector.matches(one) for one in labels],
    }
    assert ours == theirs, text


LABELS_FOR_ORACLE = [{}, {"zone": "a"}, {"zone": "a", "z": "b", "gpu": ""}, {"1": "x"}]


@pytest.mark.oracle
@pytest.mark.parametrize(
    "text", [t for t, _ in ACCEPTED] + [t for t, s, _ in REJECTED if s != "strict"]
)
def test_tables_agree_with_apimachinery(robfig_oracle: Oracle, text: str) -> None:
    assert_same(robfig_oracle, text, 1, LABELS_FOR_ORACLE)


@pytest.mark.oracle
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(label_selector_docs(), st.lists(label_sets(), max_size=5))
def test_random_label_selectors_agree_with_apimachinery(
    robfig_oracle: Oracle, doc: tuple[str, str, int], labels: list[dict[str, str]]
) -> None:
    text, as_json, bad_labels = doc
    assert_same(robfig_oracle, text, bad_labels, labels)
    assert_same(robfig_oracle, as_json, bad_labels, labels)


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("text", "go_reads"),
    [
        ("matchLabels: {a: yes}", "a=true"),  # go-yaml v2 reads yes as true; yaml.v3 keeps yes
        ("matchLabels: {a: 012}", "a=10"),  # an octal number
        ("matchLabels: {a: 1.0}", "a=1"),
        ("matchLabels: {a: b}\nmatchlabels: {c: d}", "a=b,c=d"),  # merged
    ],
)
def test_kumaco_refuses_what_go_rewrites(robfig_oracle: Oracle, text: str, go_reads: str) -> None:
    """The "strict" refusals are exactly where Go accepts text it reads differently."""
    assert robfig_oracle.label_selector(text)["selector"] == go_reads
    assert outcome(text)["stage"] == "strict"


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("text", "kured_reads"),
    [
        # gopkg.in/yaml.v3 matches lowercased Go field names, not the json tags: the
        # camelCase fields are unknown to it and silently dropped -> every node.
        ("matchLabels: {zone: a}", ""),
        ('{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}', ""),
        # the lowercase spelling is what kured's scheduler really reads
        ("matchlabels: {zone: a}", "zone=a"),
        ("matchexpressions: [{key: zone, operator: In, values: [a]}]", "zone in (a)"),
        ("", ""),
    ],
)
def test_what_kureds_scheduler_reads(robfig_oracle: Oracle, text: str, kured_reads: str) -> None:
    """kured v2's scheduler (its NewWindowFromConfigMap); kumaco reads the meant selector."""
    assert robfig_oracle.kured_selector(text) == {"selector": kured_reads}
    found = window(text)
    assert isinstance(found, Window)
    assert found.selector_text == robfig_oracle.label_selector(text or "{}")["selector"]


@pytest.mark.oracle
def test_kured_rejects_selector_strings_kumaco_keeps_them(robfig_oracle: Oracle) -> None:
    assert "error" in robfig_oracle.kured_selector("zone=a")
    assert window("zone=a").selector_text == "zone=a"  # type: ignore[union-attr]
