"""kumaco.kube.election against the real API server, with an injected (fake) monotonic clock.

Leases, their resourceVersion conflicts and 404s are real; only time is
controlled, so expiry, fencing and release are tested exactly.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kumaco.kube.client import Kube
from kumaco.kube.config import load_configuration
from kumaco.kube.election import LeaseElection
from tests.support.env.clocks import FakeClock
from tests.support.env.harness import Api, unique, wait_for


@pytest.fixture
def kube(kubeconfig_path: Path) -> Kube:
    return Kube(load_configuration(str(kubeconfig_path)), "kumaco-test/election")


def candidates(kube: Kube, ns: str, name: str, clock: FakeClock, n: int = 2) -> list[LeaseElection]:
    return [
        LeaseElection(
            kube,
            ns,
            name,
            f"replica-{i}",
            lease_duration=15,
            renew_deadline=10,
            retry_period=2,
            clock=clock,
        )
        for i in range(n)
    ]


def test_one_winner_then_expiry_only_after_a_full_lease_duration(kube: Kube, raw: Api) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew() is True  # creates the Lease
    assert b.try_acquire_or_renew() is False  # held and fresh
    lease = raw.lease(ns, name)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "replica-0"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    clock.advance(14.9)  # b has seen the record for 14.9 s: not yet expired
    assert b.try_acquire_or_renew() is False
    clock.advance(0.2)
    assert b.try_acquire_or_renew() is True
    lease = raw.lease(ns, name)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "replica-1"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_renewal_keeps_followers_out(kube: Kube, raw: Api) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew()
    for _ in range(10):
        clock.advance(2)
        assert a.try_acquire_or_renew()  # renews: the record changes
        assert not b.try_acquire_or_renew()  # b re-observes it and waits again


def test_fencing_deadline_is_the_renew_deadline_from_the_last_renewal(kube: Kube, raw: Api) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    (a,) = candidates(kube, ns, name, clock, 1)
    assert a.write_deadline() is None  # not leading yet
    assert a.try_acquire_or_renew()
    a._leading = True  # what run() does on winning
    assert a.write_deadline() == pytest.approx(clock.t + 10)
    clock.advance(9.9)
    assert a.write_deadline() is not None
    clock.advance(0.2)
    assert a.write_deadline() is None  # past the renew deadline: must not write
    assert a.try_acquire_or_renew()
    assert a.write_deadline() == pytest.approx(clock.t + 10)


def test_a_lost_renewal_stops_leading(kube: Kube, raw: Api) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a = LeaseElection(kube, ns, name, "replica-0", clock=clock)
    assert a.try_acquire_or_renew()
    a._leading = True
    # Somebody else takes the Lease over (e.g. after a network partition healed).
    lease = raw.lease(ns, name)
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    raw.request("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}", lease)
    clock.advance(2)
    assert a._renew_round() is False  # within the renew deadline: not lost yet...
    assert a.is_leader
    clock.advance(9)
    assert a._renew_round() is True  # ...past it: lost, and run() reports it once
    assert not a.is_leader
    assert a._renew_round() is False
    assert a.write_deadline() is None


def test_the_run_loop_reports_a_lost_lease_once(kube: Kube, raw: Api) -> None:
    ns, name = raw.namespace(unique("el")), unique("lease")
    events: list[str] = []
    a = LeaseElection(
        kube,
        ns,
        name,
        "replica-0",
        lease_duration=3,
        renew_deadline=2,
        retry_period=0.2,
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
    )
    thread = threading.Thread(target=a.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: a.is_leader, 10, what="leading")  # a fresh Lease: the first round wins
        # An intruder holds the Lease with a long duration: every renewal now fails.
        path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"
        lease = raw.lease(ns, name)
        assert lease is not None
        lease["spec"].update(holderIdentity="intruder", leaseDurationSeconds=3600)
        raw.request("PUT", path, lease)
        # Lost after the renew deadline (2 s) of failed 0.2 s rounds: 10 s leaves 5x that.
        wait_for(lambda: not a.is_leader, 10, what="leadership lost")
        time.sleep(1.0)  # several more rounds: still reported once
        assert events == ["started", "stopped"]
    finally:
        a.stop.set()
        thread.join(10)


def test_release_hands_over_at_once(kube: Kube, raw: Api) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew()
    a._leading = True
    assert not b.try_acquire_or_renew()
    assert a.release() is True
    lease = raw.lease(ns, name)
    assert lease is not None
    assert not lease["spec"].get("holderIdentity")
    assert b.try_acquire_or_renew() is True  # no waiting for expiry
    assert a.write_deadline() is None


class HeldPut:
    """The Kube seam with one acquiring PUT held in flight after the server committed it.

    This is the window a SIGTERM can hit: the new leader is visible in the Lease,
    but its response has not reached the replica yet.
    """

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.committed = threading.Event()
        self.go = threading.Event()
        self.held = False

    def request(self, method: str, path: str, **kw: Any) -> Any:
        result = self.kube.request(method, path, **kw)
        body = kw.get("body") or {}
        winning = method in ("PUT", "POST") and (body.get("spec") or {}).get("holderIdentity")
        if winning and not self.held:
            self.held = True
            self.committed.set()
            self.go.wait(10)
        return result


def test_release_during_an_acquiring_put_still_releases(kube: Kube, raw: Api) -> None:
    """Regression (CI, stop 11): SIGTERM right after a takeover left the lease held for 16 s."""
    ns, name = raw.namespace(unique("el")), unique("lease")
    seam = HeldPut(kube)
    a = LeaseElection(seam, ns, name, "replica-0", retry_period=0.2)  # type: ignore[arg-type]
    thread = threading.Thread(target=a.run, daemon=True)
    thread.start()
    assert seam.committed.wait(10)  # the first round's PUT, at once: 10 s only catches a hang
    lease = raw.lease(ns, name)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "replica-0"  # what a watcher sees: a new leader
    assert not a.is_leader  # ...while the replica does not know yet
    released: list[bool] = []
    stopper = threading.Thread(target=lambda: released.append(a.release()))
    stopper.start()  # the SIGTERM
    # release() found the round in flight and waits for it (before the fix it judged
    # "not leading" at once and never waited: this event was never set).
    # Set as soon as release() starts waiting: 10 s only catches a hang.
    assert a.release_waits.wait(10), "release() did not wait for the round in flight"
    assert stopper.is_alive() and not released
    seam.go.set()  # the PUT's response arrives
    # The round ends and release() sends one more request: 10 s only catches a hang.
    stopper.join(10)
    thread.join(10)
    assert released == [True]
    lease = raw.lease(ns, name)
    assert lease is not None
    assert not lease["spec"].get("holderIdentity")
    assert not a.is_leader


def test_expiry_is_judged_from_when_the_follower_saw_the_record_not_from_its_timestamps(
    kube: Kube, raw: Api
) -> None:
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew()
    clock.advance(16)  # a is gone, but b has never looked: clocks are not compared across replicas
    assert b.try_acquire_or_renew() is False
    clock.advance(15)
    assert b.try_acquire_or_renew() is True
