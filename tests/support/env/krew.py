"""krew, the kubectl plugin manager, for the tests of the plugin's krew manifest.

Contract: :func:`ensure_krew` returns the path of a ``krew`` binary: ``TEST_ASSET_KREW``
if set, else the one in kumaco's assets cache (``$KUMACO_CACHE_DIR``, default
``~/.cache/kumaco``), else it builds it there from the Go module proxy with this
machine's Go toolchain (``GOTOOLCHAIN=local``), as the control-plane binaries are built
(:mod:`tests.support.env.controlplane`). A failed build raises RuntimeError.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.support.env.controlplane import _go_env, cache_dir, log

# The newest release on the Go module proxy (v0.4.4 and v0.4.5 are not served there).
KREW_VERSION = "v0.4.3"


def ensure_krew() -> Path:
    """A krew binary: TEST_ASSET_KREW, else the cache, else built into the cache."""
    env = os.environ.get("TEST_ASSET_KREW")
    if env:
        return Path(env)
    d = cache_dir() / "assets" / f"krew-{KREW_VERSION}"
    binary = d / "krew"
    if os.access(binary, os.X_OK):
        return binary
    if shutil.which("go") is None:
        raise RuntimeError("the Go toolchain (go) is not on PATH; it is needed to build krew")
    tmp = d.with_name(d.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"building krew {KREW_VERSION} from the Go module proxy into {d}")
    proc = subprocess.run(
        ["go", "install", f"sigs.k8s.io/krew/cmd/krew@{KREW_VERSION}"],
        cwd=tmp,
        env={**_go_env(), "GOBIN": str(tmp)},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building krew {KREW_VERSION} failed:\n{proc.stderr[-4000:]}")
    shutil.rmtree(d, ignore_errors=True)
    tmp.replace(d)
    return binary
