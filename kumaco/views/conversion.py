"""What ``kumaco convert`` prints: kured v1's schedule as window ConfigMaps, and the flags.

Contract: pure renderers of a :class:`~kumaco.migration.kuredv1.Conversion`.
:func:`configmaps` gives the window ConfigMaps (labelled for kumaco's default
``--configmap-selector``, annotated with the kured flags they came from);
:data:`CONVERSION` is the table of formats: ``text`` is a YAML stream of those
ConfigMaps that ``kubectl apply -f`` takes, the flags and notes in comments before
them; ``json``/``yaml`` the document ``{windows, kumaco, rebootInhibitors, notes,
warnings}`` (docs/migrating-from-kured-v1.md).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import yaml

from kumaco.core.windows.configmaps import DEFAULT_CONFIGMAP_SELECTOR
from kumaco.migration.kuredv1 import Conversion
from kumaco.views.listing import Formats, formats

ANNOTATION = "kured.dev/converted-from"


@dataclass(frozen=True)
class Converted:
    """A conversion and how its ConfigMaps are named.

    ``name`` (a suffix each when several), ``namespace`` (None: the one ``kubectl apply``
    is given), ``source`` the kured flags.
    """

    conversion: Conversion
    name: str
    namespace: str | None
    source: str


def configmaps(c: Converted) -> list[dict[str, Any]]:
    """The window ConfigMaps of the conversion."""
    specs = c.conversion.windows
    out = []
    for spec in specs:
        meta: dict[str, Any] = {"name": c.name if len(specs) == 1 else f"{c.name}-{spec.suffix}"}
        if c.namespace:
            meta["namespace"] = c.namespace
        meta["labels"] = {DEFAULT_CONFIGMAP_SELECTOR: ""}
        meta["annotations"] = {ANNOTATION: c.source}
        data = spec.data(c.conversion.zone)
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
    return out


def _doc(c: Converted) -> object:
    v = c.conversion
    return {
        "windows": configmaps(c),
        "kumaco": list(v.kumaco_flags),
        "rebootInhibitors": list(v.inhibitor_flags),
        "notes": list(v.notes),
        "warnings": list(v.warnings),
    }


def _comment(text: str, first: str = "#   ", rest: str = "#   ") -> list[str]:
    return textwrap.wrap(
        text, 92, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def _text(c: Converted) -> str:
    v = c.conversion
    lines = [
        f"# kumaco convert: {c.source}",
        "# kumaco run flags (or KUMACO_<FLAG>; components/kured-v2 sets the condition names,",
        "#   and --count-released-unavailable, with a ceiling of 1):",
    ]
    lines += [f"#   {flag}" for flag in v.kumaco_flags]
    if v.inhibitor_flags:
        lines.append("# kured v2 reboot-inhibitors flags:")
        lines += [f"#   {flag}" for flag in v.inhibitor_flags]
    lines.append("# notes:")
    for note in v.notes:
        lines += _comment(note, "#   - ", "#     ")
    for cm in configmaps(c):
        lines += ["---", yaml.safe_dump(cm, sort_keys=False, width=1000).rstrip("\n")]
    return "\n".join(lines) + "\n"


#: A conversion as ``kumaco convert`` prints it.
CONVERSION: Formats[Converted] = formats(_text, _doc)
