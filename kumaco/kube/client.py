"""The HTTP client of kumaco's I/O edge: raw JSON to and from the Kubernetes API.

Contract
--------
* :class:`Kube` uses the official client for what it is best at -- the
  ``Configuration`` it loaded (:mod:`kumaco.kube.config`), authentication
  (client certificates, bearer tokens refreshed as they rotate, exec plugins)
  -- and sends raw JSON. The generated models are never built: a 5,000-node
  LIST decoded into models costs seconds and hundreds of MB, as raw dicts
  trimmed at once it costs a fraction (see docs/benchmarks.md).
* :meth:`Kube.request` retries per :func:`kumaco.kube.retry.retrying`;
  :meth:`Kube.request_raw` never retries (the caller's write decides).
* :meth:`Kube.watch` streams events from a resourceVersion and raises
  :class:`~kumaco.kube.errors.Expired` on 410.
* Every request carries the user agent given at construction
  (``kumaco/<version> (<identity>)``), so audit logs name the replica.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s_client

from kumaco.core.errors import error_text
from kumaco.kube.errors import ApiError, Expired, TransportError, api_error
from kumaco.kube.retry import RetryPolicy, retrying
from kumaco.kube.wire import JSON

log = logging.getLogger("kumaco.kube")


class _Connection(http.client.HTTPSConnection):
    """An HTTPS connection that may present another TLS server name (``tls-server-name``)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        context: ssl.SSLContext,
        server_name: str | None = None,
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls = context
        self._server_name = server_name

    def connect(self) -> None:
        if not self._server_name:
            super().connect()
            return
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


@dataclass
class Response:
    """An answer: status, headers, and either the whole body or the open stream."""

    status: int
    headers: http.client.HTTPMessage
    data: bytes = b""
    stream: http.client.HTTPResponse | None = None
    conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class Transport:
    """Keep-alive connections to the API server, one per thread, set up from the Configuration.

    The generated client's urllib3 pool costs about twice the CPU per request of
    a plain ``http.client`` connection (measured per status write: 0.86 ms through
    urllib3, 0.42 ms through this class, 0.37 ms for bare ``http.client``); on a
    small control plane every client millisecond is taken from kube-apiserver and
    etcd. TLS settings (CA, client certificate, verification, server name) and an
    HTTPS proxy come from the Configuration the official client loaded, so every
    kubeconfig it understands works here too.
    """

    def __init__(self, cfg: k8s_client.Configuration) -> None:
        url = urllib.parse.urlsplit(cfg.host)
        self.https = url.scheme == "https"
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if self.https else 80)
        self.base_path = url.path.rstrip("/")
        self.server_name = getattr(cfg, "tls_server_name", None) or None
        self.context: ssl.SSLContext | None = None
        if self.https:
            if cfg.verify_ssl:
                self.context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
                if cfg.assert_hostname is False:
                    self.context.check_hostname = False
            else:
                self.context = ssl._create_unverified_context()  # noqa: S323 - the kubeconfig asked for it
            if cfg.cert_file:
                self.context.load_cert_chain(cfg.cert_file, cfg.key_file)
        self.proxy = urllib.parse.urlsplit(cfg.proxy) if cfg.proxy else None
        self.proxy_headers = dict(cfg.proxy_headers or {})
        self._local = threading.local()

    def _new(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self.host, self.port
        if self.proxy is not None:
            host, port = self.proxy.hostname or "localhost", self.proxy.port or 3128
        conn: http.client.HTTPConnection
        if self.context is not None:
            conn = _Connection(
                host, port, timeout=timeout, context=self.context, server_name=self.server_name
            )
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        if self.proxy is not None:
            conn.set_tunnel(self.host, self.port, headers=self.proxy_headers)
        return conn

    def send(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float,
        stream: bool,
        repeated: Sequence[tuple[str, str]] = (),
    ) -> Response:
        """One request; a stale kept-alive connection is replaced once, transparently.

        ``repeated``: headers sent once per value (``Impersonate-Group``).
        """
        path = self.base_path + target
        for attempt in (0, 1):
            conn = None if stream else getattr(self._local, "conn", None)
            fresh = conn is None
            if conn is None:
                conn = self._new(timeout)
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                if repeated:
                    conn.putrequest(method, path)
                    for name, value in (*headers.items(), *repeated):
                        conn.putheader(name, value)
                    if body is not None:
                        conn.putheader("Content-Length", str(len(body)))
                    conn.endheaders(body)
                else:
                    conn.request(method, path, body=body, headers=dict(headers))
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):
                conn.close()
                if not stream:
                    self._local.conn = None
                if fresh or attempt == 1:
                    raise
                continue  # the server closed an idle connection: once more on a new one
            if stream:
                return Response(resp.status, resp.headers, stream=resp, conn=conn)
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                raise
            if resp.will_close:
                conn.close()
                self._local.conn = None
            else:
                self._local.conn = conn
            return Response(resp.status, resp.headers, data)
        raise AssertionError("unreachable")


class Kube:
    """Raw-JSON access to the API server, with the official client's configuration and auth."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        user_agent: str,
        *,
        retry: RetryPolicy | None = None,
        on_error: Callable[[str, int], None] | None = None,
        timeout: float = 30.0,
        impersonate: str | None = None,
        impersonate_groups: Sequence[str] = (),
    ) -> None:
        self.api = k8s_client.ApiClient(configuration)
        if impersonate:
            self.api.default_headers["Impersonate-User"] = impersonate
        self.repeated = tuple(("Impersonate-Group", g) for g in impersonate_groups)
        self.api.user_agent = user_agent
        self.transport = Transport(configuration)
        self.user_agent = user_agent
        self.retry = retry or RetryPolicy()
        self._on_error = on_error
        self.timeout = timeout

    def close(self) -> None:
        self.api.close()

    # ------------------------------------------------------------------ requests

    def _prepare(
        self, method: str, path: str, query: Mapping[str, str] | None
    ) -> tuple[str, dict[str, str]]:
        """URL and headers of one request: the client's default headers (user agent) and auth.

        What the generated client's ``param_serialize`` gives for a path without
        templates, without its generic serialisation on every call.
        ``auth_settings()`` still runs each time, so a rotated token (in-cluster,
        exec plugins) is refreshed by the client's own hook.
        """
        cfg = self.api.configuration
        headers = dict(self.api.default_headers)
        for auth in cfg.auth_settings().values():
            if auth["in"] == "header" and auth["value"]:
                headers[auth["key"]] = auth["value"]
        target = path
        if query:
            target += "?" + urllib.parse.urlencode(query)
        return target, headers

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
        stream: bool = False,
    ) -> Response:
        target, headers = self._prepare(method, path, query)
        headers["Accept"] = JSON
        data = None
        if body is not None:
            data = (
                body
                if isinstance(body, bytes)
                else json.dumps(body, separators=(",", ":")).encode()
            )
            headers["Content-Type"] = content_type
        t = timeout if timeout is not None else self.timeout
        try:
            resp = self.transport.send(method, target, headers, data, t, stream, self.repeated)
        except (OSError, http.client.HTTPException) as exc:
            self._count(method, 0)
            raise TransportError(f"{method} {path}: {exc}") from exc
        if resp.status >= 300:
            raw = resp.data
            if resp.stream is not None:
                try:
                    raw = resp.stream.read()
                except (OSError, http.client.HTTPException) as exc:
                    raise TransportError(f"{method} {path}: {exc}") from exc
                finally:
                    resp.close()
            self._count(method, resp.status)
            raise api_error(resp.status, raw, resp.headers)
        return resp

    def _count(self, verb: str, status: int) -> None:
        if self._on_error is not None:
            self._on_error(verb, status)

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
        retry: bool = True,
        shrink: Callable[[bytes], bytes] | None = None,
    ) -> Any:
        """One request, decoded JSON answer; retried per :func:`retrying` unless ``retry=False``.

        ``shrink`` may cut what the caller never reads out of the raw answer
        before it is decoded (e.g. the image lists of Nodes).
        """

        def once() -> Any:
            resp = self._send(method, path, query, body, content_type, timeout)
            if not resp.data:
                return None
            return json.loads(shrink(resp.data) if shrink is not None else resp.data)

        if not retry:
            return once()
        return retrying(self.retry, on_retry=self._log_retry(method, path))(once)

    def request_raw(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
    ) -> bytes:
        """One request, not retried, answering raw bytes (for callers that need little of them)."""
        return self._send(method, path, query, body, content_type, timeout).data

    @staticmethod
    def _log_retry(method: str, path: str) -> Callable[[BaseException, float], None]:
        def on_retry(exc: BaseException, delay: float) -> None:
            log.warning(
                "API request failed; retrying",
                extra={
                    "verb": method,
                    "path": path,
                    "error": error_text(exc),
                    "retry_in_s": round(delay, 2),
                },
            )

        return on_retry

    # ------------------------------------------------------------------ collections

    def list_all(
        self, path: str, label_selector: str = "", page: int = 250
    ) -> tuple[list[dict[str, Any]], str]:
        """A paginated LIST, all at once; returns the items and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        rv: str | None = None
        for chunk, chunk_rv in self.list_pages(path, label_selector, page):
            items.extend(chunk)
            rv = chunk_rv
        assert rv is not None
        return items, rv

    def list_pages(
        self,
        path: str,
        label_selector: str = "",
        page: int = 250,
        shrink: Callable[[bytes], bytes] | None = None,
    ) -> Iterator[tuple[list[dict[str, Any]], str | None]]:
        """LIST page by page (bounded memory); the last page carries the resourceVersion."""
        query: dict[str, str] = {"limit": str(page)}
        if label_selector:
            query["labelSelector"] = label_selector
        while True:
            doc = self.request("GET", path, query, shrink=shrink)
            cont = (doc.get("metadata") or {}).get("continue")
            rv = None if cont else str(doc["metadata"]["resourceVersion"])
            yield doc.get("items") or [], rv
            if not cont:
                return
            query["continue"] = cont

    def watch(
        self,
        path: str,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        known: Callable[[bytes], str | None] | None = None,
        shrink: Callable[[bytes], bytes] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events from ``resource_version``; raises :class:`Expired` on 410.

        ``known`` may recognise an event from its raw bytes without decoding it
        (e.g. the echo of kumaco's own write) and return its resourceVersion:
        such events are yielded as ``{"type": "KNOWN", "resourceVersion": rv}``.
        """
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            query["labelSelector"] = label_selector
        try:
            resp = self._send("GET", path, query, timeout=timeout_seconds + 30, stream=True)
        except ApiError as exc:
            if exc.status == 410:
                raise Expired(exc.message) from exc
            raise
        assert resp.stream is not None
        try:
            buf = b""
            while chunk := resp.stream.read1(1 << 16):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    rv = known(line) if known is not None else None
                    if rv is not None:
                        yield {"type": "KNOWN", "resourceVersion": rv}
                        continue
                    event = json.loads(shrink(line) if shrink is not None else line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        if status.get("code") == 410:
                            raise Expired(str(status.get("message", "")))
                        self._count("WATCH", int(status.get("code") or 0))
                        raise ApiError(
                            int(status.get("code") or 500),
                            str(status.get("reason", "")),
                            str(status.get("message", "")),
                        )
                    yield event
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise TransportError(f"watch {path}: {exc}") from exc
        finally:
            resp.close()
