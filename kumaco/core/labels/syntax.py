"""Label keys and values as the kube-apiserver validates them, and its error messages.

Contract
--------
:func:`qualified_name_problems` and :func:`value_errors` say what is wrong with a
label key (a qualified name: optional DNS-subdomain prefix and ``/``, then a name)
or with a requirement's values, in apimachinery's words and order
(``pkg/api/validate/content/{kube,dns,errors}.go``: ``IsLabelKey``, the
``IsQualifiedName`` of old, ``IsLabelValue``); an empty list means nothing is.
Lengths are in UTF-8 bytes. :func:`quoted` and :func:`aggregate` bound what a
message quotes and lists, the same way for selector strings
(:mod:`kumaco.core.labels.selectors`) and LabelSelectors
(:mod:`kumaco.core.labels.node_selector`): a literal over :data:`MAX_LITERAL`
characters is shown as a bounded :func:`kumaco.core.errors.excerpt` instead of
Go's ``%q``, and more than :data:`MAX_REPORTED_ERRORS` errors are counted
instead of listed, so a message stays short whatever the input. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from kumaco.core.errors import excerpt
from kumaco.core.golang.gostrconv import quote

__all__ = [
    "MAX_LITERAL",
    "MAX_REPORTED_ERRORS",
    "aggregate",
    "qualified_name_problems",
    "quoted",
    "value_errors",
]

#: Longest literal a message quotes in full (Go's ``%q``); longer ones are excerpted.
MAX_LITERAL: Final = 400
#: Most errors of one requirement a message lists; the surplus is counted.
MAX_REPORTED_ERRORS: Final = 8


def quoted(text: str) -> str:
    """Render ``text`` as the server's ``%q`` does, or as a bounded excerpt if huge."""
    return quote(text) if len(text) <= MAX_LITERAL else excerpt(text)


def aggregate(errors: list[str]) -> str:
    """Several errors as ``utilerrors.NewAggregate`` prints them (one bare), bounded."""
    if len(errors) == 1:
        return errors[0]
    if len(errors) > MAX_REPORTED_ERRORS:
        hidden = len(errors) - MAX_REPORTED_ERRORS
        errors = [*errors[:MAX_REPORTED_ERRORS], f"and {hidden} more errors"]
    return "[" + ", ".join(errors) + "]"


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


def qualified_name_problems(key: str) -> list[str]:
    """What is wrong with ``key`` as a qualified name (a label key, a condition type).

    In the API server's words and order; empty if nothing is.
    """
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


def _value_problems(value: str) -> list[str]:
    """List what is wrong with ``value`` as a label value, in the server's words."""
    problems: list[str] = []
    if _byte_length(value) > _VALUE_MAX_BYTES:
        problems.append(_too_long(_VALUE_MAX_BYTES))
    if value and _NAME_RE.fullmatch(value) is None:
        problems.append(_VALUE_REGEX_MESSAGE)
    return problems


def value_errors(key_text: str, values: Sequence[str]) -> list[str]:
    """Apimachinery's message for each invalid label value of a requirement on ``key_text``."""
    errors = []
    for position, value in enumerate(values):
        problems = _value_problems(value)
        if problems:
            errors.append(
                f"values[{position}][{key_text}]: Invalid value: {quoted(value)}: "
                + "; ".join(problems)
            )
    return errors
