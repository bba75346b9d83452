"""The election loop's health (``/healthz``): stuck once it has not run for its deadline.

Moved from tests/e2e/test_election.py, where it used no API server: a
:class:`~kumaco.kube.election.LeaseElection` without a client, on a fake monotonic clock,
is healthy until the Lease duration plus twice the retry period has passed without a
round, and unhealthy after.
"""

from __future__ import annotations

from kumaco.kube.election import LeaseElection
from tests.support.env.clocks import FakeClock


def test_health_reports_a_stuck_loop() -> None:
    clock = FakeClock()
    e = LeaseElection(None, "ns", "x", "me", clock=clock)  # type: ignore[arg-type]
    assert e.healthy()
    clock.advance(15 + 2 * 2 - 0.1)
    assert e.healthy()
    clock.advance(0.2)
    assert not e.healthy()
