"""Advance notice on the real control plane: ``kumaco run --planned-lead``.

Two replicas of ``kumaco run --planned-lead 20s`` (the other with ``KUMACO_PLANNED_LEAD=20s``;
short lease timings) on a wall clock
shifted so that a window on zone ``a`` opens 32 s after they start
(:func:`~tests.support.env.harness.shift_before`; no test waits for the wall clock):

* before the lead every node has ``MaintenancePlanned=False`` (``NoMaintenancePlanned``);
* when the lead begins (20 s before the opening) the two nodes of zone ``a`` get
  ``MaintenancePlanned=True`` (``MaintenanceWindow``, the message naming the window and its
  start) within a second, the node of zone ``b`` stays False, and ``WindowPlanned`` is on
  the server once;
* the leader gets SIGTERM within the lead; the other replica leads, plans and announces
  the same occurrence again: still one ``WindowPlanned`` Event (its name is taken);
* when the window opens the two nodes get ``MaintenancePlanned=False`` and
  ``UnderMaintenance=True`` within a second, in one write each.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.support.env.harness import (
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    cron_at,
    shift_before,
    unique,
    wait_for,
)
from tests.support.env.supervisor import FAST, scope_flags
from tests.support.judges.takeover import events, takeover_keeps_one_event

MP = "MaintenancePlanned"
#: ``--planned-lead``, and how far ahead of the replicas' start the window opens: the lead
#: begins 12 s after the start (start-up and the first pass: 1-4 s measured,
#: test_catch_up.py), and the takeover (about 2 s with these lease timings) fits in it.
LEAD_S, OPENS_IN_S = 20, 32
#: How late a boundary may be seen by a separate watcher (9 ms late measured for a window's
#: opening, test_policy.py; a second for a loaded machine).
LATE_S = 1.0


def test_planned_within_the_lead_false_when_the_window_opens_one_event_across_a_takeover(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run, ns = unique("planned"), raw.namespace(unique("planned"))
    covered = {f"{run}-a0", f"{run}-a1"}
    other = f"{run}-b0"
    for n in sorted(covered):
        raw.node(n, {RUN_LABEL: run, "zone": "a"})
    raw.node(other, {RUN_LABEL: run, "zone": "b"})
    shift = shift_before(lead=OPENS_IN_S)
    raw.window(
        ns,
        "nightly",
        {"startTime": cron_at(shift.opens), "duration": "1h", "nodeSelector": "zone=a"},
    )
    flags = [*scope_flags(run, ns), *FAST.flags()]
    lead_starts, opens = shift.real - LEAD_S, shift.real
    with NodeWatcher(raw, run, track=(UM, MP)) as watcher:
        # The lead as a flag to one replica, as KUMACO_PLANNED_LEAD to the other.
        replicas = [
            spawn(
                *flags,
                "--planned-lead",
                f"{LEAD_S}s",
                name="r0",
                env={"POD_NAME": f"{run}-r0"},
                shift=shift,
            ),
            spawn(
                *flags,
                name="r1",
                env={"POD_NAME": f"{run}-r1", "KUMACO_PLANNED_LEAD": f"{LEAD_S}s"},
                shift=shift,
            ),
        ]
        quiet = watcher.wait_all(MP, "False", {*covered, other}, 0, lead_starts - time.time())
        assert quiet is not None, "MaintenancePlanned=False not written before the lead began"
        assert quiet < lead_starts, (
            "the replicas started too late for the scenario: raise OPENS_IN_S"
        )
        assert raw.conditions(other)[MP]["reason"] == "NoMaintenancePlanned"

        # The lead begins: zone a only, within a second, and one WindowPlanned.
        planned = watcher.wait_all(
            MP, "True", covered, lead_starts - 0.5, lead_starts - time.time() + 30
        )
        assert planned is not None, "MaintenancePlanned=True did not come with the lead"
        assert planned - lead_starts < LATE_S, planned - lead_starts
        assert planned > lead_starts - 0.05, "planned before the lead began"
        start = shift.opens.strftime("%Y-%m-%dT%H:%M:%SZ")
        c = raw.conditions(sorted(covered)[0])[MP]
        assert (c["reason"], c["message"]) == (
            "MaintenanceWindow",
            f"maintenance window {ns}/nightly starts at {start}",
        )
        assert condition_status(raw.conditions(other), MP) == "False"
        # Posted by the pass that wrote the conditions: 10 s for a loaded machine.
        wait_for(lambda: events(raw, ns, "nightly", "WindowPlanned"), 10, what="WindowPlanned")
        (ev,) = events(raw, ns, "nightly", "WindowPlanned")
        assert ev["note"] == (
            f"window {ns}/nightly opens at {start}, within the {LEAD_S}s lead: "
            "maintenance planned for 2 node(s)"
        ), ev["note"]
        assert ev["type"] == "Normal" and ev["action"] == "Plan"

        # A leader change within the lead: the new leader announces it again, the name is
        # taken, one Event.
        takeover_keeps_one_event(raw, ns, run, replicas, "nightly", "WindowPlanned")
        assert time.time() < opens - 1.0, "the takeover outlasted the lead: raise OPENS_IN_S"

        # The window opens: MaintenancePlanned False and UnderMaintenance True, together.
        done = watcher.wait_all(MP, "False", covered, opens - 0.5, opens - time.time() + 30)
        assert done is not None, "MaintenancePlanned stayed True when the window opened"
        assert done - opens < LATE_S, done - opens
        assert watcher.wait_all(UM, "True", covered, opens - 0.5, 5) is not None
        for n in covered:
            conds = raw.conditions(n)
            assert conds[MP]["reason"] == "NoMaintenancePlanned"
            assert conds[MP]["message"] == "this node is under maintenance now"
            assert conds[MP]["lastTransitionTime"] == conds[UM]["lastTransitionTime"]
        assert condition_status(raw.conditions(other), MP) == "False"
        assert len(events(raw, ns, "nightly", "WindowPlanned")) == 1
        # Each covered node: False, then True at the lead, then False at the opening.
        for n in covered:
            seen = [
                s
                for _at, node, ctype, s in list(watcher.changes)
                if node == n and ctype == MP and s
            ]
            assert seen == ["False", "True", "False"], (n, seen)
    print(
        f"planned: MaintenancePlanned=True {planned - lead_starts:.3f}s after the lead began, "
        f"False {done - opens:.3f}s after the window opened"
    )
