"""A real Prometheus (Debian's ``prometheus`` package) on loopback, for the e2e tests.

Contract: :class:`Prometheus` writes a generated configuration that scrapes the
given ``127.0.0.1`` targets every second (and loads the given rule files),
starts ``/usr/bin/prometheus`` in the foreground with its data in a temporary
directory, listening on a free loopback port, and waits for ``/-/ready``.
:meth:`Prometheus.query` asks its HTTP API (``/api/v1/query``);
:meth:`Prometheus.stop` (or leaving the ``with`` block) stops it with SIGTERM
and waits for it. Nothing is started when the binary is missing: the test fails
and names the package to install (hack/debian-packages.txt). Prometheus applies
new targets on a 5 s cycle, so the first sample arrives about 6 s after the start:
poll, do not sleep.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.support.env.ports import free_port
from tests.support.env.process import exchange, spawn, stop_process, wait_ready

LOOPBACK = "127.0.0.1"


def binary(name: str) -> str:
    """The path of ``name`` (``prometheus`` or ``promtool``); AssertionError if absent."""
    path = shutil.which(name)
    if path is None:
        raise AssertionError(
            f"{name} is not installed: install the Debian package 'prometheus' "
            "(hack/debian-packages.txt; hack/test-deps.sh does it)"
        )
    return path


class Prometheus:
    """One Prometheus scraping ``targets`` (``host:port`` on loopback); see the module contract."""

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[str],
        rule_files: Sequence[Path] = (),
        job: str = "kumaco",
    ) -> None:
        for t in targets:
            if not t.startswith(f"{LOOPBACK}:"):
                raise ValueError(f"Prometheus scrapes loopback targets only, not {t}")
        self.workdir = workdir
        self.port = free_port()
        self.config = workdir / "prometheus.yml"
        self.config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(p) for p in rule_files],
                    "scrape_configs": [
                        {"job_name": job, "static_configs": [{"targets": list(targets)}]}
                    ],
                }
            )
        )
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Prometheus:
        cmd = [
            binary("prometheus"),
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address={LOOPBACK}:{self.port}",
            "--log.level=warn",
        ]
        self.proc = spawn(cmd, self.log)
        try:
            wait_ready(
                lambda: self._get("/-/ready")[0] == 200,
                timeout,
                "prometheus /-/ready",
                self.proc,
                self.log,
            )
        except RuntimeError:
            self.stop()
            raise
        return self

    def _get(self, path: str) -> tuple[int, bytes]:
        return exchange(http.client.HTTPConnection(LOOPBACK, self.port, timeout=10), "GET", path)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The result vector of an instant query (``[{"metric": {...}, "value": [t, "v"]}]``)."""
        status, body = self._get("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise AssertionError(f"query {promql!r} failed: {status} {body[:300]!r}")
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result

    def stop(self) -> None:
        stop_process(self.proc, timeout=15)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def extract_rules(prometheus_rule: Path, out: Path) -> Path:
    """The ``spec`` of a PrometheusRule manifest as a Prometheus rule file at ``out``."""
    doc = yaml.safe_load(prometheus_rule.read_text())
    if doc.get("kind") != "PrometheusRule":
        raise ValueError(f"{prometheus_rule} is not a PrometheusRule")
    out.write_text(yaml.safe_dump({"groups": doc["spec"]["groups"]}, sort_keys=False))
    return out
