"""The one text-table renderer of kumaco's command lines.

Contract: :func:`aligned` lays out rows of :class:`Cell` as kubectl does --
left-aligned columns two spaces apart, trailing blanks trimmed -- and paints a
cell's style with ANSI colours only when asked; :func:`table` does the same for
plain strings. Pure: text in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
}


@dataclass(frozen=True)
class Cell:
    """A table cell: its text and an optional style (``+``-joined keys of the style table)."""

    text: str
    style: str = ""


def paint(text: str, style: str, color: bool) -> str:
    """``text`` in ``style`` (e.g. ``"red+bold"``) when ``color``, else unchanged."""
    if not color or not style or not text:
        return text
    codes = ";".join(_STYLES[s] for s in style.split("+"))
    return f"\x1b[{codes}m{text}\x1b[0m"


def aligned(rows: Sequence[Sequence[Cell]], color: bool = False) -> str:
    """Left-aligned columns two spaces apart (as kubectl prints); styles only if ``color``."""
    if not rows:
        return ""
    widths = [max(len(r[i].text) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [
            paint(c.text, c.style, color) + " " * (w - len(c.text))
            for c, w in zip(r, widths, strict=True)
        ]
        lines.append("  ".join(cells).rstrip() + "\n")
    return "".join(lines)


def table(rows: Sequence[Sequence[str]]) -> str:
    """Plain rows of text laid out as :func:`aligned` does."""
    return aligned([[Cell(text) for text in row] for row in rows])
