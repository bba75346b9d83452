"""The oracle never takes a slow answer for a hang (tests.support.judges.oracle.Oracle).

Before, an answer slower than 10 s became ``{"hang": True}`` and the comparison was
weakened to ``mine > after``; on a loaded machine that hid real disagreements. Now a
slow answer is asked again with more time, then fails the test loudly; a hang is only
ever proven, of known inputs, by the CPU time the oracle burns. Stand-in oracles (small
scripts) play the three cases: slow once, asleep (starved: no CPU), and looping.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.judges.oracle import Oracle, OracleTimeout


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


def test_a_slow_answer_is_asked_again_not_taken_for_a_hang(tmp_path: Path) -> None:
    # The first process answers after 1.5 s (too slow for 0.5 s); the second at once.
    oracle = Oracle(_fake(tmp_path, "time.sleep(1.5 if n == 1 else 0)"), timeout=0.5)
    try:
        assert oracle.cron("* * * * *", [0]) == {"next": [1]}
    finally:
        _stop(oracle)


def _stop(oracle: Oracle) -> None:
    oracle._proc.kill()  # a stand-in may be asleep: do not wait for it to read EOF
    oracle.close()


def test_an_oracle_that_never_answers_fails_the_test_loudly(tmp_path: Path) -> None:
    oracle = Oracle(_fake(tmp_path, "time.sleep(30)"), timeout=0.2)
    try:
        with pytest.raises(OracleTimeout, match="did not answer"):
            oracle.cron("* * * * *", [0])
    finally:
        _stop(oracle)


def test_a_hang_is_proven_by_cpu_time_not_by_waiting(tmp_path: Path) -> None:
    asleep = Oracle(_fake(tmp_path / "asleep", "time.sleep(30)"))
    try:  # no answer, but no CPU burnt either: a starved machine proves nothing
        with pytest.raises(OracleTimeout, match="neither answered"):
            asleep.hangs("* * * * *", 0, cpu_seconds=0.5, wall=1.5)
    finally:
        _stop(asleep)
    looping = Oracle(_fake(tmp_path / "looping", "while True: pass"))
    try:
        assert looping.hangs("* * * * *", 0, cpu_seconds=0.3, wall=30)
    finally:
        _stop(looping)
