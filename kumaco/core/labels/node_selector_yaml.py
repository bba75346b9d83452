"""The YAML of a LabelSelector ``nodeSelector``, decoded strictly into its fields.

Contract
--------
:func:`decode_fields` takes a composed YAML mapping node (PyYAML ``SafeLoader``,
YAML 1.1, JSON being YAML) and returns its ``matchLabels`` entries and
``matchExpressions`` items as plain strings, each with the path it was found at,
in document order; or raises :class:`LabelSelectorError` -- and nothing else --
for what kumaco does not accept (stage ``"decode"``: a shape Go rejects too;
``"strict"``: a refusal of kumaco's where Go would accept). What the fields mean
is :mod:`kumaco.core.labels.node_selector`'s, which also decides whether a value is a
LabelSelector at all. Pure: no I/O, no clock.

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
"""

from __future__ import annotations

import re
from typing import Final, Literal

import yaml

from kumaco.core.errors import InvalidInput, excerpt, one_line
from kumaco.core.labels.syntax import MAX_LITERAL

__all__ = [
    "EXAMPLE",
    "LabelSelectorError",
    "MatchExpression",
    "MatchLabel",
    "Stage",
    "decode_fields",
]

Stage = Literal["decode", "strict", "selector"]
#: ``(where, key, value)`` of one ``matchLabels`` entry.
MatchLabel = tuple[str, str, str]
#: ``(where, key, operator, values)`` of one ``matchExpressions`` item.
MatchExpression = tuple[str, str, str, list[str]]

_STR: Final = "tag:yaml.org,2002:str"
_MAP: Final = "tag:yaml.org,2002:map"
_SEQ: Final = "tag:yaml.org,2002:seq"
_NULL: Final = "tag:yaml.org,2002:null"

_MATCH_LABELS: Final = "matchLabels"
_MATCH_EXPRESSIONS: Final = "matchExpressions"
_SELECTOR_FIELDS: Final = (_MATCH_LABELS, _MATCH_EXPRESSIONS)
_EXPRESSION_FIELDS: Final = ("key", "operator", "values")
#: A LabelSelector to write instead, quoted in the fixes kumaco suggests.
EXAMPLE: Final = "matchLabels: {zone: a}"


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


#: How much of a key and a value a hint repeats (a label name's limit).
_SHOWN = 63


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
                fix = f"use only the fields {listed}"
                if not where and isinstance(value_node, yaml.ScalarNode) and value_node.value:
                    # "zone: a" is the map {zone: a}: a label written with ':' for '='.
                    label = one_line(f"{name[:_SHOWN]}={value_node.value[:_SHOWN]}")
                    fix = f"a selector uses = not ':': write {label!r} (or put it in matchLabels)"
                raise LabelSelectorError(
                    f"unknown field {_shown(name)} in {where or 'the LabelSelector'}{hint}",
                    "decode",
                    field_path,
                    fix,
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

    def present(
        self, node: yaml.Node, kind: type[yaml.CollectionNode], where: str, wanted: str
    ) -> bool:
        """False for a null (read as empty); True for an untagged ``kind``; else raises."""
        if self.is_null(node):
            return False
        if not isinstance(node, kind):
            raise _wrong_shape(where, node, wanted)
        if node.tag != (_MAP if kind is yaml.MappingNode else _SEQ):
            raise self._tagged(node, where)
        return True

    def match_labels(self, node: yaml.Node) -> list[MatchLabel]:
        """``(where, key, value)`` of each ``matchLabels`` entry, in document order."""
        wanted = "a map of label keys to values"
        if not self.present(node, yaml.MappingNode, _MATCH_LABELS, wanted):
            return []
        entries: list[MatchLabel] = []
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

    def match_expressions(self, node: yaml.Node) -> list[MatchExpression]:
        """``(where, key, operator, values)`` of each ``matchExpressions`` item."""
        wanted = "a list of {key, operator, values} maps"
        if not self.present(node, yaml.SequenceNode, _MATCH_EXPRESSIONS, wanted):
            return []
        items: list[MatchExpression] = []
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
        if node is None or not self.present(node, yaml.SequenceNode, where, "a list of strings"):
            return []
        return [self.string(item, f"{where}[{i}]") for i, item in enumerate(node.value)]


def _wrong_shape(where: str, node: yaml.Node, wanted: str) -> LabelSelectorError:
    if isinstance(node, yaml.ScalarNode):
        got = f"the scalar {_shown(node.value)}"
    else:
        got = "a map" if isinstance(node, yaml.MappingNode) else "a list"
    return LabelSelectorError(
        f"{where} must be {wanted}, got {got}", "decode", where, f"write it as in '{EXAMPLE}'"
    )


def decode_fields(node: yaml.MappingNode) -> tuple[list[MatchLabel], list[MatchExpression]]:
    """The ``matchLabels`` entries and ``matchExpressions`` items of a LabelSelector map."""
    reader = _Reader()
    fields = reader.fields(node, _SELECTOR_FIELDS, "")
    labels = reader.match_labels(fields[_MATCH_LABELS]) if _MATCH_LABELS in fields else []
    expressions = (
        reader.match_expressions(fields[_MATCH_EXPRESSIONS]) if _MATCH_EXPRESSIONS in fields else []
    )
    return labels, expressions
