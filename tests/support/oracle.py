"""The robfig/Go reference oracle (``hack/oracle``) as a pytest fixture.

The Go program is built once per source version into
``$KUMACO_CACHE_DIR/oracle/<hash>/`` (default ``~/.cache/kumaco``) with
``GOTOOLCHAIN=local`` and run as one long-lived subprocess per test session.
It is given ``ZONEINFO`` pointing at the ``tzdata`` package, so Go reads
exactly the zone data kumaco reads. Without ``go`` the fixture fails; it
never skips.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import select
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ORACLE_SRC = Path(__file__).resolve().parents[2] / "hack" / "oracle"


def _cache_root() -> Path:
    env = os.environ.get("KUMACO_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "kumaco"


def _build() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.fail("the robfig oracle needs the Go toolchain ('go' is not on PATH)")
    digest = hashlib.sha256()
    for name in ("go.mod", "main.go"):
        digest.update(name.encode() + b"\0" + (ORACLE_SRC / name).read_bytes() + b"\0")
    target_dir = _cache_root() / "oracle" / digest.hexdigest()[:16]
    binary = target_dir / "oracle"
    if binary.exists():
        return binary
    target_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
    with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
        for name in ("go.mod", "go.sum", "main.go"):
            if (ORACLE_SRC / name).exists():
                shutil.copy(ORACLE_SRC / name, Path(tmp) / name)
        built = Path(tmp) / "oracle.bin"
        proc = subprocess.run(
            [go, "build", "-o", str(built), "."],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(f"building the robfig oracle failed:\n{proc.stderr}")
        os.replace(built, binary)
    return binary


class Oracle:
    """One running oracle process; requests are answered in order.

    robfig's ``Next`` can loop forever (a calendar day skipped by a date-line
    change); a request not answered within ``timeout`` seconds returns
    ``{"hang": True}`` and the process is replaced.
    """

    def __init__(self, binary: Path, timeout: float = 10.0) -> None:
        self._binary = binary
        self._timeout = timeout
        self._proc = self._start()

    def _start(self) -> subprocess.Popen[str]:
        zoneinfo_dir = importlib.resources.files("tzdata").joinpath("zoneinfo")
        return subprocess.Popen(
            [str(self._binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "ZONEINFO": str(zoneinfo_dir)},
            text=True,
            encoding="utf-8",
        )

    def _ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], timeout or self._timeout)
        if not ready:
            self._proc.kill()
            self.close()
            self._proc = self._start()
            return {"hang": True}
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"oracle exited with {self._proc.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def cron(
        self, spec: str, afters: Sequence[int], timeout: float | None = None
    ) -> dict[str, Any]:
        """``{"next": [unix seconds or None, ...]}``, ``{"error": "..."}`` or ``{"hang": True}``."""
        return self._ask({"op": "cron", "spec": spec, "after": list(afters)}, timeout)

    def duration(self, text: str) -> dict[str, Any]:
        """``{"ns": nanoseconds}`` or ``{"error": "..."}`` from Go's ``time.ParseDuration``."""
        return self._ask({"op": "duration", "text": text})

    def proxy(self, env: dict[str, str], url: str) -> dict[str, Any]:
        """``{"proxy": url or None}`` or ``{"error": "..."}`` from golang.org/x/net/http/httpproxy
        (what client-go uses) with ``env`` as the environment."""
        return self._ask({"op": "proxy", "env": env, "url": url})

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@pytest.fixture(scope="session")
def robfig_oracle() -> Iterator[Oracle]:
    """The Go reference (robfig/cron v3.0.1 and Go's time package), one process per session."""
    oracle = Oracle(_build())
    try:
        yield oracle
    finally:
        oracle.close()
