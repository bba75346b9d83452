"""A stand-in for kured v2: it performs the maintenance kumaco admits, and keeps its own record.

Contract: :class:`Consumer` polls the nodes of one test run. When it sees a node
with ``MaintenanceInProgress=True`` that it has not started on, it starts that
node's "maintenance" (recording the time) and, exactly ``duration`` seconds
later (``durations`` may override it per node), finishes it by setting the
required condition to False -- what kured does after the reboot -- recording
the time again. Its record (:attr:`Consumer.turns`) is what was *physically*
in maintenance, independent of kumaco's conditions: :meth:`max_concurrent`
judges the ceiling by it. Only loopback traffic, through
:class:`~tests.support.harness.Api`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from tests.support.harness import MIP, REQUIRED, RUN_LABEL, Api, condition_status


@dataclass
class Turn:
    """One node's maintenance as the consumer performed it (times from ``time.time()``)."""

    node: str
    started: float
    finished: float | None = None


@dataclass
class Consumer:
    """Polls the nodes labelled ``RUN_LABEL=run`` and maintains the admitted ones."""

    api: Api
    run: str
    duration: float
    durations: Mapping[str, float] = field(default_factory=dict)
    required: str = REQUIRED
    in_progress: str = MIP
    poll: float = 0.05
    turns: list[Turn] = field(default_factory=list)
    errors: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"consumer-{self.run}", daemon=True)

    def __enter__(self) -> Consumer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        active: dict[str, Turn] = {}
        while not self._stop.is_set():
            now = time.time()
            try:
                nodes = self.api.nodes(self.run)
            except (OSError, RuntimeError):
                self.errors += 1
                self._stop.wait(self.poll)
                continue
            for name, obj in nodes.items():
                conds = {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}
                turn = active.get(name)
                if turn is None:
                    if condition_status(conds, self.in_progress) == "True" and (
                        condition_status(conds, self.required) == "True"
                    ):
                        turn = Turn(name, now)
                        active[name] = turn
                        with self._lock:
                            self.turns.append(turn)
                    continue
                if now - turn.started >= self.durations.get(name, self.duration):
                    try:
                        self.api.set_condition(
                            name, self.required, "False", reason="Rebooted", message="done"
                        )
                    except (OSError, RuntimeError):
                        self.errors += 1
                        continue
                    turn.finished = time.time()
                    del active[name]
            self._stop.wait(self.poll)

    # -- questions

    def finished(self) -> dict[str, float]:
        with self._lock:
            return {t.node: t.finished for t in self.turns if t.finished is not None}

    def started(self) -> dict[str, float]:
        with self._lock:
            return {t.node: t.started for t in self.turns}

    def max_concurrent(self, groups: Mapping[str, str] | None = None) -> int:
        """The most nodes (of one group, if ``groups`` maps nodes to groups) in maintenance at once."""
        with self._lock:
            spans = [(t.started, t.finished or float("inf"), t.node) for t in self.turns]
        best = 0
        for start, _end, node in spans:
            group = None if groups is None else groups.get(node)
            running = sum(
                1
                for s, e, n in spans
                if s <= start < e and (groups is None or groups.get(n) == group)
            )
            best = max(best, running)
        return best


__all__ = ["RUN_LABEL", "Consumer", "Turn"]
