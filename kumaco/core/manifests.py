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
:func:`kumaco.core.configmaps.window_of`, as in the controller. Pure: callers
pass text, not paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kumaco.core.configmaps import WindowConfigMap, window_of
from kumaco.core.errors import one_line
from kumaco.core.nodes import NodeView, Sharing, node_view
from kumaco.core.selectors import Selector
from kumaco.core.windowdata import REQUIRED_KEYS
from kumaco.core.windows import FieldError, InvalidWindow, Window

DEFAULT_NAMESPACE = "default"
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """The text is not YAML/JSON at all."""


def load_documents(text: str, source: str = "<input>") -> list[Any]:
    """Parse all documents in ``text``; unwrap List kinds; drop empty documents."""
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML/JSON: {str(exc).splitlines()[0]}") from None
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


def window_entries(objects: Iterable[Any]) -> list[Window | InvalidWindow]:
    """Each object as a valid window or an invalid entry naming the key and the reason."""
    entries: list[Window | InvalidWindow] = []
    for position, obj in enumerate(objects, 1):
        if not isinstance(obj, Mapping):
            entries.append(
                InvalidWindow(
                    DEFAULT_NAMESPACE,
                    f"<document {position}>",
                    (FieldError("kind", f"expected a ConfigMap, got a {type(obj).__name__}"),),
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
        entries.append(window_of(cm))
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
    selected one), which kumaco would ignore.
    """

    entries: list[Window | InvalidWindow]
    skipped: list[str]
    warnings: list[str]


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


def select_windows(objects: Iterable[Any], selector: Selector, selector_text: str) -> Selection:
    """Windows from decoded objects, keeping the ConfigMaps ``selector`` selects (see Selection)."""
    wanted = [r.key for r in selector.requirements]
    documents: list[Any] = []
    skipped: list[str] = []
    warnings: list[str] = []
    for obj in objects:
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
    return Selection(window_entries(documents), skipped, warnings)
