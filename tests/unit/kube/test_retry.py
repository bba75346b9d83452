"""The one retry policy at the I/O edge (kumaco.kube.retry) and error mapping.

``retrying`` for requests, ``backoff_forever`` for a reflector's list-then-watch.

Sleeps are recorded, not slept: a callable injected into the policy.
"""

from __future__ import annotations

import random

import pytest

from kumaco.kube.errors import ApiError, TransportError
from kumaco.kube.errors import api_error as _api_error
from kumaco.kube.retry import OnError, RetryPolicy, backoff_forever, retrying


class Flaky:
    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def test_429_waits_exactly_what_retry_after_says() -> None:
    slept: list[float] = []
    f = Flaky(
        ApiError(429, "TooManyRequests", "slow down", retry_after=3.0), ApiError(429, "", "", 1.0)
    )
    assert retrying(RetryPolicy(), sleep=slept.append)(f) == "ok"
    assert slept == [3.0, 1.0]
    assert f.calls == 3


def test_retry_after_is_capped() -> None:
    slept: list[float] = []
    retrying(RetryPolicy(), sleep=slept.append)(Flaky(ApiError(503, "", "", retry_after=3600)))
    assert slept == [30.0]


@pytest.mark.parametrize(
    "failure", [ApiError(500, "", ""), ApiError(503, "", ""), TransportError("reset")]
)
def test_5xx_and_transport_errors_back_off_exponentially(failure: BaseException) -> None:
    slept: list[float] = []
    f = Flaky(*(failure for _ in range(4)))
    assert retrying(RetryPolicy(initial=0.2, maximum=10), sleep=slept.append)(f) == "ok"
    assert len(slept) == 4
    assert all(0 < s <= 10 for s in slept)
    assert slept[-1] >= 0.2 * 2**2  # grows (jitter adds on top)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_other_4xx_and_conflicts_are_not_retried(status: int) -> None:
    slept: list[float] = []
    f = Flaky(ApiError(status, "", ""))
    with pytest.raises(ApiError):
        retrying(RetryPolicy(), sleep=slept.append)(f)
    assert f.calls == 1
    assert slept == []


def test_gives_up_after_the_attempts() -> None:
    f = Flaky(*(ApiError(500, "", "") for _ in range(10)))
    with pytest.raises(ApiError):
        retrying(RetryPolicy(attempts=3), sleep=lambda _s: None)(f)
    assert f.calls == 3


def test_a_status_body_becomes_an_api_error() -> None:
    raw = b'{"kind":"Status","status":"Failure","message":"nodes \\"x\\" is forbidden","reason":"Forbidden","code":403}'
    err = _api_error(403, raw, {"Retry-After": "2"})
    assert (err.status, err.reason, err.message, err.retry_after) == (
        403,
        "Forbidden",
        'nodes "x" is forbidden',
        2.0,
    )
    junk = _api_error(502, b"<html>bad gateway</html>", {})
    assert (junk.status, junk.retryable, junk.retry_after) == (502, True, None)
    assert "bad gateway" in junk.message


def test_a_reflector_backs_off_exponentially_with_jitter_up_to_30_s_and_relists_after_5() -> None:
    on_error = backoff_forever(random.Random(7))
    same = random.Random(7)
    failure = TransportError("reset")
    for n in range(1, 12):
        want = min(30.0, 0.2 * 2 ** min(n, 8)) * (0.5 + same.random())
        assert on_error(failure, n) == OnError(want, relist=n >= 5), n
    assert 0.2 <= on_error(failure, 1).sleep < 0.6
    assert 15.0 <= on_error(failure, 50).sleep < 45.0


def test_a_reflector_waits_what_retry_after_says_capped() -> None:
    rng = random.Random(1)
    on_error = backoff_forever(rng)
    assert on_error(ApiError(429, "", "", retry_after=3.0), 1) == OnError(3.0)
    assert on_error(ApiError(503, "", "", retry_after=3600), 5) == OnError(30.0, relist=True)
    # The jitter is drawn either way: the same random sequence as before Retry-After.
    same = random.Random(1)
    assert rng.random() == [same.random() for _ in range(3)][-1]
