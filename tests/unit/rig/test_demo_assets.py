"""The demo's asset step asks for kube-apiserver and etcd only.

``hack/demo.sh`` ensures its binaries with ``hack/controlplane.py assets
--only-control-plane`` and ``tools/demo.py`` with ``ensure_assets``: neither looks up
or builds kwok, helm, kured's agents or the real cluster's binaries, which only the
tests use (on a new machine they took most of the demo's first run). The command runs
for real, on stub binaries in a fresh cache, without a Go toolchain on ``PATH``: asking
for anything else would need a build, which fails there.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def assets(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``hack/controlplane.py assets FLAGS`` with stub kube-apiserver/etcd and no Go."""
    stubs, empty = tmp_path / "stubs", tmp_path / "empty-path"
    for d in (stubs, empty):
        d.mkdir(exist_ok=True)
    for name in ("kube-apiserver", "etcd"):
        (stubs / name).write_text("#!/bin/sh\nexit 0\n")
        (stubs / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEST_ASSET_")}
    env |= {
        "KUBEBUILDER_ASSETS": str(stubs),
        "KUMACO_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": str(empty),
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "hack" / "controlplane.py"), "assets", *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_the_control_plane_only_asset_step_asks_for_apiserver_and_etcd_alone(
    tmp_path: Path,
) -> None:
    done = assets(tmp_path, "--only-control-plane")
    assert (done.returncode, done.stdout) == (0, f"{tmp_path / 'stubs'}\n"), done.stderr
    assert not re.search(r"kwok|helm|kured|kubelet|go\b", done.stderr, re.I), done.stderr
    # The full step, on the same machine, goes on to kwok (and fails: no Go to build it).
    full = assets(tmp_path)
    assert full.returncode == 1
    assert "needed to build kwok" in full.stderr, full.stderr


def test_demo_sh_ensures_only_the_control_plane() -> None:
    script = (ROOT / "hack" / "demo.sh").read_text()
    calls = [ln.strip() for ln in script.splitlines() if "controlplane.py" in ln and "#" not in ln]
    assert calls == ['assets="$(python hack/controlplane.py assets --only-control-plane)"']


def test_the_demo_program_ensures_no_other_binary() -> None:
    tree = ast.parse((ROOT / "tools" / "demo.py").read_text())
    ensured = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.support")
        for alias in node.names
        if alias.name.startswith(("ensure", "find", "build"))
    }
    assert ensured == {"ensure_assets"}
