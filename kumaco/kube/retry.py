"""The one retry policy of kumaco's I/O edge, built on tenacity.

Contract: :func:`retrying` retries with exponential backoff and jitter,
honouring ``Retry-After`` (capped at :data:`MAX_RETRY_AFTER`), bounded by
attempts and by a deadline: no attempt starts after the deadline, and no
backoff sleeps past it. What is retried depends on the request's method
(:func:`is_retryable`):

* a read (``GET``, ``HEAD``, ``OPTIONS``): 429, 5xx and every transport error;
* a write (``POST``, ``PUT``, ``PATCH``, ``DELETE``): only what cannot have
  reached the handler -- a 429 (API Priority and Fairness and the max-in-flight
  filter reject before the handler runs) and a transport error raised before a
  byte was sent (``TransportError.sent`` is False: no connection, no tunnel).
  A write that may have been applied -- a timeout, a connection broken after
  sending, a 5xx (a 504 says "may still be processing") -- is never sent again:
  the caller re-reads and decides again.

409 and every other 4xx are raised at once (409 means: re-read and decide again).
A caller outside the API (the notifications' sender) passes its own ``retryable``
predicate and keeps the rest: the backoff, the attempts and the deadline.

A loop that never gives up (a reflector's list-then-watch) takes its error
policy from here too: :func:`backoff_forever` answers, for the n-th failure
in a row, how long to wait (exponential with jitter, capped; ``Retry-After``
honoured as above) and whether to start again from a fresh LIST (:class:`OnError`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import tenacity

from kumaco.kube.errors import ApiError, TransportError

MAX_RETRY_AFTER = 30.0
#: Methods whose repetition cannot change anything on the server.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to retry retryable failures."""

    attempts: int = 6
    initial: float = 0.2
    maximum: float = 10.0
    deadline: float = 60.0


def asked_wait(exc: BaseException | None) -> float | None:
    """The wait an answer asked for (``Retry-After``, capped at :data:`MAX_RETRY_AFTER`)."""
    if isinstance(exc, ApiError) and exc.retry_after is not None:
        return min(max(exc.retry_after, 0.0), MAX_RETRY_AFTER)
    return None


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    backoff = tenacity.wait_exponential_jitter(
        multiplier=policy.initial, max=policy.maximum, jitter=policy.initial
    )

    def wait(state: tenacity.RetryCallState) -> float:
        asked = asked_wait(state.outcome.exception() if state.outcome else None)
        return asked if asked is not None else float(backoff(state))

    return wait


def is_retryable(exc: BaseException, method: str = "GET") -> bool:
    """Whether ``exc`` may be retried for a request with ``method`` (see the module contract)."""
    if method.upper() in SAFE_METHODS:
        return isinstance(exc, TransportError) or (isinstance(exc, ApiError) and exc.retryable)
    if isinstance(exc, TransportError):
        return not exc.sent
    return isinstance(exc, ApiError) and exc.status == 429


def retrying(
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[BaseException, float], None] | None = None,
    method: str = "GET",
    retryable: Callable[[BaseException], bool] | None = None,
) -> tenacity.Retrying:
    """The one retry policy for requests with ``method``; see the module contract."""
    retry_if = retryable or (lambda exc: is_retryable(exc, method))

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if on_retry is not None and exc is not None and state.next_action is not None:
            on_retry(exc, state.next_action.sleep)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(retry_if),
        wait=_wait(policy),
        stop=tenacity.stop_after_attempt(policy.attempts)
        | tenacity.stop_before_delay(policy.deadline),
        sleep=sleep,
        reraise=True,
        before_sleep=before_sleep,
    )


@dataclass(frozen=True)
class OnError:
    """What a loop that never gives up does after a failure: wait, then maybe relist."""

    sleep: float
    #: Start again from a fresh LIST (the watch position is no longer trusted).
    relist: bool = False


#: An error policy: the failure and how many failed in a row (this one included).
ErrorPolicy = Callable[[BaseException, int], OnError]


def backoff_forever(
    rng: random.Random,
    *,
    initial: float = 0.2,
    maximum: float = 30.0,
    relist_after: int = 5,
) -> ErrorPolicy:
    """A reflector's error policy: ``initial * 2**n`` capped at ``maximum``, times 0.5-1.5.

    A ``Retry-After`` is waited instead (capped at :data:`MAX_RETRY_AFTER`);
    from the ``relist_after``-th failure in a row on, the loop relists.
    """

    def on_error(exc: BaseException, failures: int) -> OnError:
        asked = asked_wait(exc)
        delay = min(maximum, initial * 2 ** min(failures, 8)) * (0.5 + rng.random())
        return OnError(asked if asked is not None else delay, relist=failures >= relist_after)

    return on_error
