"""The MaintenanceInProgress lifecycle as an independent reading of the rules (an oracle).

:func:`check` asserts every rule of one plan from its inputs and its answer, not from the
planner's bookkeeping: no ceiling of any kind (global, per topology group, per open
window's budget) is exceeded by an admission; a holder whose required conditions are all
True is never revoked except by the in-progress timeout; a newly admitted node is
admissible. The strategies draw windows (with budgets and freezes), policies (every rule)
and clusters; :func:`apply` writes a plan back as the controller writes it and
:func:`happen` applies one of :data:`events` (time passes, a reboot finishes, a node
needs one again, a blocker comes or goes, the ceiling changes).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck
from hypothesis import strategies as st

from kumaco.core.labels.selectors import parse_selector
from kumaco.core.objects.nodes import NodeView, node_view
from kumaco.core.planning.policy import FINISHED, TIMED_OUT, Plan, Policy
from kumaco.core.time.instants import format_instant, parse_timestamp
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.builders.policies import policy_of, reconfigured, setting

SECOND = 1_000_000_000


MINUTE = 60 * SECOND


REQ, BLOCK, MIP, READY = (
    "kured.dev/RebootRequired",
    "kured.dev/Blocked",
    "MaintenanceInProgress",
    "Ready",
)


T0 = int(dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC).timestamp()) * SECOND


SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


REASONS = ("MaintenanceAllowed", FINISHED, TIMED_OUT, "ConcurrencyCeilingReached", "")


def stamp(t: int) -> str:
    return format_instant(t)


@st.composite
def windows(draw: st.DrawFn) -> list[Window]:
    out = []
    for i in range(draw(st.integers(1, 3))):
        data = {
            "startTime": draw(
                st.sampled_from(("0 2 * * *", "30 2 * * *", "0 3 * * *", "*/20 * * * *"))
            ),
            "duration": draw(st.sampled_from(("1h", "2h", "30m", "10m"))),
            "nodeSelector": draw(st.sampled_from(("", "zone=a", "zone in (a,b)", "!gpu"))),
        }
        kind = draw(st.integers(0, 5))
        if kind == 0:
            data["freeze"] = "true"
        elif kind in (1, 2):
            data["maxInProgress"] = draw(st.sampled_from(("0", "1", "2", "50%", "0%")))
        w = parse_window("maint", f"w{i}", data)
        assert isinstance(w, Window), w
        out.append(w)
    return out


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    return policy_of(
        scope=parse_selector(draw(st.sampled_from(("", "", "!gpu")))),
        ceiling=parse_ceiling(draw(st.sampled_from(("1", "2", "3", "0", "50%", "100%")))),
        require=(REQ,) if draw(st.integers(0, 4)) else (),
        block=(BLOCK,),
        ceilings_per=(("zone", parse_ceiling(draw(st.sampled_from(("1", "2", "50%"))))),)
        if draw(st.booleans())
        else (),
        release_delay=draw(st.sampled_from((0, 0, 5 * MINUTE, 30 * MINUTE))),
        in_progress_timeout=draw(st.sampled_from((None, None, 20 * MINUTE, 2 * 60 * MINUTE))),
        count_unavailable=draw(st.booleans()),
        count_released_unavailable=draw(st.sampled_from((0, 0, 10 * MINUTE, 60 * MINUTE))),
        admission_cutoff=draw(st.sampled_from((0, 0, 15 * MINUTE, 45 * MINUTE))),
    )


@st.composite
def clusters(draw: st.DrawFn, now: int) -> list[NodeView]:
    views = []
    for i in range(draw(st.integers(1, 8))):
        labels = draw(
            st.fixed_dictionaries(
                {}, optional={"zone": st.sampled_from(("a", "b", "c")), "gpu": st.just("true")}
            )
        )
        conds: list[dict[str, Any]] = [
            {
                "type": REQ,
                "status": draw(st.sampled_from(("True", "True", "False"))),
                "lastTransitionTime": stamp(now - draw(st.integers(1, 600)) * MINUTE),
            },
            {"type": BLOCK, "status": draw(st.sampled_from(("False", "False", "True")))},
            {"type": READY, "status": draw(st.sampled_from(("True", "True", "True", "False")))},
        ]
        if draw(st.booleans()):
            conds.append(
                {
                    "type": MIP,
                    "status": draw(st.sampled_from(("True", "False"))),
                    "reason": draw(st.sampled_from(REASONS)),
                    "lastTransitionTime": stamp(now - draw(st.integers(0, 180)) * MINUTE),
                }
            )
        obj: dict[str, Any] = {
            "metadata": {"name": f"n{i}", "labels": labels},
            "status": {"conditions": conds},
        }
        if draw(st.integers(0, 6)) == 0:
            obj["spec"] = {"unschedulable": True}
        view = node_view(obj)
        assert view is not None
        views.append(view)
    return views


def _group(view: NodeView, key: str) -> str | None:
    return view.labels.get(key)


def transitioned(text: str | None) -> int | None:
    """A transition time as the rules count it: from the end of its (truncated) second."""
    t = parse_timestamp(text)
    return None if t is None else t + (0 if text is not None and "." in text else SECOND)


def check(
    windows_: list[Window], views: list[NodeView], now: int, policy: Policy, result: Plan
) -> None:
    """Every rule, read independently from the inputs and the answer."""
    assert policy.ceiling is not None
    by_name = {v.name: v for v in views}
    in_scope = [v for v in views if policy.scope.matches(v.labels)]
    open_ = [w for w in windows_ if w.state_at(now).open]
    planned = {n.name: n for n in result.nodes}

    def before(v: NodeView) -> bool:
        return v.is_true(MIP)

    def after(name: str) -> bool:
        return bool(planned[name].is_in_progress)

    def req_ok(v: NodeView) -> bool:
        return all(v.is_true(r) for r in policy.require)

    def settling(v: NodeView) -> bool:
        c = v.condition(MIP)
        if (
            not setting(policy, "release_delay")
            or c is None
            or c.reason != FINISHED
            or c.status == "True"
        ):
            return False
        since = transitioned(c.last_transition_time)
        return since is not None and now < since + setting(policy, "release_delay")

    def just_released(v: NodeView) -> bool:
        return (
            bool(setting(policy, "release_delay"))
            and before(v)
            and not after(v.name)
            and planned[v.name].in_progress.reason == FINISHED  # type: ignore[union-attr]
        )

    def unavailable(v: NodeView) -> bool:
        return (
            setting(policy, "count_unavailable")
            and (v.unschedulable or not v.is_true(READY))
            and not after(v.name)
        )

    def released_unavailable(v: NodeView) -> bool:
        """Released by kumaco (finished or timed out) within the window, and not available."""
        window = setting(policy, "count_released_unavailable")
        if not window or after(v.name) or not (v.unschedulable or not v.is_true(READY)):
            return False
        if before(v):  # released by this plan: from now
            return planned[v.name].in_progress.reason in (FINISHED, TIMED_OUT)  # type: ignore[union-attr]
        c = v.condition(MIP)
        if c is None or c.reason not in (FINISHED, TIMED_OUT):
            return False
        since = transitioned(c.last_transition_time)
        return since is not None and now < since + window

    occupants = {
        v.name
        for v in in_scope
        if after(v.name)
        or settling(v)
        or just_released(v)
        or unavailable(v)
        or released_unavailable(v)
    }

    for v in in_scope:
        name = v.name
        # A holder whose maintenance is not done keeps it (only the timeout revokes).
        if before(v) and policy.require and req_ok(v):
            c = v.condition(MIP)
            assert c is not None
            since = transitioned(c.last_transition_time)
            timed_out = (
                setting(policy, "in_progress_timeout") is not None
                and since is not None
                and now >= since + setting(policy, "in_progress_timeout")
            )
            assert after(name) or (
                timed_out and planned[name].in_progress.reason == TIMED_OUT  # type: ignore[union-attr]
            ), name
        if not after(name) or before(v):
            continue
        # A newly admitted node is admissible ...
        selecting = [w for w in open_ if w.selector.matches(v.labels)]
        maint = [w for w in selecting if not w.freeze]
        assert maint and not any(w.freeze for w in selecting), name
        assert req_ok(v) and not any(v.is_true(b) for b in policy.block), name
        assert not settling(v), name
        c = v.condition(MIP)
        assert not (c is not None and c.reason == TIMED_OUT and policy.require and req_ok(v)), name
        if setting(policy, "admission_cutoff"):
            ends = [w.state_at(now).closes for w in maint]
            if all(e is not None for e in ends):
                assert max(e for e in ends if e is not None) - now >= setting(
                    policy, "admission_cutoff"
                ), name
        # ... and fits under every ceiling it falls under.
        assert len(occupants) <= policy.ceiling.limit(len(in_scope)), (name, occupants)
        for key, ceiling in setting(policy, "ceilings_per"):
            group = [x for x in in_scope if _group(x, key) == _group(v, key)]
            inside = {x.name for x in group} & occupants
            assert len(inside) <= ceiling.limit(len(group)), (name, key, inside)
        for w in maint:
            if w.budget is None:
                continue
            selected = [x for x in in_scope if w.selector.matches(x.labels)]
            inside = {x.name for x in selected} & occupants
            assert len(inside) <= w.budget.limit(len(selected)), (name, w.key, inside)
    del by_name


def apply(views: Mapping[str, NodeView], result: Plan, now: int) -> dict[str, NodeView]:
    """The planned conditions written back, as the controller writes them."""
    out = dict(views)
    for n in result.nodes:
        v = views[n.name]
        conditions = dict(v.conditions)
        for d in n.desired:
            cur = conditions.get(d.type)
            ltt = (
                cur.last_transition_time
                if cur is not None and cur.status == d.status
                else stamp(now)
            )
            conditions[d.type] = dataclasses.replace(
                cur or v.conditions.get(READY) or next(iter(v.conditions.values())),
                type=d.type,
                status=d.status,
                reason=d.reason,
                message=d.message,
                last_transition_time=ltt,
            )
        out[n.name] = dataclasses.replace(v, conditions=conditions)
    return out


def with_condition(v: NodeView, ctype: str, status: str, now: int) -> NodeView:
    conditions = dict(v.conditions)
    cur = conditions[ctype]
    if cur.status != status:
        conditions[ctype] = dataclasses.replace(cur, status=status, last_transition_time=stamp(now))
    return dataclasses.replace(v, conditions=conditions)


events = st.one_of(
    st.tuples(st.just("wait"), st.integers(1, 90)),
    st.tuples(st.just("finish"), st.integers(0, 7)),
    st.tuples(st.just("need"), st.integers(0, 7)),
    st.tuples(st.just("block"), st.integers(0, 7)),
    st.tuples(st.just("unblock"), st.integers(0, 7)),
    st.tuples(st.just("ceiling"), st.sampled_from(("0", "1", "2", "3"))),
)


def happen(
    views: dict[str, NodeView], kind: str, arg: Any, now: int, policy: Policy
) -> tuple[int, Policy]:
    """One of :data:`events` applied to ``views`` (in place): the instant and policy after it."""
    if kind == "wait":
        return now + arg * MINUTE, policy
    if kind == "ceiling":
        return now, reconfigured(policy, ceiling=parse_ceiling(arg))
    names = sorted(views)
    name = names[arg % len(names)]
    ctype, status = {
        "finish": (REQ, "False"),
        "need": (REQ, "True"),
        "block": (BLOCK, "True"),
        "unblock": (BLOCK, "False"),
    }[kind]
    views[name] = with_condition(views[name], ctype, status, now)
    return now, policy
