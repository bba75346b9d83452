"""The timeline's SVG toolkit: the picture's geometry, escaping, text fitting, label placement.

Contract: the constants fix the drawing's geometry (:data:`WIDTH`, the plot
area from :data:`PLOT_X` over :data:`PLOT_WIDTH`, lane and bar heights,
:data:`MIN_BAR_WIDTH`) and its font stack. :func:`esc` makes any text safe in
XML text and attributes (control characters become visible hex escapes); :func:`num`
writes a coordinate with two decimals; :func:`text_width` estimates a text's
width from DejaVu Sans' advances (the widest common default face, so
narrower faces fit too) and :func:`fit` shortens a text with an ellipsis to
fit; :func:`wrap` breaks a long name over lines (after a ``/``, ``-``, ``.`` or
``_`` where it can), the last line shortened only when the lines cannot hold it.
:class:`Svg` collects fragments; :func:`place` puts :class:`Label` s on a
line without overlaps. Pure and deterministic.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 1280
PLOT_X = 272
PLOT_WIDTH = WIDTH - PLOT_X - 28
LANE_HEIGHT = 56
BAR_HEIGHT = 18
MIN_BAR_WIDTH = 2.0
#: Glyph advances in em used to fit text: DejaVu Sans' (the widest common default sans-serif
#: face, so narrower faces fit too); bold text is taken 10% wider.
_NARROW, _WIDE = frozenset(" .,:;'!|()[]ijlft-/"), frozenset("MWmw@%→—…")
FONT_FAMILY = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, '
    '"Liberation Sans", sans-serif'
)


def esc(text: str) -> str:
    """Escape for XML text and attributes; control characters become visible escapes."""
    cleaned = "".join(
        c
        if c in "\t\n" or (ord(c) >= 0x20 and not 0xD800 <= ord(c) <= 0xDFFF)
        else f"\\x{ord(c):02x}"
        for c in text
    )
    return html.escape(cleaned, quote=True)


def num(v: float) -> str:
    """A coordinate, with two decimals."""
    return f"{v:.2f}"


def text_width(text: str, font_px: float, bold: bool = False) -> float:
    """The estimated width in px of ``text`` at ``font_px``."""
    em = 0.0
    for c in text:
        if c in _NARROW:
            em += 0.34
        elif c in _WIDE:
            em += 0.9
        elif c.isupper() or c.isdigit():
            em += 0.7
        else:
            em += 0.6
    return em * font_px * (1.1 if bold else 1.0)


def fit(text: str, px: float, font_px: float, bold: bool = False) -> str:
    """``text`` shortened with an ellipsis to fit ``px``."""
    if text_width(text, font_px, bold) <= px:
        return text
    keep = len(text)
    while keep > 0 and text_width(text[:keep] + "…", font_px, bold) > px:
        keep -= 1
    return text[:keep] + "…"


_BREAKS = "/-._"


def wrap(text: str, px: float, font_px: float, bold: bool = False, lines: int = 2) -> list[str]:
    """``text`` over at most ``lines`` lines of ``px``; the last one shortened if it must be.

    A line breaks after the last ``/``, ``-``, ``.`` or ``_`` that fits (in its second
    half), else where the width ends. Joined, the lines are ``text`` unless the last
    ends with an ellipsis.
    """
    out: list[str] = []
    rest = text
    while len(out) < lines - 1 and text_width(rest, font_px, bold) > px:
        keep = len(rest)
        while keep > 1 and text_width(rest[:keep], font_px, bold) > px:
            keep -= 1
        cut = max((i + 1 for i, c in enumerate(rest[:keep]) if c in _BREAKS), default=0)
        if cut < keep / 2:
            cut = keep
        out.append(rest[:cut])
        rest = rest[cut:]
    out.append(fit(rest, px, font_px, bold))
    return out


class Svg:
    """A list of SVG fragments with small helpers."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def text(
        self,
        x: float,
        y: float,
        content: str,
        cls: str,
        *,
        anchor: str = "start",
        title: str | None = None,
        extra: str = "",
    ) -> None:
        a = "" if anchor == "start" else f' text-anchor="{anchor}"'
        t = f"<title>{esc(title)}</title>" if title else ""
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" class="{cls}"{a}{extra}>{t}{esc(content)}</text>'
        )

    def lines(
        self, x: float, y: float, rows: list[str], step: float, cls: str, title: str = ""
    ) -> None:
        """One ``<text>`` of ``rows``, each a ``<tspan>`` ``step`` px below the previous."""
        t = f"<title>{esc(title)}</title>" if title else ""
        spans = "".join(
            f'<tspan x="{num(x)}" y="{num(y + i * step)}">{esc(r)}</tspan>'
            for i, r in enumerate(rows)
        )
        self.add(f'<text x="{num(x)}" y="{num(y)}" class="{cls}">{t}{spans}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str, extra: str = "") -> None:
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'class="{cls}"{extra}/>'
        )

    def rect(self, x: float, y: float, w: float, h: float, cls: str, extra: str = "") -> None:
        self.add(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" '
            f'class="{cls}"{extra}/>'
        )


@dataclass(frozen=True)
class Label:
    """A label wanting one of ``xs`` (left edges, preferred first), or up to ``slide`` px right."""

    xs: tuple[float, ...]
    text: str
    priority: int
    cls: str
    title: str = ""
    slide: float = 0.0
    #: More attributes of its ``<text>`` (`` data-kind="skipped"``).
    extra: str = ""


#: Clearance around a label: a label is left out only where it would touch another, so
#: bars a label's width apart all keep theirs.
GAP = 6.0


def place(
    labels: Sequence[Label], left: float, right: float, font_px: float
) -> list[tuple[float, Label]]:
    """Place labels without overlaps: by priority, then position; the first free candidate wins.

    Labels are :data:`GAP` apart at least; where they cannot all be, those of a
    lower priority (a larger number: repeated labels) give way first.

    A candidate that does not fit in ``[left, right]`` is skipped, except the
    last one, which is pushed inside. Failing every candidate, a label may
    slide right (up to ``slide`` px) to just after a label in its way.
    """
    taken: list[tuple[float, float]] = []
    placed: list[tuple[float, Label]] = []

    def free(x0: float, w: float, gap: float) -> bool:
        return not any(x0 - gap < b and a < x0 + w + gap for a, b in taken)

    for label in sorted(labels, key=lambda lb: (lb.priority, lb.xs[0])):
        w = text_width(label.text, font_px, bold=label.cls.startswith("kt-dst"))
        gap = GAP
        spot: float | None = None
        for i, want in enumerate(label.xs):
            x0 = want
            if not left <= x0 <= right - w:
                if i + 1 < len(label.xs):
                    continue
                x0 = min(max(want, left), right - w)
            if x0 >= left and free(x0, w, gap):
                spot = x0
                break
        if spot is None and label.slide > 0:
            base = max(label.xs[0], left)
            for _a, b in sorted(taken):
                x0 = b + gap
                if base < x0 <= min(base + label.slide, right - w) and free(x0, w, gap):
                    spot = x0
                    break
        if spot is not None:
            taken.append((spot, spot + w))
            placed.append((spot, label))
    return sorted(placed, key=lambda p: p[0])
