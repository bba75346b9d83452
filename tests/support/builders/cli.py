"""The installed ``kumaco`` console script, run as a user runs it, and the input it reads.

:func:`kumaco` runs the script of this environment (``KUMACO``) with arguments and
optional stdin, and returns the completed process (stdout, stderr, exit code: never
checked here, each test asserts them); :func:`cm` is a maintenance-window ConfigMap as
``kubectl get cm -o yaml`` lists it, ``NIGHTLY`` a window's data every night at 02:00.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KUMACO = shutil.which("kumaco", path=str(Path(sys.executable).parent))


LABEL = "kured.dev/maintenance-window"


REQ = "kured.dev/RebootRequired"


def kumaco(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed console script run as a user runs it (``env``: its whole environment)."""
    assert KUMACO, "the kumaco console script is not installed in this environment"
    return subprocess.run(
        [KUMACO, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=None if env is None else dict(env),
    )


def cm(
    name: str, data: dict[str, str], ns: str = "maintenance", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


NIGHTLY = {"startTime": "0 2 * * *", "duration": "3h", "nodeSelector": ""}
