"""The demo (``hack/demo.py``) end to end: it shows the scenario and leaves nothing behind.

The demo starts its own control plane (not the session fixture's) and is run
as a subprocess with stdout a pipe, so it prints event lines and the snapshots of
its live table, ``kubectl kumaco status --watch`` (see its docstring for the lines
it promises). Afterwards no process whose
command line names its temporary directory may be running, and every PID it
printed must be gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A short window that opens soon: the scenario then fits in DURATION seconds (set-up
# ~10 s + LEAD, the window opening then on kumaco's shifted clock, + the window's 40 s + 5 s;
# a slower set-up shortens the window to fit, down to 10 s).
DURATION = 75
ARGS = ["--nodes", "6", "--duration", str(DURATION), "--lead", "10", "--window", "40"]
CEILING = 2

#: The demo's kube-apiserver runs in hack/demo.py's process: these tests count in the e2e
#: proof by this marker (tests/e2e/conftest.py), not by a fixture.
pytestmark = pytest.mark.real_server("hack/demo.py starts its own control plane")

EVENT = re.compile(r"^\[(\d\d:\d\d:\d\dZ)\] (.*)$")
#: A snapshot of ``kubectl kumaco status --watch``, and a row of its node table:
#: NODE, WINDOWS (the open windows selecting it: "-" when none), UNDER MAINTENANCE SINCE,
#: IN PROGRESS (yes/no), SINCE, REASON, in columns two spaces apart or more.
SNAPSHOT = "kumaco status at "
NODE_HEADER = re.compile(r"^NODE +WINDOWS +UNDER MAINTENANCE SINCE +IN PROGRESS ")
ROW = re.compile(r"^(node-\d{5}) {2,}(\S+) {2,}(.+?) {2,}(yes|no|not set) {2,}(.+?)(?: {2,}(.*))?$")


def _cmdlines_naming(path: str) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (entry / "cmdline").read_bytes()
            if path.encode() in cmd:
                found.append((int(entry.name), cmd.replace(b"\0", b" ").decode(errors="replace")))
    return found


def _leftovers(out: str) -> list[str]:
    """Processes the demo started that still run, and whether its directory remains."""
    m = re.search(r"^workdir: (\S+)$", out, re.M)
    assert m, f"no workdir line in:\n{out[:2000]}"
    workdir = m.group(1)
    left = [f"{pid}: {cmd[:200]}" for pid, cmd in _cmdlines_naming(workdir)]
    pids = re.findall(r"(\S+)=(\d+)", "\n".join(re.findall(r"^pids: (.*)$", out, re.M)))
    assert pids, f"no pids lines in:\n{out[:2000]}"
    for name, pid in pids:
        with contextlib.suppress(OSError):  # gone, or the PID now belongs to someone else
            if workdir.encode() in (Path("/proc") / pid / "cmdline").read_bytes():
                left.append(f"{name} pid {pid} still runs")
    if Path(workdir).exists():
        left.append(f"{workdir} still exists")
    return left


def _kill_leftovers(proc: subprocess.Popen[str], out: str) -> None:
    """After a failure: stop the demo (it cleans up on SIGTERM), then whatever it left."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    m = re.search(r"^workdir: (\S+)$", out, re.M)
    if m:
        for pid, _ in _cmdlines_naming(m.group(1)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _frames(out: str) -> list[list[tuple[str, ...]]]:
    """Each snapshot's node rows: the nodes under maintenance or in progress (maybe none)."""
    frames: list[list[tuple[str, ...]]] = []
    in_nodes = False
    for line in out.splitlines():
        if line.startswith(SNAPSHOT):
            frames.append([])
            in_nodes = False
        elif frames and NODE_HEADER.match(line):
            in_nodes = True
        elif frames and in_nodes and (m := ROW.match(line)):
            frames[-1].append(tuple(g or "" for g in m.groups()))
        else:
            in_nodes = False
    return frames


@pytest.mark.timeout(DURATION + 80)
def test_demo_shows_the_window_and_the_takeover_and_leaves_nothing_running() -> None:
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "hack" / "demo.py"), *ARGS],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out = err = ""
    try:
        out, err = proc.communicate(timeout=DURATION + 60)
    finally:
        _kill_leftovers(proc, out)
    took = time.monotonic() - started
    report = f"--- stdout\n{out[-6000:]}\n--- stderr\n{err[-3000:]}"
    assert proc.returncode == 0, report
    assert took < DURATION + 30, report

    events = [m.group(2) for line in out.splitlines() if (m := EVENT.match(line))]
    opened = next((i for i, e in enumerate(events) if "opened: UnderMaintenance=True" in e), None)
    closed = next((i for i, e in enumerate(events) if "closed: UnderMaintenance=False" in e), None)
    assert opened is not None, report
    assert closed is not None, report
    assert opened < closed, report
    assert any("Warning WindowInvalid nightly-typo" in e for e in events), report

    kill = next((i for i, e in enumerate(events) if e.startswith("sent SIGTERM to leader ")), None)
    assert kill is not None, report
    victim = events[kill].split()[4]
    changes = [e for e in events[kill:] if e.startswith("leader changed: ")]
    assert changes, report
    assert changes[0].split()[2].rstrip(",") != victim, report
    assert "after the kill" in changes[0], report

    frames = _frames(out)
    assert frames, report
    in_progress = [sum(1 for r in f if r[3] == "yes") for f in frames]
    assert max(in_progress) <= CEILING, report
    assert max(in_progress) >= 1, report  # the ceiling machinery was exercised
    um = [sum(1 for r in f if r[1] != "-") for f in frames]  # in an open window: UM=True
    first_open = next(i for i, n in enumerate(um) if n)
    assert any(n == 0 for n in um[first_open:]), report  # and it closed again
    assert re.search(r"^summary: ", out, re.M), report
    assert re.search(r"MaintenanceInProgress at most [0-2] ", out), report
    # The status feed is stopped before the server is: it never reports the server gone.
    assert "watch failed" not in out + err, report

    assert _leftovers(out) == [], report


@pytest.mark.timeout(90)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_demo_stops_cleanly_on_a_signal(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "hack" / "demo.py"), "--nodes", "4"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("[") and "leader elected" in line:
                break
        assert any("leader elected" in line for line in seen), "".join(seen)
        t0 = time.monotonic()
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=40)
        stopped_in = time.monotonic() - t0
    finally:
        _kill_leftovers(proc, "".join(seen))
    out = "".join(seen) + rest
    assert proc.returncode == 0, f"{out}\n{err}"
    assert f"ended by {sig.name}" in out, out
    assert stopped_in < 20, out
    assert "watch failed" not in out + err, f"{out}\n{err}"
    assert _leftovers(out) == [], out
