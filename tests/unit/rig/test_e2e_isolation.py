"""A test that damages a control plane on purpose does it to its own, not the session's.

The session's control plane (tests/e2e/conftest.py) serves every e2e module in turn; a
test that compacts etcd, kills or restarts kube-apiserver, or pauses etcd on it could
leave it broken for every later module, and a bad recovery would fail tests that have
nothing to do with it. Such tests take ``own_control_plane`` (a control plane for the
test alone) and never the session's ``control_plane``.
"""

from __future__ import annotations

import ast
from pathlib import Path

E2E = Path(__file__).resolve().parents[2] / "e2e"
DAMAGING = {"compact_etcd", "stop_apiserver", "start_apiserver", "restart_apiserver", "pause_etcd"}


def _damaging_tests() -> dict[str, set[str]]:
    """``{module::test: its fixture names}`` for every test calling a damaging method."""
    out = {}
    for path in sorted(E2E.glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            calls = {
                n.func.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            }
            if calls & DAMAGING:
                out[f"{path.name}::{node.name}"] = {a.arg for a in node.args.args}
    return out


def test_damaging_tests_get_a_control_plane_of_their_own() -> None:
    tests = _damaging_tests()
    assert len(tests) >= 4, tests  # compaction, kube-apiserver SIGKILL (twice), etcd SIGSTOP
    shared = [name for name, args in tests.items() if "control_plane" in args]
    assert shared == [], f"these damage the session's control plane: {shared}"
    assert all("own_control_plane" in args for args in tests.values()), tests
