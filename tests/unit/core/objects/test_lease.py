"""The Lease codec (kumaco.core.objects.lease): what the election and `status` read and write."""

from __future__ import annotations

from typing import Any

import pytest

from kumaco.core.objects.lease import LeaseRecord, lease_object, micro_time, parse_lease, released


def test_a_lease_reads_its_election_fields() -> None:
    obj = {
        "spec": {
            "holderIdentity": "kumaco-a_1",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-12-02T06:00:00.000000Z",
            "renewTime": "2026-12-02T06:00:10.000000Z",
            "leaseTransitions": 3,
        }
    }
    assert parse_lease(obj) == LeaseRecord(
        "kumaco-a_1", 15, "2026-12-02T06:00:00.000000Z", "2026-12-02T06:00:10.000000Z", 3
    )


@pytest.mark.parametrize(
    "obj",
    [
        None,
        {},
        {"spec": None},
        {"spec": "x"},
        {"spec": {"holderIdentity": 7, "leaseDurationSeconds": "abc", "leaseTransitions": []}},
        {"spec": {"leaseDurationSeconds": True, "renewTime": 5, "acquireTime": {"a": 1}}},
    ],
)
def test_a_damaged_lease_reads_as_empty_and_never_raises(obj: Any) -> None:
    assert parse_lease(obj) == LeaseRecord("", 0, None, None, 0)


def test_counts_written_as_strings_are_read() -> None:
    assert parse_lease({"spec": {"leaseDurationSeconds": "8", "leaseTransitions": "2"}}) == (
        LeaseRecord("", 8, None, None, 2)
    )


def test_a_written_lease_reads_back_as_its_record() -> None:
    now = micro_time(1_796_191_200.25)
    assert now == "2026-12-02T06:00:00.250000Z"
    record = LeaseRecord("me", 15, now, now, 4)
    put = lease_object("kumaco", "ns", record, "123")
    assert put["metadata"] == {"name": "kumaco", "namespace": "ns", "resourceVersion": "123"}
    assert (put["apiVersion"], put["kind"]) == ("coordination.k8s.io/v1", "Lease")
    assert parse_lease(put) == record
    post = lease_object("kumaco", "ns", record)
    assert "resourceVersion" not in post["metadata"]


def test_a_released_lease_has_no_holder_and_a_one_second_duration() -> None:
    body = lease_object("kumaco", "ns", released(4, "t"), "9")
    assert body["spec"] == {
        "holderIdentity": None,
        "leaseDurationSeconds": 1,
        "acquireTime": "t",
        "renewTime": "t",
        "leaseTransitions": 4,
    }
