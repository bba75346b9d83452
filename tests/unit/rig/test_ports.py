"""Listeners' ports (tests/support/env/ports.py): below the ephemeral range, never picked twice.

A port picked and not yet bound must not be picked again -- by this process or by
another one picking from the same slice -- and none comes from the range outgoing
connections take their local ports from.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.env.ports import EPHEMERAL_RANGE, _bindable, free_port, port_slice

REPO = Path(__file__).resolve().parents[3]


def test_picks_are_distinct_and_below_the_ephemeral_range() -> None:
    picks = [free_port() for _ in range(50)]
    assert len(set(picks)) == 50
    assert all(p in port_slice() for p in picks)
    low = int(EPHEMERAL_RANGE.read_text().split()[0])
    assert max(picks) < low


def test_a_process_picking_from_the_same_slice_goes_on_from_this_one() -> None:
    mine = [free_port() for _ in range(3)]
    theirs = subprocess.run(
        [sys.executable, "-c", "from tests.support.env.ports import free_port; print(free_port())"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    after = free_port()
    ports = port_slice()
    # Round the slice: the other process took the first free port after mine (the ports
    # between are in use), and I the one after it.
    gap = (ports.index(int(theirs)) - ports.index(mine[-1])) % len(ports)
    skipped = [ports[(ports.index(mine[-1]) + k) % len(ports)] for k in range(1, gap)]
    assert int(theirs) not in mine and not any(_bindable(p) for p in skipped)
    assert after != int(theirs) and after not in mine
