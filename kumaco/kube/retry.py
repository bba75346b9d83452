"""The one retry policy of kumaco's I/O edge, built on tenacity.

Contract: :func:`retrying` retries 429, 5xx and transport errors with
exponential backoff and jitter, honouring ``Retry-After`` (capped at
:data:`MAX_RETRY_AFTER`); 409 and every other 4xx are raised at once (409
means: re-read and decide again). Bounded by attempts and by a deadline.
Callers decide what may be retried at all: a non-idempotent write is only
handed to it where a retry cannot double it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import tenacity

from kumaco.kube.errors import ApiError, TransportError

MAX_RETRY_AFTER = 30.0


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to retry retryable failures."""

    attempts: int = 6
    initial: float = 0.2
    maximum: float = 10.0
    deadline: float = 60.0


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    backoff = tenacity.wait_exponential_jitter(
        multiplier=policy.initial, max=policy.maximum, jitter=policy.initial
    )

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ApiError) and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), MAX_RETRY_AFTER)
        return float(backoff(state))

    return wait


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, TransportError) or (isinstance(exc, ApiError) and exc.retryable)


def retrying(
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> tenacity.Retrying:
    """The one retry policy: 429/5xx/transport errors back off (Retry-After wins), others raise."""

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if on_retry is not None and exc is not None and state.next_action is not None:
            on_retry(exc, state.next_action.sleep)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(_is_retryable),
        wait=_wait(policy),
        stop=tenacity.stop_after_attempt(policy.attempts)
        | tenacity.stop_after_delay(policy.deadline),
        sleep=sleep,
        reraise=True,
        before_sleep=before_sleep,
    )
