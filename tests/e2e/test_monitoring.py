"""What Prometheus and log shippers get from kumaco, with the real tools (issue: the network).

(``promtool check rules`` / ``promtool test rules`` on the alerts need no server:
tests/unit/deploy/test_monitoring_rules.py.)

* a real Prometheus (Debian's package, on loopback, generated config, the same rules
  loaded) scrapes a real ``kumaco run`` against the test API server: a query through
  its HTTP API sees ``kumaco_nodes_under_maintenance`` go from 0 to 2 when a window
  opens, and the recording rule counts exactly one leader;
* every line that run wrote is one JSON object with the documented schema: ``time``
  (RFC 3339 UTC with milliseconds), ``level``, ``logger``, ``msg``, ``replica`` first,
  then lowerCamelCase keys, each of them listed in docs/observability.md.

The run, one per module, covers start-up, an invalid window, leadership, a window
opening (status writes, Events), a MaintenanceInProgress grant and the deliberate exit
when the windows change.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    REQUIRED,
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    condition_status,
    cron_at,
    log_message,
    shift_before,
    unique,
    wait_for,
)
from tests.support.env.prometheus import Prometheus, extract_rules
from tests.support.env.supervisor import scope_flags

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "kustomize" / "components" / "monitoring"
RFC3339_MS_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LOWER_CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
HEAD = ["time", "level", "logger", "msg", "replica"]


@dataclass
class Run:
    """One observed kumaco run: its log, what Prometheus saw, when the window opened."""

    kumaco: Kumaco
    opened: dt.datetime
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    leaders: list[dict[str, Any]]
    exit_code: int


@pytest.fixture(scope="module")
def observed(
    control_plane: ControlPlane, kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Run:
    raw = Api(control_plane)
    workdir = tmp_path_factory.mktemp("observed")
    run, ns = unique("obs"), raw.namespace(unique("obs"))
    for i in range(3):
        conds = [{"type": REQUIRED, "status": "True", "lastTransitionTime": "2026-11-01T00:00:00Z"}]
        raw.node(f"{run}-{i}", {RUN_LABEL: run, "pool": "a" if i < 2 else "b"}, conds)
    # 20 s: kumaco's start-up (1-4 s, test_catch_up.py) and Prometheus's first scrape before it.
    shift = shift_before(lead=20)  # kumaco's clock reaches the window's minute in 20 s
    opens = shift.opens
    raw.window(
        ns, "opening", {"startTime": cron_at(opens), "duration": "5m", "nodeSelector": "pool=a"}
    )
    raw.window(ns, "typo", {"startTime": "0 3 * * fry", "duration": "1d", "nodeSelector": ""})
    k = Kumaco(
        kubeconfig_path,
        [
            *scope_flags(run, ns),
            "--max-in-progress",
            "1",
            "--require-condition",
            REQUIRED,
        ],
        workdir / "kumaco.log",
        name=run,
        launcher=shift.launcher,
    )
    rules = extract_rules(MONITORING / "prometheusrule.yaml", workdir / "alerts.rules.yaml")
    prometheus = Prometheus(workdir, [f"127.0.0.1:{k.metrics_port}"], [rules])
    k.start()
    try:
        with prometheus:
            wait_for(k.ready, 30, what="kumaco ready")  # start-up: 1-4 s (test_catch_up.py)
            query = 'kumaco_nodes_under_maintenance{job="kumaco"}'
            # Scrapes every 1 s (tests/support/env/prometheus.py): 30 s for a loaded machine.
            before = wait_for(lambda: prometheus.query(query), 30, 0.5, "the first scrape")
            wait_for(
                lambda: condition_status(raw.conditions(f"{run}-0"), UM) == "True",
                shift.real - time.time() + 20,  # the opening + 20 s (9 ms late, ``boundary``)
                0.2,
                "the window to open",
            )
            after = wait_for(
                lambda: [r for r in prometheus.query(query) if r["value"][1] == "2"],
                20,  # the next 1 s scrape: room for a loaded machine
                0.5,
                "Prometheus to see 2 nodes under maintenance",
            )
            leaders = prometheus.query(f'kumaco:leaders:sum{{name="{run}"}}')
        raw.edit_window(
            ns, "opening", {"startTime": "0 4 * * *", "duration": "1h", "nodeSelector": ""}
        )
        code = k.wait(30)  # the 2 s settle and the exit: 2.94 s measured (config_edit_single)
    finally:
        k.stop()
        prometheus.stop()
    # when the machine's clock reached the opening (Prometheus's times are the machine's)
    return Run(k, dt.datetime.fromtimestamp(shift.real, dt.UTC), before, after, leaders, code)


def test_prometheus_scrapes_kumaco_and_sees_a_window_open(observed: Run) -> None:
    (first,) = observed.before
    at, value = first["value"]
    assert value == "0" and at < observed.opened.timestamp(), first
    (seen,) = observed.after
    assert seen["value"][0] >= observed.opened.timestamp()
    print(
        f"Prometheus: kumaco_nodes_under_maintenance 0 at {first['value'][0]:.1f}, 2 at "
        f"{seen['value'][0]:.1f} (window opened at {observed.opened.timestamp():.0f})"
    )
    (leaders,) = observed.leaders
    assert leaders["value"][1] == "1", leaders


def test_every_log_line_is_one_json_object_with_the_documented_schema(observed: Run) -> None:
    assert observed.exit_code == 3, "the run ends with the deliberate exit on a window change"
    lines = observed.kumaco.log_path.read_text().splitlines()
    records = observed.kumaco.logs()
    assert len(records) == len(lines) > 20, "a line that is not one JSON object"
    listed = (REPO / "docs" / "observability.md").read_text()
    keys: set[str] = set()
    for line, r in zip(lines, records, strict=True):
        assert isinstance(r, dict), line
        assert list(r)[: len(HEAD)] == HEAD, line
        assert RFC3339_MS_UTC.fullmatch(r["time"]), line
        stamp = dt.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%f%z")
        # 600 s: this module's run takes about 90 s (LONGEST, conftest.py); local time written
        # as UTC is off by 30 min or more.
        assert abs(time.time() - stamp.timestamp()) < 600, line  # UTC, not local time
        assert r["level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), line
        assert r["logger"].startswith("kumaco"), line
        assert log_message(r) and r["replica"].startswith(observed.kumaco.name + "_"), line
        for key in list(r)[len(HEAD) :]:
            assert LOWER_CAMEL.fullmatch(key), f"{key!r} is not lowerCamelCase: {line}"
            keys.add(key)
    missing = sorted(k for k in keys if f"`{k}`" not in listed)
    assert not missing, f"keys logged but not listed in docs/observability.md (Logs): {missing}"
    messages = {log_message(r) for r in records}
    for expected in ("starting", "became leader", "status writes", "conditions written", "event"):
        assert expected in messages, expected
    assert any(m.startswith("window ignored") for m in messages)
    print(f"{len(records)} log lines, keys beyond the head: {sorted(keys)}")
