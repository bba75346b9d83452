r"""A window's ``nodeSelector`` written as a metav1.LabelSelector (YAML or JSON).

Contract
--------
:func:`read_label_selector` takes a ``nodeSelector`` value and returns either a
:class:`kumaco.core.selectors.Selector` (the value is a YAML/JSON *mapping*, read as a
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
  :mod:`kumaco.core.selectors` bounds its messages (literals over 400 characters or
  unprintable ones are excerpted, more than 8 errors are counted). Go iterates
  ``matchLabels`` in random order, so with several bad ones it may name another.
* An empty LabelSelector (``{}``, or ``matchLabels``/``matchExpressions`` empty or
  null) selects every node, as ``LabelSelectorAsSelector`` does.
* ``str()`` of the result is ``Selector.String()``: requirements sorted by key,
  ``In``/``NotIn`` values sorted with duplicates kept (``z in (a,a,b)``).

Decoding, as sigs.k8s.io/yaml ``UnmarshalStrict`` (what the differential oracle
uses) decodes, with kumaco's choices where readers disagree:

* Field names match case-insensitively (ASCII): ``matchLabels`` and ``matchlabels``
  (the spelling kured's scheduler actually reads, through gopkg.in/yaml.v3) both
  work. An unknown field is an error (``matchLabel:`` would otherwise silently select
  every node), and so is a key given twice. Two spellings of one field
  (``matchLabels`` and ``matchlabels``) are an error too, where Go merges them.
* ``null`` anywhere a string is expected is ``""``, as in Go (a ``matchLabels``
  value left empty means the label's value is empty; a ``matchExpressions`` item
  ``null`` has no operator).
* An unquoted scalar is taken as written when every reader agrees it is that
  string: plain strings, decimal integers of at most 18 digits, ``true``,
  ``false``. Other unquoted non-strings (``yes``, ``on``, ``y``, ``1.0``, ``012``,
  ``0x1F``, ``1e3``, ``1_000``, ``+1``, dates...) are an error asking to quote them:
  sigs.k8s.io/yaml would turn ``yes`` into ``true`` and ``012`` into ``10``, kured's
  yaml.v3 keeps ``yes`` and ``012``. YAML tags other than the default ones are
  errors. Anchors and aliases are followed.
* What is not YAML, or nests deeper than PyYAML can compose, is :class:`NotAMapping`.

:class:`LabelSelectorError` carries ``stage`` (``"decode"``: a wrong shape Go rejects
too; ``"strict"``: one of kumaco's refusals above that Go would accept;
``"selector"``: ``LabelSelectorAsSelector``'s error, in its words), ``where`` (e.g.
``matchExpressions[1]``), ``fix`` (what to write instead) and, for a refused unquoted
scalar, ``literal``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal

import yaml

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.gostrconv import quote
from kumaco.core.labelrequirements import Operator, Requirement
from kumaco.core.labelsyntax import (
    MAX_LITERAL,
    aggregate,
    qualified_name_problems,
    quoted,
    value_errors,
)
from kumaco.core.selectors import Selector

__all__ = [
    "LabelSelectorError",
    "NotAMapping",
    "parse_label_selector",
    "read_label_selector",
]

Stage = Literal["decode", "strict", "selector"]

_STR: Final = "tag:yaml.org,2002:str"
_MAP: Final = "tag:yaml.org,2002:map"
_SEQ: Final = "tag:yaml.org,2002:seq"
_NULL: Final = "tag:yaml.org,2002:null"

_MATCH_LABELS: Final = "matchLabels"
_MATCH_EXPRESSIONS: Final = "matchExpressions"
_SELECTOR_FIELDS: Final = (_MATCH_LABELS, _MATCH_EXPRESSIONS)
_EXPRESSION_FIELDS: Final = ("key", "operator", "values")
_OPERATORS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}
_EXAMPLE: Final = "matchLabels: {zone: a}"


class LabelSelectorError(InvalidInput):
    """A LabelSelector kumaco does not accept: ``reason``, and where and how to fix it."""

    def __init__(
        self, reason: str, stage: Stage, where: str = "", fix: str = "", literal: str = ""
    ) -> None:
        super().__init__(reason)
        self.stage: Stage = stage
        self.where = where
        self.fix = fix
        #: For a refused unquoted scalar, the scalar as written.
        self.literal = literal


@dataclass(frozen=True, slots=True)
class NotAMapping:
    """The value is not a YAML/JSON mapping; ``problem`` says why, if it has ``:``/``{``.

    ``problem`` is ``""`` when the value has none of ``:``, ``{``, ``?`` (it cannot be a
    mapping), else what YAML made of it ("not valid YAML: ...", "a YAML list").
    """

    problem: str


# ---------------------------------------------------------------------------
# Scalars: what every reader agrees a plain scalar means

_DECIMAL: Final = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
# go-yaml v2 (sigs.k8s.io/yaml) words that resolve to a boolean, null, float or merge key.
_GO_YAML_WORDS: Final = frozenset(
    [
        *("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"),
        *("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"),
        *("~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", "<<"),
        *(".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"),
    ]
)
# Anything go-yaml v2 may read as a number or a date starts with a sign, digit or dot and
# looks like one of these (a superset of its rules: kumaco asks to quote, never guesses).
_NUMBERISH: Final = re.compile(
    r"[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?0[xXoObB][0-9a-fA-F_]*"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"
)
_NULL_WORDS: Final = frozenset({"", "~", "null", "Null", "NULL"})


def _kind(tag: str) -> str:
    return {
        "tag:yaml.org,2002:bool": "a boolean",
        "tag:yaml.org,2002:int": "a number",
        "tag:yaml.org,2002:float": "a number",
        "tag:yaml.org,2002:timestamp": "a date",
        _NULL: "null",
    }.get(tag, "not a string")


def _kind_in_go_yaml(text: str) -> str:
    if text in _GO_YAML_WORDS:
        return "a boolean" if text[0] in "yYnN" else "a special value"
    return "a number or a date"


def _shown(text: str) -> str:
    return excerpt(text)


class _Reader:
    """Turns the composed YAML nodes into requirements (see the module contract)."""

    def __init__(self) -> None:
        self._resolver = yaml.resolver.Resolver()  # the one SafeLoader uses

    def _implicit_tag(self, text: str) -> str:
        tag: str = self._resolver.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, text, (True, False)
        )
        return tag

    def string(self, node: yaml.Node, where: str) -> str:
        """A node that must hold a string (or null, read as "")."""
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            kind = "a map" if isinstance(node, yaml.MappingNode) else "a list"
            raise LabelSelectorError(
                f"{where} must be a string, got {kind}",
                "decode",
                where,
                "write one string (quote it if in doubt)",
            )
        assert isinstance(node, yaml.ScalarNode)
        text: str = node.value
        if node.style is not None:  # quoted, literal or folded: a string unless tagged
            if node.tag != _STR:
                raise self._tagged(node, where)
            return text
        implicit = self._implicit_tag(text)
        if node.tag not in (implicit, _STR):
            raise self._tagged(node, where)
        if node.tag == _STR and implicit != _STR:
            return text  # an explicit !!str: a string for every reader
        if text in _NULL_WORDS:
            return ""
        if _DECIMAL.fullmatch(text) or text in ("true", "false"):
            return text
        if implicit != _STR or text in _GO_YAML_WORDS or _NUMBERISH.fullmatch(text):
            kind = _kind(implicit) if implicit != _STR else _kind_in_go_yaml(text)
            raise LabelSelectorError(
                f"{where}: {_shown(text)} is read by YAML as {kind}, not as a string; "
                "YAML readers disagree on what string it would be",
                "strict",
                where,
                f'quote it: "{text}"' if len(text) <= MAX_LITERAL else "quote it",
                literal=text,
            )
        return text

    def _tagged(self, node: yaml.Node, where: str) -> LabelSelectorError:
        return LabelSelectorError(
            f"{where} has the YAML tag {_shown(node.tag)}; only plain strings, maps and lists "
            "are read",
            "strict",
            where,
            "remove the tag",
        )

    def fields(
        self, node: yaml.MappingNode, known: tuple[str, ...], where: str
    ) -> dict[str, yaml.Node]:
        """The fields of a struct-like map, names matched case-insensitively (ASCII)."""
        if node.tag != _MAP:
            raise self._tagged(node, where or "the LabelSelector")
        found: dict[str, yaml.Node] = {}
        spelled: dict[str, str] = {}
        listed = ", ".join(known)
        for key_node, value_node in node.value:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            field_path = f"{where}.{name}" if where and name is not None else (name or where)
            if not isinstance(name, str):
                raise LabelSelectorError(
                    f"{where or 'the LabelSelector'} has a key that is not a string",
                    "decode",
                    where,
                    f"use only the fields {listed}",
                )
            match = next((k for k in known if name.isascii() and name.lower() == k.lower()), None)
            if match is None:
                hint = " (a selector string goes directly in nodeSelector)" if not where else ""
                raise LabelSelectorError(
                    f"unknown field {_shown(name)} in {where or 'the LabelSelector'}{hint}",
                    "decode",
                    field_path,
                    f"use only the fields {listed}",
                )
            if match in found:
                same = spelled[match] == name
                raise LabelSelectorError(
                    f"{where or 'the LabelSelector'} has the field {match} twice"
                    + ("" if same else f" (as {spelled[match]} and {name})"),
                    "decode" if same else "strict",
                    field_path,
                    f"give {match} once",
                )
            found[match] = value_node
            spelled[match] = name
        return found

    def is_null(self, node: yaml.Node) -> bool:
        return (
            isinstance(node, yaml.ScalarNode)
            and node.style is None
            and node.tag == _NULL
            and node.value in _NULL_WORDS
        )

    def match_labels(self, node: yaml.Node) -> list[tuple[str, str, str]]:
        """``(where, key, value)`` of each ``matchLabels`` entry, in document order."""
        if self.is_null(node):
            return []
        if not isinstance(node, yaml.MappingNode):
            raise _wrong_shape(_MATCH_LABELS, node, "a map of label keys to values")
        if node.tag != _MAP:
            raise self._tagged(node, _MATCH_LABELS)
        entries: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        written: set[tuple[str, str]] = set()
        for key_node, value_node in node.value:
            if self.is_null(key_node):
                raise LabelSelectorError(
                    f"{_MATCH_LABELS} has an empty (null) label key",
                    "decode",
                    _MATCH_LABELS,
                    "give every label a key",
                )
            key = self.string(key_node, f"a key of {_MATCH_LABELS}")
            where = f"{_MATCH_LABELS}[{key}]"
            spelling = (key_node.tag, key_node.value)
            if key in seen:
                raise LabelSelectorError(
                    f"{_MATCH_LABELS} has the label key {_shown(key)} twice",
                    # The same YAML key twice is an error for Go too; two spellings of one
                    # string (1 and "1") are merged by Go, in no fixed order.
                    "decode" if spelling in written else "strict",
                    where,
                    "give each label key once",
                )
            seen.add(key)
            written.add(spelling)
            entries.append((where, key, self.string(value_node, where)))
        return entries

    def match_expressions(self, node: yaml.Node) -> list[tuple[str, str, str, list[str]]]:
        """``(where, key, operator, values)`` of each ``matchExpressions`` item."""
        if self.is_null(node):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise _wrong_shape(_MATCH_EXPRESSIONS, node, "a list of {key, operator, values} maps")
        if node.tag != _SEQ:
            raise self._tagged(node, _MATCH_EXPRESSIONS)
        items: list[tuple[str, str, str, list[str]]] = []
        for index, item in enumerate(node.value):
            where = f"{_MATCH_EXPRESSIONS}[{index}]"
            if self.is_null(item):
                items.append((where, "", "", []))
                continue
            if not isinstance(item, yaml.MappingNode):
                raise _wrong_shape(where, item, "a map with key, operator and values")
            fields = self.fields(item, _EXPRESSION_FIELDS, where)
            key = self.string(fields["key"], f"{where}.key") if "key" in fields else ""
            operator = (
                self.string(fields["operator"], f"{where}.operator") if "operator" in fields else ""
            )
            values = self.values(fields.get("values"), f"{where}.values")
            items.append((where, key, operator, values))
        return items

    def values(self, node: yaml.Node | None, where: str) -> list[str]:
        if node is None or self.is_null(node):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise _wrong_shape(where, node, "a list of strings")
        if node.tag != _SEQ:
            raise self._tagged(node, where)
        return [self.string(item, f"{where}[{i}]") for i, item in enumerate(node.value)]


def _wrong_shape(where: str, node: yaml.Node, wanted: str) -> LabelSelectorError:
    if isinstance(node, yaml.ScalarNode):
        got = f"the scalar {_shown(node.value)}"
    else:
        got = "a map" if isinstance(node, yaml.MappingNode) else "a list"
    return LabelSelectorError(
        f"{where} must be {wanted}, got {got}", "decode", where, f"write it as in '{_EXAMPLE}'"
    )


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


def _selector(
    labels: list[tuple[str, str, str]], expressions: list[tuple[str, str, str, list[str]]]
) -> Selector:
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
    reader = _Reader()
    assert isinstance(node, yaml.MappingNode)
    fields = reader.fields(node, _SELECTOR_FIELDS, "")
    labels = reader.match_labels(fields[_MATCH_LABELS]) if _MATCH_LABELS in fields else []
    expressions = (
        reader.match_expressions(fields[_MATCH_EXPRESSIONS]) if _MATCH_EXPRESSIONS in fields else []
    )
    return _selector(labels, expressions)


def parse_label_selector(text: str) -> Selector:
    """Like :func:`read_label_selector`, but a value that is not a mapping is an error too."""
    found = read_label_selector(text)
    if isinstance(found, NotAMapping):
        problem = found.problem or "it has no ':' or '{'"
        raise LabelSelectorError(
            f"a LabelSelector must be a YAML/JSON map: {problem}",
            "decode",
            "",
            f"write it as in '{_EXAMPLE}'",
        )
    return found
