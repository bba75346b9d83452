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
import math
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

from tests.support.env.controlplane import ControlPlane, ready_condition
from tests.support.env.ports import free_port
from tests.support.env.process import exchange, spawn

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


def until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """:func:`wait_for` polling every half second; its answer untyped, as the real-cluster
    tests read documents from it."""
    return wait_for(check, timeout, every, what)


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
        headers = {"Content-Type": content_type} if body is not None else {}
        sent = None if body is None else json.dumps(body)
        status, data = exchange(self.cp.connection(), method, path, sent, headers)
        if status >= 300:
            raise ApiError(method, path, status, data)
        return json.loads(data) if data else None

    def try_request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``(200, decoded body)``, or ``(status, error text)`` when the server refused."""
        try:
            return 200, self.request(method, path, body)
        except ApiError as exc:
            return exc.status, str(exc)

    def service_account_token(self, ns: str, sa: str) -> str:
        """A TokenRequest's token for the ServiceAccount ``ns/sa`` (an hour, the API's audience)."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"audiences": [], "expirationSeconds": 3600},
        }
        return str(
            self.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token", body)[
                "status"
            ]["token"]
        )

    # -- namespaces, nodes, windows

    def namespace(self, name: str) -> str:
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def node(
        self, name: str, labels: Mapping[str, str], conditions: Sequence[Mapping[str, str]] = ()
    ) -> None:
        hb = "2026-01-01T00:00:00Z"
        conds = [
            ready_condition(hb),
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
        self,
        ns: str,
        name: str,
        data: Mapping[str, Any],
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Any:
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": ns,
            "labels": dict(labels if labels is not None else {"kured.dev/maintenance-window": ""}),
        }
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}
        return self.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body)

    def edit_window(self, ns: str, name: str, data: Mapping[str, Any]) -> None:
        self.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/configmaps/{name}",
            {"data": dict(data)},
            "application/merge-patch+json",
        )

    def events(self, ns: str) -> list[dict[str, Any]]:
        doc = self.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
        return list(doc.get("items") or [])

    def lease(self, ns: str, name: str) -> dict[str, Any] | None:
        status, body = self.try_request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"
        )
        return body if status == 200 else None


def condition_status(conds: Mapping[str, Mapping[str, Any]], ctype: str) -> str | None:
    c = conds.get(ctype)
    return None if c is None else str(c.get("status"))


def holding(api: Api, run: str, ctype: str) -> dict[str, bool]:
    """Whether each node of ``run`` holds ``ctype`` now (for the ceiling judge's ``final``)."""
    out: dict[str, bool] = {}
    for name, node in api.nodes(run).items():
        conds = (node.get("status") or {}).get("conditions") or []
        out[name] = any(c.get("type") == ctype and c.get("status") == "True" for c in conds)
    return out


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


def always() -> dict[str, str]:
    """A window open since the start of this minute, for a day."""
    start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    return {"startTime": cron_at(start), "duration": "24h", "nodeSelector": ""}


@dataclass(frozen=True)
class Shift:
    """kumaco's wall clock set ``offset`` seconds after the machine's (tests/support/env/shifted.py).

    ``opens`` is a whole minute in kumaco's clock (what a window's cron names); the
    machine reaches it at :attr:`real` (a Unix time), ``lead`` seconds after the shift was
    made. Every kumaco of a test shares one Shift; the test's own clock stays the machine's.
    """

    offset: float
    opens: dt.datetime

    @property
    def real(self) -> float:
        """When, on the machine's clock, kumaco's clock reads :attr:`opens`."""
        return self.opens.timestamp() - self.offset

    @property
    def launcher(self) -> tuple[str, ...]:
        """The :class:`Kumaco` launcher that runs kumaco on this clock."""
        return ("-m", "tests.support.env.shifted", f"{self.offset:.6f}")

    def kumaco_now(self) -> dt.datetime:
        """kumaco's clock now."""
        return dt.datetime.fromtimestamp(time.time() + self.offset, dt.UTC)


def shift_before(lead: float, now: float | None = None) -> Shift:
    """A shift that puts a whole minute of kumaco's clock ``lead`` seconds from now.

    Instead of waiting up to a minute for the wall clock to reach a boundary a cron can
    name (:func:`next_boundary`), kumaco runs on a clock that reaches one in ``lead``
    seconds: the offset is less than a minute and never negative.
    """
    t = time.time() if now is None else now
    target = t + lead
    boundary = math.ceil(target / 60) * 60
    return Shift(offset=boundary - target, opens=dt.datetime.fromtimestamp(boundary, dt.UTC))


# ----------------------------------------------------------------------------- watcher


@dataclass
class Observation:
    """One node as the watcher saw it, and when."""

    at: float
    name: str
    conditions: dict[str, dict[str, Any]]


Change = tuple[float, str, str, str]  # (when, node, condition type, its new status or "")

_EVENT_RECORDED = (b'{"type":"MODIFIED"', b'{"type":"ADDED"')
_EVENT_ERROR = b'{"type":"ERROR"'
_NAME = re.compile(rb'"name":"([^"]+)"')  # the first is the object's own (metadata comes first)
_RESOURCE_VERSION = re.compile(rb'"resourceVersion":"([^"]*)"')


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


class WatcherGap(AssertionError):
    """The watcher relisted, so its record of the nodes' states has a hole."""


class NodeWatcher:
    """A separate client watching nodes on its own connection, time-stamping what it sees.

    It survives API outages: it resumes the watch from the last resourceVersion
    it saw (so it misses no event across a reconnection) and relists only on
    410 Gone; ``relists`` counts its LISTs, the first one included. A relist
    is a gap: the states between the last event it saw and the new LIST are
    lost, so a count over its records can only under-count. :attr:`gaps` says
    when that happened, and :meth:`max_count` refuses to answer over a gap
    (:class:`WatcherGap`) unless told the caller knows (``gaps_ok=True``, for
    a test that restarts the API server on purpose and judges the ceiling from
    the audit log). Every event is stamped with the time its bytes arrived;
    ``on_node`` (if given) is called with each node it is sent, in the
    watcher's thread.

    It keeps two records. ``changes``: each change of the status of a
    ``track``-ed condition type on a node ("" when the node lacks it), for
    :meth:`last_change`, :meth:`per_node` and :meth:`wait_all`. ``seen``:
    every node it was sent, with its conditions decoded, for :meth:`first` and
    :meth:`max_count`. With ``run`` it watches that test's nodes (``RUN_LABEL``),
    without it every node.

    ``lean=True`` is the benchmark's watcher, over thousands of 15 KB Nodes: it
    decodes no event but finds the tracked statuses with a byte search (so that
    its own cost does not pollute the measurements: the same watcher times
    kumaco and the floor), keeps no ``seen``, reads in 1 MiB chunks, and holds
    its watch open for an hour instead of reconnecting after 5 quiet seconds
    (a reconnection is a request the benchmark would count).
    """

    def __init__(
        self,
        api: Api,
        run: str | None = None,
        *,
        track: Sequence[str] = (UM, MIP),
        lean: bool = False,
        log: Callable[[str], object] | None = None,
        on_node: Callable[[float, str, dict[str, dict[str, Any]]], None] | None = None,
    ) -> None:
        self.api = api
        self.run = run
        self.lean = lean
        self.seen: list[Observation] = []
        self.changes: list[Change] = []
        self.relists = 0
        self.gaps: list[float] = []  # when each relist after the first one happened
        self._on_node = on_node
        self._markers = {t: b'"type":"' + t.encode() + b'","status":"' for t in track}
        self._state: dict[str, dict[str, str]] = {}
        self._log = log
        self._rv: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> NodeWatcher:
        self._thread.start()
        assert self._ready.wait(60), "the watcher did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    # -- the connection

    def _loop(self) -> None:
        query = f"labelSelector={RUN_LABEL}%3D{self.run}&" if self.run else ""
        base = f"/api/v1/nodes?{query}"
        while not self._stop.is_set():
            conn = self.api.cp.connection()
            # A lean watch may be silent for long; a test's wakes up to see it was stopped.
            conn.timeout = 3700 if self.lean else 5
            try:
                if self._rv is None:
                    self._list(conn, base)
                conn.request(
                    "GET",
                    f"{base}watch=true&resourceVersion={self._rv}&allowWatchBookmarks=true"
                    f"&timeoutSeconds={3600 if self.lean else 300}",
                )
                resp = conn.getresponse()
                if resp.status == 410:
                    self._rv = None
                    continue
                if resp.status != 200:
                    resp.read()
                    raise OSError(f"watch answered {resp.status}")
                self._ready.set()
                self._read(resp)
            except _Gone:
                self._rv = None
            except (OSError, ValueError, RuntimeError, http.client.HTTPException) as exc:
                if self._stop.is_set():
                    return
                if self._log is not None:
                    self._log(f"watcher reconnecting: {exc}")
                self._stop.wait(0.2)
            finally:
                conn.close()

    def _list(self, conn: http.client.HTTPSConnection, base: str) -> None:
        path = f"{base}limit=500"
        while True:
            conn.request("GET", path)
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise ApiError("GET", path, resp.status, data)
            doc = json.loads(data)
            at = time.time()
            for node in doc["items"]:
                self._record(node, at)
            cont = doc["metadata"].get("continue")
            if not cont:
                break
            path = f"{base}limit=500&continue={cont}"
        self._rv = str(doc["metadata"]["resourceVersion"])
        self.relists += 1
        if self.relists > 1:
            self.gaps.append(at)
            if self._log is not None:
                self._log(f"watcher relisted: a gap in its record at {at:.3f}")

    def _read(self, resp: http.client.HTTPResponse) -> None:
        buf = b""
        while not self._stop.is_set():
            try:
                chunk = resp.read1(1 << 20 if self.lean else 65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            at = time.time()
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    self._event(line, at)

    def _event(self, line: bytes, at: float) -> None:
        if self.lean and not line.startswith(_EVENT_ERROR):
            if line.startswith(_EVENT_RECORDED):
                name = _NAME.search(line)
                if name is not None:
                    self._change(at, name.group(1).decode(), self._statuses(line))
            rv = _RESOURCE_VERSION.search(line)
            if rv is not None:
                self._rv = rv.group(1).decode()
            return
        ev = json.loads(line)
        obj = ev.get("object") or {}
        if ev.get("type") == "ERROR":
            if obj.get("code") == 410:
                raise _Gone
            raise OSError(f"watch error {obj.get('code')}")
        if ev.get("type") in ("ADDED", "MODIFIED"):
            self._record(obj, at)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self._rv = str(rv)

    def _statuses(self, raw: bytes) -> dict[str, str]:
        out = {}
        for ctype, marker in self._markers.items():
            i = raw.find(marker)
            start = i + len(marker)
            out[ctype] = raw[start : raw.index(b'"', start)].decode() if i >= 0 else ""
        return out

    # -- the records

    def _record(self, node: dict[str, Any], at: float) -> None:
        name = str(node["metadata"]["name"])
        conds = {c["type"]: c for c in node.get("status", {}).get("conditions") or []}
        self._change(at, name, {t: str(conds.get(t, {}).get("status", "")) for t in self._markers})
        if not self.lean:
            self.seen.append(Observation(at, name, conds))
        if self._on_node is not None:
            self._on_node(at, name, conds)

    def _change(self, at: float, name: str, statuses: Mapping[str, str]) -> None:
        cur = self._state.setdefault(name, {})
        for ctype, status in statuses.items():
            if cur.get(ctype) != status:
                cur[ctype] = status
                with self._lock:
                    self.changes.append((at, name, ctype, status))

    # -- questions

    def first(
        self, name: str, pred: Callable[[dict[str, dict[str, Any]]], bool], after: float = 0
    ) -> float | None:
        for o in list(self.seen):
            if o.name == name and o.at >= after and pred(o.conditions):
                return o.at
        return None

    def wait_first(
        self,
        name: str,
        pred: Callable[[dict[str, dict[str, Any]]], bool],
        after: float = 0,
        timeout: float = 10,
    ) -> float | None:
        """:meth:`first`, waiting (:func:`wait_for`) up to ``timeout`` seconds for the watch.

        A GET can see a write before the watch has sent the event to this
        watcher's thread: a test that saw a state by polling the server asks this,
        not :meth:`first`, for when the watch saw it.
        """
        return wait_for(
            lambda: self.first(name, pred, after),
            timeout,
            interval=0.02,
            what=f"the watcher to see the state asked of {name}",
        )

    def max_count(
        self, pred: Callable[[dict[str, dict[str, Any]]], bool], *, gaps_ok: bool = False
    ) -> int:
        """The most nodes for which ``pred`` held at once, replaying observations in order.

        Raises :class:`WatcherGap` if the watcher relisted (its record has a hole, the
        answer could under-count), unless ``gaps_ok``.
        """
        if self.gaps and not gaps_ok:
            raise WatcherGap(
                f"the watcher relisted {len(self.gaps)} time(s) (410 Gone): states between "
                "its last event and the relist are missing, its count is not a full record"
            )
        state: dict[str, bool] = {}
        best = 0
        for o in list(self.seen):
            state[o.name] = pred(o.conditions)
            best = max(best, sum(state.values()))
        return best

    def last_change(
        self, ctype: str, status: str, nodes: set[str], since: float
    ) -> tuple[float | None, int]:
        """When the last of ``nodes`` reached ``status`` (after ``since``), and how many did."""
        with self._lock:
            seen = {
                n: t
                for t, n, k, s in self.changes
                if k == ctype and s == status and t >= since and n in nodes
            }
        return (max(seen.values()) if len(seen) == len(nodes) else None), len(seen)

    def per_node(self, ctype: str, status: str, nodes: set[str], since: float) -> list[float]:
        """When each of ``nodes`` first reached ``status`` after ``since``, sorted."""
        with self._lock:
            first: dict[str, float] = {}
            for t, n, k, s in self.changes:
                if k == ctype and s == status and t >= since and n in nodes and n not in first:
                    first[n] = t
        return sorted(first.values())

    def wait_all(
        self, ctype: str, status: str, nodes: set[str], since: float, timeout: float
    ) -> float | None:
        """Wait until every one of ``nodes`` reached ``status`` after ``since``: :meth:`last_change`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            done, _n = self.last_change(ctype, status, nodes, since)
            if done is not None:
                return done
            time.sleep(0.05)
        return None


# ----------------------------------------------------------------------------- kumaco processes


def run_command(
    kubeconfig: Path, *args: str, launcher: Sequence[str] = ("-m", "kumaco")
) -> list[str]:
    """``python -m kumaco run --kubeconfig KUBECONFIG ARGS...`` with this interpreter.

    ``launcher`` replaces ``-m kumaco`` (e.g. ``-c CODE`` for a patched kumaco).
    """
    return [sys.executable, *launcher, "run", "--kubeconfig", str(kubeconfig), *args]


#: The key of a JSON log line's message (kumaco.cmd.observability: time, level, logger, msg).
MSG = "msg"


def log_message(record: Mapping[str, Any]) -> str:
    """The message of one decoded JSON log line of kumaco."""
    return str(record.get(MSG, ""))


@dataclass
class Kumaco:
    """One ``kumaco run`` process against the test API server (``launcher``: :func:`run_command`)."""

    kubeconfig: Path
    args: Sequence[str]
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = "kumaco"
    proc: subprocess.Popen[bytes] | None = None
    launcher: Sequence[str] = ("-m", "kumaco")
    cwd: Path | None = None  # where it runs: ``-m kumaco`` imports the kumaco found there first

    def __post_init__(self) -> None:
        self.health_port = free_port()
        self.metrics_port = free_port()

    def start(self) -> Kumaco:
        cmd = run_command(
            self.kubeconfig,
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--log-format",
            "json",
            *self.args,
            launcher=self.launcher,
        )
        env = {**os.environ, "POD_NAME": self.name, "PYTHONUNBUFFERED": "1", **self.env}
        self.proc = spawn(cmd, self.log_path, env, self.cwd)
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

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} was not started"
        return self.proc.pid

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def log_messages(self) -> list[str]:
        return [log_message(r) for r in self.logs()]

    def ready(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.health_port, timeout=1)
        try:
            return exchange(conn, "GET", "/readyz")[0] == 200
        except OSError:
            return False

    def metric(self, name: str) -> float | None:
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=2)
        try:
            text = exchange(conn, "GET", "/metrics")[1].decode()
        except OSError:
            return None
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
