r"""A window's ``nodeSelector`` written as a metav1.LabelSelector (YAML or JSON).

Contract
--------
:func:`read_label_selector` takes a ``nodeSelector`` value and returns either a
:class:`kumaco.core.labels.selectors.Selector` (the value is a YAML/JSON *mapping*, read as a
``metav1.LabelSelector``), a :class:`NotAMapping` (the value is not a mapping: the
caller reads it as a selector string, exactly as before), or raises
:class:`LabelSelectorError` -- and nothing else -- for a mapping kumaco does not
accept. No I/O, no clock, no ``kubernetes`` import; the text is at most what the
caller bounds it to (windows: 4096 characters).

When a value is a LabelSelector
    When PyYAML composes it (``SafeLoader``, YAML 1.1, JSON being YAML) into a mapping
    node. A YAML mapping needs a ``:``, ``{`` or ``?``, and no label key, value or
    operator of a selector string may contain them, so no valid selector string is
    ever a mapping: a plain selector string never changes meaning. (``null``, ``~``
    and ``[]`` are not mappings: they stay selector strings, ``null`` being the key
    ``null`` exists; kured's scheduler reads ``null`` as "every node".)

Meaning: ``metav1.LabelSelectorAsSelector`` of k8s.io/apimachinery v0.36.3
(``pkg/apis/meta/v1/helpers.go``, ``pkg/labels/selector.go`` ``NewRequirement``):

* ``matchLabels`` (each ``k: v`` is ``k=v``) and ``matchExpressions`` (``key``,
  ``operator``, ``values``) are ANDed; operators ``In``, ``NotIn``, ``Exists``,
  ``DoesNotExist``, case-sensitive; ``In``/``NotIn`` need at least one value,
  ``Exists``/``DoesNotExist`` none; another operator is an error.
* Keys and values are validated as ``labels.NewRequirement`` does; the first failing
  requirement (``matchLabels`` before ``matchExpressions``, each in document order)
  is reported with apimachinery's exact text -- e.g. ``key: Invalid value: "a_":
  ...``, ``values: Invalid value: null: for 'in', 'notin' operators, values set can't
  be empty``, ``"in" is not a valid label selector operator`` -- bounded as
  :mod:`kumaco.core.labels.syntax` bounds selector messages (literals over 400 characters or
  unprintable ones are excerpted, more than 8 errors are counted). Go iterates
  ``matchLabels`` in random order, so with several bad ones it may name another.
* An empty LabelSelector (``{}``, or ``matchLabels``/``matchExpressions`` empty or
  null) selects every node, as ``LabelSelectorAsSelector`` does.
* ``str()`` of the result is ``Selector.String()``: requirements sorted by key,
  ``In``/``NotIn`` values sorted with duplicates kept (``z in (a,a,b)``).

Decoding is :mod:`kumaco.core.labels.node_selector_yaml`'s: as sigs.k8s.io/yaml
``UnmarshalStrict`` decodes, with kumaco's choices where readers disagree
(field names case-insensitive, unknown or repeated fields refused, ``null`` as
``""``, unquoted scalars only where every reader reads the same string). What is
not YAML, or nests deeper than PyYAML can compose, is :class:`NotAMapping`.

:class:`LabelSelectorError` carries ``stage`` (``"decode"``: a wrong shape Go rejects
too; ``"strict"``: one of kumaco's refusals in decoding that Go would accept;
``"selector"``: ``LabelSelectorAsSelector``'s error, in its words), ``where`` (e.g.
``matchExpressions[1]``), ``fix`` (what to write instead) and, for a refused unquoted
scalar, ``literal``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

import yaml

from kumaco.core.errors import excerpt
from kumaco.core.golang.gostrconv import quote
from kumaco.core.labels.node_selector_yaml import (
    EXAMPLE,
    LabelSelectorError,
    MatchExpression,
    MatchLabel,
    decode_fields,
)
from kumaco.core.labels.requirements import Operator, Requirement
from kumaco.core.labels.selectors import Selector
from kumaco.core.labels.syntax import (
    MAX_LITERAL,
    aggregate,
    qualified_name_problems,
    quoted,
    value_errors,
)

__all__ = [
    "LabelSelectorError",
    "NotAMapping",
    "parse_label_selector",
    "read_label_selector",
]

_OPERATORS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


@dataclass(frozen=True, slots=True)
class NotAMapping:
    """The value is not a YAML/JSON mapping; ``problem`` says why, if it has ``:``/``{``.

    ``problem`` is ``""`` when the value has none of ``:``, ``{``, ``?`` (it cannot be a
    mapping), else what YAML made of it ("not valid YAML: ...", "a YAML list").
    """

    problem: str


# ---------------------------------------------------------------------------
# NewRequirement's errors, in apimachinery's words


def _go_json_strings(values: list[str]) -> str:
    """``json.Marshal`` of a Go ``[]string`` (``null`` when empty, HTML characters escaped)."""
    if not values:
        return "null"
    text = json.dumps(values, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text if len(text) <= MAX_LITERAL and text.isprintable() else excerpt(text)


def _path_key(key: str) -> str:
    """A label key as Go prints it inside a field path (``values[0][KEY]``), bounded."""
    return key if len(key) <= MAX_LITERAL and key.isprintable() else excerpt(key)


def _requirement_errors(key: str, operator: Operator, values: list[str]) -> list[str]:
    errors: list[str] = []
    problems = qualified_name_problems(key)
    if problems:
        errors.append(f"key: Invalid value: {quoted(key)}: {'; '.join(problems)}")
    if operator in (Operator.IN, Operator.NOT_IN) and not values:
        errors.append(
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        errors.append(
            f"values: Invalid value: {_go_json_strings(values)}: "
            "values set must be empty for exists and does not exist"
        )
    errors += value_errors(_path_key(key), values)
    return list(dict.fromkeys(errors))  # ToAggregate drops repeated messages


def _fix(operator: Operator, errors: list[str]) -> str:
    first = errors[0]
    if first.startswith("key:"):
        return "use a valid label key (e.g. topology.kubernetes.io/zone)"
    if "values set can't be empty" in first:
        return "give In/NotIn at least one value, or use Exists/DoesNotExist"
    if "values set must be empty" in first:
        return "remove values, or use In/NotIn"
    return "use valid label values (up to 63 characters: letters, digits, '-', '_', '.')"


def _selector(labels: list[MatchLabel], expressions: list[MatchExpression]) -> Selector:
    """``LabelSelectorAsSelector`` of the decoded fields."""
    requirements: list[Requirement] = []
    for where, key, value in labels:
        errors = _requirement_errors(key, Operator.EQUALS, [value])
        if errors:
            raise LabelSelectorError(
                aggregate(errors), "selector", where, _fix(Operator.EQUALS, errors)
            )
        requirements.append(Requirement(key, Operator.EQUALS, (value,)))
    for where, key, operator_text, values in expressions:
        operator = _OPERATORS.get(operator_text)
        if operator is None:
            shown = quote(operator_text) if len(operator_text) <= MAX_LITERAL else None
            raise LabelSelectorError(
                f"{shown or excerpt(operator_text)} is not a valid label selector operator",
                "selector",
                where,
                "operator is missing: write In, NotIn, Exists or DoesNotExist"
                if operator_text == ""
                else "write In, NotIn, Exists or DoesNotExist (case-sensitive)",
            )
        errors = _requirement_errors(key, operator, values)
        if errors:
            raise LabelSelectorError(aggregate(errors), "selector", where, _fix(operator, errors))
        requirements.append(Requirement(key, operator, tuple(sorted(values))))
    requirements.sort(key=lambda requirement: requirement.key)  # stable, as Go's up to 12
    return Selector(tuple(requirements))


# ---------------------------------------------------------------------------
# Entry points

_MAPPING_MARKS: Final = frozenset(":{?")


def _compose(text: str) -> yaml.Node | NotAMapping:
    if not _MAPPING_MARKS.intersection(text):
        return NotAMapping("")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return NotAMapping(f"not valid YAML/JSON: {error.problem or error.context}{where}")
    except yaml.YAMLError as error:
        return NotAMapping(f"not valid YAML/JSON: {excerpt(str(error), 120)}")
    except (RecursionError, ValueError, UnicodeError):
        return NotAMapping("not YAML/JSON that kumaco can read (nested too deeply)")
    if not isinstance(node, yaml.MappingNode):
        kind = "a YAML list" if isinstance(node, yaml.SequenceNode) else "a YAML scalar"
        return NotAMapping("" if node is None else f"{kind}, not a map")
    return node


def read_label_selector(text: str) -> Selector | NotAMapping:
    """The LabelSelector ``text`` holds, or :class:`NotAMapping` (see the module contract).

    Raises :class:`LabelSelectorError`, and nothing else, for a mapping kumaco rejects.
    """
    node = _compose(text)
    if isinstance(node, NotAMapping):
        return node
    assert isinstance(node, yaml.MappingNode)
    return _selector(*decode_fields(node))


def parse_label_selector(text: str) -> Selector:
    """Like :func:`read_label_selector`, but a value that is not a mapping is an error too."""
    found = read_label_selector(text)
    if isinstance(found, NotAMapping):
        problem = found.problem or "it has no ':' or '{'"
        raise LabelSelectorError(
            f"a LabelSelector must be a YAML/JSON map: {problem}",
            "decode",
            "",
            f"write it as in '{EXAMPLE}'",
        )
    return found


def label_selector_of(value: object) -> Selector | None:
    """``LabelSelectorAsSelector`` of a decoded (JSON) ``metav1.LabelSelector``.

    For objects the API server serves (a PodDisruptionBudget's ``spec.selector``):
    ``None`` (absent or null) selects nothing and ``{}`` everything, as in Go. A value
    of the wrong shape, or one ``LabelSelectorAsSelector`` refuses, raises
    :class:`LabelSelectorError` (with its words, as :func:`read_label_selector`).
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise LabelSelectorError("a LabelSelector must be a map", "decode", "", "")
    raw_labels = value.get("matchLabels") or {}
    raw_expressions = value.get("matchExpressions") or []
    if not isinstance(raw_labels, dict) or not isinstance(raw_expressions, list):
        raise LabelSelectorError(
            "matchLabels must be a map and matchExpressions a list", "decode", "", ""
        )
    labels: list[MatchLabel] = []
    for key, label in raw_labels.items():
        if not isinstance(key, str) or not isinstance(label, str):
            raise LabelSelectorError("matchLabels must map strings to strings", "decode", "", "")
        labels.append((f"matchLabels[{key}]", key, label))
    expressions: list[MatchExpression] = []
    for i, item in enumerate(raw_expressions):
        where = f"matchExpressions[{i}]"
        fields = item if isinstance(item, dict) else {}
        key, operator, values = fields.get("key"), fields.get("operator"), fields.get("values")
        values = [] if values is None else values
        if (
            not isinstance(key, str)
            or not isinstance(operator, str)
            or not isinstance(values, list)
            or not all(isinstance(v, str) for v in values)
        ):
            raise LabelSelectorError("not a LabelSelectorRequirement", "decode", where, "")
        expressions.append((where, key, operator, values))
    return _selector(labels, expressions)
