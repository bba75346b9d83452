"""A real forward proxy (Debian's ``tinyproxy``) on loopback, for the e2e tests.

Contract: :class:`Tinyproxy` writes a configuration that listens on a free port
of ``127.0.0.1``, accepts clients from loopback only and allows CONNECT only to
the given ports, and logs every request (``LogLevel Info``) to its own file; it
runs in the foreground (``-d``) as a child process, stopped by :meth:`stop` (or
leaving the ``with`` block) with SIGTERM and waited for. :meth:`connects` reads
the ``CONNECT host:port`` lines of its log: tinyproxy writes one as each tunnel
is requested. The test fails, naming the package, when the binary is missing.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.env.ports import free_port
from tests.support.env.process import spawn, stop_process, wait_ready

LOOPBACK = "127.0.0.1"
_CLIENT = re.compile(r"Connect \(file descriptor \d+\): ")
_CONNECT = re.compile(r"Request \(file descriptor \d+\): CONNECT (\S+) HTTP/1\.\d")


class Tinyproxy:
    """One tinyproxy on loopback; see the module contract."""

    def __init__(self, workdir: Path, connect_ports: Sequence[int]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.log = workdir / "tinyproxy.log"
        self.config = workdir / "tinyproxy.conf"
        lines = [
            f"Port {self.port}",
            f"Listen {LOOPBACK}",
            "Timeout 600",
            f'LogFile "{self.log}"',
            "LogLevel Info",
            "MaxClients 64",
            f"Allow {LOOPBACK}",
            "DisableViaHeader Yes",
            *(f"ConnectPort {p}" for p in connect_ports),
        ]
        self.config.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None
        self._probes = 0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 10.0) -> Tinyproxy:
        exe = shutil.which("tinyproxy")
        if exe is None:
            raise AssertionError(
                "tinyproxy is not installed: install the Debian package 'tinyproxy' "
                "(hack/debian-packages.txt; hack/test-deps.sh does it)"
            )
        out = self.workdir / "tinyproxy.out"
        self.proc = spawn([exe, "-d", "-c", str(self.config)], out)
        try:
            waited = wait_ready(
                self._accepts, timeout, "it to accept a connection", self.proc, out, 0.05
            )
            # That probe was a client too: wait for its log line, then count from there.
            left = timeout - waited
            wait_ready(
                lambda: self._clients() >= 1, left, "it to log the probe", self.proc, out, 0.05
            )
        except RuntimeError:
            self.stop()
            raise
        self._probes = self._clients()
        return self

    def _accepts(self) -> bool:
        socket.create_connection((LOOPBACK, self.port), timeout=1).close()
        return True

    def connects(self) -> list[str]:
        """Every ``host:port`` a client asked to CONNECT to, in order."""
        if not self.log.exists():
            return []
        return _CONNECT.findall(self.log.read_text(errors="replace"))

    def _clients(self) -> int:
        if not self.log.exists():
            return 0
        return len(_CLIENT.findall(self.log.read_text(errors="replace")))

    def clients(self) -> int:
        """How many client connections the proxy accepted (whatever they asked for),
        not counting the probe of :meth:`start`."""
        return self._clients() - self._probes

    def stop(self) -> None:
        stop_process(self.proc, timeout=10)

    def __enter__(self) -> Tinyproxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
