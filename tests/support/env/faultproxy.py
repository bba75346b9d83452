"""A fault-injecting TCP proxy on loopback, for kumaco's fault tests and the soak.

Contract
--------
:class:`FaultProxy` listens on ``127.0.0.1:<port>`` and forwards each
connection, byte for byte, to ``127.0.0.1:<target_port>``. It binds and
connects only to :data:`LOOPBACK`: there is no host parameter at all, so it
can never reach anything off this machine. Bytes pass through unchanged, so
TLS stays end to end: a client pointed at the proxy verifies the real API
server's certificate (the test control plane's serving certificate names
127.0.0.1) and authenticates as itself.

Controls, thread-safe, effective at once on open and new connections:

* :meth:`FaultProxy.set_latency` -- added latency per direction (``up`` is
  client to server, ``down`` server to client). ``per="request"`` (the
  default) works like ``netem delay``: every chunk is released ``latency``
  seconds after it was read, order kept, so each request (or watch event)
  is late by the latency once and throughput is not limited.
  ``per="chunk"`` waits the latency before *each* chunk, one after the
  other (a slow link: a request made of many chunks pays many times).
* :meth:`FaultProxy.cut` -- close every open connection at once, both sides
  (with a TCP RST by default, as a crashed middlebox or a dropped NAT entry).
* :meth:`FaultProxy.pause_accepting` -- new connections are held (accepted,
  not forwarded) or refused (reset) until :meth:`FaultProxy.resume_accepting`.
* :meth:`FaultProxy.blackhole` -- every connection open at that moment stops
  forwarding without closing (no FIN, no RST: what a dropped NAT or conntrack
  entry does); what its peers send is read and dropped. With
  ``answers_only=True`` requests still get through and only what comes back
  is lost, from each connection's next request on (the server applies a
  write, its answer never arrives). Connections opened later are forwarded
  as usual. ``stats.dropped_up``/``dropped_down`` count the chunks dropped.

Bounds: at most ``max_connections`` connections (more are reset), at most
``max_chunks`` chunks of at most 64 KiB queued per direction of a connection
(reading pauses until the writer catches up), a connection held while paused
is reset after ``hold_timeout`` seconds, and the proxy stops by itself after
``lifetime`` seconds. Everything runs on one asyncio loop in one daemon
thread; :meth:`FaultProxy.stop` (or leaving the ``with`` block) closes the
listener and every connection and joins the thread.

Command line (manual experiments, from the repository's root)::

    python -m tests.support.env.faultproxy --target-port 6443 [--port 0] [--latency-up 2] [--lifetime 600]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Literal

LOOPBACK = "127.0.0.1"
CHUNK = 65536

Direction = Literal["up", "down"]
Per = Literal["request", "chunk"]


@dataclass
class ProxyStats:
    """Counters since start (read them from any thread; they only grow)."""

    accepted: int = 0
    refused: int = 0
    upstream_failed: int = 0
    cut: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    blackholed: int = 0
    dropped_up: int = 0
    dropped_down: int = 0


class _Connection:
    """One client connection and its upstream, with their pump tasks."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []
        # Blackhole state: a dead direction drops what it reads; "armed" kills the
        # down direction once the next request chunk has been forwarded up.
        self.dead: set[Direction] = set()
        self.armed = False

    def abort(self, reset: bool) -> None:
        for w in (self.client, self.upstream):
            if w is None:
                continue
            if reset:
                _set_rst(w)
            w.transport.abort()
        for t in self.tasks:
            t.cancel()


def _set_rst(writer: asyncio.StreamWriter) -> None:
    """Make the next close send a TCP RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class FaultProxy:
    """A loopback TCP proxy with latency, cut and pause controls; see the module docstring."""

    def __init__(
        self,
        target_port: int,
        *,
        port: int = 0,
        lifetime: float = 900.0,
        max_connections: int = 256,
        max_chunks: int = 64,
        hold_timeout: float = 120.0,
    ) -> None:
        if not 0 < target_port < 65536:
            raise ValueError(f"target port {target_port} is out of range")
        self.target_port = target_port
        self.port = port
        self.lifetime = lifetime
        self.max_connections = max_connections
        self.max_chunks = max_chunks
        self.hold_timeout = hold_timeout
        self.stats = ProxyStats()
        self._latency: dict[Direction, float] = {"up": 0.0, "down": 0.0}
        self._per: Per = "request"
        self._paused: Literal["hold", "refuse"] | None = None
        self._conns: set[_Connection] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._stopping: asyncio.Event | None = None
        self._resumed: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="faultproxy", daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 10.0) -> FaultProxy:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the fault proxy did not start")
        if self._failed is not None:
            raise RuntimeError(f"the fault proxy could not listen: {self._failed}")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive() and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # ------------------------------------------------------------------ controls

    def set_latency(self, up: float = 0.0, down: float = 0.0, per: Per = "request") -> None:
        """Add ``up``/``down`` seconds to every request (``per="request"``) or chunk."""
        if up < 0 or down < 0:
            raise ValueError("latency cannot be negative")
        self._latency = {"up": float(up), "down": float(down)}
        self._per = per

    def cut(self, reset: bool = True, timeout: float = 10.0) -> int:
        """Close every open connection now; returns how many were cut."""
        future = asyncio.run_coroutine_threadsafe(self._cut(reset), self._loop)
        return future.result(timeout)

    def pause_accepting(self, mode: Literal["hold", "refuse"] = "hold") -> None:
        """Hold new connections unforwarded, or refuse them, until :meth:`resume_accepting`."""
        self._paused = mode
        if self._resumed is not None:
            self._loop.call_soon_threadsafe(self._resumed.clear)

    def resume_accepting(self) -> None:
        self._paused = None
        if self._resumed is not None:
            self._loop.call_soon_threadsafe(self._resumed.set)

    def blackhole(self, answers_only: bool = False, timeout: float = 10.0) -> int:
        """Silence every open connection without closing it; returns how many.

        ``answers_only``: each keeps forwarding requests, and stops forwarding
        answers from its next request on.
        """

        async def apply() -> int:
            conns = list(self._conns)
            for c in conns:
                if answers_only:
                    c.armed = True
                else:
                    c.dead.update(("up", "down"))
            self.stats.blackholed += len(conns)
            return len(conns)

        return asyncio.run_coroutine_threadsafe(apply(), self._loop).result(timeout)

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start(); the thread must not die silently
            self._failed = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        self._resumed = asyncio.Event()
        self._resumed.set()
        server = await asyncio.start_server(
            self._handle, LOOPBACK, self.port, reuse_address=True, limit=CHUNK
        )
        self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.lifetime)
        finally:
            server.close()
            await self._cut(reset=False, count=False)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def _cut(self, reset: bool, count: bool = True) -> int:
        conns = list(self._conns)
        for c in conns:
            c.abort(reset)
        self._conns.difference_update(conns)
        if count:
            self.stats.cut += len(conns)
        await asyncio.sleep(0)
        return len(conns)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(writer)
        if self._paused == "refuse" or len(self._conns) >= self.max_connections:
            self.stats.refused += 1
            conn.abort(reset=True)
            return
        self.stats.accepted += 1
        self._conns.add(conn)
        try:
            if self._paused == "hold":
                assert self._resumed is not None
                await asyncio.wait_for(self._resumed.wait(), self.hold_timeout)
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(LOOPBACK, self.target_port, limit=CHUNK), 5
                )
            except (OSError, TimeoutError):
                self.stats.upstream_failed += 1
                conn.abort(reset=True)
                return
            conn.upstream = up_writer
            if conn not in self._conns:  # cut while connecting
                conn.abort(reset=True)
                return
            conn.tasks = [
                asyncio.create_task(self._pump(reader, up_writer, "up", conn)),
                asyncio.create_task(self._pump(up_reader, writer, "down", conn)),
            ]
            # When either direction ends, the connection ends (as a proxy that half-closes
            # nothing: the API server and its clients do not use half-close).
            _done, pending = await asyncio.wait(conn.tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
        except (asyncio.CancelledError, TimeoutError, OSError):
            pass
        finally:
            if conn in self._conns:  # ended by itself (not cut): flush what is buffered, then FIN
                self._conns.discard(conn)
                for w in (conn.client, conn.upstream):
                    if w is not None:
                        w.close()
                for t in conn.tasks:
                    t.cancel()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        direction: Direction,
        conn: _Connection,
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(self.max_chunks)

        async def read() -> None:
            try:
                while True:
                    data = await reader.read(CHUNK)
                    if not data:
                        break
                    await queue.put((time.monotonic(), data))
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                await queue.put(None)

        async def write() -> None:
            while True:
                item = await queue.get()
                if item is None:
                    return
                arrived, data = item
                delay = self._latency[direction]
                if delay > 0:
                    # netem-like: due a fixed time after arrival; or a fixed wait per chunk.
                    wait = arrived + delay - time.monotonic() if self._per == "request" else delay
                    if wait > 0:
                        await asyncio.sleep(wait)
                if direction in conn.dead:
                    if direction == "up":
                        self.stats.dropped_up += 1
                    else:
                        self.stats.dropped_down += 1
                    continue
                writer.write(data)
                if direction == "up" and conn.armed:
                    conn.dead.add("down")  # the request is on its way; its answer is not
                await writer.drain()
                if direction == "up":
                    self.stats.bytes_up += len(data)
                else:
                    self.stats.bytes_down += len(data)

        reading = asyncio.create_task(read())
        try:
            await write()
        except (OSError, ConnectionError):
            pass
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target-port", type=int, required=True, help="port on 127.0.0.1 to forward to")
    p.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    p.add_argument("--latency-up", type=float, default=0.0)
    p.add_argument("--latency-down", type=float, default=0.0)
    p.add_argument("--lifetime", type=float, default=600.0, help="stop after this many seconds")
    args = p.parse_args(argv)
    with FaultProxy(args.target_port, port=args.port, lifetime=args.lifetime) as proxy:
        proxy.set_latency(args.latency_up, args.latency_down)
        print(f"listening on {LOOPBACK}:{proxy.port} -> {LOOPBACK}:{args.target_port}", flush=True)
        try:
            while proxy.alive:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
