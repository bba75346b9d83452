"""Helpers for end-to-end tests and the hack/ tools: kumaco processes, nodes, windows, watchers, metrics.

Everything here talks to the real test API server; nothing stands in for it.
Each test isolates itself with a unique run label on its nodes (kumaco's
``--node-selector``), its own namespaces and its own Lease name.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.support.controlplane import ControlPlane, free_port

T = TypeVar("T")
RUN_LABEL = "kumaco.test/run"
UM = "kured.dev/UnderMaintenance"
MIP = "MaintenanceInProgress"
REQUIRED = "kured.dev/RebootRequired"


def wait_for(
    pred: Callable[[], T], timeout: float, interval: float = 0.05, what: str = "condition"
) -> T:
    """Poll until ``pred()`` is truthy; return its value or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T = pred()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
        last = pred()
    return last


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


class ApiError(RuntimeError):
    """The API server answered a request with a status other than 2xx."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: {status} {body[:400]!r}")
        self.method = method
        self.path = path
        self.status = status
        self.body = body


class Api:
    """Raw JSON requests with the admin certificate (quick, no generated models)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        conn = self.cp.connection()
        try:
            headers = {"Content-Type": content_type} if body is not None else {}
            conn.request(
                method, path, body=None if body is None else json.dumps(body), headers=headers
            )
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status >= 300:
            raise ApiError(method, path, resp.status, data)
        return json.loads(data) if data else None

    def try_request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``(200, decoded body)``, or ``(status, error text)`` when the server refused."""
        try:
            return 200, self.request(method, path, body)
        except ApiError as exc:
            return exc.status, str(exc)

    # -- namespaces, nodes, windows

    def namespace(self, name: str) -> str:
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def node(
        self, name: str, labels: Mapping[str, str], conditions: Sequence[Mapping[str, str]] = ()
    ) -> None:
        hb = "2026-01-01T00:00:00Z"
        conds = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": hb,
                "lastTransitionTime": hb,
            },
            *[
                {
                    "lastHeartbeatTime": hb,
                    "lastTransitionTime": hb,
                    "reason": "Test",
                    "message": "",
                    **c,
                }
                for c in conditions
            ],
        ]
        self.request(
            "POST",
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": dict(labels)},
                "status": {"conditions": conds},
            },
        )

    def nodes(self, run: str) -> dict[str, dict[str, Any]]:
        doc = self.request("GET", f"/api/v1/nodes?labelSelector={RUN_LABEL}%3D{run}")
        return {n["metadata"]["name"]: n for n in doc["items"]}

    def conditions(self, name: str) -> dict[str, dict[str, Any]]:
        node = self.request("GET", f"/api/v1/nodes/{name}")
        return {c["type"]: c for c in node.get("status", {}).get("conditions", [])}

    def set_condition(
        self,
        node: str,
        ctype: str,
        status: str,
        ltt: str | None = None,
        *,
        reason: str = "Test",
        message: str = "set by the test",
    ) -> None:
        """Merge one condition into the node's status (as kured reports its own)."""
        now = ltt or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.request(
            "PATCH",
            f"/api/v1/nodes/{node}/status",
            {
                "status": {
                    "conditions": [
                        {
                            "type": ctype,
                            "status": status,
                            "reason": reason,
                            "message": message,
                            "lastTransitionTime": now,
                            "lastHeartbeatTime": now,
                        }
                    ]
                }
            },
            "application/strategic-merge-patch+json",
        )

    def label(self, node: str, key: str, value: str | None) -> None:
        self.request(
            "PATCH",
            f"/api/v1/nodes/{node}",
            {"metadata": {"labels": {key: value}}},
            "application/merge-patch+json",
        )

    def window(
        self, ns: str, name: str, data: Mapping[str, Any], labels: Mapping[str, str] | None = None
    ) -> Any:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": dict(
                    labels if labels is not None else {"kured.dev/maintenance-window": ""}
                ),
            },
            "data": dict(data),
        }
        return self.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body)

    def edit_window(self, ns: str, name: str, data: Mapping[str, Any]) -> None:
        self.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/configmaps/{name}",
            {"data": dict(data)},
            "application/merge-patch+json",
        )

    def events(self, ns: str) -> list[dict[str, Any]]:
        return list(self.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"])

    def lease(self, ns: str, name: str) -> dict[str, Any] | None:
        status, body = self.try_request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"
        )
        return body if status == 200 else None


def condition_status(conds: Mapping[str, Mapping[str, Any]], ctype: str) -> str | None:
    c = conds.get(ctype)
    return None if c is None else str(c.get("status"))


# ----------------------------------------------------------------------------- API server metrics


def request_counts(cp: ControlPlane) -> dict[tuple[str, str, str], float]:
    """Sum ``apiserver_request_total`` by (verb, resource, subresource), as the server counts.

    Answers other than 2xx are kept apart: their subresource carries the code
    (``("PATCH", "nodes", "status 409")``), so a count of writes is a count of
    writes that landed, and failed attempts stay visible.
    """
    status, body = cp.get("/metrics")
    assert status == 200
    counts: dict[tuple[str, str, str], float] = {}
    for line in body.decode().splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        sub = labels.get("subresource", "")
        code = labels.get("code", "200")
        if not code.startswith("2"):
            sub = f"{sub} {code}".strip() if sub else code
        key = (labels.get("verb", ""), labels.get("resource", ""), sub)
        counts[key] = counts.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


def count_delta(
    before: Mapping[tuple[str, str, str], float], after: Mapping[tuple[str, str, str], float]
) -> dict[tuple[str, str, str], float]:
    return {
        k: after.get(k, 0) - before.get(k, 0)
        for k in set(after) | set(before)
        if after.get(k, 0) != before.get(k, 0)
    }


# ----------------------------------------------------------------------------- time


def next_boundary(lead: float = 8.0, now: dt.datetime | None = None) -> dt.datetime:
    """The next whole minute at least ``lead`` seconds away (cron has minute resolution)."""
    now = now or dt.datetime.now(dt.UTC)
    b = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    if (b - now).total_seconds() < lead:
        b += dt.timedelta(minutes=1)
    return b


def cron_at(t: dt.datetime) -> str:
    return f"{t.minute} {t.hour} {t.day} {t.month} *"


# ----------------------------------------------------------------------------- watcher


@dataclass
class Observation:
    """One node as the watcher saw it, and when."""

    at: float
    name: str
    conditions: dict[str, dict[str, Any]]


@dataclass
class NodeWatcher:
    """A separate client watching the test's nodes, time-stamping every change it sees.

    It survives API outages: it resumes the watch from the last resourceVersion
    it saw (so it misses no event across a reconnection) and relists only on
    410 Gone; ``relists`` counts its LISTs, the first one included.
    """

    api: Api
    run: str
    seen: list[Observation] = field(default_factory=list)
    relists: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._ready = threading.Event()

    def __enter__(self) -> NodeWatcher:
        self._thread.start()
        assert self._ready.wait(10), "the watcher did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _loop(self) -> None:
        rv: str | None = None
        base = f"/api/v1/nodes?labelSelector={RUN_LABEL}%3D{self.run}"
        while not self._stop.is_set():
            conn: http.client.HTTPSConnection | None = None
            try:
                if rv is None:
                    doc = self.api.request("GET", base)
                    for n in doc["items"]:
                        self._record(n)
                    rv = str(doc["metadata"]["resourceVersion"])
                    self.relists += 1
                conn = self.api.cp.connection()
                conn.timeout = 5
                conn.request(
                    "GET",
                    f"{base}&watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
                    "&timeoutSeconds=300",
                )
                resp = conn.getresponse()
                if resp.status == 410:
                    rv = None
                    continue
                if resp.status != 200:
                    resp.read()
                    raise OSError(f"watch answered {resp.status}")
                self._ready.set()
                buf = b""
                while not self._stop.is_set():
                    try:
                        chunk = resp.read1(65536)
                    except TimeoutError:
                        continue
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        ev = json.loads(line)
                        obj = ev.get("object") or {}
                        if ev.get("type") == "ERROR":
                            if obj.get("code") == 410:
                                rv = None
                            raise OSError(f"watch error {obj.get('code')}")
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if ev.get("type") in ("ADDED", "MODIFIED"):
                            self._record(obj)
                        if new_rv:
                            rv = str(new_rv)
            except (OSError, ValueError, RuntimeError, http.client.HTTPException):
                self._stop.wait(0.2)
            finally:
                if conn is not None:
                    conn.close()

    def _record(self, node: dict[str, Any]) -> None:
        conds = {c["type"]: c for c in node.get("status", {}).get("conditions", [])}
        self.seen.append(Observation(time.time(), node["metadata"]["name"], conds))

    def first(
        self, name: str, pred: Callable[[dict[str, dict[str, Any]]], bool], after: float = 0
    ) -> float | None:
        for o in list(self.seen):
            if o.name == name and o.at >= after and pred(o.conditions):
                return o.at
        return None

    def max_count(self, pred: Callable[[dict[str, dict[str, Any]]], bool]) -> int:
        """The most nodes for which ``pred`` held at once, replaying observations in order."""
        state: dict[str, bool] = {}
        best = 0
        for o in list(self.seen):
            state[o.name] = pred(o.conditions)
            best = max(best, sum(state.values()))
        return best


# ----------------------------------------------------------------------------- kumaco processes


@dataclass
class Kumaco:
    """One ``kumaco run`` process against the test API server."""

    kubeconfig: Path
    args: Sequence[str]
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = "kumaco"
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.health_port = free_port()
        self.metrics_port = free_port()

    def start(self) -> Kumaco:
        cmd = [
            sys.executable,
            "-m",
            "kumaco",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--log-format",
            "json",
            *self.args,
        ]
        env = {**os.environ, "POD_NAME": self.name, "PYTHONUNBUFFERED": "1", **self.env}
        out = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        return self

    def send(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.send(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"{self.name} did not stop within {timeout}s after {sig}"
            ) from None

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def log_messages(self) -> list[str]:
        return [str(r.get("message", "")) for r in self.logs()]

    def ready(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.health_port, timeout=1)
        try:
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def metric(self, name: str) -> float | None:
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=2)
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        except OSError:
            return None
        finally:
            conn.close()
        total = None
        for line in text.splitlines():
            if line.startswith(name) and (line[len(name)] in " {"):
                total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
        return total


@contextlib.contextmanager
def running(*procs: Kumaco) -> Iterator[tuple[Kumaco, ...]]:
    for p in procs:
        p.start()
    try:
        yield procs
    finally:
        for p in procs:
            with contextlib.suppress(AssertionError):
                p.stop()
