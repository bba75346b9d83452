"""Hypothesis strategies for label selectors and node label sets.

Both strategies draw from one small vocabulary of keys and values, so that a
random selector often matches some of the random label sets. They are meant for
differential tests as well as for the unit tests of :mod:`kumaco.core.labels.selectors`:

* :func:`label_sets` -- label dicts that the kube-apiserver accepts on a Node
  (every key passes ``IsQualifiedName``, every value ``IsValidLabelValue``);
* :func:`selector_texts` -- ``?labelSelector=`` strings, mostly well formed, with
  every operator, optional whitespace (space, tab, CR, LF) around tokens, empty
  and duplicated set members, integer-like values for ``>``/``<``, prefixed keys
  and keys/values at and just over the length limits; a good share are broken on
  purpose (stray or doubled symbols, bad characters, truncation, NUL, vertical
  tab), so that both the accepting and the rejecting paths are exercised.

Notes for a test against a live server: every text is valid Unicode without
surrogates and encodes to UTF-8, but it contains characters that a query string
must percent-encode (``+``, ``;``, ``&``, ``#``, ``%``, space, NUL...): send it
through a proper encoder (``urllib.parse.urlencode`` does). kumaco reproduces the
server's error text except for literals over 400 characters, literals holding
unprintable characters in a ``found '...'`` message, and more than 8 value errors
in one requirement (see :mod:`kumaco.core.labels.selectors`).
"""

from __future__ import annotations

from hypothesis import strategies as st

# Keys a Node may carry. "in" and "notin" are legal keys that the selector lexer
# must not confuse with the operators.
PREFIX_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])  # 253 characters
NAME_63 = "n" + "a" * 61 + "z"
VALID_KEYS: tuple[str, ...] = (
    "zone",
    "rack",
    "role",
    "a",
    "in",
    "notin",
    "Gpu.Count_2",
    "example.com/zone",
    "kumaco.dev/pool",
    "1.example-2.io/x",
    NAME_63,
    PREFIX_253 + "/k",
)
# Keys the server rejects in a selector (never on a label set).
INVALID_KEYS: tuple[str, ...] = (
    NAME_63 + "x",  # name of 64 characters
    "e" + PREFIX_253 + "/k",  # prefix of 254 characters
    "Example.com/zone",  # upper case in the prefix
    "example.com/",  # empty name
    "/zone",  # empty prefix
    "a/b/c",  # two slashes
    "-zone",
    "zone-",
    "zo~ne",
    "zoné",
    "a||b",
    "ex_ample.com/zone",
)
VALUE_63 = "v" + "0" * 61 + "w"
# Values a Node label may have; the integer-like ones exercise ">" and "<",
# including one that is a valid label value but overflows an int64.
VALID_VALUES: tuple[str, ...] = (
    "",
    "a",
    "b",
    "in",
    "notin",
    "true",
    "0",
    "1",
    "2",
    "10",
    "007",
    "42",
    "9223372036854775807",
    "9223372036854775808",
    "1.5",
    "1e3",
    "A_b-c.d",
    VALUE_63,
)
INVALID_VALUES: tuple[str, ...] = (
    VALUE_63 + "x",  # 64 characters
    "-1",
    "+1",
    "a_",
    "_a",
    "a b",
    "ä",
    "a/b",
    "a:b",
    "a;b&c#d%e",
    "a\x0bb",
)
# Right-hand sides for ">" and "<": valid, rejected and borderline integers.
NUMBERS: tuple[str, ...] = (
    "0",
    "1",
    "2",
    "9",
    "10",
    "007",
    "41",
    "42",
    "9223372036854775806",
    "9223372036854775807",
    "9223372036854775808",
    "-1",
    "+1",
    "1.5",
    "",
    "a",
    "0x10",
)
BLANKS: tuple[str, ...] = ("", "", "", " ", "  ", "\t", "\n", "\r", " \t ")
# Fragments spliced into selectors to break them in interesting ways.
JUNK: tuple[str, ...] = (
    ",",
    ",,",
    "(",
    ")",
    "()",
    "=",
    "==",
    "!=",
    "!",
    "!!",
    ">",
    "<",
    ">=",
    "=<",
    "===",
    "!==",
    "in",
    "notin",
    "in (",
    "||",
    "&&",
    "~",
    "/",
    ".",
    "-",
    "_",
    " ",
    "\t",
    "\x00",
    "\x0b",
    "\xa0",
    "é",
    "+",
    ";",
    "%",
    "#",
    "&",
)


def label_keys(valid_only: bool = True) -> st.SearchStrategy[str]:
    """Label keys from the shared vocabulary (valid ones, or sometimes invalid ones)."""
    valid = st.sampled_from(VALID_KEYS)
    if valid_only:
        return valid
    return st.one_of(valid, valid, valid, st.sampled_from(INVALID_KEYS))


def label_values(valid_only: bool = True) -> st.SearchStrategy[str]:
    """Label values from the shared vocabulary (valid ones, or sometimes invalid ones)."""
    valid = st.sampled_from(VALID_VALUES)
    if valid_only:
        return valid
    return st.one_of(valid, valid, valid, st.sampled_from(INVALID_VALUES))


def label_sets() -> st.SearchStrategy[dict[str, str]]:
    """Node label dicts that the kube-apiserver accepts, over the shared vocabulary."""
    return st.dictionaries(label_keys(), label_values(), max_size=6)


@st.composite
def _spaced(draw: st.DrawFn, *parts: str) -> str:
    """Join ``parts`` with random (often empty) whitespace around each of them."""
    out = [draw(st.sampled_from(BLANKS))]
    for part in parts:
        out.append(part)
        out.append(draw(st.sampled_from(BLANKS)))
    return "".join(out)


@st.composite
def _value_list(draw: st.DrawFn, valid_only: bool) -> str:
    """Members of a set: values, some empty, with leading/doubled/trailing commas."""
    members = draw(st.lists(label_values(valid_only), min_size=0, max_size=4))
    if draw(st.booleans()):
        members.insert(draw(st.integers(0, len(members))), "")
    blank = st.sampled_from(BLANKS)
    return ",".join(draw(blank) + member + draw(blank) for member in members)


@st.composite
def requirement_texts(draw: st.DrawFn, valid_only: bool = False) -> str:
    """One requirement (``k``, ``!k``, ``k=v``, ``k in (..)``, ``k>n``, ...)."""
    key = draw(label_keys(valid_only))
    form = draw(st.sampled_from(("exists", "!", "=", "==", "!=", "in", "notin", ">", "<")))
    if form == "exists":
        return draw(_spaced(key))
    if form == "!":
        return draw(_spaced("!", key))
    if form in ("in", "notin"):
        members = draw(_value_list(valid_only))
        # "k in(" needs no space after the operator; "k in" does before it.
        return draw(_spaced(key + " ", form, "(", members, ")"))
    if form in (">", "<"):
        number = draw(st.sampled_from(NUMBERS[:10]) if valid_only else st.sampled_from(NUMBERS))
        return draw(_spaced(key, form, number))
    return draw(_spaced(key, form, draw(label_values(valid_only))))


@st.composite
def _well_formed(draw: st.DrawFn, valid_only: bool) -> str:
    requirements = draw(st.lists(requirement_texts(valid_only), min_size=1, max_size=5))
    return ",".join(requirements)


@st.composite
def _broken(draw: st.DrawFn) -> str:
    """A selector damaged by splicing junk in, cutting it short or gluing parts."""
    text = draw(_well_formed(valid_only=False))
    damage = draw(st.sampled_from(("splice", "truncate", "prefix", "suffix", "glue")))
    if damage == "truncate":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    junk = draw(st.sampled_from(JUNK))
    if damage == "prefix":
        return junk + text
    if damage == "suffix":
        return text + junk
    if damage == "glue":
        return text + draw(requirement_texts())
    at = draw(st.integers(0, len(text)))
    return text[:at] + junk + text[at:]


_SELECTOR_ALPHABET = st.sampled_from(
    (*"azAZ09.-_/(),=!<> \t\r\n", "in", "notin", "zone", "1", "\x00", "é", "\x0b")
)


def selector_texts() -> st.SearchStrategy[str]:
    """Label selector strings, valid and invalid, over the shared vocabulary."""
    return st.one_of(
        st.sampled_from(("", " ", "\t\n", "a", "!a", ",", "in", "in in (in)", "a=b,")),
        _well_formed(valid_only=True),
        _well_formed(valid_only=True),
        _well_formed(valid_only=False),
        _broken(),
        st.lists(_SELECTOR_ALPHABET, max_size=12).map("".join),
    )
