"""Loopback ports for the listeners the tests start: :func:`free_port`.

Contract: :func:`free_port` returns a loopback TCP port that nothing listens on, for a
process the caller is about to start. It picks below the kernel's ephemeral range, in a
slice per pytest-xdist worker. A port found free by binding port 0 comes from the
ephemeral range (``ip_local_port_range``), from which every outgoing connection takes its
local port too: between the pick and the listener's own bind, a connection of any process
can take it (a CI run with four workers lost kumaco's metrics port that way: EADDRINUSE).
Below the range only listeners bind, and a slice per worker keeps two workers' picks
apart.

The picks go round their slice, so a port picked and not yet bound is not picked again.
The place in the slice is not kept in this process (no module-level state): it is a
cursor file per slice in the temporary directory, read and advanced under an exclusive
``flock``, so every process picking from one slice -- a test run's, hack/demo.py's and a
program run beside them, which all use worker 0's slice -- takes the next port after
the last one any of them took.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path

PORT_FLOOR = 10_000
PORT_SLICE = 2_000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def port_slice() -> range:
    """This worker's ports: a slice of :data:`PORT_SLICE` between the floor and the range."""
    ephemeral_low = (
        int(EPHEMERAL_RANGE.read_text().split()[0]) if EPHEMERAL_RANGE.exists() else 32_768
    )
    slices = max(1, (ephemeral_low - PORT_FLOOR) // PORT_SLICE)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = PORT_FLOOR + (int(worker) if worker.isdigit() else 0) % slices * PORT_SLICE
    return range(first, first + PORT_SLICE)


def _cursor(ports: range) -> Path:
    return Path(tempfile.gettempdir()) / f"kumaco-ports-{os.getuid()}-{ports.start}"


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback TCP port nothing listens on, for a process the test starts to listen on."""
    ports = port_slice()
    fd = os.open(_cursor(ports), os.O_RDWR | os.O_CREAT, 0o600)
    with open(fd, "r+") as cursor:
        fcntl.flock(cursor, fcntl.LOCK_EX)  # released when the file closes
        cursor.seek(0)
        text = cursor.read().strip()
        place = int(text) if text.isdigit() else 0
        for step in range(len(ports)):
            port = ports[(place + step) % len(ports)]
            if _bindable(port):
                cursor.seek(0)
                cursor.truncate()
                cursor.write(str((place + step + 1) % len(ports)))
                return port
    raise RuntimeError(f"no free loopback port in {ports.start}-{ports.stop - 1}")
