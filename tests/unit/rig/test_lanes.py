"""tests/support/env/lanes.py: under pytest-xdist each module runs whole on one worker, in order.

The CI's e2e tier relies on it (module-scoped scenes, a quiet server); pytest 9.2 made
xdist's ``loadgroup`` marks a silent no-op, which this test would have caught.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.env.lanes import unit_of

ROOT = Path(__file__).resolve().parents[3]

CONFTEST = """
import json, os, pathlib
from tests.support.env import lanes

def pytest_xdist_make_scheduler(config, log):
    return lanes.scheduler(config, log, {"test_c": "lane", "test_d": "lane"})

def pytest_runtest_call(item):
    with open(pathlib.Path(os.environ["RUNS"]) / os.environ["PYTEST_XDIST_WORKER"], "a") as f:
        f.write(json.dumps(item.nodeid) + "\\n")
"""

MODULE = """
import time
import pytest

@pytest.mark.parametrize("i", range(4))
def test_t(i):
    time.sleep(0.05)
"""


def test_a_module_stays_on_one_worker_in_order_and_a_lane_shares_one(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"test_{name}.py").write_text(MODULE)
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RUNS": str(runs)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    seen = {
        f.name: [json.loads(line) for line in f.read_text().splitlines()] for f in runs.iterdir()
    }
    assert sum(len(ids) for ids in seen.values()) == 16
    workers_of: dict[str, set[str]] = {}
    for worker, ids in seen.items():
        for nodeid in ids:
            workers_of.setdefault(nodeid.split("::")[0], set()).add(worker)
        for module in {i.split("::")[0] for i in ids}:  # each module's tests in their order
            mine = [i for i in ids if i.startswith(module)]
            assert mine == [f"{module}::test_t[{n}]" for n in range(4)], ids
    assert all(len(w) == 1 for w in workers_of.values()), workers_of
    assert workers_of["test_c.py"] == workers_of["test_d.py"]
    assert len(seen) >= 2  # the other modules went elsewhere: the work was still spread


def test_the_unit_is_the_module_stem_or_its_lane() -> None:
    lanes = {"test_kwok": "cpu-lane-a"}
    assert unit_of("tests/e2e/test_kwok.py::test_x[a::b]", lanes) == "cpu-lane-a"
    assert unit_of("tests/e2e/test_ha.py::TestK::test_y", lanes) == "test_ha"
