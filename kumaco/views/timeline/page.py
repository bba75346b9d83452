"""The timeline as one self-contained HTML page: header, the inline SVG, the windows' details.

Contract: :func:`render_html` returns one HTML file -- inline CSS and the
inline SVG of :func:`~kumaco.views.timeline.draw.render_svg`, no script, no
external resource -- following ``prefers-color-scheme`` (light and dark),
laid out for 1280-1440 px wide screens (the SVG scales with the page). It
lists each window (its fields, node count, openings in the range and its
state at ``now`` with the next change, as :mod:`kumaco.views.wording` words
it) and each invalid window with its reason; a window's full name is in its
row, however long (the picture may shorten it). Pure: equal inputs give
byte-identical output.
"""

from __future__ import annotations

from kumaco import __version__
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.window import Window
from kumaco.views.timeline.draw import render_svg, summary
from kumaco.views.timeline.model import Timeline
from kumaco.views.timeline.svg import FONT_FAMILY, esc
from kumaco.views.timeline.zones import format_local
from kumaco.views.wording import followed, next_change

_PAGE_STYLE = """
:root{color-scheme:light dark;--bg:#f6f8fa;--card:#ffffff;--fg:#1f2328;--muted:#59636e;
--line:#d0d7de;--head:#f6f8fa;--bad:#cf222e;--ok:#1a7f37}
@media (prefers-color-scheme:dark){:root{--bg:#010409;--card:#0d1117;--fg:#e6edf3;
--muted:#9198a1;--line:#3d444d;--head:#151b23;--bad:#ff7b72;--ok:#3fb950}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.5 @FONT@}
main{max-width:1440px;margin:0 auto;padding:20px 24px 32px}
h1{font-size:22px;margin:0 0 2px;font-weight:650}
h2{font-size:16px;margin:28px 0 10px;font-weight:650}
.meta{color:var(--muted);margin:0 0 16px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;
overflow:hidden}
figure svg{display:block;width:100%;height:auto}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);
font-size:13px;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);font-weight:600;white-space:nowrap}
td.num{text-align:right}
td.key{min-width:18em;max-width:32em;overflow-wrap:anywhere}
.nw{white-space:nowrap}
.scroll{overflow-x:auto}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
.muted{color:var(--muted)}
.bad{color:var(--bad)}
.open{color:var(--ok);font-weight:600}
ul.invalid{margin:0;padding:0;list-style:none;background:var(--card);border:1px solid var(--line);
border-radius:10px}
ul.invalid li{padding:8px 12px;border-bottom:1px solid var(--line)}
ul.invalid li:last-child{border-bottom:0}
footer{color:var(--muted);font-size:12px;margin-top:24px}
""".replace("@FONT@", FONT_FAMILY)


def _state_html(w: Window, now: int) -> str:
    state, never = followed(w, w.state_at(now), now)
    zone = w.zone_name
    verb, t = next_change(state, never)
    badge = '<span class="open">open</span>' if state.open else "closed"
    if t is None:
        return f'{badge}; <span class="muted">{esc(verb)}</span>'
    local = (
        "" if zone == "UTC" else f'<br><span class="nw muted">{esc(format_local(t, zone))}</span>'
    )
    return f'{badge}; {verb} <span class="nw">{esc(format_instant(t))}</span>{local}'


def render_html(t: Timeline) -> str:
    """One self-contained HTML page: header, the inline SVG, window details and invalid ones."""
    svg = render_svg(t, standalone=False)
    out = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>kumaco timeline {esc(format_instant(t.start))} → "
        f"{esc(format_instant(t.until))}</title>",
        f"<style>{_PAGE_STYLE}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<header>",
        f"<h1>{'Maintenance forecast' if t.turns else 'Maintenance windows'}</h1>",
        f'<p class="meta">{esc(format_instant(t.start))} → {esc(format_instant(t.until))}'
        f" (UTC) · now {esc(format_instant(t.now))} · {esc(summary(t))}"
        + (f"<br>{esc(t.source)}" if t.source else "")
        + "</p>",
        "</header>",
        f"<figure>{svg}</figure>",
    ]
    if t.lanes:
        out += [
            "<h2>Windows</h2>",
            '<div class="scroll"><table>',
            "<thead><tr><th>Window</th><th>startTime</th><th>Zone</th><th>Duration</th>"
            "<th>nodeSelector</th>"
            + ("<th>Nodes</th>" if t.nodes_in_scope is not None else "")
            + "<th>Openings in range</th><th>At now</th></tr></thead>",
            "<tbody>",
        ]
        for lane in t.lanes:
            w = lane.window
            nodes = f'<td class="num">{lane.nodes}</td>' if t.nodes_in_scope is not None else ""
            selector = (
                ",<wbr>".join(
                    f'<code class="nw">{esc(term)}</code>' for term in w.selector_text.split(",")
                )
                if w.selector_text
                else '<span class="muted">(every node in scope)</span>'
            )
            out.append(
                f'<tr><td class="key"><strong>{esc(w.key)}</strong>'
                + (' <span class="muted">(freeze)</span>' if w.freeze else "")
                + "</td>"
                f"<td><code>{esc(w.start_time)}</code>"
                + (f"<br>on days <code>{esc(w.days_text)}</code>" if w.days else "")
                + f"</td><td>{esc(w.zone_name)}</td>"
                f"<td><code>{esc(w.duration_text)}</code></td>"
                f"<td>{selector}</td>"
                f'{nodes}<td class="num">{len(lane.bars)}</td><td>{_state_html(w, t.now)}</td></tr>'
            )
        out += ["</tbody>", "</table></div>"]
    if t.invalid:
        out += [f'<h2 class="bad">Invalid windows, ignored by kumaco ({len(t.invalid)})</h2>']
        out.append('<ul class="invalid">')
        out += [
            f'<li><strong class="bad">{esc(bad.key)}</strong> — {esc(bad.reason)}</li>'
            for bad in t.invalid
        ]
        out.append("</ul>")
    out += [
        f"<footer>Drawn by kumaco {esc(__version__)}. The axis is UTC, with the wall time "
        "of the windows' zones under it; labels above the bars give each opening in the "
        "window's own time zone; a night daylight saving skips is a dashed outline.</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(out) + "\n"
