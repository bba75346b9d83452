"""A deliberately broken kumaco, and audit logs recorded from it, for the ceiling judge.

:data:`BROKEN` (``python -m tests.support.judges.violation run ...``) is ``kumaco run``
with one seam set: the controller's planner (the ``planner`` of
:func:`kumaco.cmd.runner.run`) is :func:`overreaching_plan`, which plans with a ceiling
one higher than configured, so under ``--max-in-progress 1`` it grants
``MaintenanceInProgress`` to two nodes. Nothing else changes and nothing is patched: the
writes, their preconditions and their user agent are kumaco's.

:func:`record_run` runs kumaco (broken or not) against an audited control plane
on a small, fixed scenario -- three nodes needing a reboot, an always-open
window, ceiling 1; once kumaco has granted, the stand-in kured finishes one
holder (clears its RebootRequired), so the place is handed over once -- and
returns the lines of the audit log about the run's nodes. ``python
hack/record_audit.py`` writes them to ``tests/data/audit/`` for the unit tests of
:func:`tests.support.judges.audit.judge_ceiling`, and ``tests/e2e/test_audit_judge.py``
does the same live.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kumaco.core.objects.disruptions import NO_REFUSALS, Refusals
from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.ceiling_rules import GlobalCeiling
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Plan, Policy
from kumaco.core.windows.ceilings import Ceiling
from kumaco.core.windows.window import Window
from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    unique,
    wait_for,
)
from tests.support.env.shifted import run_with
from tests.support.env.supervisor import Timings, replica_flags

#: The launcher (:class:`~tests.support.env.harness.Kumaco`) of the broken kumaco.
BROKEN = ("-m", "tests.support.judges.violation")
#: Where ``-m tests.support.judges.violation`` imports from.
REPO = Path(__file__).resolve().parents[3]


def overreaching_plan(
    windows: Iterable[Window],
    nodes: NodeSet,
    now: int,
    policy: Policy,
    refusals: Refusals = NO_REFUSALS,
) -> Plan:
    """:func:`kumaco.core.planning.planner.plan` with one node more than the ceiling allows."""
    if policy.ceiling is not None:
        wider = GlobalCeiling(Ceiling(policy.ceiling.value + 1))
        rules = tuple(wider if isinstance(r, GlobalCeiling) else r for r in policy.rules)
        policy = dataclasses.replace(policy, rules=rules)
    return plan(windows, nodes, now, policy, refusals)


@dataclass(frozen=True)
class Recorded:
    """One run of the scenario: its node-name prefix, the audit-log lines about its nodes,
    and the most nodes a separate watcher saw holding MaintenanceInProgress at once."""

    prefix: str
    lines: list[str]
    watcher_max: int


def record_run(cp: ControlPlane, kubeconfig: Path, workdir: Path, broken: bool) -> Recorded:
    """Run the scenario of the module docstring (kumaco broken or not) and record it."""
    api = Api(cp)
    run = unique("broken" if broken else "honest")
    ns = api.namespace(unique("judge"))
    names = [f"{run}-{i}" for i in range(3)]
    for i, name in enumerate(names):
        stamp = f"2026-11-0{i + 1}T00:00:00Z"
        api.node(
            name,
            {RUN_LABEL: run},
            [{"type": REQUIRED, "status": "True", "lastTransitionTime": stamp}],
        )
    api.window(ns, "always", {"startTime": "* * * * *", "duration": "2m", "nodeSelector": ""})
    args = replica_flags(run, ns, 1, Timings())  # ceiling 1, RebootRequired required
    launcher = BROKEN if broken else ("-m", "kumaco")
    watcher = NodeWatcher(api, run).__enter__()
    log = workdir / f"{run}.log"
    k = Kumaco(kubeconfig, args, log, name=run, launcher=launcher, cwd=REPO).start()
    granted = 2 if broken else 1
    try:

        def holders() -> list[str]:
            nodes = api.nodes(run)
            return sorted(
                n
                for n, node in nodes.items()
                if any(
                    c.get("type") == MIP and c.get("status") == "True"
                    for c in node.get("status", {}).get("conditions", [])
                )
            )

        first = wait_for(lambda: h if len(h := holders()) == granted else [], 30, what="grants")
        api.set_condition(first[0], REQUIRED, "False", reason="Rebooted")  # kured finished
        wait_for(
            lambda: first[0] not in holders() and len(holders()) == granted, 30, what="handover"
        )
        time.sleep(1)
    finally:
        k.stop(signal.SIGTERM)
        watcher.__exit__()
    lines = [line for line in cp.audit_log.read_text().splitlines() if f'"{run}-' in line]
    seen = watcher.max_count(lambda c: condition_status(c, MIP) == "True")
    return Recorded(f"{run}-", lines, seen)


if __name__ == "__main__":
    sys.exit(run_with(sys.argv[1:], "tests.support.judges.violation", planner=overreaching_plan))
