"""Properties of the MaintenanceInProgress lifecycle and the maintenance policy (hypothesis).

Checked against an independent reading of the rules (not the planner's own
bookkeeping): for random clusters, windows (with budgets and freezes) and
policies (every rule), and for random *sequences* of events applied the way the
controller writes them:

* no ceiling of any kind -- global, per topology group, per open window's budget
  -- is exceeded by an admission (holders, settling releases and, when asked,
  unavailable nodes all take places);
* a holder whose required conditions are all True is never revoked, except by the
  in-progress timeout;
* a newly admitted node is admissible: under maintenance, no open freeze, every
  required condition True, no blocker, within the admission cutoff, not settling;
* the answer does not depend on the order of nodes or windows.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kumaco.core.objects.nodes import NodeSet
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import Policy
from kumaco.core.windows.window import Window
from tests.support.judges.lifecycle import (
    MINUTE,
    SUPPRESS,
    T0,
    apply,
    check,
    clusters,
    events,
    happen,
    policies,
    windows,
)

# ----------------------------------------------------------------------------- the oracle


@settings(max_examples=600, deadline=None, suppress_health_check=SUPPRESS)
@given(windows(), policies(), st.integers(0, 240).map(lambda m: T0 + m * MINUTE), st.data())
def test_no_ceiling_is_exceeded_and_no_unfinished_holder_is_revoked(
    windows_: list[Window], policy: Policy, now: int, data: st.DataObject
) -> None:
    views = data.draw(clusters(now), label="nodes")
    result = plan(windows_, NodeSet(views), now, policy)
    check(windows_, views, now, policy, result)
    event(f"in progress: {result.in_progress}")
    # The answer does not depend on the order of nodes or windows.
    shuffled = plan(
        data.draw(st.permutations(windows_), label="windows order"),
        NodeSet(data.draw(st.permutations(views), label="nodes order")),
        now,
        policy,
    )
    assert shuffled == result


# ----------------------------------------------------------------------------- sequences


@settings(max_examples=250, deadline=None, suppress_health_check=SUPPRESS)
@given(windows(), policies(), st.lists(events, min_size=1, max_size=25), st.data())
def test_sequences_of_events_never_break_the_lifecycle(
    windows_: list[Window], policy: Policy, steps: list[tuple[str, Any]], data: st.DataObject
) -> None:
    now = T0
    views = {v.name: v for v in data.draw(clusters(now), label="nodes")}
    for kind, arg in steps:
        now, policy = happen(views, kind, arg, now, policy)
        current = list(views.values())
        result = plan(windows_, NodeSet(current), now, policy)
        check(windows_, current, now, policy, result)
        views = apply(views, result, now)
        # Written back, the same instant plans the same again: no flapping.
        again = plan(windows_, NodeSet(views.values()), now, policy)
        assert [n.desired for n in again.nodes] == [n.desired for n in result.nodes]
