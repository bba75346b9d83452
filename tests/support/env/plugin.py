"""The installed console scripts run as a user runs them: ``kubectl kumaco`` and ``kumaco``.

:func:`kubectl` runs ``kubectl kumaco ARGS`` with this environment's scripts first on
PATH (:func:`plugin_env`; KUBECONFIG and NO_COLOR removed unless given), fails the test
when kubectl or the plugin is missing, and asserts exit 0 unless ``check=False``;
:func:`kumaco_cli` runs the ``kumaco`` script of :data:`VENV_BIN` on files, unchecked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


def plugin_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "KUBECONFIG")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def kubectl(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = env or plugin_env()
    if shutil.which("kubectl", path=env["PATH"]) is None:
        pytest.fail(
            "kubectl is not installed: these tests run the plugin as `kubectl kumaco` (install kubectl)"
        )
    if shutil.which("kubectl-kumaco", path=env["PATH"]) is None:
        pytest.fail(f"kubectl-kumaco is not in {VENV_BIN}: run `pip install -e .`")
    proc = subprocess.run(
        ["kubectl", "kumaco", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a plugin run reads the cluster once (not timed): 120 s catches a hang
        check=False,
    )
    if check:
        assert proc.returncode == 0, (
            f"kubectl kumaco {' '.join(args)} -> {proc.returncode}\n{proc.stderr}"
        )
    return proc


def kumaco_cli(*args: str) -> subprocess.CompletedProcess[str]:
    # Offline commands on files (not timed): 120 s catches a hang.
    return subprocess.run(
        [str(VENV_BIN / "kumaco"), *args], capture_output=True, text=True, timeout=120, check=False
    )
