"""Just enough of Go's ``strconv`` for kumaco's validators to answer as the Go code does.

Contract: pure functions of their argument, no I/O, no state beyond a memo.

* :func:`parse_int64` is ``strconv.ParseInt(text, 10, 64)`` -- and so ``strconv.Atoi``
  on a 64-bit platform, which robfig/cron uses for a schedule's numbers and
  apimachinery for ``Gt``/``Lt`` label values: an optional sign and ASCII digits only
  (no spaces, underscores or other Unicode digits, unlike :func:`int`), leading zeros
  allowed, the value within int64; ``None`` otherwise.
* :func:`quote` is ``strconv.Quote``, as ``%q`` prints a string in apimachinery's
  messages: printable Unicode kept, Go's escapes, other control characters hex-escaped,
  a lone surrogate as the three bytes of invalid UTF-8 Go would have received.

Go's ``time`` package quotes differently (bytes, not runes): that one is
:func:`kumaco.core.golang.gotime.time_quote`.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from kumaco.core.golang.gotime import INT64_MAX, INT64_MIN

__all__ = ["parse_int64", "quote"]

_DECIMAL: Final = re.compile(r"[+-]?[0-9]+")


@functools.lru_cache(maxsize=8192)
def parse_int64(text: str) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it, else None."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    negative = text[0] == "-"
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19:  # more digits than 2**63 has: out of range, and int() may refuse
        return None
    number = -int(digits or "0") if negative else int(digits or "0")
    if number < INT64_MIN or number > INT64_MAX:
        return None
    return number


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}
_PLAIN_QUOTABLE: Final = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but " and \


def quote(text: str) -> str:
    """Quote ``text`` as Go's ``%q`` does for a string (printable Unicode kept)."""
    if _PLAIN_QUOTABLE.fullmatch(text):
        return '"' + text + '"'
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            # A lone surrogate reaches Go as three bytes of invalid UTF-8.
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)
