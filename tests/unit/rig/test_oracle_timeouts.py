"""The oracle never takes a slow answer for a hang (tests.support.judges.oracle.Oracle).

Before, an answer slower than 10 s became ``{"hang": True}`` and the comparison was
weakened to ``mine > after``; on a loaded machine that hid real disagreements. Now a
slow answer is asked again with more time, then fails the test loudly; a hang is only
ever proven, of known inputs, by the CPU time the oracle burns. Stand-in oracles (small
scripts) play the three cases: slow once, asleep (starved: no CPU), and looping. When
an answer comes is played on a fake clock injected into the oracle (its ``ready`` and
``monotonic`` seams), never by the machine's speed: a loaded machine once failed the
slow case, whose fresh stand-in had 1.5 s of wall time to start a Python interpreter.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path
from typing import IO

import pytest

from tests.support.judges.oracle import Oracle, OracleTimeout, wait_readable


def _fake(tmp_path: Path, body: str) -> Path:
    """An executable stand-in oracle: reads requests, runs ``body`` with ``n`` = request count."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "oracle"
    marker = tmp_path / "count"
    path.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""\
            import json, sys, time
            from pathlib import Path
            marker = Path({str(marker)!r})
            for line in sys.stdin:
                n = int(marker.read_text()) + 1 if marker.exists() else 1
                marker.write_text(str(n))
                {body}
                print(json.dumps({{"next": [1]}}), flush=True)
            """
        )
    )
    path.chmod(0o755)
    return path


class Clock:
    """A fake clock and wait for :class:`Oracle`: when an answer comes is the test's to say.

    ``answers``: for each wait the oracle asks for, in order, after how many (simulated)
    seconds the answer comes (``inf``, or nothing left: never). A wait shorter than that
    advances the clock by the wait and finds nothing; a wait that covers it advances by
    it and then waits for the real bytes, however slow the machine (60 s, a hang
    catcher). ``idle``: a wait that finds nothing also waits that long in real time (so
    that a looping stand-in gets CPU while the oracle watches it), never deciding more.
    """

    def __init__(self, answers: list[float] | None = None, idle: bool = False) -> None:
        self.now = 0.0
        self.asked: list[float] = []
        self.answers = list(answers or [])
        self.idle = idle

    def monotonic(self) -> float:
        return self.now

    def ready(self, stream: IO[str], seconds: float) -> bool:
        self.asked.append(seconds)
        comes = self.answers.pop(0) if self.answers else math.inf
        if comes > seconds:
            self.now += seconds
            if self.idle:
                wait_readable(stream, seconds)
            return False
        self.now += comes
        return wait_readable(stream, 60)


def test_a_slow_answer_is_asked_again_not_taken_for_a_hang(tmp_path: Path) -> None:
    # The first process answers after 1.5 s (too slow for 0.5 s); the second at once.
    clock = Clock([1.5, 0.0])
    oracle = Oracle(_fake(tmp_path, "pass"), timeout=0.5, ready=clock.ready)
    first = oracle._proc.pid
    try:
        assert oracle.cron("* * * * *", [0]) == {"next": [1]}
        assert clock.asked == [0.5, 1.5]  # asked again, of a fresh process, with 3x the time
        assert oracle._proc.pid != first
    finally:
        _stop(oracle)


def _stop(oracle: Oracle) -> None:
    oracle._proc.kill()  # a stand-in may be asleep: do not wait for it to read EOF
    oracle.close()


def test_an_oracle_that_never_answers_fails_the_test_loudly(tmp_path: Path) -> None:
    clock = Clock()
    oracle = Oracle(_fake(tmp_path, "time.sleep(30)"), timeout=0.2, ready=clock.ready)
    try:
        with pytest.raises(
            OracleTimeout, match=r"did not answer .*attempt 1: 0.2s.*attempt 2: 0.6s"
        ):
            oracle.cron("* * * * *", [0])
        assert clock.asked == [0.2, pytest.approx(0.6)]
    finally:
        _stop(oracle)


def test_a_hang_is_proven_by_cpu_time_not_by_waiting(tmp_path: Path) -> None:
    clock = Clock()
    asleep = Oracle(
        _fake(tmp_path / "asleep", "time.sleep(30)"), ready=clock.ready, monotonic=clock.monotonic
    )
    try:  # no answer, but no CPU burnt either: a starved machine proves nothing
        with pytest.raises(OracleTimeout, match="neither answered"):
            asleep.hangs("* * * * *", 0, cpu_seconds=0.5, wall=1.5)
        assert clock.now == pytest.approx(1.6)  # the wall is the fake clock's
    finally:
        _stop(asleep)
    # However slow the machine, a loop burns CPU: the fake wall (an hour) is never the limit.
    clock = Clock(idle=True)
    looping = Oracle(
        _fake(tmp_path / "looping", "while True: pass"),
        ready=clock.ready,
        monotonic=clock.monotonic,
    )
    try:
        assert looping.hangs("* * * * *", 0, cpu_seconds=0.3, wall=3600)
    finally:
        _stop(looping)


def test_the_real_wait_is_a_select_on_the_oracles_output(tmp_path: Path) -> None:
    """The default seam: nothing to read is False at once (0 s), an answer is True."""
    oracle = Oracle(_fake(tmp_path, "pass"))
    try:
        stdout = oracle._proc.stdout
        assert stdout is not None
        assert wait_readable(stdout, 0) is False  # nothing asked yet
        assert oracle.cron("* * * * *", [0]) == {"next": [1]}  # the real wait, 10 s
    finally:
        _stop(oracle)
