"""The HTTP client of kumaco's I/O edge: raw JSON to and from the Kubernetes API.

Contract
--------
* :class:`Kube` sends requests through the official client's urllib3 pool
  (``kubernetes.client.rest.RESTClientObject(...).pool_manager``): TLS (CA, client
  certificate, verification, ``tls-server-name``), proxies (``http``, ``https`` and,
  with PySocks, ``socks5`` -- IPv6 hosts bracketed in CONNECT) and authentication
  (bearer tokens refreshed through the Configuration's own hook, exec plugins) are
  the library's. Which proxy is client-go's decision (:mod:`kumaco.kube.proxy`):
  kubeconfig ``proxy-url``, else ``HTTPS_PROXY`` with Go's ``NO_PROXY`` rules.
  Bodies are raw JSON bytes; the generated models are never built (a 5,000-node
  LIST decoded into models costs seconds and hundreds of MB).
* urllib3 never retries (``retries=False``). A failure without an answer is a
  :class:`~kumaco.kube.errors.TransportError` that says whether the request may
  have reached the server (``sent``) and whether the connection fell silent
  (``silent``). After a connection was silent for :data:`DEAD_AFTER` seconds or
  more (a watch past its silence bound, a request past a long enough timeout) every
  idle pooled connection is closed too -- they most likely share its dead path -- so
  the next request opens a fresh one. A shorter timeout (a write cut short by its
  fencing deadline on a slow network) proves nothing about the path: the pool is kept.
* :meth:`Kube.request` retries per :func:`kumaco.kube.retry.retrying` for its
  method: a write is never sent twice once it may have reached the server.
  :meth:`Kube.request_raw` never retries (the caller's write decides).
* ``timeout`` bounds a request's total time (connect, send, answer).
* :meth:`Kube.watch` streams events from a resourceVersion and raises
  :class:`~kumaco.kube.errors.Expired` on 410; when no byte arrives for
  ``silence`` seconds (bookmarks come every minute) it raises a silent
  :class:`~kumaco.kube.errors.TransportError`, and the caller resumes.
* Every request carries the user agent given at construction
  (``kumaco/<version> (<identity>)``), so audit logs name the replica, and the
  impersonation headers (one ``Impersonate-Group`` header per group).
* ``observe(verb, resource, code, seconds)`` is called once per request with
  the Kubernetes verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE), the resource
  (``nodes``, ``nodes/status``, ``leases`` ...), the HTTP status (``<error>``
  when there was none) and the time until the answer's headers.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import queue
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import urllib3
from kubernetes import client as k8s_client
from kubernetes.utils.keepalive import tcp_keepalive_socket_options
from urllib3.exceptions import (
    ClosedPoolError,
    ConnectTimeoutError,
    EmptyPoolError,
    HTTPError,
    LocationParseError,
    NewConnectionError,
    ProxyError,
    ReadTimeoutError,
)

from kumaco.core.errors import error_text
from kumaco.kube.errors import ApiError, Expired, TransportError, api_error
from kumaco.kube.proxy import choose_proxy
from kumaco.kube.retry import RetryPolicy, retrying
from kumaco.kube.wire import JSON

log = logging.getLogger("kumaco.kube")

#: Connecting (TCP, proxy tunnel) may take at most this long, whatever the request's timeout.
CONNECT_TIMEOUT = 10.0
#: Failures raised before a byte of the request was written: safe to retry for any method.
#: (NameResolutionError is a NewConnectionError; ProxyError: the tunnel was refused.)
NOT_SENT: tuple[type[BaseException], ...] = (
    ConnectTimeoutError,
    NewConnectionError,
    ProxyError,
    EmptyPoolError,
    ClosedPoolError,
    LocationParseError,
)

#: No byte for this long on a request means its path may be dead (a healthy API server
#: answers a small request in milliseconds; big answers stream): drop idle connections.
DEAD_AFTER = 5.0

Observe = Callable[[str, str, str, float], None]


@dataclass
class Response:
    """An answer: status, headers, and either the whole body or the open stream."""

    status: int
    headers: Mapping[str, str]
    data: bytes = b""
    stream: urllib3.BaseHTTPResponse | None = None

    def close(self) -> None:
        """Close the stream's connection for good (a watch is never handed back half-read)."""
        if self.stream is not None:
            self.stream.close()
            self.stream.release_conn()


def describe(method: str, path: str, query: Mapping[str, str] | None) -> tuple[str, str]:
    """The Kubernetes verb and resource of a request (``("PATCH", "nodes/status")``)."""
    segments = [s for s in path.split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]
    elif segments[:1] == ["apis"]:
        rest = segments[3:]
    else:
        return method, ""
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    resource = rest[0] if rest else ""
    if len(rest) >= 3:
        resource += "/" + rest[2]
    verb = method
    if method == "GET":
        if (query or {}).get("watch") in ("true", "1"):
            verb = "WATCH"
        elif len(rest) == 1:
            verb = "LIST"
    return verb, resource


class Kube:
    """Raw-JSON access to the API server through the official client's urllib3 pool."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        user_agent: str,
        *,
        retry: RetryPolicy | None = None,
        observe: Observe | None = None,
        timeout: float = 30.0,
        impersonate: str | None = None,
        impersonate_groups: Sequence[str] = (),
        pool_size: int = 16,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.configuration = configuration
        self.user_agent = user_agent
        self.retry = retry or RetryPolicy()
        self._observe = observe
        self.timeout = timeout
        self.headers = urllib3.HTTPHeaderDict({"User-Agent": user_agent, "Accept": JSON})
        if impersonate:
            self.headers["Impersonate-User"] = impersonate
        for group in impersonate_groups:
            self.headers.add("Impersonate-Group", group)
        self.proxy = choose_proxy(
            configuration.host, configuration.proxy or None, os.environ if env is None else env
        )
        cfg = copy.copy(configuration)  # shallow: shares the token and its refresh hook
        proxy = self.proxy.proxy
        if proxy is not None and proxy.startswith("socks5://"):
            proxy = "socks5h://" + proxy[len("socks5://") :]  # Go resolves names at the proxy
        cfg.proxy = proxy
        cfg.no_proxy = None
        cfg.proxy_headers = None
        if proxy is not None and not proxy.startswith("socks"):
            u = urllib.parse.urlsplit(proxy)
            if u.username is not None:
                # urllib3 ignores user:password in a proxy URL; Go sends them as Basic auth.
                user, password = u.username, u.password or ""
                auth = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
                cfg.proxy_headers = urllib3.make_headers(proxy_basic_auth=auth)
        cfg.retries = False
        cfg.connection_pool_maxsize = pool_size
        cfg.socket_options = tcp_keepalive_socket_options()  # + urllib3's (TCP_NODELAY)
        self._manager = k8s_client.rest.RESTClientObject(cfg).pool_manager
        base = urllib.parse.urlsplit(configuration.host)
        self._origin = f"{base.scheme}://{base.netloc}"
        self._prefix = base.path.rstrip("/")
        # One pool for the API server, used directly (no per-request URL and pool-key work),
        # except for plain http through a forwarding proxy, where the manager adds the
        # proxy's headers and absolute URLs.
        self._forwarding = base.scheme == "http" and proxy is not None and "socks" not in proxy
        self._pool = self._manager.connection_from_url(configuration.host)

    def close(self) -> None:
        self._manager.clear()

    # ------------------------------------------------------------------ requests

    def _headers(self) -> urllib3.HTTPHeaderDict:
        """The default headers (user agent, impersonation) and auth, fresh for each request.

        ``auth_settings()`` runs each time, so a rotated token (in-cluster, exec
        plugins) is refreshed by the client's own hook.
        """
        headers = self.headers.copy()
        settings = cast(Mapping[str, Mapping[str, Any]], self.configuration.auth_settings())
        for auth in settings.values():
            if auth["in"] == "header" and auth["value"]:
                headers[str(auth["key"])] = str(auth["value"])
        return headers

    def _urlopen(
        self,
        method: str,
        target: str,
        headers: urllib3.HTTPHeaderDict,
        body: bytes | None,
        timeout: urllib3.Timeout,
        stream: bool,
    ) -> urllib3.BaseHTTPResponse:
        url = self._prefix + target
        common: dict[str, Any] = {
            "body": body,
            "headers": headers,
            "retries": False,
            "redirect": False,
            "timeout": timeout,
            "preload_content": not stream,
        }
        if self._forwarding:
            return self._manager.urlopen(method, self._origin + url, **common)
        return self._pool.urlopen(
            method, url, release_conn=not stream, assert_same_host=False, **common
        )

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
        silence: float | None = None,
    ) -> Response:
        """One request; ``silence`` makes it a stream whose reads time out after that long."""
        headers = self._headers()
        data = None
        if body is not None:
            data = (
                body
                if isinstance(body, bytes)
                else json.dumps(body, separators=(",", ":")).encode()
            )
            headers["Content-Type"] = content_type
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        stream = silence is not None
        if silence is not None:
            limits = urllib3.Timeout(connect=min(CONNECT_TIMEOUT, silence), read=silence)
        else:
            t = timeout if timeout is not None else self.timeout
            limits = urllib3.Timeout(connect=min(CONNECT_TIMEOUT, t), total=t)
        verb, resource = describe(method, path, query)
        started = time.monotonic()
        try:
            raw = self._urlopen(method, target, headers, data, limits, stream)
        except NOT_SENT as exc:
            self._count(verb, resource, "<error>", started)
            raise TransportError(f"{method} {path}: {exc}", sent=False) from exc
        except (HTTPError, OSError) as exc:
            self._count(verb, resource, "<error>", started)
            silent = isinstance(exc, ReadTimeoutError)
            if silent and time.monotonic() - started >= DEAD_AFTER:
                self.drop_idle_connections()
            raise TransportError(f"{method} {path}: {exc}", silent=silent) from exc
        self._count(verb, resource, str(raw.status), started)
        resp = Response(raw.status, raw.headers, raw.data if not stream else b"")
        if stream:
            resp.stream = raw
        if raw.status >= 300:
            payload = resp.data
            if stream:
                try:
                    payload = raw.read()
                except (HTTPError, OSError) as exc:
                    raise TransportError(f"{method} {path}: {exc}") from exc
                finally:
                    resp.close()
            raise api_error(raw.status, payload, raw.headers)
        return resp

    def drop_idle_connections(self) -> None:
        """Close every idle pooled connection; the next request opens a fresh one.

        Called when a connection fell silent: the others were opened over the same
        path and may be just as dead, and a request on a dead connection costs a
        whole timeout. (The pool's own check only notices connections the peer closed.)
        """
        slots: list[Any] = []
        pool_queue = self._pool.pool
        if pool_queue is None:
            return
        with contextlib.suppress(queue.Empty):
            while True:
                slots.append(pool_queue.get(block=False))
        for conn in slots:
            if conn is not None:
                conn.close()  # reconnects on its next use
        for conn in slots:
            with contextlib.suppress(queue.Full):
                pool_queue.put(conn, block=False)

    def _count(self, verb: str, resource: str, code: str, started: float) -> None:
        if self._observe is not None:
            self._observe(verb, resource, code, time.monotonic() - started)

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

        A write is retried only where it cannot have reached the server (see
        :mod:`kumaco.kube.retry`). ``shrink`` may cut what the caller never reads
        out of the raw answer before it is decoded (e.g. the image lists of Nodes).
        """

        def once() -> Any:
            resp = self._send(method, path, query, body, content_type, timeout)
            if not resp.data:
                return None
            return json.loads(shrink(resp.data) if shrink is not None else resp.data)

        if not retry:
            return once()
        return retrying(self.retry, on_retry=self._log_retry(method, path), method=method)(once)

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
                    "retryInSeconds": round(delay, 2),
                },
            )

        return on_retry

    # ------------------------------------------------------------------ collections

    def list_all(
        self, path: str, label_selector: str = "", page: int = 250, *, field_selector: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """A paginated LIST, all at once; returns the items and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        rv: str | None = None
        for chunk, chunk_rv in self.list_pages(
            path, label_selector, page, field_selector=field_selector
        ):
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
        *,
        field_selector: str = "",
    ) -> Iterator[tuple[list[dict[str, Any]], str | None]]:
        """LIST page by page (bounded memory); the last page carries the resourceVersion."""
        query: dict[str, str] = {"limit": str(page)}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
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
        silence: float = 130.0,
        *,
        field_selector: str = "",
        initial_events: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events from ``resource_version``; raises :class:`Expired` on 410.

        ``initial_events`` (with ``resource_version`` empty): a streaming list
        (KEP-3157, ``sendInitialEvents``): every object first as an ``ADDED`` event, then
        a bookmark annotated ``k8s.io/initial-events-end``, then the changes, on one
        connection -- no LIST, so no resourceVersion that ages while a long LIST runs.

        Bookmarks are requested (the API server sends one about every minute), so
        ``silence`` seconds without a byte mean the connection is dead: a
        :class:`TransportError` with ``silent`` set is raised and the caller resumes
        from its last resourceVersion. ``known`` may recognise an event from its raw
        bytes without decoding it (e.g. the echo of kumaco's own write) and return
        its resourceVersion: such events are yielded as
        ``{"type": "KNOWN", "resourceVersion": rv}``.
        """
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if initial_events:
            query.update(sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        try:
            resp = self._send("GET", path, query, silence=silence)
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
                        raise ApiError(
                            int(status.get("code") or 500),
                            str(status.get("reason", "")),
                            str(status.get("message", "")),
                        )
                    yield event
        except ReadTimeoutError as exc:
            self.drop_idle_connections()
            raise TransportError(
                f"watch {path}: no byte for {silence:g}s: the connection is dead", silent=True
            ) from exc
        except (HTTPError, OSError, ValueError) as exc:
            raise TransportError(f"watch {path}: {exc}") from exc
        finally:
            resp.close()
