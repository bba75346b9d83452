"""Reading ConfigMaps and Nodes out of YAML or JSON text, as kubectl would print them.

Contract: :func:`load_documents` parses text (YAML, which includes JSON) into
a flat list of objects, unwrapping ``kind: List`` and ``*List`` kinds; it
raises :class:`ManifestError` only when the text itself cannot be parsed.
:func:`window_entries` turns ConfigMap objects into windows or invalid
entries, never raising for bad content: an object without a name becomes an
invalid entry on ``metadata.name``; a document that is not a ConfigMap is
reported on ``kind``. :func:`select_windows` keeps only the ConfigMaps a
selector selects (as the controller's watch does) and says which it left out
and which of those look like windows meant for kumaco. ConfigMaps become windows through
:func:`kumaco.core.windows.configmaps.window_of`, as in the controller. Pure: callers
pass text, not paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kumaco.core.errors import one_line
from kumaco.core.labels.selectors import Selector
from kumaco.core.objects.nodes import NodeView, Sharing, node_view
from kumaco.core.windows.configmaps import WindowConfigMap, window_of
from kumaco.core.windows.format import REQUIRED_KEYS, yaml_type_name
from kumaco.core.windows.window import FieldError, InvalidWindow, Window

DEFAULT_NAMESPACE = "default"
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """The text is not YAML/JSON at all."""


#: A plain scalar that YAML reads as something else: ``*`` starts an alias, ``&`` an anchor,
#: ``!`` a tag, ``%`` a directive, ``@`` and a backquote are reserved; ``: `` inside a value.
_NEEDS_QUOTES = "*&!%@`"


def _quote_hint(line: str) -> str:
    """The fix for a ``key: value`` line whose value needs quotes, or ''."""
    key, sep, value = line.strip().partition(": ")
    value = value.strip()
    if not sep or not key or not value or value[0] in "\"'[{":
        return ""
    if key == "nodeSelector" and ": " in value:
        label, _, wanted = value.partition(": ")
        return f'a selector uses = (not :) and is quoted: {key}: "{label}={wanted}"'
    if value[0] in _NEEDS_QUOTES or ": " in value:
        reason = (
            "a value starting with * is read as a YAML alias"
            if value[0] == "*"
            else f"a value starting with {value[0]} or holding ': ' is YAML syntax"
        )
        return f'{reason}: quote it, {key}: "{value}"'
    return ""


def yaml_error(exc: yaml.YAMLError, text: str, source: str) -> str:
    """A YAML error as ``file:line:column: reason; fix``, as a compiler writes it."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        lines = text.splitlines()
        line = lines[mark.line] if mark.line < len(lines) else ""
        what = ", ".join(p for p in (exc.context, exc.problem) if p)
        hint = _quote_hint(line)
        return f"{source}:{mark.line + 1}:{mark.column + 1}: not valid YAML/JSON: {what}" + (
            f"; {hint}" if hint else ""
        )
    if isinstance(exc, yaml.reader.ReaderError):
        row = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(char)
        return (
            f"{source}:{row}:{column}: not valid YAML/JSON: the character U+{code:04X} "
            "is not allowed (a control character: is this a text file?)"
        )
    return f"{source}: not valid YAML/JSON: {str(exc).splitlines()[0]}"


def load_documents(text: str, source: str = "<input>") -> list[Any]:
    """Parse all documents in ``text``; unwrap List kinds; drop empty documents.

    A syntax error is a :class:`ManifestError` naming ``source``, the line and the column,
    with the fix where it is a common one (a cron string starting with ``*`` unquoted).
    """
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise ManifestError(yaml_error(exc, text, source)) from None
    # Absurd nesting or values; PyYAML's constructors also fail with IndexError
    # ("!!int "), KeyError ("!!bool x") and AttributeError ("!!timestamp x").
    except (ValueError, RecursionError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise ManifestError(f"{source}: cannot be read: {exc}") from None
    out: list[Any] = []
    for doc in docs:
        if doc is None:
            continue
        kind = doc.get("kind") if isinstance(doc, Mapping) else None
        if isinstance(kind, str) and (kind == "List" or kind.endswith("List")) and "items" in doc:
            items = doc.get("items")
            out.extend(i for i in (items if isinstance(items, list) else []) if i is not None)
        else:
            out.append(doc)
    return out


def _meta(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None, DEFAULT_NAMESPACE
    name = meta.get("name")
    ns = meta.get("namespace")
    return (
        name if isinstance(name, str) and name else None,
        ns if isinstance(ns, str) and ns else DEFAULT_NAMESPACE,
    )


def kind_of(obj: object) -> str:
    """What a decoded document is, for a message: its ``kind`` (``Node``), or its YAML type."""
    if not isinstance(obj, Mapping):
        return yaml_type_name(obj)
    kind = obj.get("kind")
    return kind if isinstance(kind, str) and kind else "an object without a kind"


def _duplicated(
    entries: list[Window | InvalidWindow], configmaps: Sequence[int], origins: Sequence[str]
) -> None:
    """Mark every ConfigMap whose namespace/name is in the input more than once (in place).

    Applied together, the last would replace the others (the API server keeps one object per
    name); which one was meant cannot be told, so each copy is invalid, naming where they are.
    """
    by_key: dict[str, list[int]] = {}
    for i in configmaps:
        by_key.setdefault(entries[i].key, []).append(i)
    for key, copies in by_key.items():
        if len(copies) < 2:
            continue
        where = "; ".join(origins[i] for i in copies)
        error = FieldError(
            "metadata.name",
            f"{one_line(key)} is in the input {len(copies)} times ({one_line(where)}): applied "
            "together, the last would replace the others; keep one",
        )
        for i in copies:
            e = entries[i]
            errors = e.errors if isinstance(e, InvalidWindow) else ()
            entries[i] = InvalidWindow(e.namespace, e.name, (*errors, error))


def window_entries(
    objects: Iterable[Any], origins: Sequence[str] | None = None
) -> list[Window | InvalidWindow]:
    """Each object as a valid window or an invalid entry naming the key and the reason.

    ``origins``: where each object came from (``windows.yaml, object 3``), for the message
    about a namespace/name given more than once (default: its position).
    """
    entries: list[Window | InvalidWindow] = []
    configmaps: list[int] = []
    for position, obj in enumerate(objects, 1):
        if not isinstance(obj, Mapping):
            entries.append(
                InvalidWindow(
                    DEFAULT_NAMESPACE,
                    f"<document {position}>",
                    (FieldError("kind", f"expected a ConfigMap, got {yaml_type_name(obj)}"),),
                )
            )
            continue
        name, namespace = _meta(obj)
        shown = name or f"<unnamed document {position}>"
        kind = obj.get("kind")
        if kind != "ConfigMap":
            entries.append(
                InvalidWindow(
                    namespace, shown, (FieldError("kind", f"expected ConfigMap, got {kind!r}"),)
                )
            )
            continue
        if name is None:
            entries.append(
                InvalidWindow(namespace, shown, (FieldError("metadata.name", "is missing"),))
            )
            continue
        cm = WindowConfigMap.from_object(obj, DEFAULT_NAMESPACE)
        assert cm is not None  # it has a name, and a namespace by default
        configmaps.append(len(entries))
        entries.append(window_of(cm))
    shown_origins = (
        list(origins)
        if origins is not None
        else [f"object {n}" for n in range(1, len(entries) + 1)]
    )
    _duplicated(entries, configmaps, shown_origins)
    return entries


def node_views(objects: Iterable[Any], owned: Iterable[str] = ()) -> list[NodeView]:
    """Node views of the objects that are Nodes with a name (others are skipped).

    ``owned``: the condition types whose writers (field managers) to keep.
    """
    views = []
    owned = tuple(owned)
    sharing = Sharing()
    for obj in objects:
        if isinstance(obj, Mapping) and obj.get("kind", "Node") == "Node":
            view = node_view(obj, owned, sharing=sharing)
            if view is not None:
                views.append(view)
    return views


# ----------------------------------------------------------------------------- selection


@dataclass(frozen=True)
class Selection:
    """What a set of objects holds for kumaco, selected as the controller would select it.

    ``entries``: the selected ConfigMaps as windows (valid or not), and documents
    that are not usable ConfigMaps as invalid entries; ``skipped``: one line for
    each ConfigMap the selector leaves out; ``warnings``: the ones among them
    that look like windows meant for kumaco (window keys, or a label close to a
    selected one), which kumaco would ignore; ``foreign``: what each document that is
    not a ConfigMap is (:func:`kind_of`: ``Node``, ``a string``), in order.
    """

    entries: list[Window | InvalidWindow]
    skipped: list[str]
    warnings: list[str]
    foreign: tuple[str, ...] = ()

    @property
    def selected(self) -> int:
        """How many of the entries are ConfigMaps the selector selected."""
        return len(self.entries) - len(self.foreign)


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (bounded inputs: label keys)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _close_label(labels: Mapping[str, str], wanted: Iterable[str]) -> tuple[str, str] | None:
    for key in labels:
        for want in wanted:
            if key != want and (key.lower() == want.lower() or _distance(key, want) <= 2):
                return key, want
    return None


def select_windows(
    objects: Sequence[Any],
    selector: Selector,
    selector_text: str,
    origins: Sequence[str] | None = None,
) -> Selection:
    """Windows from decoded objects, keeping the ConfigMaps ``selector`` selects (see Selection).

    ``origins``: where each object came from (:func:`window_entries`).
    """
    wanted = [r.key for r in selector.requirements]
    documents: list[Any] = []
    kept: list[str] = []
    foreign: list[str] = []
    skipped: list[str] = []
    warnings: list[str] = []
    for position, obj in enumerate(objects):
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        raw_labels = meta.get("labels") if isinstance(meta, Mapping) else None
        labels = (
            {k: v for k, v in raw_labels.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(raw_labels, Mapping)
            else {}
        )
        if (
            not isinstance(obj, Mapping)
            or obj.get("kind") != "ConfigMap"
            or _meta(obj)[0] is None
            or selector.matches(labels)
        ):
            documents.append(obj)
            kept.append(origins[position] if origins is not None else f"object {position + 1}")
            if not isinstance(obj, Mapping) or obj.get("kind") != "ConfigMap":
                foreign.append(kind_of(obj))
            continue
        name, namespace = _meta(obj)
        key = one_line(f"{namespace}/{name}")
        skipped.append(f"skipping {key}: not selected by --configmap-selector {selector_text!r}")
        data = obj.get("data")
        keys = [k for k in REQUIRED_KEYS if isinstance(data, Mapping) and k in data]
        close = _close_label(labels, wanted)
        if close is not None:
            warnings.append(
                f"{key} has the label {one_line(close[0])}, not {close[1]} (a typo?): "
                "kumaco will ignore it"
            )
        elif keys:
            warnings.append(
                f"{key} has {'/'.join(keys)} but is not selected by --configmap-selector "
                f"{selector_text!r}: kumaco will ignore it"
            )
    return Selection(window_entries(documents, kept), skipped, warnings, tuple(foreign))
