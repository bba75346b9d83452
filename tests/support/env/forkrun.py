"""``python -m MODULE ARGS`` many times, each in its own process, without paying the start-up each time.

A test that runs a command line once per input file (the malformed-window corpus: hundreds
of files, each in text and in JSON) spends most of its time starting Python and importing
kumaco again for every run. :class:`ForkRunner` starts one server process that imports the
command's modules once; each :meth:`ForkRunner.run` is then a process *forked* from it,
which runs ``MODULE``'s ``__main__`` exactly as ``python -m MODULE`` does (``runpy``, with
``sys.argv`` set), with its own standard streams (files 1 and 2, stdin on ``/dev/null``)
and its own exit status: the process boundary a subprocess test checks (the exit status,
nothing on stderr, no traceback escaping to the interpreter) is the same, only the
interpreter's start-up and the imports are shared. A test that wants those too runs the
command as a plain subprocess (the corpus does it for the whole corpus in one call).

The server is single-threaded (it forks only while nothing else runs) and talks one JSON
line per request on its stdin and stdout: ``{"argv": [...], "stdout": PATH, "stderr":
PATH, "timeout": SECONDS}`` in, ``{"returncode": N, "timed_out": BOOL}`` out. A child that
runs past its timeout is killed (SIGKILL) and reported as such; the client raises
:class:`subprocess.TimeoutExpired` as :func:`subprocess.run` would.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.env.process import end_server

#: How often the server looks whether a child has ended (it runs one child at a time).
_POLL_S = 0.002


def _exit_code(code: object) -> int:
    """The exit status the interpreter gives ``SystemExit(code)`` (printing a non-integer)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(module: str, request: dict[str, Any]) -> None:  # pragma: no cover - runs forked
    """In the forked process: the streams, then ``python -m module``; never returns."""
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((devnull, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.argv = [module, *request["argv"]]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    """The child's exit status as :mod:`subprocess` reports it, and whether it was killed late."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), True
        time.sleep(_POLL_S)


def serve(module: str, preload: Sequence[str]) -> None:
    """The server loop: import ``preload`` once, then fork one child per request line."""
    for name in preload:
        importlib.import_module(name)
    requests = sys.stdin.buffer
    while line := requests.readline():
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(module, request)
        returncode, timed_out = _wait(pid, float(request["timeout"]))
        reply = {"returncode": returncode, "timed_out": timed_out}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class ForkRunner:
    """Runs ``python -m module ARGS`` in processes forked from one that imported ``preload``."""

    def __init__(self, module: str, preload: Sequence[str], cwd: Path) -> None:
        self._module = module
        self._dir = Path(tempfile.mkdtemp(prefix="forkrun-"))
        self._runs = 0
        self._server = subprocess.Popen(
            [sys.executable, "-m", __name__, module, *preload],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, args: Sequence[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """One run, as :func:`subprocess.run` with ``capture_output=True, text=True`` reports it."""
        assert self._server.stdin is not None and self._server.stdout is not None
        self._runs += 1
        out, err = self._dir / f"{self._runs}.out", self._dir / f"{self._runs}.err"
        request = {"argv": list(args), "stdout": str(out), "stderr": str(err), "timeout": timeout}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server of {self._module} ended: {self._server.wait()}")
        reply = json.loads(line)
        argv = [sys.executable, "-m", self._module, *args]
        stdout = out.read_text(encoding="utf-8")
        stderr = err.read_text(encoding="utf-8")
        out.unlink()
        err.unlink()
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(argv, reply["returncode"], stdout, stderr)

    def close(self) -> None:
        """Ends the server (its stdin closes, its loop ends) and removes the scratch files."""
        end_server(self._server, timeout=30)
        for path in self._dir.iterdir():
            path.unlink()
        self._dir.rmdir()

    def __enter__(self) -> ForkRunner:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
