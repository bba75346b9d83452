"""The robfig/Go reference oracle (``hack/oracle``) as a pytest fixture.

The Go program is built once per source version into
``$KUMACO_CACHE_DIR/oracle/<hash>/`` (default ``~/.cache/kumaco``) with
``GOTOOLCHAIN=local`` and run as one long-lived subprocess per test session.
It is given ``ZONEINFO`` pointing at the ``tzdata`` package, so Go reads
exactly the zone data kumaco reads. Without ``go`` the fixture fails; it
never skips. How long it waits for an answer (``ready``) and the clock it reads
(``monotonic``) are seams of :class:`Oracle`, so that its own tests play slow and hung
oracles on a fake clock, never on the machine's speed.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.env.process import end_server

ORACLE_SRC = Path(__file__).resolve().parents[3] / "hack" / "oracle"


def _cache_root() -> Path:
    env = os.environ.get("KUMACO_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "kumaco"


def _build() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.fail("the robfig oracle needs the Go toolchain ('go' is not on PATH)")
    digest = hashlib.sha256()
    # go.sum too: it pins the exact module contents the build downloads.
    for name in ("go.mod", "go.sum", "main.go"):
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


class OracleTimeout(AssertionError):
    """The oracle did not answer a request, even when asked again with more time."""


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_readable(stream: IO[str], seconds: float) -> bool:
    """Whether ``stream`` has something to read within ``seconds`` (the real wait)."""
    return bool(select.select([stream], [], [], seconds)[0])


class Oracle:
    """One running oracle process; requests are answered in order.

    A slow answer is never taken for a hang. A request not answered within
    ``timeout`` seconds is asked again, of a fresh process, with three times the
    time; if that fails too, :class:`OracleTimeout` fails the test loudly, saying
    how much CPU the oracle burned (a loaded machine starves it; a loop burns it).

    robfig's ``Next`` really does loop forever on some inputs (a calendar day
    skipped by a date-line change, tests/unit/core/time/test_schedule.py's
    ``DATE_LINE_CASES``). :meth:`hangs` proves that of one input by CPU time,
    not wall time, so a loaded machine cannot fake it: giving up on a schedule
    that never fires (robfig's longest legitimate search, five years) costs it
    well under a millisecond of CPU; an input that has burned ``cpu_seconds``
    (1 s) without an answer loops.
    """

    def __init__(
        self,
        binary: Path,
        timeout: float = 10.0,
        *,
        ready: Callable[[IO[str], float], bool] = wait_readable,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._binary = binary
        self._timeout = timeout
        self._wait = ready
        self._monotonic = monotonic
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

    def _restart(self) -> None:
        self._proc.kill()
        self.close()
        self._proc = self._start()

    def _send(self, request: Mapping[str, Any]) -> float:
        """Send ``request``; the process's CPU time before it."""
        stdin = self._proc.stdin
        assert stdin is not None
        cpu = _cpu_seconds(self._proc.pid)
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return cpu

    def _answer(self) -> dict[str, Any]:
        stdout = self._proc.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"oracle exited with {self._proc.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _ready(self, seconds: float) -> bool:
        stdout = self._proc.stdout
        assert stdout is not None
        return self._wait(stdout, seconds)

    def _ask(self, request: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        wait = timeout or self._timeout
        burned: list[str] = []
        for attempt in (1, 2):
            cpu = self._send(request)
            if self._ready(wait):
                return self._answer()
            burned.append(
                f"attempt {attempt}: {wait:g}s, {_cpu_seconds(self._proc.pid) - cpu:.1f}s CPU"
            )
            self._restart()
            wait *= 3
        raise OracleTimeout(
            f"the Go oracle did not answer {json.dumps(request)[:300]} ({'; '.join(burned)}). "
            "Little CPU: the machine is overloaded, rerun. Much CPU: robfig loops on this "
            "input; if that is known behaviour, ask Oracle.hangs() and say so in the test."
        )

    def hangs(self, spec: str, after: int, cpu_seconds: float = 1.0, wall: float = 120.0) -> bool:
        """Whether robfig's ``Next(after)`` burns ``cpu_seconds`` of CPU without answering.

        False when it answers (or errors); True once the oracle has used that much CPU
        on it (it is then replaced). An OracleTimeout if neither happens within
        ``wall`` seconds (a starved machine proves nothing).
        """
        cpu = self._send({"op": "cron", "spec": spec, "after": [after]})
        deadline = self._monotonic() + wall
        while self._monotonic() < deadline:
            if self._ready(0.2):
                self._answer()
                return False
            if _cpu_seconds(self._proc.pid) - cpu >= cpu_seconds:
                self._restart()
                return True
        self._restart()
        raise OracleTimeout(f"robfig neither answered nor used {cpu_seconds}s CPU on {spec!r}")

    def cron(
        self, spec: str, afters: Sequence[int], timeout: float | None = None
    ) -> dict[str, Any]:
        """``{"next": [unix seconds or None, ...]}`` or ``{"error": "..."}``."""
        return self._ask({"op": "cron", "spec": spec, "after": list(afters)}, timeout)

    def chain(self, spec: str, start: int, until: int) -> list[int]:
        """robfig's firings after ``start`` up to ``until``, each Next from the previous."""
        answer = self._ask({"op": "chain", "spec": spec, "from": start, "until": until})
        if "error" in answer:
            raise ValueError(f"robfig rejects {spec!r}: {answer['error']}")
        return [int(f) for f in answer["fires"]]

    def duration(self, text: str) -> dict[str, Any]:
        """``{"ns": nanoseconds}`` or ``{"error": "..."}`` from Go's ``time.ParseDuration``."""
        return self._ask({"op": "duration", "text": text})

    def proxy(self, env: dict[str, str], url: str) -> dict[str, Any]:
        """``{"proxy": url or None}`` or ``{"error": "..."}`` from golang.org/x/net/http/httpproxy
        (what client-go uses) with ``env`` as the environment."""
        return self._ask({"op": "proxy", "env": env, "url": url})

    def label_selector(self, text: str, labels: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
        """A ``nodeSelector`` text as a metav1.LabelSelector, read by apimachinery.

        ``{"selector": String(), "empty": bool, "matches": [bool, ...]}`` (one per label
        set) or ``{"error": "...", "stage": "decode" | "selector"}``: decoded by
        sigs.k8s.io/yaml ``UnmarshalStrict``, then ``metav1.LabelSelectorAsSelector``.
        """
        return self._ask({"op": "labelselector", "text": text, "labels": list(labels)})

    def kured_selector(self, text: str) -> dict[str, Any]:
        """What kured v2's maintenance-scheduler makes of a ``nodeSelector``.

        ``{"selector": String()}`` or ``{"error": "..."}``: gopkg.in/yaml.v3 into a
        metav1.LabelSelector, then ``LabelSelectorAsSelector``; ``""`` selects everything.
        """
        return self._ask({"op": "kuredselector", "text": text})

    def parse_clock(self, layouts: Sequence[str], text: str) -> dict[str, Any]:
        """Go's ``time.ParseInLocation`` with each layout in order, as kured v1 reads a time.

        ``{"clock": [h, mi, s, ns], "layout": i}`` of the first layout that parses ``text``,
        or ``{"error": "..."}``.
        """
        return self._ask({"op": "parseclock", "layouts": list(layouts), "text": text})

    def regexp(self, text: str) -> dict[str, Any]:
        """Go's ``regexp.Compile``, as kured v1's ``--alert-filter-regexp`` takes its value:
        ``{"ok": true}`` or ``{"error": "..."}``."""
        return self._ask({"op": "regexp", "text": text})

    # -- Go's time package

    def _time(self, request: Mapping[str, Any], key: str) -> Any:
        answer = self._ask(request)
        if "error" in answer:
            raise ValueError(f"Go: {answer['error']}")
        return answer[key]

    def date(self, zone: str, *wall: int) -> int:
        """``time.Date(y, mo, d, h, mi, s, 0, zone).Unix()``."""
        padded = [*wall, 0, 0, 0][:6]
        return int(self._time({"op": "date", "zone": zone, "wall": padded}, "unix"))

    def add_date(self, t: int, zone: str, years: int, months: int, days: int) -> int:
        """``time.Unix(t, 0).In(zone).AddDate(years, months, days).Unix()``."""
        request = {"op": "adddate", "zone": zone, "t": t, "ymd": [years, months, days]}
        return int(self._time(request, "unix"))

    def walls(self, zone: str, instants: Sequence[int]) -> list[tuple[int, ...]]:
        """``(year, month, day, hour, minute, second, weekday)`` of each instant in ``zone``."""
        request = {"op": "wall", "zone": zone, "instants": list(instants)}
        return [tuple(w) for w in self._time(request, "walls")]

    def offsets(
        self, instants: Sequence[int], zone: str = "", tzif: bytes | None = None
    ) -> list[int]:
        """The UTC offset Go gives each instant in ``zone`` (or in a zone read from TZif bytes).

        A ValueError when Go rejects the zone or the data.
        """
        request: dict[str, Any] = {"op": "offsets", "zone": zone, "instants": list(instants)}
        if tzif is not None:
            request["tzif"] = base64.b64encode(tzif).decode()
        return [int(o) for o in self._time(request, "offsets")]

    def truncate(self, instants: Sequence[int], seconds: int) -> list[int]:
        """``time.Unix(t, 0).Truncate(seconds * time.Second).Unix()`` of each instant."""
        request = {"op": "truncate", "instants": list(instants), "d": seconds}
        return [int(t) for t in self._time(request, "unix")]

    def close(self) -> None:
        end_server(self._proc, timeout=10)


@pytest.fixture(scope="session")
def robfig_oracle() -> Iterator[Oracle]:
    """The Go reference (robfig/cron v3.0.1 and Go's time package), one process per session."""
    oracle = Oracle(_build())
    try:
        yield oracle
    finally:
        oracle.close()
