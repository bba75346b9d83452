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
:meth:`Selector.select` gives the same answer as filtering a
:class:`~kumaco.core.labels.index.LabelIndex` with ``matches`` but through set
operations on the index. No I/O, no clock, no ``kubernetes`` import.

Here: the lexer, the parser and :class:`Selector`. Key and value validation and
the bounding of messages are :mod:`kumaco.core.labels.syntax` (shared with
LabelSelectors), a requirement's operator, matching and ``String()`` are
:mod:`kumaco.core.labels.requirements`, the index is :mod:`kumaco.core.labels.index`.

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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kumaco.core.errors import InvalidInput, excerpt
from kumaco.core.golang.gostrconv import parse_int64
from kumaco.core.labels.index import LabelIndex
from kumaco.core.labels.requirements import NUMERIC_OPS, Operator, Requirement
from kumaco.core.labels.syntax import (
    MAX_LITERAL,
    aggregate,
    qualified_name_problems,
    quoted,
    value_errors,
)

__all__ = ["Selector", "parse_selector"]

# What the server lists after "expected:" when an operator is missing (binaryOperators).
_BINARY_OPERATORS_TEXT: Final = "in, notin, =, ==, !=, gt, lt"


def _found(text: str) -> str:
    """Render a token as the server's ``'%s'`` does, or as an excerpt if huge or odd."""
    if len(text) <= MAX_LITERAL and text.isprintable():
        return "'" + text + "'"
    return excerpt(text)


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
        return index.select(self.requirements)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __repr__(self) -> str:
        return f"parse_selector({str(self)!r})"


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
        problems = qualified_name_problems(key)
        if problems:
            raise _ParseError(f"<nil>: Invalid value: {quoted(key)}: {'; '.join(problems)}")
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


def _check_values(key: str, operator: Operator, values: tuple[str, ...]) -> None:
    """Raise the server's aggregated error if any value of a requirement is invalid."""
    errors: list[str] = []
    if operator in NUMERIC_OPS and parse_int64(values[0]) is None:
        errors.append(
            f"values[0]: Invalid value: {quoted(values[0])}: "
            "for 'Gt', 'Lt' operators, the value must be an integer"
        )
    errors += value_errors(key, values)
    if errors:
        raise _ParseError(aggregate(errors))


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
