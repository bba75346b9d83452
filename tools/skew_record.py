"""The clock-skew record: the exactly-once scenarios with kumaco from any source tree.

Contract. :func:`skew_record` starts a control plane of its own (audited like the e2e
session's, :func:`~tests.support.env.auditing.audited_control_plane`) and runs the
scenarios of :mod:`tests.support.judges.skew` against the ``kumaco run`` of
``kumaco_path`` (a source tree, run with this interpreter and ``PYTHONPATH`` pointing at
it, as :mod:`tools.kured_record` does; None: this tree): by default only
:func:`~tests.support.judges.skew.double_admission` (a node 10 minutes ahead, released
by its reboot, an unrelated node changing), with ``fresh`` also
:func:`~tests.support.judges.skew.fresh_report` for each skew. It records, it does not
judge: the same code writes the record before and after a fix. ``hack/skew_before.py``
is its command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.env.auditing import audited_control_plane
from tests.support.env.harness import Api, Kumaco
from tests.support.env.supervisor import Timings
from tests.support.judges.skew import SKEWS, double_admission, fresh_report

FAST = Timings(lease=4.0, renew=3.0, retry=1.0)


def skew_record(
    workdir: Path,
    *,
    kumaco_path: Path | None = None,
    unrelated_s: float = 10.0,
    fresh: bool = False,
) -> dict[str, Any]:
    """The scenarios' records, by name (``ahead-unrelated``, and each of ``SKEWS`` with
    ``fresh``), with the settings."""
    workdir.mkdir(parents=True, exist_ok=True)
    started: list[Kumaco] = []
    runs: dict[str, Any] = {}
    with audited_control_plane(workdir / "cp") as (cp, kubeconfig):
        api = Api(cp)
        env = {"PYTHONPATH": str(kumaco_path)} if kumaco_path else {}

        def start(flags: list[str]) -> Kumaco:
            k = Kumaco(
                kubeconfig,
                [*flags, *FAST.flags()],
                workdir / f"kumaco-{len(started)}.log",
                env,
                name=f"skew{len(started)}",
                cwd=kumaco_path,
            )
            started.append(k.start())
            return k

        try:
            runs["ahead-unrelated"] = double_admission(
                api, start, cp.audit_log, unrelated_s=unrelated_s
            )
            for k in started:
                k.stop()
            if fresh:
                for skew in SKEWS:
                    runs[skew] = fresh_report(api, start, cp.audit_log, skew)
                    for k in started:
                        k.stop()
        finally:
            for k in started:
                if k.alive:
                    k.stop()
    ahead = runs["ahead-unrelated"]
    return {
        "runs": runs,
        "admissions_per_node": {n: len(v) for n, v in ahead["admissions"].items()},
        "skewed_node_admitted_twice_for_one_request": ahead["admitted_twice"],
        "settings": {
            "kumaco_path": str(kumaco_path) if kumaco_path else None,
            "offset_s": ahead["offset_s"],
            "unrelated_s": unrelated_s,
            "ceiling": 1,
            "lease_s": FAST.lease,
            "fresh": fresh,
        },
    }
