"""Reading what kumaco needs out of the API server's raw JSON bytes, before decoding.

Contract: pure byte-level helpers on Kubernetes' JSON encoding (which writes an
object's metadata first). :func:`drop_images` cuts Nodes' ``status.images``
lists out of raw JSON without changing anything else;
:func:`leading_resource_version` reads an object's own resourceVersion from
its first bytes; :func:`newer_or_equal` orders two resourceVersions.
"""

from __future__ import annotations

import re

JSON = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"

# Kubernetes serialises an object's metadata first: the first "name" and "resourceVersion"
# in a watch event's bytes are the object's own (kind and apiVersion carry neither).
NAME = re.compile(rb'"name":"((?:[^"\\]|\\.)*)"')
RESOURCE_VERSION = re.compile(rb'"resourceVersion":"([0-9]+)"')
HEAD = 512

_IMAGES = b',"images":['


def newer_or_equal(a: str | None, b: str | None) -> bool:
    """Whether resourceVersion ``a`` is not older than ``b``.

    Kubernetes calls resourceVersions opaque; etcd-backed servers hand out
    increasing integers, which this relies on to drop a watch event that is
    older than a write-through update. Anything non-numeric counts as newer.
    """
    if a is None or b is None:
        return True
    if a.isdigit() and b.isdigit():
        return int(a) >= int(b)
    return True


def drop_images(raw: bytes) -> bytes:
    """Cut every Node's ``status.images`` list out of raw JSON before it is decoded.

    The image list is most of a Node (about 8 KB of its 15) and kumaco never
    reads it. A non-empty list ends at the first ``}]`` after it begins: each
    entry is ``{"names":[...],"sizeBytes":N}`` and image names hold neither
    ``}`` nor ``]``; an empty one is ``[]``. The key cannot occur elsewhere: in
    strings its quotes would be escaped, and managedFields say ``f:images``. A
    cut is made only where what follows is ``,`` or ``}``; otherwise the input
    is returned unchanged. Works on one Node, a watch event or a LIST page.
    """
    if _IMAGES not in raw:
        return raw
    parts = []
    pos = 0
    while (start := raw.find(_IMAGES, pos)) >= 0:
        body = start + len(_IMAGES)
        end = body + 1 if raw[body : body + 1] == b"]" else raw.find(b"}]", body) + 2
        if end < 2 or raw[end : end + 1] not in (b",", b"}"):
            return raw  # not the shape expected: decode it whole
        parts.append(raw[pos:start])
        pos = end
    parts.append(raw[pos:])
    return b"".join(parts)


def leading_resource_version(raw: bytes) -> str | None:
    """The object's own resourceVersion, read from the first bytes of its JSON (or None)."""
    m = RESOURCE_VERSION.search(raw[:HEAD])
    return m.group(1).decode() if m else None
