"""High availability end to end: three replicas as processes, a real API server with auditing.

Takeovers are measured from the kill to the Lease naming a new holder and
recorded as figures (tests/support/judges/figures.py, with their lease timings). The
chaos short form (tools/chaos.py) judges the ceiling three ways -- the
stand-in kured's own record of its reboots, the audit log replayed in commit
order, a separate watcher that must not relist -- and the absence of
overlapping writers in the audit log; it asserts how many kills and takeovers
really happened.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import RUN_LABEL, UM, Api, Kumaco, condition_status, unique, wait_for
from tests.support.env.supervisor import Supervisor, Timings, leader_of, scope_flags
from tests.support.judges.figures import Figures
from tools.chaos import Settings, run_chaos

ALWAYS = {"startTime": "* * * * *", "duration": "2m"}


def _setup(raw: Api, nodes: int = 3, selector: str = "") -> tuple[str, str, list[str]]:
    run, ns = unique("ha"), raw.namespace(unique("ha"))
    names = [f"{run}-{i}" for i in range(nodes)]
    for n in names:
        raw.node(n, {RUN_LABEL: run, "zone": "a"})
    raw.window(ns, "w", {**ALWAYS, "nodeSelector": selector})
    return run, ns, names


def test_failover_after_sigkill_and_sigterm_within_the_bounds(
    raw: Api, replicas: Callable[..., Supervisor], figures: Figures
) -> None:
    run, ns, names = _setup(raw)
    sup = replicas(run, scope_flags(run, ns))
    t = Timings()  # the defaults: 15 s / 10 s / 2 s
    # Three start-ups side by side, a fresh Lease, the first pass: 1-4 s measured
    # (test_catch_up.py); 30 s each for a loaded machine.
    leader = wait_for(lambda: leader_of(raw, ns, run), 30, what="a leader")
    wait_for(
        lambda: all(condition_status(raw.conditions(n), UM) == "True" for n in names),
        30,
        what="conditions",
    )
    # Followers are ready too, and exactly one replica reports leading.
    # 20 s: they started with the leader, which has written its conditions by now.
    wait_for(lambda: all(k.ready() for k in sup.replicas.values()), 20, what="all replicas ready")
    assert sorted(k.metric("kumaco_leader") or 0.0 for k in sup.replicas.values()) == [
        0.0,
        0.0,
        1.0,
    ]

    times = {}
    for sig in (signal.SIGKILL, signal.SIGTERM):
        victim = sup.by_identity(leader)
        assert victim is not None
        t0 = time.monotonic()
        victim.send(sig)
        new = wait_for(
            lambda old=leader: (h := leader_of(raw, ns, run)) and h != old and h,
            40,  # outlasts the asserted bounds below (SIGKILL: 15.12 s measured, ha_failover)
            interval=0.02,
            what="a new leader",
        )
        times[sig.name] = time.monotonic() - t0
        assert sup.by_identity(new) is not victim
        leader = new
    # The bounds docs/reliability.md quotes: SIGKILL, the lease and a retry period (up to
    # 1.2x with jitter), plus 1 s for load, and not earlier than the lease allows; SIGTERM
    # (the Lease released), a retry period with jitter, plus 1 s.
    sigkill_bound = t.lease + t.retry * 1.2 + 1.0
    sigterm_bound = t.retry * 1.2 + 1.0
    print(
        f"takeover: SIGKILL {times['SIGKILL']:.2f}s (bound {sigkill_bound:.1f}s), "
        f"SIGTERM {times['SIGTERM']:.2f}s (bound {sigterm_bound:.1f}s)"
    )
    figures.record(
        "ha_failover",
        sigkill_takeover_s=round(times["SIGKILL"], 2),
        sigterm_takeover_s=round(times["SIGTERM"], 2),
        settings={"lease_s": t.lease, "renew_s": t.renew, "retry_s": t.retry, "replicas": 3},
        sigkill_bound_s=round(sigkill_bound, 2),
        sigterm_bound_s=round(sigterm_bound, 2),
    )
    assert t.lease - t.renew < times["SIGKILL"] <= sigkill_bound
    assert times["SIGTERM"] <= sigterm_bound  # released: about one retry period


def test_a_config_edit_hands_over_to_another_replica_with_the_new_windows_within_3s(
    raw: Api, replicas: Callable[..., Supervisor], figures: Figures
) -> None:
    run, ns, names = _setup(raw, selector="zone=a")
    raw.label(names[0], "zone", "b")
    sup = replicas(
        run,
        [
            *scope_flags(run, ns),
            "--leader-elect-retry-period",
            "1s",
            "--leader-elect-renew-deadline",
            "5s",
            "--leader-elect-lease-duration",
            "8s",
            "--config-settle",  # how long the leader waits for more edits before it exits
            "0.5s",
        ],
    )
    # Start-ups, a fresh Lease, the first pass: 1-4 s measured (test_catch_up.py); 30 s each.
    leader = wait_for(lambda: leader_of(raw, ns, run), 30, what="a leader")
    wait_for(
        lambda: condition_status(raw.conditions(names[1]), UM) == "True", 30, what="first state"
    )
    old = sup.by_identity(leader)
    t0 = time.monotonic()
    raw.edit_window(ns, "w", {**ALWAYS, "nodeSelector": "zone=b"})
    wait_for(
        lambda: (
            condition_status(raw.conditions(names[0]), UM) == "True"
            and condition_status(raw.conditions(names[1]), UM) == "False"
        ),
        10,  # outlasts the asserted 3 s below (1.1 s measured, ha_config_edit)
        interval=0.02,
        what="the new windows applied",
    )
    took = time.monotonic() - t0
    new = leader_of(raw, ns, run)
    print(f"config edit: new windows applied by another replica {took:.2f}s after the edit")
    figures.record(
        "ha_config_edit",
        new_windows_applied_s=round(took, 2),
        settings={"lease_s": 8, "renew_s": 5, "retry_s": 1, "config_settle_s": 0.5, "replicas": 3},
    )
    assert new != leader
    # The old leader released the Lease before its teardown (probe servers, interpreter
    # exit), so the new leader may finish first: wait for the controlled exit.
    assert old is not None and old.proc is not None
    # The exit follows the release: 2.94 s from the edit with a 2 s settle (config_edit_single).
    assert old.proc.wait(10) == 3
    # 3 s: the 0.5 s settle, a follower's retry period (1 s, 1.2 s with jitter), its pass.
    assert took <= 3.0


def test_chaos_short_form_never_exceeds_the_ceiling_nor_overlaps_writers(
    control_plane: ControlPlane, kubeconfig_path: Path, tmp_path: Path, figures: Figures
) -> None:
    timings = Timings(lease=4, renew=3, retry=1)
    # The run took 54.5 s (chaos_short.seconds); one that has not done what it claims by
    # 150 s ends and fails (tools/chaos.py).
    settings = Settings(kills=8, nodes=20, ceiling=2, max_seconds=150)
    result = run_chaos(
        control_plane, kubeconfig_path, tmp_path, control_plane.audit_log, settings, timings
    )
    summary = result.summary()
    print("chaos (short form):", summary)
    figures.record("chaos_short", **summary)
    # Every kill was sent, and each one was followed by a takeover.
    assert result.kills == 8
    assert len(result.takeovers) == 8
    assert [t.signal for t in result.takeovers] == ["SIGKILL", "SIGTERM"] * 4
    # The ceiling, three ways: the consumer's reboots, the audit log, the watcher.
    assert result.max_rebooting <= 2
    assert result.audit_max_in_progress <= 2
    # No write of unknown outcome that may hide a holder (tests.support.judges.audit.assert_resolved).
    assert result.audit_unresolved == [], result.audit_unresolved[:5]
    assert result.watcher_relists == 1
    assert result.max_in_progress_seen == result.audit_max_in_progress
    assert result.failures() == []


def test_leader_elect_false_acts_alone_without_a_lease(
    raw: Api, kubeconfig_path: Path, tmp_path: Path
) -> None:
    run, ns, names = _setup(raw)
    k = Kumaco(
        kubeconfig_path, [*scope_flags(run, ns), "--leader-elect=false"], tmp_path / "solo.log"
    ).start()
    try:
        wait_for(
            lambda: all(condition_status(raw.conditions(n), UM) == "True" for n in names),
            30,  # start-up and the first pass: 1-4 s measured (test_catch_up.py)
            what="conditions",
        )
        assert raw.lease(ns, run) is None
        assert any("leader election disabled" in m for m in k.log_messages())
    finally:
        assert k.stop() == 0
