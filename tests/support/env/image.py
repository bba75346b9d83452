"""The container image and the plugin zipapp for tests: the hack/ scripts that make them.

Contract: :func:`run_hack` runs ``hack/SCRIPT ARGS`` from the repository root and
returns its result, raising AssertionError with the end of its log when it fails.
:func:`build_image` is ``hack/image.sh build`` (cached by its inputs: a warm run reuses
the image) and returns the image's reference, how long the command took and whether the
image was reused.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def run_hack(script: str, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """``bash hack/SCRIPT ARGS...``; fails with the end of its stderr unless it exits 0."""
    proc = subprocess.run(
        ["bash", str(REPO / "hack" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, f"hack/{script} {' '.join(args)} failed:\n{proc.stderr[-6000:]}"
    return proc


def build_image() -> tuple[str, float, bool]:
    """``hack/image.sh build``: (reference, seconds, reused)."""
    t0 = time.monotonic()
    proc = run_hack("image.sh", "build")
    ref = proc.stdout.strip().splitlines()[-1]
    return ref, time.monotonic() - t0, "cached (inputs unchanged)" in proc.stderr
