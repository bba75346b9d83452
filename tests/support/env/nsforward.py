"""The real cluster's hub: a network namespace of its own, and the forwarders across its border.

Contract. ``python -m tests.support.env.nsforward SPEC.json`` (started by
:mod:`tests.support.env.cluster`, in the machine's network namespace) keeps a descriptor of
that namespace, then moves itself into a NEW network namespace -- the hub, which lives as
long as this process does -- and serves, one thread per connection, the rules of SPEC:

``{"listen": {"tcp": [ADDR, PORT]}, "connect": {"machine_tcp": [ADDR, PORT]}}``
    accept TCP in the hub (``IP_FREEBIND``: ADDR may be configured after the start) and
    connect, in the machine's namespace, to ADDR:PORT (the API server on 127.0.0.1);
``{"listen": {"unix": PATH}, "connect": "http_connect"}``
    accept on a Unix socket (a file, reachable from any network namespace) an HTTP
    ``CONNECT host:port`` request, as kube-apiserver's egress selector sends one, and
    connect to that address in the hub (the nodes' kubelets); answer 200, then relay.

It prints ``ready`` on stdout once every listener is bound. Nothing is ever bound or
configured in the machine's namespace: its sockets there only connect. The standard
library only (``ctypes`` for ``setns``/``unshare``); SIGTERM or SIGINT ends it, and the hub
namespace with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from kumaco.cmd.signals import SignalRelay

CLONE_NEWNET = 0x40000000
IP_FREEBIND = 15
_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class Namespaces:
    """The machine's and the hub's network namespaces, as descriptors (a thread's own)."""

    def __init__(self) -> None:
        self.machine = os.open("/proc/self/ns/net", os.O_RDONLY)
        _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        self.hub = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)

    def machine_socket(self) -> socket.socket:
        """A TCP socket of the machine's namespace (made by this thread there, then back)."""
        _check(_libc.setns(self.machine, CLONE_NEWNET), "setns(machine)")
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _check(_libc.setns(self.hub, CLONE_NEWNET), "setns(hub)")


def _relay(a: socket.socket, b: socket.socket) -> None:
    def pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=pump, args=(b, a), daemon=True)
    t.start()
    pump(a, b)
    t.join()
    a.close()
    b.close()


def _to_machine(client: socket.socket, ns: Namespaces, target: tuple[str, int]) -> None:
    upstream = ns.machine_socket()
    try:
        upstream.connect(target)
    except OSError:
        upstream.close()
        client.close()
        return
    _relay(client, upstream)


def _http_connect(client: socket.socket) -> None:
    head = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in head and len(head) < 8192:
            chunk = client.recv(4096)
            if not chunk:
                break
            head += chunk
    request, _, rest = head.partition(b"\r\n\r\n")
    words = request.split(b"\r\n", 1)[0].split()
    if len(words) < 2 or words[0] != b"CONNECT":
        with contextlib.suppress(OSError):
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        client.close()
        return
    host, _, port = words[1].decode().rpartition(":")
    try:
        upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        upstream.settimeout(None)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
        client.close()
        return
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if rest:
        upstream.sendall(rest)
    _relay(client, upstream)


def _serve(listener: socket.socket, rule: dict[str, Any], ns: Namespaces) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        if rule["connect"] == "http_connect":
            target: Any = (_http_connect, (client,))
        else:
            addr, port = rule["connect"]["machine_tcp"]
            target = (_to_machine, (client, ns, (str(addr), int(port))))
        threading.Thread(target=target[0], args=target[1], daemon=True).start()


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    ns = Namespaces()
    listeners = []
    for rule in spec["rules"]:
        listen = rule["listen"]
        if "unix" in listen:
            path = Path(listen["unix"])
            path.unlink(missing_ok=True)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(path))
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
            s.bind((str(listen["tcp"][0]), int(listen["tcp"][1])))
        s.listen(128)
        listeners.append((s, rule))
    stop = threading.Event()
    # relayed to a thread: a handler setting ``stop`` while the main thread waits on it
    # could wait for itself (kumaco.cmd.signals)
    with SignalRelay(dict.fromkeys((signal.SIGTERM, signal.SIGINT), lambda _s: stop.set())):
        for s, rule in listeners:
            threading.Thread(target=_serve, args=(s, rule, ns), daemon=True).start()
        print("ready", flush=True)
        while not stop.wait(1):
            pass
    for s, _ in listeners:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
