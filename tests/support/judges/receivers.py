"""Real receivers of notifications on loopback: an HTTP endpoint and an SMTP server.

Contract: :class:`HttpReceiver` is a threaded HTTP server on 127.0.0.1 that records
every request (method, path, headers, body) in arrival order and answers with
:attr:`~HttpReceiver.status`; with :attr:`~HttpReceiver.silent` it accepts and never
answers (an endpoint that hangs), with :attr:`~HttpReceiver.delay` it answers late.
Its :meth:`~HttpReceiver.url` is the Apprise URL (``json://`` or ``form://``) that
reaches it. :class:`SmtpReceiver` is aiosmtpd's real SMTP server on 127.0.0.1 that
keeps every message it accepts (envelope and parsed email); :meth:`~SmtpReceiver.url` is
Apprise's ``mailto://`` for it. Both are context managers and wait for what is expected
with a deadline (:meth:`wait_for`), never by sleeping a fixed time.
"""

from __future__ import annotations

import email
import email.message
import email.policy
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.env.ports import free_port


@dataclass(frozen=True)
class Received:
    """One request an :class:`HttpReceiver` got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default=0.0)

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.body.decode()).items()}


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


class HttpReceiver:
    """A loopback HTTP endpoint recording what it receives; see the module contract."""

    def __init__(self, status: int = 200, silent: bool = False, delay: float = 0.0) -> None:
        self.status = status
        self.silent = silent
        self.delay = delay
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.received.append(
                        Received(
                            "POST", self.path, dict(self.headers.items()), body, time.monotonic()
                        )
                    )
                if receiver.silent:
                    receiver._release.wait(60)
                    return
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, scheme: str = "json", path: str = "/hook", query: str = "") -> str:
        q = f"?{query}" if query else ""
        return f"{scheme}://127.0.0.1:{self.port}{path}{q}"

    def bodies(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        _wait(lambda: len(self.bodies()) >= count, timeout, f"{count} request(s)")
        return self.bodies()

    def __enter__(self) -> HttpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        _t: type[BaseException] | None,
        _e: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()


class SmtpReceiver:
    """aiosmtpd's SMTP server on loopback, keeping every message; see the module contract."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        receiver = self

        class Handler:
            async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
                parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
                assert isinstance(parsed, email.message.EmailMessage)
                receiver.messages.append(parsed)
                receiver.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
                return "250 Message accepted for delivery"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)

    def url(self, to: str = "oncall@example.com", sender: str = "kumaco@example.com") -> str:
        return f"mailto://127.0.0.1:{self.port}?to={to}&from={sender}&mode=insecure&smtp=127.0.0.1"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[email.message.EmailMessage]:
        _wait(lambda: len(self.messages) >= count, timeout, f"{count} email(s)")
        return list(self.messages)

    def __enter__(self) -> SmtpReceiver:
        self.controller.start()
        return self

    def __exit__(
        self,
        _t: type[BaseException] | None,
        _e: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.controller.stop()
