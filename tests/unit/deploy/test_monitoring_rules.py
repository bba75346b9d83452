"""The alerts of kustomize/components/monitoring, checked by promtool (no server).

Moved from tests/e2e/test_monitoring.py, where it used no API server:
``promtool check rules`` accepts the rules extracted from the PrometheusRule, ``promtool
test rules`` passes alerts.test.yaml, and every alert of the rule file has at least one
promtool unit test. promtool is Debian's (hack/debian-packages.txt,
:func:`tests.support.env.prometheus.binary`); a missing promtool fails the test.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.env.prometheus import binary, extract_rules

REPO = Path(__file__).resolve().parents[3]
MONITORING = REPO / "kustomize" / "components" / "monitoring"


def test_promtool_checks_the_rules_and_runs_every_alerts_unit_tests(tmp_path: Path) -> None:
    rules = extract_rules(MONITORING / "prometheusrule.yaml", tmp_path / "alerts.rules.yaml")
    tests = tmp_path / "alerts.test.yaml"
    tests.write_text((MONITORING / "alerts.test.yaml").read_text())
    promtool = binary("promtool")
    check = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 10 rules found" in check.stdout
    run = subprocess.run(
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # Every alert of the rule file is exercised by at least one alert test.
    text = tests.read_text()
    for alert in re.findall(r"- alert: (\w+)", (MONITORING / "prometheusrule.yaml").read_text()):
        assert f"alertname: {alert}" in text, f"{alert} has no promtool unit test"
