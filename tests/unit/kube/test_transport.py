"""kumaco's transport (kumaco.kube.client.Kube) against small loopback servers and proxies.

Each fake server counts the requests it read *in full*, so "delivered twice" is
measured where it matters: at the receiving end. The proxies are fakes too
(an HTTP CONNECT proxy that records the CONNECT and refuses it, a SOCKS5 proxy
that records the name it was asked for and tunnels to loopback): they bind and
connect to 127.0.0.1 only. The real forward proxy (tinyproxy) and the real API
server are in tests/e2e/test_network.py.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from kubernetes import client as k8s_client

from kumaco.kube.client import Kube, describe
from kumaco.kube.errors import TransportError
from kumaco.kube.proxy import ProxyConfigError
from kumaco.kube.retry import RetryPolicy

LOOPBACK = "127.0.0.1"
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def _read_request(conn: socket.socket, buf: bytearray) -> bytes | None:
    """One whole request (headers and Content-Length body) from ``conn``; None at EOF."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, _rest = bytes(buf).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    total = len(head) + 4 + length
    while len(buf) < total:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    request = bytes(buf[:total])
    del buf[:total]
    return request


def listen(handle: Callable[[socket.socket], None]) -> tuple[socket.socket, int]:
    """A loopback listener handing each connection to ``handle`` in its own thread."""
    sock = socket.socket()
    sock.bind((LOOPBACK, 0))
    sock.listen(16)

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return sock, sock.getsockname()[1]


@dataclass
class Server:
    """A loopback HTTP server; ``mode`` says what it does with each request it read in full.

    ok: answer 200. close: close unanswered. stale: answer the first request of a
    connection, close the second unanswered. hang: never answer. watch: answer with a
    chunked stream carrying one event, then stay silent.
    """

    mode: str = "ok"
    requests: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        self.sock, self.port = listen(self._serve)

    def _serve(self, conn: socket.socket) -> None:
        self.conns.append(conn)
        buf = bytearray()
        served = 0
        with contextlib.suppress(OSError):
            while (request := _read_request(conn, buf)) is not None:
                self.requests.append(request)
                served += 1
                if self.mode == "close" or (self.mode == "stale" and served == 2):
                    conn.close()
                    return
                if self.mode == "hang":
                    self.stop.wait(30)
                    return
                if self.mode == "watch":
                    event = b'{"type":"ADDED","object":{"metadata":{"resourceVersion":"7"}}}\n'
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + f"{len(event):x}\r\n".encode()
                        + event
                        + b"\r\n"
                    )
                    self.stop.wait(30)
                    return
                conn.sendall(OK)

    def methods(self) -> list[str]:
        return [r.split(b" ", 1)[0].decode() for r in self.requests]

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.close()


@pytest.fixture
def server() -> Iterator[Callable[[str], Server]]:
    made: list[Server] = []

    def make(mode: str = "ok") -> Server:
        made.append(Server(mode))
        return made[-1]

    yield make
    for s in made:
        s.close()


def kube(host: str, *, proxy: str = "", env: dict[str, str] | None = None, **kw: object) -> Kube:
    cfg = k8s_client.Configuration(host=host, proxy="", no_proxy="")
    cfg.proxy = proxy  # as a kubeconfig proxy-url would set it
    # The deadline only bounds a run gone wrong: six attempts must fit however slow the machine.
    kw.setdefault("retry", RetryPolicy(attempts=6, initial=0.01, maximum=0.02, deadline=120))
    return Kube(cfg, "kumaco-test/1 (unit)", env=env or {}, **kw)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- write once


@pytest.mark.parametrize("mode", ["close", "stale", "hang"])
@pytest.mark.parametrize("method", ["PATCH", "POST", "PUT"])
def test_a_write_reaches_the_server_at_most_once(
    server: Callable[[str], Server], mode: str, method: str
) -> None:
    s = server(mode)
    # Only the hang is ended by the timeout (whatever the machine's speed, it never answers);
    # the others get one long enough that a slow server thread is never taken for a hang.
    k = kube(f"http://{LOOPBACK}:{s.port}", timeout=0.5 if mode == "hang" else 30)
    if mode == "stale":
        k.request("GET", "/api/v1/nodes/a")  # leaves a kept-alive connection the server drops
    with pytest.raises(TransportError) as failed:
        k.request(method, "/api/v1/nodes/a/status", body={"status": {}})
    assert failed.value.sent is True
    assert failed.value.silent is (mode == "hang")
    assert s.methods().count(method) == 1, s.methods()
    k.close()


@pytest.mark.parametrize("mode", ["close", "stale"])
def test_a_read_is_retried(server: Callable[[str], Server], mode: str) -> None:
    s = server(mode)
    k = kube(f"http://{LOOPBACK}:{s.port}", timeout=30)  # the server closes: no timeout is hit
    if mode == "stale":
        k.request("GET", "/api/v1/nodes/a")
        assert k.request("GET", "/api/v1/nodes/a") == {}  # read twice, answered the 2nd time
        assert s.methods() == ["GET", "GET", "GET"]
    else:
        with pytest.raises(TransportError):
            k.request("GET", "/api/v1/nodes/a")
        assert s.methods() == ["GET"] * 6  # every attempt of the policy
    k.close()


def test_no_connection_means_not_sent() -> None:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens
    k = kube(f"http://{LOOPBACK}:{port}", retry=RetryPolicy(attempts=1))
    with pytest.raises(TransportError) as failed:
        k.request("PATCH", "/api/v1/nodes/a/status", body={})
    assert failed.value.sent is False


def test_headers_user_agent_and_one_impersonate_group_header_per_group(
    server: Callable[[str], Server],
) -> None:
    s = server("ok")
    k = kube(
        f"http://{LOOPBACK}:{s.port}",
        impersonate="alice",
        impersonate_groups=("team-a", "team-b"),
    )
    k.request("GET", "/api/v1/nodes", {"limit": "1"})
    (request,) = s.requests
    lines = request.decode().split("\r\n")
    assert lines[0] == "GET /api/v1/nodes?limit=1 HTTP/1.1"
    assert "User-Agent: kumaco-test/1 (unit)" in lines
    assert "Impersonate-User: alice" in lines
    assert [x for x in lines if x.startswith("Impersonate-Group:")] == [
        "Impersonate-Group: team-a",
        "Impersonate-Group: team-b",
    ]


def test_every_request_is_observed_with_its_verb_resource_and_code(
    server: Callable[[str], Server],
) -> None:
    s = server("ok")
    seen: list[tuple[str, str, str]] = []
    k = kube(f"http://{LOOPBACK}:{s.port}", observe=lambda v, r, c, _t: seen.append((v, r, c)))
    k.request("GET", "/api/v1/nodes")
    k.request("PATCH", "/api/v1/nodes/a/status", body={})
    k.request("POST", "/apis/events.k8s.io/v1/namespaces/m/events", body={})
    assert seen == [
        ("LIST", "nodes", "200"),
        ("PATCH", "nodes/status", "200"),
        ("POST", "events", "200"),
    ]
    assert describe("GET", "/apis/coordination.k8s.io/v1/namespaces/m/leases/k", None) == (
        "GET",
        "leases",
    )
    assert describe("GET", "/api/v1/namespaces/m/configmaps", {"watch": "true"}) == (
        "WATCH",
        "configmaps",
    )
    assert describe("GET", "/api/v1/namespaces/m", None) == ("GET", "namespaces")


# ----------------------------------------------------------------------------- watches


def test_a_silent_watch_is_reported_after_the_silence_bound(
    server: Callable[[str], Server],
) -> None:
    s = server("watch")
    k = kube(f"http://{LOOPBACK}:{s.port}")
    events = []
    started = time.monotonic()
    # The silence bound is a real wait, so it is long enough (5 s) for a loaded machine to
    # deliver the first event within it; the server then stays silent for 30 s: the silence
    # is reported before the server ends the stream, and never before the bound.
    stream = k.watch("/api/v1/nodes", "1", silence=5.0)
    events.append(next(stream))
    with pytest.raises(TransportError) as failed:
        next(stream)
    took = time.monotonic() - started
    assert failed.value.silent is True
    assert [e["type"] for e in events] == ["ADDED"]
    assert 5.0 <= took < 30, took


# ----------------------------------------------------------------------------- proxies


@dataclass
class ConnectProxy:
    """A fake HTTP proxy on loopback: records each CONNECT request and refuses it (502)."""

    heads: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock, self.port = listen(self._refuse)

    def _refuse(self, conn: socket.socket) -> None:
        with conn:
            request = _read_request(conn, bytearray())
            if request is not None:
                self.heads.append(request.decode())
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def connect_proxy() -> Iterator[ConnectProxy]:
    p = ConnectProxy()
    yield p
    p.sock.close()


def test_an_ipv6_server_behind_a_proxy_is_bracketed_in_the_connect(
    connect_proxy: ConnectProxy,
) -> None:
    k = kube("https://[fd00::1]:6443", proxy=f"http://{LOOPBACK}:{connect_proxy.port}")
    with pytest.raises(TransportError) as failed:
        k.request("GET", "/version", retry=False)
    assert failed.value.sent is False  # the tunnel was refused: the API server saw nothing
    (head,) = connect_proxy.heads
    assert head.startswith("CONNECT [fd00::1]:6443 HTTP/1.")


def test_proxy_credentials_in_the_url_become_proxy_authorization(
    connect_proxy: ConnectProxy,
) -> None:
    url = f"http://us%40er:se%3Acret@{LOOPBACK}:{connect_proxy.port}"
    k = kube("https://kubernetes.test:6443", proxy=url)
    with pytest.raises(TransportError):
        k.request("GET", "/version", retry=False)
    (head,) = connect_proxy.heads
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:])
    }
    assert headers["proxy-authorization"] == "Basic " + base64.b64encode(b"us@er:se:cret").decode()
    assert head.startswith("CONNECT kubernetes.test:6443 ")


def test_https_proxy_from_the_environment_and_no_proxy(connect_proxy: ConnectProxy) -> None:
    proxy = f"http://{LOOPBACK}:{connect_proxy.port}"
    through = kube("https://api.corp.test:6443", env={"HTTPS_PROXY": proxy})
    assert (through.proxy.proxy, through.proxy.source) == (proxy, "environment")
    with pytest.raises(TransportError):
        through.request("GET", "/version", retry=False)
    assert connect_proxy.heads[0].startswith("CONNECT api.corp.test:6443 ")
    env = {"HTTPS_PROXY": proxy, "NO_PROXY": "10.96.0.0/12,.corp.test"}
    direct = kube("https://api.corp.test:6443", env=env)
    assert (direct.proxy.proxy, direct.proxy.source) == (None, "no_proxy")


def test_an_unusable_proxy_url_is_a_clear_error() -> None:
    with pytest.raises(
        ProxyConfigError, match=r"kubeconfig proxy-url: unsupported proxy scheme 'ftp'"
    ):
        kube("https://kubernetes.test:6443", proxy="ftp://proxy:21")


class Socks5:
    """A fake SOCKS5 proxy on loopback: records the destination asked for, tunnels to ``target``."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.asked: list[tuple[str, int]] = []
        self.sock, self.port = listen(self._tunnel)

    @staticmethod
    def _exactly(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _tunnel(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            _ver, count = self._exactly(conn, 2)
            self._exactly(conn, count)
            conn.sendall(b"\x05\x00")  # no authentication
            _ver, _cmd, _rsv, atyp = self._exactly(conn, 4)
            if atyp == 3:  # a name, resolved here (socks5h)
                name = self._exactly(conn, self._exactly(conn, 1)[0]).decode()
            else:
                name = socket.inet_ntoa(self._exactly(conn, 4))
            (port,) = struct.unpack("!H", self._exactly(conn, 2))
            self.asked.append((name, port))
            upstream = socket.create_connection((LOOPBACK, self.target))  # loopback only
            conn.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("0.0.0.0") + b"\x00\x00")
            with upstream:
                request = _read_request(conn, bytearray())
                if request is not None:
                    upstream.sendall(request)
                    conn.sendall(upstream.recv(65536))


def test_a_socks5_proxy_url_resolves_names_at_the_proxy(server: Callable[[str], Server]) -> None:
    s = server("ok")
    socks = Socks5(s.port)
    try:
        k = kube("http://kubernetes.test:6443", proxy=f"socks5://{LOOPBACK}:{socks.port}")
        assert k.request("GET", "/version", retry=False) == {}
        assert socks.asked == [("kubernetes.test", 6443)]  # the name, as Go's socks5 does
        assert s.methods() == ["GET"]
    finally:
        socks.sock.close()
