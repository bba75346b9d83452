"""``hack/demo.sh --help``: the demo's options, printed without any set-up and no server.

Moved from tests/e2e/test_demo.py, where it used no API server: ``--help`` skips the
virtualenv and the control-plane binaries (hack/demo.sh) and prints hack/demo.py's
options. The demo itself, on its own control plane, stays in tests/e2e/test_demo.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_demo_sh_help() -> None:
    r = subprocess.run(
        [str(ROOT / "hack" / "demo.sh"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    for option in ("--nodes", "--duration", "--kill-signal", "--no-color", "--keep"):
        assert option in r.stdout
