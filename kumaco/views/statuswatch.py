"""``kubectl kumaco status --watch``'s frames: successive status reports, rendered.

Contract (pure: reports and sizes in, text out; nothing here reads a clock or the API):

* :func:`change_key` is what a new snapshot is printed for when the output is not a
  terminal: the report's JSON form (:func:`kumaco.views.status_json.to_json`) without what
  moves with the clock or with every Lease renewal -- ``at``, the leader's
  ``renewTime`` and ``expires``, a window's ``closesAfter``. So a window opening or
  closing, a node condition, the leader (and whether its lease still runs), a
  ConfigMap edit or a problem changes it; a renewal or a second passing does not.
* :func:`separator` is what stands between two successive snapshots of a format,
  as ``kubectl get -w`` prints them: text an empty line (each snapshot starts with
  its ``kumaco status at`` line), YAML ``---``, JSON nothing (one document after
  the other).
* :func:`screen` lays out one full-screen frame for a terminal of ``cols`` x
  ``rows``: the status text (cut, with a line saying how many lines a taller
  terminal would show), then the newest lines of an optional panel that fit (a
  host such as the demo puts its event log there), blank lines, and the footer on
  the last rows. Every line is cut to ``cols - 1`` visible characters, ANSI
  colours kept and closed (:func:`cut`): nothing wraps, so a redraw from the top
  left overwrites the previous frame exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from kumaco.views.status import StatusReport
from kumaco.views.status_json import to_json
from kumaco.views.table import paint

#: The footer of ``kubectl kumaco status --watch`` on a terminal.
FOOTER = "watching: redrawn on every change and every second; Ctrl-C stops"
#: The first frame on a terminal, before the first LIST of everything answered.
READING = "kubectl kumaco status --watch: reading the cluster ..."

_TOKENS = re.compile(r"(\x1b\[[0-9;?]*[A-Za-z])|([^\x1b]+|\x1b)")
_RESET = "\x1b[0m"


def change_key(r: StatusReport) -> str:
    """What must change for a new snapshot to be printed (see the module contract)."""
    doc = to_json(r)
    del doc["at"]
    leader = doc["leader"]
    if leader is not None:
        del leader["renewTime"], leader["expires"]
    for window in doc["windows"]:
        window.pop("closesAfter", None)
    return json.dumps(doc, sort_keys=True)


def separator(output: str) -> str:
    """What stands between two snapshots in format ``output`` (as ``kubectl get -w``)."""
    return {"json": "", "yaml": "---\n"}.get(output, "\n")


def footer(color: bool) -> list[str]:
    """The product's footer on a terminal."""
    return [paint(FOOTER, "dim", color)]


def cut(line: str, width: int) -> str:
    """``line`` cut to ``width`` visible characters; ANSI escapes kept, a cut colour closed."""
    out: list[str] = []
    room = width
    styled = False
    for m in _TOKENS.finditer(line):
        escape, text = m.group(1), m.group(2)
        if escape is not None:
            out.append(escape)
            styled = escape != _RESET
            continue
        if room <= 0:
            break
        piece = text[:room]
        room -= len(piece)
        out.append(piece)
    return "".join(out) + (_RESET if styled else "")


def screen(
    body: str,
    cols: int,
    rows: int,
    *,
    panel: Sequence[str] = (),
    panel_title: str = "",
    bottom: Sequence[str] = (),
) -> list[str]:
    """One frame of ``rows`` lines for a ``cols``-wide terminal (see the module contract).

    ``body``: the status text; ``panel``: lines of which the last that fit are shown
    under it, after ``panel_title`` when there is room for both; ``bottom``: the footer.
    """
    width = max(cols - 1, 1)
    room = max(rows - len(bottom), 1)
    lines = body.rstrip("\n").split("\n") if body else []
    if len(lines) > room:
        hidden = len(lines) - (room - 1)
        lines = [*lines[: room - 1], f"... {hidden} more lines: a taller terminal shows them"]
    free = room - len(lines)
    if panel and panel_title and free >= 2:
        lines.append(panel_title)
        free -= 1
    if panel and free > 0:
        lines += list(panel)[-free:]
    lines += [""] * (room - len(lines))
    lines += list(bottom)
    return [cut(line, width) for line in lines[:rows]]
