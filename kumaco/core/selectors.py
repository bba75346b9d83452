r"""Kubernetes label selectors, parsed and evaluated exactly as the kube-apiserver does.

Contract
--------
:func:`parse_selector` takes the text a client would send as ``?labelSelector=`` on a
LIST and returns an immutable, hashable :class:`Selector`, or raises
:class:`kumaco.core.errors.InvalidInput` -- and nothing else -- for exactly the strings
the server answers with ``400 Bad Request``. The ``reason`` of that exception is the
server's own message, word for word, as long as every literal it quotes is at most
400 characters and the requirement has at most 8 value errors; beyond that the
literal is replaced by a bounded :func:`kumaco.core.errors.excerpt` and the surplus errors
are counted instead of listed, so a message stays short whatever the input. A token
holding a character that is not printable (a control or format character, a
non-ASCII space) is also shown through ``excerpt`` -- escaped -- where the server
would print it raw in its ``found '...'`` messages; values quoted with ``%q`` are
escaped by the server itself and shown identically.
:meth:`Selector.matches` answers what the server's ``Selector.Matches`` answers for a
label set, ``str(selector)`` is the server's ``Selector.String()`` (up to the order of
requirements that share a key, beyond 12 requirements), and
:meth:`Selector.select` gives the same answer as filtering a :class:`LabelIndex` with
``matches`` but through set operations on the index. No I/O, no clock, no
``kubernetes`` import.

Reproduced from k8s.io/apimachinery v0.36.3 (the library of kube-apiserver v1.36;
``pkg/labels/selector.go`` differs from the v0.37 development head only in log
calls): ``pkg/labels/selector.go`` (lexer, parser, ``NewRequirement``,
``Requirement.Matches``, ``String``), ``pkg/selection/operator.go``,
``pkg/api/validate/content/{kube,dns,errors}.go`` (``IsLabelKey``, the
``IsQualifiedName`` of old, and ``IsLabelValue``), ``pkg/util/validation/field/
{errors,path}.go`` and ``pkg/util/errors/errors.go`` (how the error text is
assembled), plus Go's ``strconv.ParseInt``, ``strconv.Quote`` (``%q``) and
``sort.Sort``. Server behaviours reproduced:

* Tokens: ``,`` ``(`` ``)`` ``!`` ``=`` ``==`` ``!=`` ``>`` ``<`` and identifiers; the
  words ``in``/``notin`` are operators only right after a key, anywhere else they
  are plain identifiers (``in in (in)`` is valid: key ``in``, value ``in``).
* An identifier is any run of characters other than space, tab, CR, LF and
  ``=!(),><``; so ``a||b``, ``a~b`` or ``café`` are one identifier each, later
  rejected by key/value validation. Other whitespace (form feed, NBSP...) is part of
  an identifier.
* Symbols are matched greedily two at a time at most: ``!==`` is ``!=`` then ``=``,
  ``=!`` is ``=`` then ``!``, ``>=`` is ``>`` then ``=`` (so ``a>=1`` is rejected).
* A NUL character ends the input when it starts a token (``"a \0 junk"`` selects like
  ``"a"``) but is silently dropped right after a token (``"a\0,b"`` is ``"a,b"``), as
  Go's lexer reads it as its end-of-input byte.
* Empty or whitespace-only text is the empty selector: it selects everything.
* ``key`` exists, ``!key`` does not exist; ``!key`` followed by anything but ``,`` or
  the end is an error about what follows (``!a=b``: found '=').
* ``=``, ``==`` and ``!=`` take exactly one value, which may be empty (``a=``,
  ``a=,b``); ``a=b=c`` and ``a=b c`` are rejected.
* ``in``/``notin`` need parentheses; values are de-duplicated and sorted; empty values
  are allowed and are produced by ``()``, a leading, doubled or trailing comma:
  ``in ()`` means ``in ("")``, ``in (a,)`` and ``in (,a)`` mean ``in ("",a)``.
* ``>``/``<`` take one value that must parse as a Go int64 *and* be a valid label
  value, i.e. ``[0-9]+`` up to 2**63-1 (``-1`` and ``+1`` are rejected); a label value
  matches when it parses as an int64 (``+5``, ``-3``, ``007`` do; ``1.5``, ``1e3``,
  ``""``, 2**63 do not) and compares strictly.
* ``!=`` and ``notin`` also match objects that lack the key; ``=``/``in``/``>``/``<``
  never do.
* Keys: optional prefix (a lowercase DNS-1123 subdomain of at most 253 bytes) and
  ``/``, then a name of at most 63 bytes matching
  ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]``; more than one ``/`` is its own error.
  Values: at most 63 bytes, empty or the same charset. Lengths are in UTF-8 bytes.
* The key is validated as soon as it is read, before the operator; then every value
  is validated and all value errors of that requirement are reported together.
* No limit on the number of requirements or of values; duplicates are kept
  (``a,a`` has two requirements) and nothing checks for contradictions.
* ``String()``: requirements sorted by key with Go's unstable ``sort.Sort`` (whose
  pdqsort order for equal keys among more than 12 requirements is reproduced), joined
  by ``,`` without spaces; ``=`` and ``==`` keep their spelling; sets are written
  ``k in (a,b)``; ``in ()`` prints as ``k in ()``.
* Error texts: see :class:`_Parser`; the top-level errors are bare, errors inside a
  requirement are prefixed ``unable to parse requirement: ``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.gostrconv import parse_int64, quote

__all__ = [
    "LabelIndex",
    "Operator",
    "Requirement",
    "Selector",
    "parse_selector",
]


class Operator(enum.StrEnum):
    """A requirement's operator, spelled as ``k8s.io/apimachinery/pkg/selection``."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_POSITIVE_SET_OPS: Final = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN})
_NEGATIVE_SET_OPS: Final = frozenset({Operator.NOT_EQUALS, Operator.NOT_IN})
_NUMERIC_OPS: Final = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})

# What the server lists after "expected:" when an operator is missing (binaryOperators).
_BINARY_OPERATORS_TEXT: Final = "in, notin, =, ==, !=, gt, lt"

# ---------------------------------------------------------------------------
# The bounding of quoted input in error messages (Go's %q: kumaco.core.gostrconv.quote)

_MAX_LITERAL: Final = 400
_MAX_REPORTED_ERRORS: Final = 8


def _quoted(text: str) -> str:
    """Render ``text`` as the server's ``%q`` does, or as a bounded excerpt if huge."""
    return quote(text) if len(text) <= _MAX_LITERAL else excerpt(text)


def _found(text: str) -> str:
    """Render a token as the server's ``'%s'`` does, or as an excerpt if huge or odd."""
    if len(text) <= _MAX_LITERAL and text.isprintable():
        return "'" + text + "'"
    return excerpt(text)


# ---------------------------------------------------------------------------
# Key and value validation (content.IsLabelKey, content.IsLabelValue)

_NAME_MAX_BYTES: Final = 63
_VALUE_MAX_BYTES: Final = 63
_PREFIX_MAX_BYTES: Final = 253
_NAME_PATTERN: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_PATTERN: Final = "(" + _NAME_PATTERN + ")?"
_SUBDOMAIN_PATTERN: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_NAME_RE: Final = re.compile("[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN_RE: Final = re.compile(
    "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
)
_NAME_CHARSET: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_CHARSET: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_CHARSET: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def _regex_message(message: str, pattern: str, *examples: str) -> str:
    """Phrase a failed pattern the way the server does (examples, then the pattern)."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _byte_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_NAME_REGEX_MESSAGE: Final = _regex_message(
    _NAME_CHARSET, _NAME_PATTERN, "MyName", "my.name", "123-abc"
)
_VALUE_REGEX_MESSAGE: Final = _regex_message(
    _VALUE_CHARSET, _VALUE_PATTERN, "MyValue", "my_value", "12345"
)
_SUBDOMAIN_REGEX_MESSAGE: Final = _regex_message(
    _SUBDOMAIN_CHARSET, _SUBDOMAIN_PATTERN, "example.com"
)
_MANY_SLASHES_MESSAGE: Final = (
    "a valid label key "
    + _NAME_REGEX_MESSAGE
    + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)


def _key_problems(key: str) -> list[str]:
    """List what is wrong with ``key`` as a label key, in the server's words and order."""
    parts = key.split("/")
    if len(parts) > 2:
        return [_MANY_SLASHES_MESSAGE]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if _byte_length(prefix) > _PREFIX_MAX_BYTES:
                problems.append("prefix part " + _too_long(_PREFIX_MAX_BYTES))
            if _SUBDOMAIN_RE.fullmatch(prefix) is None:
                problems.append("prefix part " + _SUBDOMAIN_REGEX_MESSAGE)
    if not name:
        problems.append("name part must be non-empty")
    elif _byte_length(name) > _NAME_MAX_BYTES:
        problems.append("name part " + _too_long(_NAME_MAX_BYTES))
    if _NAME_RE.fullmatch(name) is None:
        problems.append("name part " + _NAME_REGEX_MESSAGE)
    return problems


def qualified_name_problems(text: str) -> list[str]:
    """What is wrong with ``text`` as a qualified name (a label key, a condition type).

    In the API server's words; empty if nothing is.
    """
    return _key_problems(text)


def _value_problems(value: str) -> list[str]:
    """List what is wrong with ``value`` as a label value, in the server's words."""
    problems: list[str] = []
    if _byte_length(value) > _VALUE_MAX_BYTES:
        problems.append(_too_long(_VALUE_MAX_BYTES))
    if value and _NAME_RE.fullmatch(value) is None:
        problems.append(_VALUE_REGEX_MESSAGE)
    return problems


# ---------------------------------------------------------------------------
# Requirements and selectors


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key operator values`` condition of a selector, as the server holds it.

    ``values`` is sorted and de-duplicated (empty for exists/does-not-exist, one
    item for ``=``, ``==``, ``!=``, ``>``, ``<``). Built by :func:`parse_selector`.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    _value_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _bound: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_value_set", frozenset(self.values))
        bound = parse_int64(self.values[0]) if len(self.values) == 1 else None
        object.__setattr__(self, "_bound", bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (``Requirement.Matches``)."""
        operator = self.operator
        if operator is Operator.EXISTS:
            return self.key in labels
        if operator is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels:
            return operator in _NEGATIVE_SET_OPS
        value = labels[self.key]
        if operator in _POSITIVE_SET_OPS:
            return value in self._value_set
        if operator in _NEGATIVE_SET_OPS:
            return value not in self._value_set
        return _compares(value, operator, self._bound)

    def __str__(self) -> str:
        operator = self.operator
        if operator is Operator.EXISTS:
            return self.key
        if operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if operator is Operator.IN or operator is Operator.NOT_IN:
            return f"{self.key} {operator.value} ({','.join(self.values)})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(operator, operator.value)
        return self.key + symbol + ",".join(self.values)


def _compares(value: str, operator: Operator, bound: int | None) -> bool:
    number = parse_int64(value)
    if number is None or bound is None:
        return False
    return number > bound if operator is Operator.GREATER_THAN else number < bound


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label selector: the AND of its requirements, sorted as the server does."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing, so it selects every object."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with ``labels`` is selected (``Selector.Matches``)."""
        return all(requirement.matches(labels) for requirement in self.requirements)

    def select(self, index: LabelIndex) -> frozenset[str]:
        """Return the names of the objects in ``index`` that this selector matches.

        Same answer as ``{n for n in index.names() if self.matches(index.labels(n))}``,
        computed by intersecting and subtracting the index's posting sets: the cost
        grows with the sizes of the sets involved, not with the number of objects.
        Answers are memoised in the index until its labels change.
        """
        if not self.requirements:
            return index._everything()
        memo = index._selected
        found = memo.get(self)
        if found is None:
            found = memo[self] = self._select(index)
        return found

    def _select(self, index: LabelIndex) -> frozenset[str]:
        wanted: list[frozenset[str]] = []
        unwanted: list[_NameSet] = []
        for requirement in self.requirements:
            key, operator = requirement.key, requirement.operator
            if operator is Operator.EXISTS:
                wanted.append(index._frozen(key, None))
            elif operator is Operator.DOES_NOT_EXIST:
                unwanted.extend(index._by_value.get(key, {}).values())
            elif operator in _NUMERIC_OPS:
                wanted.append(index._numeric(key, operator, requirement._bound))
            elif operator in _POSITIVE_SET_OPS:
                wanted.append(index._having(key, requirement.values))
            else:
                unwanted.extend(index._buckets(key, requirement.values))
        if wanted:
            wanted.sort(key=len)
            result = wanted[0].intersection(*wanted[1:]) if len(wanted) > 1 else wanted[0]
        else:
            result = index._everything()
        if result and unwanted:
            result = result.difference(*unwanted)
        return result

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __repr__(self) -> str:
        return f"parse_selector({str(self)!r})"


_NameSet = set[str]
_NO_NAMES: Final[_NameSet] = set()
_NOBODY: Final[frozenset[str]] = frozenset()


class LabelIndex:
    """Inverted index over many objects' labels, for bulk selection.

    It maps key -> value -> names, so that :meth:`Selector.select` works by set
    operations instead of an O(objects) scan per selector; the names having a key
    at all are the union of its values' sets, made when a selector asks (a set per
    key of every node would be a third of the index's memory at 50,000 nodes).
    Frozen copies of the posting sets it hands out are cached until the key
    changes, so a burst of selections between updates copies each set at most
    once. It keeps each object's labels: a read-only mapping
    (``MappingProxyType``, as node views hold them) as given, anything else
    copied. It is not thread-safe.
    """

    __slots__ = ("_all", "_by_value", "_frozen_by_key", "_labels", "_names", "_selected")

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}
        self._names: _NameSet = set()
        self._by_value: dict[str, dict[str, _NameSet]] = {}
        self._all: frozenset[str] | None = None
        self._frozen_by_key: dict[str, dict[str | None, frozenset[str]]] = {}
        self._selected: dict[Selector, frozenset[str]] = {}

    def set(self, name: str, labels: Mapping[str, str]) -> None:
        """Index the object ``name`` with ``labels`` (see the class), replacing what it had."""
        self.discard(name)
        own = labels if isinstance(labels, MappingProxyType) else dict(labels)
        self._labels[name] = own
        self._selected.clear()
        self._names.add(name)
        self._all = None
        for key, value in own.items():
            self._by_value.setdefault(key, {}).setdefault(value, set()).add(name)
            self._frozen_by_key.pop(key, None)

    def discard(self, name: str) -> None:
        """Forget the object ``name``; nothing happens if it is not indexed."""
        own = self._labels.pop(name, None)
        if own is None:
            return
        self._selected.clear()
        self._names.discard(name)
        self._all = None
        for key, value in own.items():
            self._frozen_by_key.pop(key, None)
            buckets = self._by_value[key]
            bucket = buckets[value]
            bucket.discard(name)
            if not bucket:
                del buckets[value]
                if not buckets:
                    del self._by_value[key]

    def names(self) -> frozenset[str]:
        """Return the names of all indexed objects."""
        return self._everything()

    def labels(self, name: str) -> Mapping[str, str]:
        """Return the labels indexed for ``name``, read-only; KeyError if not indexed."""
        own = self._labels[name]
        return own if isinstance(own, MappingProxyType) else MappingProxyType(own)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything())

    def _everything(self) -> frozenset[str]:
        if self._all is None:
            self._all = frozenset(self._names)
        return self._all

    def _frozen(self, key: str, value: str | None) -> frozenset[str]:
        """Names having label ``key`` (with ``value`` unless None), as a cached frozenset."""
        cached = self._frozen_by_key.setdefault(key, {})
        found = cached.get(value)
        if found is None:
            if value is None:
                found = _NOBODY.union(*self._by_value.get(key, {}).values())
            else:
                found = frozenset(self._by_value.get(key, {}).get(value, _NO_NAMES))
            cached[value] = found
        return found

    def _buckets(self, key: str, values: tuple[str, ...]) -> list[_NameSet]:
        """Collect the posting sets of ``key`` for those of ``values`` that occur."""
        buckets = self._by_value.get(key)
        if not buckets:
            return []
        return [buckets[value] for value in values if value in buckets]

    def _having(self, key: str, values: tuple[str, ...]) -> frozenset[str]:
        """Names whose label ``key`` has one of ``values``."""
        if len(values) == 1:
            return self._frozen(key, values[0])
        return _NOBODY.union(*self._buckets(key, values))

    def _numeric(self, key: str, operator: Operator, bound: int | None) -> frozenset[str]:
        """Names whose label ``key`` parses as an int64 beyond ``bound``."""
        buckets = self._by_value.get(key)
        if not buckets or bound is None:
            return _NOBODY
        return _NOBODY.union(
            *(names for value, names in buckets.items() if _compares(value, operator, bound))
        )


# ---------------------------------------------------------------------------
# Lexer

_IDENT: Final = "identifier"
_END: Final = "end of string"
_SYMBOLS: Final = frozenset("=!(),><")
_PAIRS: Final = frozenset({"==", "!="})
_BLANKS: Final = re.compile(r"[ \t\r\n]*")
_WORD: Final = re.compile(r"[^ \t\r\n=!(),><\x00]+")


def _tokens(text: str) -> list[tuple[str, str]]:
    """Split ``text`` into ``(kind, literal)`` tokens ending with one end token.

    ``kind`` is the symbol itself for ``= == != ! ( ) , > <``, else _IDENT (the words
    ``in``/``notin`` included: the parser tells operators from values) or _END.
    """
    found: list[tuple[str, str]] = []
    position, length = 0, len(text)
    while True:
        match = _BLANKS.match(text, position)
        position = match.end() if match else position
        if position >= length or text[position] == "\0":
            found.append((_END, ""))
            return found
        char = text[position]
        if char in _SYMBOLS:
            pair = text[position : position + 2]
            literal = pair if pair in _PAIRS else char
            kind = literal
        else:
            word = _WORD.match(text, position)
            literal = word.group() if word else char
            kind = _IDENT
        position += len(literal)
        if position < length and text[position] == "\0":
            position += 1  # Go's lexer stops a token at a NUL byte and swallows it
        found.append((kind, literal))


# ---------------------------------------------------------------------------
# Parser


class _ParseError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Parser:
    """Recursive-descent parser over the token list, one method per grammar rule.

    Error texts (``X`` is the offending token, ``''`` at the end of input); the first
    three are bare, the rest follow ``unable to parse requirement: ``:

    * ``found 'X', expected: !, identifier, or 'end of string'`` (selector start)
    * ``found 'X', expected: identifier after ','``
    * ``found 'X', expected: ',' or 'end of string'`` (after a requirement)
    * ``found 'X', expected: identifier`` (after ``!``, or as an exact value)
    * ``<nil>: Invalid value: "KEY": PROBLEMS`` (problems joined by ``; ``)
    * ``found 'X', expected: in, notin, =, ==, !=, gt, lt``
    * ``found 'X' expected: '('`` (sic, no comma)
    * ``found 'X', expected: ',', ')' or identifier`` (right after ``(``)
    * ``found 'X', expected: ',' or ')'`` (after a value in a set)
    * ``found 'X', expected: ',', or identifier`` (after a comma in a set)
    * ``values[0]: Invalid value: "V": for 'Gt', 'Lt' operators, the value must be an
      integer`` and ``values[I][KEY]: Invalid value: "V": PROBLEMS``; several of these
      are listed as ``[E1, E2]``.
    """

    def __init__(self, text: str) -> None:
        self._items = _tokens(text)
        self._next = 0

    def _peek(self) -> tuple[str, str]:
        return self._items[self._next]

    def _take(self) -> tuple[str, str]:
        item = self._items[self._next]
        self._next += 1
        return item

    def selector(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        kind, literal = self._peek()
        if kind == _END:
            return requirements
        if kind not in (_IDENT, "!"):
            raise _ParseError(
                f"found {_found(literal)}, expected: !, identifier, or 'end of string'"
            )
        while True:
            try:
                requirements.append(self._requirement())
            except _ParseError as error:
                raise _ParseError("unable to parse requirement: " + error.message) from None
            kind, literal = self._take()
            if kind == _END:
                return requirements
            if kind != ",":
                raise _ParseError(f"found {_found(literal)}, expected: ',' or 'end of string'")
            kind, literal = self._peek()
            if kind not in (_IDENT, "!"):
                raise _ParseError(f"found {_found(literal)}, expected: identifier after ','")

    def _requirement(self) -> Requirement:
        kind, key = self._take()
        negated = kind == "!"
        if negated:
            kind, key = self._take()
        if kind != _IDENT:
            raise _ParseError(f"found {_found(key)}, expected: identifier")
        problems = _key_problems(key)
        if problems:
            raise _ParseError(f"<nil>: Invalid value: {_quoted(key)}: {'; '.join(problems)}")
        if negated:
            return Requirement(key, Operator.DOES_NOT_EXIST)
        if self._peek()[0] in (_END, ","):
            return Requirement(key, Operator.EXISTS)
        operator = self._operator()
        if operator is Operator.IN or operator is Operator.NOT_IN:
            values = self._value_set()
        else:
            values = {self._exact_value()}
        ordered = tuple(sorted(values))
        _check_values(key, operator, ordered)
        return Requirement(key, operator, ordered)

    def _operator(self) -> Operator:
        kind, literal = self._take()
        if kind == _IDENT and literal == "in":
            return Operator.IN
        if kind == _IDENT and literal == "notin":
            return Operator.NOT_IN
        operator = _OPERATOR_SYMBOLS.get(kind)
        if operator is None:
            raise _ParseError(f"found {_found(literal)}, expected: {_BINARY_OPERATORS_TEXT}")
        return operator

    def _value_set(self) -> set[str]:
        kind, literal = self._take()
        if kind != "(":
            raise _ParseError(f"found {_found(literal)} expected: '('")
        kind, literal = self._peek()
        if kind == ")":
            self._take()
            return {""}
        if kind not in (_IDENT, ","):
            raise _ParseError(f"found {_found(literal)}, expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            kind, literal = self._take()
            if kind == _IDENT:
                values.add(literal)
                after, shown = self._peek()
                if after == ")":
                    break
                if after != ",":
                    raise _ParseError(f"found {_found(shown)}, expected: ',' or ')'")
            elif kind == ",":
                # A comma with nothing before it, after it or next to another comma
                # stands for an empty value.
                after = self._peek()[0]
                if not values or after in (",", ")"):
                    values.add("")
                if after == ")":
                    break
            else:
                raise _ParseError(f"found {_found(literal)}, expected: ',', or identifier")
        self._take()  # the closing parenthesis seen above
        return values

    def _exact_value(self) -> str:
        if self._peek()[0] in (_END, ","):
            return ""
        kind, literal = self._take()
        if kind != _IDENT:
            raise _ParseError(f"found {_found(literal)}, expected: identifier")
        return literal


_OPERATOR_SYMBOLS: Final = {
    "=": Operator.EQUALS,
    "==": Operator.DOUBLE_EQUALS,
    "!=": Operator.NOT_EQUALS,
    ">": Operator.GREATER_THAN,
    "<": Operator.LESS_THAN,
}


def value_errors(key_text: str, values: Sequence[str]) -> list[str]:
    """Apimachinery's message for each invalid label value of a requirement on ``key_text``."""
    errors = []
    for position, value in enumerate(values):
        problems = _value_problems(value)
        if problems:
            errors.append(
                f"values[{position}][{key_text}]: Invalid value: {_quoted(value)}: "
                + "; ".join(problems)
            )
    return errors


def _check_values(key: str, operator: Operator, values: tuple[str, ...]) -> None:
    """Raise the server's aggregated error if any value of a requirement is invalid."""
    errors: list[str] = []
    if operator in _NUMERIC_OPS and parse_int64(values[0]) is None:
        errors.append(
            f"values[0]: Invalid value: {_quoted(values[0])}: "
            "for 'Gt', 'Lt' operators, the value must be an integer"
        )
    errors += value_errors(key, values)
    if not errors:
        return
    if len(errors) == 1:
        raise _ParseError(errors[0])
    if len(errors) > _MAX_REPORTED_ERRORS:
        hidden = len(errors) - _MAX_REPORTED_ERRORS
        errors = [*errors[:_MAX_REPORTED_ERRORS], f"and {hidden} more errors"]
    raise _ParseError("[" + ", ".join(errors) + "]")


# ---------------------------------------------------------------------------
# Entry point


def parse_selector(text: str) -> Selector:
    """Parse a label selector as the kube-apiserver parses ``?labelSelector=``.

    Raises :class:`InvalidInput` with the server's message for any text the server
    rejects, and nothing else.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"a label selector must be a string, not {type(text).__name__}")
    try:
        requirements = _Parser(text).selector()
    except _ParseError as error:
        raise InvalidInput(error.message) from None
    # Sorted by key, as the server sorts them. Go's sort.Sort is not stable above 12
    # requirements, so where several share a key their order in ``str()`` may differ
    # from the server's ``String()``; the selector's meaning never does.
    requirements.sort(key=lambda requirement: requirement.key)
    return Selector(tuple(requirements))
