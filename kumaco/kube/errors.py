"""What can go wrong talking to the API server, as three exception types.

Contract: :class:`ApiError` is an answer with an error status (its ``status``,
``reason``, ``message`` and ``Retry-After``); :class:`TransportError` is no
answer at all (connection refused or reset, TLS failure, timeout), saying whether
the request may have reached the server (``sent``) and whether the connection
fell silent (``silent``: a read timeout);
:class:`Expired` is a watch whose resourceVersion is too old (410): relist.
:func:`api_error` builds an :class:`ApiError` from a response's status, body
and headers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email.message import Message

Headers = Mapping[str, str] | Message

RETRYABLE = frozenset({429, 500, 502, 503, 504})


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(
        self, status: int, reason: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE


class TransportError(Exception):
    """No answer: connection refused or reset, TLS failure, timeout.

    ``sent``: the request's bytes may have reached the server, so a write may have
    been applied (its outcome is unknown): it must not be sent again. False only
    when the failure happened before anything was written (no connection, the
    proxy refused the tunnel). ``silent``: no byte came back within the read
    timeout (a dead or blackholed connection).
    """

    def __init__(self, message: str, *, sent: bool = True, silent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.silent = silent


class Expired(Exception):
    """A watch's resourceVersion is too old (410 Gone): relist."""


def api_error(status: int, raw: bytes, headers: Headers) -> ApiError:
    """The error an answer with status ``status`` and body ``raw`` stands for."""
    reason, message = "", raw[:500].decode("utf-8", "replace")
    try:
        doc = json.loads(raw)
        if isinstance(doc, dict):
            reason = str(doc.get("reason", ""))
            message = str(doc.get("message", message))
    except ValueError:
        pass
    return ApiError(status, reason, message, retry_after(headers))


def retry_after(headers: Headers) -> float | None:
    """The ``Retry-After`` header in seconds, if present and numeric."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None
