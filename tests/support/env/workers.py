"""The files a test session writes, when pytest-xdist splits it over worker processes.

Contract. A session writes two result files named by environment variables: the e2e
proof (``KUMACO_E2E_PROOF``: the server's version and every e2e test that passed) and
the measured figures (``KUMACO_FIGURES``). Under pytest-xdist every worker is a session
of its own, so each writes its own copy, :func:`per_worker` (``proof.json`` ->
``proof-gw0.json``); the controller, once every worker has finished, merges them into
the file the variable names (:func:`merge_proofs`, :func:`merge_figures`: figures an
earlier session of the same run wrote there are kept) and removes the parts. Without xdist the names are used as they are and nothing is merged. Merging is
exact: the proofs' lists (passed, artifacts, real_server) are concatenated (one server version for all, else it is
an error), the figures' sections merged name by name as :meth:`Figures.record` merges
them (lists under one name extended, a later scalar replacing an earlier one).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

WORKER_ENV = "PYTEST_XDIST_WORKER"


def per_worker(path: Path) -> Path:
    """``path`` for this process: with a worker suffix under xdist, else as it is."""
    worker = os.environ.get(WORKER_ENV)
    return path if not worker else path.with_name(f"{path.stem}-{worker}{path.suffix}")


def parts(path: Path) -> list[Path]:
    """The per-worker parts of ``path`` that exist, in worker order."""
    return sorted(
        path.parent.glob(f"{path.stem}-gw*{path.suffix}"),
        key=lambda p: int(p.stem.rsplit("-gw", 1)[1] or 0),
    )


def clear(path: Path) -> None:
    """Remove the parts of ``path`` an earlier session left (before this one writes them)."""
    for p in parts(path):
        p.unlink(missing_ok=True)


def merge_proofs(path: Path) -> bool:
    """Merge the proof parts into ``path``; False when there were none."""
    found = parts(path)
    if not found:
        return False
    docs = [json.loads(p.read_text()) for p in found]
    # A worker that ran only artifact tests started no server: it names none.
    versions = {json.dumps(d["server"], sort_keys=True) for d in docs if d["server"]}
    if len(versions) != 1:
        raise ValueError(f"the workers' e2e proofs name different servers: {sorted(versions)}")
    merged: dict[str, Any] = {
        "server": next((d["server"] for d in docs if d["server"]), {}),
        "passed": [t for d in docs for t in d["passed"]],
        "artifacts": [t for d in docs for t in d.get("artifacts", [])],
        "real_server": [t for d in docs for t in d.get("real_server", [])],
    }
    path.write_text(json.dumps(merged, indent=2) + "\n")
    for p in found:
        p.unlink()
    return True


def merge_figures(path: Path) -> bool:
    """Merge the figures parts into ``path``; False when there were none."""
    found = parts(path)
    if not found:
        return False
    # An earlier session of the same run (hack/test.sh runs the tiers one after the other)
    # may have written figures already: they are kept.
    docs = [json.loads(p.read_text()) for p in ([path] if path.exists() else []) + found]
    sections: dict[str, dict[str, Any]] = {}
    for d in docs:
        for section, values in d["figures"].items():
            into = sections.setdefault(section, {})
            for name, value in values.items():
                if isinstance(value, list) and isinstance(into.get(name), list):
                    into[name] = [*into[name], *value]
                else:  # as Figures.record: a later scalar replaces an earlier one
                    into[name] = value
    merged = {**docs[0], "figures": sections}
    path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    for p in found:
        p.unlink()
    return True
