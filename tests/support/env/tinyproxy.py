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
import time
from collections.abc import Sequence
from pathlib import Path

from tests.support.env.controlplane import stop_process
from tests.support.env.ports import free_port

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
        with (self.workdir / "tinyproxy.out").open("ab") as out:
            self.proc = subprocess.Popen(
                [exe, "-d", "-c", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection((LOOPBACK, self.port), timeout=1).close()
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(
                        f"tinyproxy did not start: {(self.workdir / 'tinyproxy.out').read_text()}"
                    ) from None
                time.sleep(0.05)
                continue
            # That probe was a client too: wait for its log line, then count from there.
            while self._clients() < 1:
                if time.monotonic() > deadline:
                    raise AssertionError("tinyproxy logs no connections")
                time.sleep(0.05)
            self._probes = self._clients()
            return self

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
