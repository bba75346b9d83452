"""Logs, metrics and health probes of ``kumaco run``.

Contract:

* :func:`setup_logging` configures the root logger once: JSON lines through
  python-json-logger, or a readable text form. A JSON line is one object:
  ``time`` (RFC 3339, UTC, milliseconds: ``2026-11-30T23:07:10.447Z``),
  ``level`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``), ``logger``, ``msg``
  (the fixed message), ``replica`` (the pod's identity), then the structured
  fields passed as ``extra=``, every key in lowerCamelCase (as Kubernetes'
  structured logging); a logged exception adds ``exception`` (its traceback).
  Values go in fields (window, node, namespace, reason, identity), never into
  ``msg``. The schema is stable (:data:`LOG_KEYS`); docs/observability.md lists the keys.
* :func:`serve_metrics` exposes the private registry of
  :class:`kumaco.controller.metrics.Metrics` (no global default registry).
* :class:`HealthServer` answers ``/healthz`` (the process and its election
  loop are alive) and ``/readyz`` (the caches are synced -- true on followers
  too) from callables it is given.
"""

from __future__ import annotations

import http.server
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from prometheus_client import start_http_server
from pythonjsonlogger.json import JsonFormatter

from kumaco.controller.metrics import Metrics

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


#: The keys every JSON log line starts with, in this order (``replica`` when known).
LOG_KEYS = ("time", "level", "logger", "msg", "replica")


def utc_time(record: logging.LogRecord) -> str:
    """``2026-11-30T23:07:10.447Z``: RFC 3339, UTC, milliseconds (truncated, as Go's)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


class UTCJsonFormatter(JsonFormatter):
    """python-json-logger with ``time`` as :func:`utc_time`."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return utc_time(record)


def json_formatter(identity: str = "") -> logging.Formatter:
    """The JSON-lines formatter of :func:`setup_logging` (see the module contract)."""
    return UTCJsonFormatter(
        "{asctime}{levelname}{name}{message}",
        style="{",
        rename_fields={
            "asctime": "time",
            "levelname": "level",
            "name": "logger",
            "message": "msg",
            "exc_info": "exception",
        },
        static_fields={"replica": identity} if identity else None,
        timestamp=False,
    )


class TextFormatter(logging.Formatter):
    """``time level logger message key=value ...`` for humans (time as in the JSON form)."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return utc_time(record)

    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        extras = " ".join(f"{k}={v!r}" for k, v in record.__dict__.items() if k not in _STANDARD)
        return f"{base} {extras}" if extras else base


def setup_logging(fmt: str, level: str, identity: str = "") -> None:
    """Configure the root logger (JSON by default) for the whole process."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(json_formatter(identity))
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def serve_metrics(metrics: Metrics, address: tuple[str, int]) -> Any:
    """Serve ``/metrics`` in a daemon thread; returns the server (``shutdown()`` to stop)."""
    server, _thread = start_http_server(address[1], addr=address[0], registry=metrics.registry)
    return server


class HealthServer:
    """``/healthz`` and ``/readyz`` on their own port, in a daemon thread."""

    def __init__(
        self, address: tuple[str, int], healthy: Callable[[], bool], ready: Callable[[], bool]
    ) -> None:
        checks = {"/healthz": healthy, "/livez": healthy, "/readyz": ready}

        class Handler(http.server.BaseHTTPRequestHandler):
            server_version = "kumaco"
            routes: ClassVar[dict[str, Callable[[], bool]]] = checks

            def do_GET(self) -> None:
                check = self.routes.get(self.path.split("?", 1)[0])
                if check is None:
                    self.send_error(404)
                    return
                ok = check()
                body = b"ok\n" if ok else b"not ok\n"
                self.send_response(200 if ok else 503)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(address, Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
