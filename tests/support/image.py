"""The container image for tests: ``hack/image.sh build``, cached by its inputs.

Contract: :func:`build_image` runs the build (a warm run reuses the image whose inputs
are unchanged) and returns the image's reference, how long the command took and whether
the image was reused; a failed build raises AssertionError with the end of its log.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def build_image(timeout: float = 1200) -> tuple[str, float, bool]:
    """``hack/image.sh build``: (reference, seconds, reused)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO / "hack" / "image.sh"), "build"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, f"hack/image.sh build failed:\n{proc.stderr[-6000:]}"
    ref = proc.stdout.strip().splitlines()[-1]
    return ref, time.monotonic() - t0, "cached (inputs unchanged)" in proc.stderr
