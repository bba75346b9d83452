"""kumaco.election against the real API server, with an injected (fake) monotonic clock.

Leases, their resourceVersion conflicts and 404s are real; only time is
controlled, so expiry, fencing and release are tested exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.harness import Api, unique
from kumaco.election import LeaseElection
from kumaco.kube import Kube, load_configuration


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


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


def test_one_winner_then_expiry_only_after_a_full_lease_duration(
    kube: Kube, control_plane: object
) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
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


def test_a_renewal_keeps_followers_out(kube: Kube, control_plane: object) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew()
    for _ in range(10):
        clock.advance(2)
        assert a.try_acquire_or_renew()  # renews: the record changes
        assert not b.try_acquire_or_renew()  # b re-observes it and waits again


def test_fencing_deadline_is_the_renew_deadline_from_the_last_renewal(
    kube: Kube, control_plane: object
) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
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


def test_a_lost_renewal_stops_leading_and_calls_back(kube: Kube, control_plane: object) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    lost: list[bool] = []
    a = LeaseElection(
        kube, ns, name, "replica-0", clock=clock, on_stopped_leading=lambda: lost.append(True)
    )
    assert a.try_acquire_or_renew()
    a._leading = True
    # Somebody else takes the Lease over (e.g. after a network partition healed).
    lease = raw.lease(ns, name)
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    raw.request("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}", lease)
    clock.advance(2)
    a._renew_round()
    assert a.is_leader  # still within the renew deadline: keeps leading, but...
    clock.advance(9)
    a._renew_round()
    assert not a.is_leader
    assert lost == [True]
    assert a.write_deadline() is None


def test_release_hands_over_at_once(kube: Kube, control_plane: object) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
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


def test_expiry_is_judged_from_when_the_follower_saw_the_record_not_from_its_timestamps(
    kube: Kube, control_plane: object
) -> None:
    raw = Api(control_plane)  # type: ignore[arg-type]
    ns, name, clock = raw.namespace(unique("el")), unique("lease"), FakeClock()
    a, b = candidates(kube, ns, name, clock)
    assert a.try_acquire_or_renew()
    clock.advance(16)  # a is gone, but b has never looked: clocks are not compared across replicas
    assert b.try_acquire_or_renew() is False
    clock.advance(15)
    assert b.try_acquire_or_renew() is True


def test_health_reports_a_stuck_loop() -> None:
    clock = FakeClock()
    e = LeaseElection(None, "ns", "x", "me", clock=clock)  # type: ignore[arg-type]
    assert e.healthy()
    clock.advance(15 + 2 * 2 - 0.1)
    assert e.healthy()
    clock.advance(0.2)
    assert not e.healthy()
