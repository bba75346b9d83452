"""The local processes the tests start (etcd, kube-apiserver, kwok, Prometheus, tinyproxy).

Contract: :func:`spawn` starts a command in a session of its own (a terminal's Ctrl-C
reaches the test run, not its helpers), its stdout and stderr appended to a log file,
no stdin. :func:`wait_ready` polls a readiness check until it holds and fails fast --
with the log's last lines -- when the process exits first or the time runs out; a check
that raises ``OSError`` or ``http.client.HTTPException`` (nothing listens yet, a reset)
counts as not ready. :func:`stop_process` stops one (SIGCONT, the signal, SIGKILL after
a timeout); :func:`end_server` ends one that serves requests on its stdin (the Go
oracle, the forked runner). :func:`exchange` sends one HTTP request on a connection and closes it.
"""

from __future__ import annotations

import contextlib
import http.client
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def spawn(
    cmd: list[str],
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd``, its output appended to ``log`` (see the module contract)."""
    with log.open("ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
        )


def log_tail(log: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of ``log`` ('' when there is none yet)."""
    if not log.exists():
        return ""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def wait_ready(
    ready: Callable[[], bool],
    timeout: float,
    what: str,
    proc: subprocess.Popen[bytes] | None,
    log: Path,
    period: float = 0.1,
) -> float:
    """Poll ``ready`` (at least once) until it holds; the seconds waited. RuntimeError,
    naming ``what`` and showing ``log``'s tail, when ``proc`` exits first or ``timeout``
    seconds pass."""
    started = time.monotonic()
    while True:
        if proc is not None and proc.poll() is not None:
            argv = proc.args if isinstance(proc.args, list) else [proc.args]
            name = Path(str(argv[0])).name
            raise RuntimeError(
                f"{name} exited with {proc.returncode} before {what}:\n{log_tail(log)}"
            )
        with contextlib.suppress(OSError, http.client.HTTPException):
            if ready():
                return time.monotonic() - started
        if time.monotonic() - started >= timeout:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}:\n{log_tail(log)}")
        time.sleep(period)


def stop_process(
    proc: subprocess.Popen[Any] | None, sig: int = signal.SIGTERM, timeout: float = 15
) -> None:
    """Stop a helper process: ``sig`` (after a SIGCONT, should it be paused), then SIGKILL
    if it has not exited within ``timeout`` seconds. Nothing when it is not running."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def end_server(proc: subprocess.Popen[Any], timeout: float) -> None:
    """End a server reading requests from its stdin: close that (its loop ends), wait up to
    ``timeout`` seconds, then SIGKILL; its stdout pipe is closed."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def exchange(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | str | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, bytes]:
    """One request on ``conn``, then ``conn`` closed: the answer's status and body."""
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()
