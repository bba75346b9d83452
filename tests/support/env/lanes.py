"""Which e2e modules share a pytest-xdist worker: each module on one, some in lanes.

Contract. :func:`scheduler` is what the e2e tier's ``pytest_xdist_make_scheduler`` hook
returns: xdist's scope scheduling (a work unit goes to one worker whole, its tests in
collection order) with the unit of a test being its module's file stem, or the lane a
``lanes`` table names for that stem (:func:`unit_of`). So a module's module-scoped
fixtures and the order of its tests hold as in a serial run, and the modules of one lane
run one after the other on one worker. A worker gets its next unit once one test of its
current work is left (xdist's own rule: two), so that no unit waits behind a long tail.

Why not ``--dist loadgroup`` and ``xdist_group`` marks: pytest-xdist 3.8 names a test's
group by rewriting ``item._nodeid``, which pytest 9.2 no longer reads (its node ids are
structured), so the marks are silently ignored and every test is handed out alone
(pytest-dev/pytest-xdist#1386). The unit here is computed from the node id the
controller receives, whatever pytest version collected it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]


def unit_of(nodeid: str, lanes: Mapping[str, str]) -> str:
    """The work unit of the test ``nodeid``: its module's lane, else its module's stem."""
    stem = PurePosixPath(nodeid.split("::", 1)[0]).stem
    return lanes.get(stem, stem)


def scheduler(config: Any, log: Any, lanes: Mapping[str, str]) -> Any:
    """xdist's scope scheduling with :func:`unit_of` as the scope (see the contract)."""
    table = dict(lanes)

    class ModulesInLanes(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid, table)

        def _reschedule(self, node: Any) -> None:
            # xdist tops a worker up once two of its tests are left; a module handed out then
            # waits behind both (a lane ending in a two-minute scenario kept the tier's
            # longest module waiting). Here: once one is left -- never none, since a worker
            # runs its last test only when it knows the next one or is told to stop.
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return ModulesInLanes(config, log)
