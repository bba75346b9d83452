"""kured v2 scheduler's window ConfigMaps, live: kumaco reads them as they are.

kured v2's maintenance-scheduler keeps its windows in ConfigMaps of ``kube-system``
named ``kured-maintenance-*`` and labelled ``kured.dev/maintenance`` (its
``--cm-namespace``, ``--config-prefix`` and ``--cm-label-key`` defaults), with a
``nodeSelector`` written as a metav1.LabelSelector in YAML. Here such ConfigMaps are
created on the real API server -- one in YAML matching one node, one in JSON matching
nobody -- and one kumaco replica runs with the flags of
docs/migrating-from-kured-scheduler.md (``--namespaces kube-system
--configmap-selector kured.dev/maintenance`` and kured's condition name). The window is
made open now (a cron at the current minute, for 10 minutes), so the test proves that
kumaco loads both windows (``WindowLoaded``, no ``WindowInvalid``) and sets kured's
under-maintenance condition True on the matching node only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from tests.support.env.harness import (
    RUN_LABEL,
    Api,
    Kumaco,
    NodeWatcher,
    condition_status,
    cron_at,
    unique,
    wait_for,
)

KURED_NAMESPACE = "kube-system"
KURED_LABEL = "kured.dev/maintenance"
KURED_PREFIX = "kured-maintenance-"
KURED_UNDER_MAINTENANCE = "kured.dev/under-maintenance-window"

YAML_SELECTOR = """\
matchLabels:
  node-role.kubernetes.io/worker: ""
matchExpressions:
- key: topology.kubernetes.io/zone
  operator: In
  values: [zone-a]
- key: kured.dev/skip
  operator: DoesNotExist
"""
JSON_SELECTOR = '{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["nowhere"]}]}'


def open_now() -> str:
    """A cron that fired a minute ago; with a 10m duration it is open now, whatever the second."""
    return cron_at(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1))


def test_kured_scheduler_windows_are_loaded_and_open_on_the_matching_node_only(
    raw: Api, spawn: Callable[..., Kumaco]
) -> None:
    run = unique("kured")
    lease_ns = raw.namespace(unique("kured-lease"))
    nodes = {
        f"{run}-match": {
            "node-role.kubernetes.io/worker": "",
            "topology.kubernetes.io/zone": "zone-a",
        },
        f"{run}-other-zone": {
            "node-role.kubernetes.io/worker": "",
            "topology.kubernetes.io/zone": "zone-b",
        },
        f"{run}-skipped": {
            "node-role.kubernetes.io/worker": "",
            "topology.kubernetes.io/zone": "zone-a",
            "kured.dev/skip": "true",
        },
    }
    for name, labels in nodes.items():
        raw.node(name, {RUN_LABEL: run, **labels})
    start = open_now()
    windows = {
        f"{KURED_PREFIX}{run}-workers": YAML_SELECTOR,
        f"{KURED_PREFIX}{run}-nobody": JSON_SELECTOR,
    }
    for name, selector in windows.items():
        raw.window(
            KURED_NAMESPACE,
            name,
            {"startTime": start, "duration": "10m", "nodeSelector": selector},
            labels={KURED_LABEL: ""},
        )
    try:
        k = spawn(
            "--namespaces",
            KURED_NAMESPACE,
            "--configmap-selector",
            KURED_LABEL,
            "--node-selector",
            f"{RUN_LABEL}={run}",
            "--under-maintenance-condition",
            KURED_UNDER_MAINTENANCE,
            "--leader-election-id",
            run,
            "--leader-election-namespace",
            lease_ns,
        )
        with NodeWatcher(raw, run, track=(KURED_UNDER_MAINTENANCE,)) as watcher:
            wait_for(k.ready, 30, what="kumaco ready")

            def status(name: str) -> str | None:
                return condition_status(raw.conditions(name), KURED_UNDER_MAINTENANCE)

            wait_for(
                lambda: all(status(n) is not None for n in nodes),
                20,
                what="kured's under-maintenance condition on every node",
            )
            match = f"{run}-match"
            assert watcher.wait_first(
                match, lambda c: condition_status(c, KURED_UNDER_MAINTENANCE) == "True"
            )
            for name in nodes:
                if name != match:
                    assert status(name) == "False", name

                    def true(c: dict[str, dict[str, Any]]) -> bool:
                        return condition_status(c, KURED_UNDER_MAINTENANCE) == "True"

                    assert watcher.first(name, true) is None, f"{name} was put under maintenance"
            assert status(match) == "True"

        # Both ConfigMaps are windows kumaco accepted, none was found invalid. A new
        # leader writes the conditions first and posts the window Events after them (in
        # the same pass): on a loaded machine the list can come between the two.
        def reasons() -> set[tuple[str, str]]:
            return {
                (e["regarding"]["name"], e["reason"])
                for e in raw.events(KURED_NAMESPACE)
                if e["regarding"]["name"] in windows
            }

        loaded = {(name, "WindowLoaded") for name in windows}
        wait_for(lambda: loaded <= reasons(), 10, what="WindowLoaded for both windows")
        assert not {r for r in reasons() if r[1] == "WindowInvalid"}, reasons()
        assert k.alive
    finally:
        for name in windows:
            raw.try_request("DELETE", f"/api/v1/namespaces/{KURED_NAMESPACE}/configmaps/{name}")
