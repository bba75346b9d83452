"""A fake monotonic clock for tests: a callable that reads ``t`` and moves only when told."""

from __future__ import annotations


class FakeClock:
    """``clock()`` reads :attr:`t` (starting at 1000.0); :meth:`advance` moves it."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
