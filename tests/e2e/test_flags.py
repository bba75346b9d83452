"""Every policy flag beyond the planner's, through the process: ``kumaco run`` on the real API server.

Each test runs ``python -m kumaco run`` with the flag, and a second process, side by side
on nodes of its own, with the flag's ``KUMACO_<FLAG>`` environment variable instead
(kumaco.cmd.flags.apply_env_defaults), and judges what the API server stores. Windows open
now (a cron at this minute, a duration reaching the wanted close), so nothing waits for a
minute boundary; each run has its own label, namespace and Lease.

* ``--under-maintenance-condition`` / ``--in-progress-condition``: the custom types are
  the ones written, with kumaco's reasons, and read back as the holder state (a ceiling of
  1 holds on them across a release); a watcher never sees ``kured.dev/UnderMaintenance``
  nor ``MaintenanceInProgress`` on any of the run's nodes.
* ``--admission-cutoff``: a node whose window stays open longer than the cutoff is
  admitted; one waiting when the cutoff passes turns ``AdmissionCutoff`` within a bound
  of that instant and is not admitted when the place frees; a node whose window closes
  sooner than the cutoff never is, another with a later window is.
* ``--count-unavailable``: a cordoned and a NotReady node (neither needing maintenance)
  fill a ceiling of 2, so the one node that needs it waits until one of them is available
  again; without the flag (a control process) the same topology admits it at once.
* ``--in-progress-timeout``: a holder is revoked (``MaintenanceTimedOut``) no sooner than
  the timeout after its admission and within a bound of it, is not admitted again while
  its required condition stays True, and frees its place; each revocation is one Warning
  line in kumaco's JSON log, one ``kumaco_in_progress_timeouts_total`` and one
  ``kumaco_releases_total{cause="InProgressTimeout"}``.

Bounds carry a stated margin for a loaded 2-core machine (``MARGIN``). Figures are
printed (``FLAGS ...`` lines).
"""

from __future__ import annotations

import datetime as dt
import http.client
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from tests.support.env.harness import (
    MIP,
    REQUIRED,
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    unique,
    wait_for,
)
from tests.support.env.supervisor import Timings, scope_flags

FAST = Timings(lease=4.0, renew=3.0, retry=1.0)
#: Slack on every time bound: a loop turn, a write and its watch event on a loaded machine.
MARGIN = 2.0
#: How long a process may take to start, lead and write its first conditions.
#: 1-4 s measured (test_catch_up.py); 40 s for two or three processes starting side by side.
STARTUP = 40.0


# ----------------------------------------------------------------------------- helpers


def window_closing_at(close: dt.datetime, selector: str = "") -> dict[str, str]:
    """Window data open now (it began this minute) closing at ``close`` (to the millisecond)."""
    start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    length = (close - start).total_seconds()
    return {
        "startTime": f"{start.minute} {start.hour} * * *",
        "duration": f"{length:.3f}s",
        "nodeSelector": selector,
    }


def rounded_close(seconds: float) -> dt.datetime:
    """``seconds`` from now, to the millisecond (what :func:`window_closing_at` can say)."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=seconds)


def make_nodes(
    raw: Api, prefix: str, specs: Mapping[str, Mapping[str, str]]
) -> tuple[str, str, dict[str, str]]:
    """A run label, a namespace and one node per ``specs`` key (``required`` in its value
    gives it ``REQUIRED=True`` with that lastTransitionTime; other keys are labels)."""
    run, ns = unique(prefix), raw.namespace(unique(prefix))
    names: dict[str, str] = {}
    for key, spec in specs.items():
        name = f"{run}-{key}"
        labels = {RUN_LABEL: run, **{k: v for k, v in spec.items() if k != "required"}}
        conds = (
            [{"type": REQUIRED, "status": "True", "lastTransitionTime": spec["required"]}]
            if "required" in spec
            else []
        )
        raw.node(name, labels, conds)
        names[key] = name
    return run, ns, names


def flags(run: str, ns: str, ceiling: int, *extra: str) -> list[str]:
    return [
        *scope_flags(run, ns),
        "--max-in-progress",
        str(ceiling),
        "--require-condition",
        REQUIRED,
        *FAST.flags(),
        *extra,
    ]


def cond(raw: Api, node: str, ctype: str) -> tuple[str | None, str]:
    c = raw.conditions(node).get(ctype) or {}
    return c.get("status"), str(c.get("reason", ""))


def wait_cond(
    raw: Api, node: str, ctype: str, want: tuple[str, str], timeout: float = STARTUP
) -> None:
    try:
        wait_for(lambda: cond(raw, node, ctype) == want, timeout, what=f"{node} {ctype}={want}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it has {cond(raw, node, ctype)}") from None


def cordon(raw: Api, node: str, on: bool) -> None:
    raw.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        {"spec": {"unschedulable": on}},
        "application/merge-patch+json",
    )


def samples(k: Kumaco, name: str) -> dict[str, float]:
    """Every sample of metric ``name`` on ``k``'s /metrics, by its label text ("" for none)."""
    # One loopback GET of a small page (not timed): 2 s, as Kumaco.metric in the harness.
    conn = http.client.HTTPConnection("127.0.0.1", k.metrics_port, timeout=2)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out: dict[str, float] = {}
    for m in re.finditer(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", text, re.M):
        out[m.group(1) or ""] = float(m.group(2))
    return out


def has(ctype: str, status: str, reason: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def pred(c: dict[str, Any]) -> bool:
        cur = c.get(ctype) or {}
        return cur.get("status") == status and (reason is None or cur.get("reason") == reason)

    return pred


def ltt(raw: Api, node: str, ctype: str) -> float:
    text = str(raw.conditions(node)[ctype]["lastTransitionTime"])
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# ----------------------------------------------------------------------------- condition names

CUSTOM_UM, CUSTOM_MIP = "example.com/InWindow", "example.com/Draining"
ENV_UM, ENV_MIP = "example.com/EnvWindow", "example.com/EnvDraining"


def test_custom_condition_names_are_written_and_read_back_and_the_defaults_never_are(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run, ns, n = make_nodes(
        raw,
        "fcond",
        {"a": {"required": "2026-11-01T00:00:00Z"}, "b": {"required": "2026-11-02T00:00:00Z"}},
    )
    erun, ens, en = make_nodes(raw, "fcenv", {"c": {"required": "2026-11-01T00:00:00Z"}})
    raw.window(ns, "open", window_closing_at(rounded_close(3600)))
    raw.window(ens, "open", window_closing_at(rounded_close(3600)))
    custom = (
        "--under-maintenance-condition",
        CUSTOM_UM,
        "--in-progress-condition",
        CUSTOM_MIP,
    )
    env = {"KUMACO_UNDER_MAINTENANCE_CONDITION": ENV_UM, "KUMACO_IN_PROGRESS_CONDITION": ENV_MIP}
    track = (CUSTOM_UM, CUSTOM_MIP, ENV_UM, ENV_MIP, UM, MIP)
    with NodeWatcher(raw, run, track=track) as watcher, NodeWatcher(raw, erun) as ewatcher:
        by_flag = spawn(*flags(run, ns, 1), *custom, name="fcond")
        by_env = spawn(*flags(erun, ens, 1), name="fcenv", env=env)
        wait_cond(raw, n["a"], CUSTOM_MIP, ("True", "MaintenanceAllowed"))
        # The effective names, from flags and from KUMACO_<FLAG>, in kumaco_policy_info
        # (the second replica, started after the first, may still be starting: its /readyz
        # says when its metrics are served; CI runs on a loaded machine refused it once).
        for k, (um, mip) in ((by_flag, (CUSTOM_UM, CUSTOM_MIP)), (by_env, (ENV_UM, ENV_MIP))):
            wait_for(k.ready, 60, what=f"{k.name} ready")
            (labels,) = samples(k, "kumaco_policy_info")
            assert f'under_maintenance_condition="{um}"' in labels, labels
            assert f'in_progress_condition="{mip}"' in labels, labels
            assert 'max_in_progress="1"' in labels and f'require_condition="{REQUIRED}"' in labels
        wait_cond(raw, n["b"], CUSTOM_MIP, ("False", "ConcurrencyCeilingReached"))
        for node in n.values():
            assert cond(raw, node, CUSTOM_UM) == ("True", "MaintenanceWindowOpen")
        wait_cond(raw, en["c"], ENV_MIP, ("True", "MaintenanceAllowed"))
        assert cond(raw, en["c"], ENV_UM) == ("True", "MaintenanceWindowOpen")
        # The holder state is read back from the custom type: a's release hands over to b,
        # and the ceiling of 1 holds on the custom type throughout.
        cleared = time.time()
        raw.set_condition(n["a"], REQUIRED, "False")
        # A watch event, a pass and a write each (a handover: 0.12 s measured, faults
        # conflicts-409); 10 s is room for a loaded machine.
        wait_cond(raw, n["a"], CUSTOM_MIP, ("False", "MaintenanceFinished"), 10)
        wait_cond(raw, n["b"], CUSTOM_MIP, ("True", "MaintenanceAllowed"), 10)
        handover = watcher.wait_first(n["b"], has(CUSTOM_MIP, "True"), after=cleared)
        assert handover is not None
        time.sleep(1.0)  # a loop turn more: nothing else appears
        assert watcher.max_count(has(CUSTOM_MIP, "True")) == 1
        for w in (watcher, ewatcher):
            defaults = [(o.name, t) for o in w.seen for t in (UM, MIP) if t in o.conditions]
            assert defaults == [], f"a default condition type was written: {defaults[:5]}"
        assert ewatcher.seen and all(ENV_MIP in raw.conditions(x) for x in en.values())
    print(f"FLAGS conditions: handover on {CUSTOM_MIP} {handover - cleared:.3f}s after release")


# ----------------------------------------------------------------------------- admission cutoff


def test_the_admission_cutoff_admits_before_it_and_never_after(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    cutoff = 20.0
    # The start and first pass take 1-4 s (test_catch_up.py): 14 s leaves 3x for a loaded machine.
    lead = 14.0  # seconds before the cutoff passes: the process starts and admits a
    run, ns, n = make_nodes(
        raw,
        "fcut",
        {"a": {"required": "2026-11-01T00:00:00Z"}, "b": {"required": "2026-11-02T00:00:00Z"}},
    )
    erun, ens, en = make_nodes(
        raw,
        "fcutenv",
        {
            "short": {"required": "2026-11-01T00:00:00Z", "pool": "short"},
            "long": {"required": "2026-11-01T00:00:00Z", "pool": "long"},
        },
    )
    close = rounded_close(cutoff + lead)
    passes = close.timestamp() - cutoff  # the last instant admission is allowed
    raw.window(ns, "closing", window_closing_at(close))
    raw.window(ens, "short", window_closing_at(rounded_close(1800), "pool=short"))
    raw.window(ens, "long", window_closing_at(rounded_close(3 * 3600), "pool=long"))
    with NodeWatcher(raw, run) as watcher:
        spawn(*flags(run, ns, 1, "--admission-cutoff", f"{cutoff:g}s"), name="fcut")
        spawn(*flags(erun, ens, 2), name="fcutenv", env={"KUMACO_ADMISSION_CUTOFF": "1h"})
        wait_cond(raw, n["a"], MIP, ("True", "MaintenanceAllowed"))
        admitted = watcher.wait_first(n["a"], has(MIP, "True"))
        assert admitted is not None and admitted < passes, (
            f"a was admitted {admitted and admitted - passes:.2f}s after the cutoff passed: "
            "the process started too late for this test"
        )
        assert cond(raw, n["b"], MIP) == ("False", "ConcurrencyCeilingReached")
        # The env process: the window closing in 30 min is under the 1 h cutoff, 3 h is not.
        wait_cond(raw, en["long"], MIP, ("True", "MaintenanceAllowed"))
        wait_cond(raw, en["short"], MIP, ("False", "AdmissionCutoff"))
        assert condition_status(raw.conditions(en["short"]), UM) == "True"
        # b waits on the ceiling; when the cutoff passes its reason turns AdmissionCutoff.
        # A planned transition like a window boundary (9 ms late measured, ``boundary``): 10 s.
        wait_cond(raw, n["b"], MIP, ("False", "AdmissionCutoff"), passes - time.time() + 10)
        flipped = watcher.wait_first(n["b"], has(MIP, "False", "AdmissionCutoff"))
        assert flipped is not None
        assert passes <= flipped <= passes + MARGIN, (flipped - passes, MARGIN)
        message = str(raw.conditions(n["b"])[MIP]["message"])
        assert message.startswith("too late to start: the window closes at "), message
        # The place frees before the window closes: b is still not admitted.
        released = time.time()
        raw.set_condition(n["a"], REQUIRED, "False")
        # A watch event, a pass and a write: 10 s is room for a loaded machine.
        wait_cond(raw, n["a"], MIP, ("False", "MaintenanceFinished"), 10)
        time.sleep(1.5)
        assert cond(raw, n["b"], MIP) == ("False", "AdmissionCutoff")
        assert watcher.first(n["b"], has(MIP, "True")) is None
        assert condition_status(raw.conditions(n["b"]), UM) == "True"  # still in its window
        assert released < close.timestamp()
    print(
        f"FLAGS cutoff: a admitted {passes - admitted:.2f}s before the cutoff, b turned "
        f"AdmissionCutoff {flipped - passes:.3f}s after it (bound {MARGIN}s)"
    )


# ----------------------------------------------------------------------------- unavailable nodes


def test_unavailable_nodes_count_toward_the_ceiling(raw: Api, spawn: Callable[..., Kumaco]) -> None:
    # Flag: a cordoned and a NotReady node fill a ceiling of 2; b needs maintenance.
    run, ns, n = make_nodes(
        raw, "fun", {"cordoned": {}, "notready": {}, "b": {"required": "2026-11-01T00:00:00Z"}}
    )
    # Env and control: a NotReady node and a ceiling of 1; y needs maintenance.
    eruns: dict[str, tuple[str, str, dict[str, str]]] = {}
    for kind in ("env", "control"):
        eruns[kind] = make_nodes(
            raw, f"fun{kind}", {"x": {}, "y": {"required": "2026-11-01T00:00:00Z"}}
        )
    cordon(raw, n["cordoned"], True)
    raw.set_condition(n["notready"], "Ready", "False", reason="KubeletNotReady")
    for _r, _ns, en in eruns.values():
        raw.set_condition(en["x"], "Ready", "False", reason="KubeletNotReady")
    for r_ns in (ns, *(e[1] for e in eruns.values())):
        raw.window(r_ns, "open", window_closing_at(rounded_close(3600)))
    erun, ens, en = eruns["env"]
    crun, cns, cn = eruns["control"]
    with NodeWatcher(raw, run) as watcher:
        spawn(*flags(run, ns, 2, "--count-unavailable"), name="fun")
        spawn(*flags(erun, ens, 1), name="funenv", env={"KUMACO_COUNT_UNAVAILABLE": "true"})
        spawn(*flags(crun, cns, 1), name="funcontrol")
        wait_cond(raw, cn["y"], MIP, ("True", "MaintenanceAllowed"))  # the control admits
        wait_cond(raw, n["b"], MIP, ("False", "ConcurrencyCeilingReached"))
        wait_cond(raw, en["y"], MIP, ("False", "ConcurrencyCeilingReached"))
        time.sleep(1.5)  # a loop turn more: still waiting
        assert cond(raw, n["b"], MIP) == ("False", "ConcurrencyCeilingReached")
        assert cond(raw, en["y"], MIP) == ("False", "ConcurrencyCeilingReached")
        # One place freed: the cordoned node is uncordoned; the NotReady one still counts.
        freed = time.time()
        cordon(raw, n["cordoned"], False)
        # A watch event, a pass and a write (asserted below within MARGIN): 10 s to see it.
        wait_cond(raw, n["b"], MIP, ("True", "MaintenanceAllowed"), 10)
        admitted = watcher.wait_first(n["b"], has(MIP, "True"), after=freed)
        assert admitted is not None and admitted - freed <= MARGIN, (admitted - freed, MARGIN)
        raw.set_condition(en["x"], "Ready", "True", reason="KubeletReady")
        wait_cond(raw, en["y"], MIP, ("True", "MaintenanceAllowed"), 10)  # as above
    print(f"FLAGS count-unavailable: b admitted {admitted - freed:.3f}s after the uncordon")


# ----------------------------------------------------------------------------- in-progress timeout

TIMEOUT_LOG = "MaintenanceInProgress held too long: revoked (--in-progress-timeout)"
CAUSE = '{cause="InProgressTimeout"}'


def test_the_in_progress_timeout_revokes_a_holder_logs_and_counts_it(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    timeout, env_timeout = 3.0, 2.0
    run, ns, n = make_nodes(
        raw,
        "fto",
        {"a": {"required": "2026-11-01T00:00:00Z"}, "b": {"required": "2026-11-02T00:00:00Z"}},
    )
    erun, ens, en = make_nodes(raw, "ftoenv", {"c": {"required": "2026-11-01T00:00:00Z"}})
    raw.window(ns, "open", window_closing_at(rounded_close(3600)))
    raw.window(ens, "open", window_closing_at(rounded_close(3600)))
    with NodeWatcher(raw, run) as watcher, NodeWatcher(raw, erun) as ewatcher:
        k = spawn(*flags(run, ns, 1, "--in-progress-timeout", f"{timeout:g}s"), name="fto")
        ek = spawn(*flags(erun, ens, 1), name="ftoenv", env={"KUMACO_IN_PROGRESS_TIMEOUT": "2s"})
        wait_cond(raw, en["c"], MIP, ("True", "MaintenanceAllowed"))
        c_since = ltt(raw, en["c"], MIP)
        wait_cond(raw, n["a"], MIP, ("True", "MaintenanceAllowed"))
        a_since = ltt(raw, n["a"], MIP)  # what the timeout counts from (whole seconds)
        # Each revocation is due 1 + timeout s after the (truncated) grant, then a write
        # (asserted below within MARGIN); the next grant is one more pass: 10 s of room each.
        wait_cond(raw, n["a"], MIP, ("False", "MaintenanceTimedOut"), timeout + 10)
        wait_cond(raw, n["b"], MIP, ("True", "MaintenanceAllowed"), 10)  # the place freed
        b_since = ltt(raw, n["b"], MIP)
        wait_cond(raw, n["b"], MIP, ("False", "MaintenanceTimedOut"), timeout + 10)
        wait_cond(raw, en["c"], MIP, ("False", "MaintenanceTimedOut"), env_timeout + 10)
        time.sleep(1.5)  # a loop turn more: nobody admitted again, REQUIRED still True
        revoked: dict[str, float] = {}
        for node, since in ((n["a"], a_since), (n["b"], b_since)):
            at = watcher.first(node, has(MIP, "True"))
            out = watcher.first(node, has(MIP, "False", "MaintenanceTimedOut"))
            assert at is not None and out is not None
            # Counted from the end of its transition time's second (Kubernetes truncates it;
            # kumaco.core.planning.admission._transitioned), revoked within MARGIN of that instant.
            due = since + 1 + timeout
            assert due <= out <= due + MARGIN, (
                node,
                out - due,
                MARGIN,
            )
            revoked[node] = out - at
            assert cond(raw, node, MIP) == ("False", "MaintenanceTimedOut")
            readmitted = watcher.first(node, has(MIP, "True"), after=out)
            assert readmitted is None, f"{node} admitted again after its timeout"
        assert watcher.max_count(has(MIP, "True")) == 1
        message = str(raw.conditions(n["a"])[MIP]["message"])
        assert message.startswith(f"held {timeout:g}s or longer (in-progress timeout)"), message
        e_at = ewatcher.first(en["c"], has(MIP, "True"))
        e_out = ewatcher.first(en["c"], has(MIP, "False", "MaintenanceTimedOut"))
        assert e_at is not None and e_out is not None
        e_due = c_since + 1 + env_timeout
        assert e_due <= e_out <= e_due + MARGIN, (e_out - e_due, MARGIN)
        assert f"held {env_timeout:g}s or longer" in str(raw.conditions(en["c"])[MIP]["message"])
        # Each revocation: one Warning log line naming the node, and counted once.
        for proc, nodes in ((k, [n["a"], n["b"]]), (ek, [en["c"]])):
            warned = sorted(
                str(r.get("node"))
                for r in proc.logs()
                if r.get("msg") == TIMEOUT_LOG and r.get("level") == "WARNING"
            )
            assert warned == sorted(nodes), (proc.name, warned)
            assert proc.metric("kumaco_in_progress_timeouts_total") == len(nodes)
            releases = samples(proc, "kumaco_releases_total")
            assert releases == {
                CAUSE: len(nodes),
                '{cause="RequiredConditionCleared"}': 0.0,
                '{cause="RebootObserved"}': 0.0,
            }, releases
    print(
        "FLAGS in-progress-timeout: revoked "
        + ", ".join(f"{v:.3f}s" for v in revoked.values())
        + f" after admission (timeout {timeout:g}s from the truncated transition time, margin "
        f"{MARGIN}s); "
        f"env {e_out - e_at:.3f}s (timeout {env_timeout:g}s)"
    )
