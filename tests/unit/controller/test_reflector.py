"""The node reflector (kumaco.kube.reflector): what is decoded, and its error policy.

The server streams crafted watch events over real HTTP to the real
:class:`~kumaco.kube.client.Kube`; the sink is the controller's real
:class:`~kumaco.controller.stores.NodeStore`. Two events make the two byte-level
shortcuts observable: an echo of a write the store already holds, altered so
that decoding it would change the store (it must not be decoded), and an event
whose image list is not JSON (it can only be applied if the list was cut out
before decoding). Its backoff after failures is an injected error policy
(:func:`kumaco.kube.retry.backoff_forever` by default). A watch the server ends with a
410 (an ERROR event, as the API server's watch cache answers a resourceVersion older than
its history) is relisted: its log line, then a LIST on the wire, then a watch from the
LIST's resourceVersion. The pods reflector lists by a
streaming list (``sendInitialEvents``), and LISTs when the server refuses it.
"""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from kubernetes import client as k8s_client

from kumaco.controller.stores import NodeStore
from kumaco.core.objects.nodes import Condition
from kumaco.kube.client import Kube
from kumaco.kube.errors import TransportError
from kumaco.kube.reflector import Reflector
from kumaco.kube.resources import KubeResources
from kumaco.kube.retry import OnError

UM = "kured.dev/UnderMaintenance"


def node(name: str, rv: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"u-{name}", "resourceVersion": rv, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def line(kind: str, obj: dict[str, Any], images: bytes = b"") -> bytes:
    raw = json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode()
    if images:  # as the API server writes it: status.images after the conditions
        raw = raw.replace(b"]}}}", b'],"images":' + images + b"}}}")
    return raw + b"\n"


class Stream(http.server.BaseHTTPRequestHandler):
    """The first watch gets ``body`` and ends; a resumed one waits for ``done``, then ends empty."""

    body = b""
    paths: ClassVar[list[str]] = []
    done = threading.Event()

    def do_GET(self) -> None:
        Stream.paths.append(self.path)
        body = self.body if len(Stream.paths) == 1 else b""
        if not body:
            Stream.done.wait(10)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _run_from_20(
    collection: Any, stop: threading.Event, restarts: list[str], on_error: Any
) -> Reflector[Any]:
    """A nodes reflector resumed at resourceVersion 20, run until it stops; returned."""
    r = Reflector(
        collection,
        NodeStore(),
        stop,
        name="nodes",
        on_restart=lambda _c, reason: restarts.append(reason),
        on_error=on_error,
    )
    r.resource_version = "20"
    r.run()
    return r


def test_an_echo_is_not_decoded_and_images_are_cut_before_decoding(
    server: http.server.ThreadingHTTPServer,
) -> None:
    store = NodeStore()
    store.replace([store.trim(node("a", "10", {})), store.trim(node("b", "10", {}))])
    assert store.put_written("a", "20", [Condition(UM, "True", "Open", "m", "t")])
    echo = line("MODIFIED", node("a", "20", {"zone": "decoded"}))  # altered on purpose
    images = b'[{"names":["registry/x:1"],"sizeBytes":not-json}]'
    relabel = line("MODIFIED", node("b", "21", {"zone": "b"}), images)
    Stream.body = echo + relabel
    Stream.paths = []
    Stream.done.clear()
    cfg = k8s_client.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}")
    stop = threading.Event()
    r = Reflector(
        KubeResources(Kube(cfg, "kumaco-test/1 (unit)", env={})).nodes(""),
        store,
        stop,
        name="nodes",
        silence=5.0,
    )
    r.resource_version = "20"  # listed already: straight to the watch
    r.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with store.read() as (nodes, _versions):
            b = nodes.get("b")
        if b is not None and b.labels.get("zone") == "b":
            break
        time.sleep(0.02)
    stop.set()
    Stream.done.set()
    with store.read() as (nodes, versions):
        a, b = nodes.get("a"), nodes.get("b")
        assert b is not None and dict(b.labels) == {"zone": "b"}  # the cut made it decodable
        assert a is not None and dict(a.labels) == {}  # the echo was never decoded
        assert a.is_true(UM) and versions["a"] == "20"
    assert r.resource_version == "21"
    assert "watch=true" in Stream.paths[0] and "resourceVersion=20" in Stream.paths[0]
    assert all("resourceVersion=21" in p for p in Stream.paths[1:])  # resumed after the last
    r.thread.join(10)
    assert not r.thread.is_alive()


class Failing:
    """A collection whose watches fail until its LIST (a relist) stops the run."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.calls: list[str] = []

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        self.calls.append("list")
        self.stop.set()
        return iter([([], "30")])

    def list_all(self) -> tuple[list[Any], str]:
        raise AssertionError("a reflector lists page by page")

    def watch(self, resource_version: str, *_: Any, **__: Any) -> Iterator[Any]:
        self.calls.append(f"watch {resource_version}")
        if self.stop.is_set():
            return iter([])  # the server closes it: the run ends
        raise TransportError("connection reset by peer")


def test_failures_back_off_as_the_error_policy_says() -> None:
    stop = threading.Event()
    collection = Failing(stop)
    told: list[tuple[str, int]] = []
    restarts: list[str] = []

    def on_error(exc: BaseException, failures: int) -> OnError:
        told.append((str(exc), failures))
        return OnError(0.0, relist=failures >= 2)

    r = _run_from_20(collection, stop, restarts, on_error)
    assert collection.calls == ["watch 20", "watch 20", "list", "watch 30"]
    assert told == [("connection reset by peer", 1), ("connection reset by peer", 2)]
    assert restarts == ["error", "error", "closed"]
    assert r.resource_version == "30" and r.relists == 1


class Stopping:
    """A collection whose watch fails as its reader is being stopped (the server goes away)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.watches = 0

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        raise AssertionError("nothing is relisted")

    def watch(self, resource_version: str, *_: Any, **__: Any) -> Iterator[Any]:
        self.watches += 1
        self.stop.set()
        raise TransportError("connection refused")


def test_a_failure_while_stopping_ends_the_run_without_a_word(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="kumaco.kube")
    stop = threading.Event()
    collection = Stopping(stop)
    told: list[int] = []
    restarts: list[str] = []

    def on_error(_exc: BaseException, failures: int) -> OnError:
        told.append(failures)
        return OnError(0.0)

    _run_from_20(collection, stop, restarts, on_error)
    assert collection.watches == 1
    assert (told, restarts, caplog.records) == ([], [], [])


# ----------------------------------------------------------------------------- streaming list


def pod(name: str, rv: str, node_name: str = "n1") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "shop", "name": name, "resourceVersion": rv},
        "spec": {"nodeName": node_name},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def initial_events_end(rv: str) -> dict[str, Any]:
    notes = {"k8s.io/initial-events-end": "true"}
    return {"kind": "Pod", "metadata": {"resourceVersion": rv, "annotations": notes}}


class Pods(http.server.BaseHTTPRequestHandler):
    """Answers each GET from ``answers`` in turn: (status, body); then waits for ``done``."""

    answers: ClassVar[list[tuple[int, bytes]]] = []
    paths: ClassVar[list[str]] = []
    done = threading.Event()

    def do_GET(self) -> None:
        Pods.paths.append(self.path)
        if Pods.answers:
            status, body = Pods.answers.pop(0)
        else:
            Pods.done.wait(10)
            status, body = 200, b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def _reflect_pods(answers: list[tuple[int, bytes]], until: Any) -> tuple[Reflector, Any]:
    from kumaco.controller.budgets import BudgetStore

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pods)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Pods.answers, Pods.paths = list(answers), []
    Pods.done.clear()
    store = BudgetStore()
    cfg = k8s_client.Configuration(host=f"http://127.0.0.1:{srv.server_address[1]}")
    stop = threading.Event()
    kube = KubeResources(Kube(cfg, "kumaco-test/1 (unit)", env={}))
    r = Reflector(kube.pods(), store.pods_sink(), stop, name="pods", silence=5.0)
    r.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not until(store, r):
            time.sleep(0.02)
    finally:
        stop.set()
        Pods.done.set()
        r.thread.join(10)
        srv.shutdown()
        srv.server_close()
    return r, store


def test_pods_are_listed_by_a_streaming_list_then_followed_on_the_same_connection() -> None:
    body = b"".join(
        [
            line("ADDED", pod("a", "5")),
            line("ADDED", pod("b", "6", "n2")),
            line("BOOKMARK", initial_events_end("7")),
            line("DELETED", pod("b", "8", "n2")),
        ]
    )
    r, store = _reflect_pods([(200, body)], lambda _s, r: r.resource_version == "8")
    first = Pods.paths[0]
    assert "watch=true" in first and "sendInitialEvents=true" in first
    assert "resourceVersionMatch=NotOlderThan" in first and "limit=" not in first
    assert store.pods_synced.is_set() and r.relists == 1 and r.resource_version == "8"
    assert len(store) == 1  # a; b was added, then deleted
    assert all("resourceVersion=8" in p for p in Pods.paths[1:])  # resumed, not streamed again


def test_an_api_server_that_refuses_the_streaming_list_is_listed_instead() -> None:
    refused = json.dumps(
        {"kind": "Status", "code": 422, "reason": "Invalid", "message": "sendInitialEvents"}
    ).encode()
    listed = json.dumps(
        {"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [pod("a", "5")]}
    ).encode()
    r, store = _reflect_pods([(422, refused), (200, listed)], lambda s, _r: s.pods_synced.is_set())
    assert "sendInitialEvents=true" in Pods.paths[0] and "limit=" in Pods.paths[1]
    assert not r.streaming and store.pods_synced.is_set()


# ----------------------------------------------------------------------------- 410: relist


class Answers(http.server.BaseHTTPRequestHandler):
    """Answers each GET from ``answers`` in turn: (status, body); then waits for ``done``."""

    answers: ClassVar[list[tuple[int, bytes]]] = []
    paths: ClassVar[list[str]] = []
    done = threading.Event()

    def do_GET(self) -> None:
        Answers.paths.append(self.path)
        if Answers.answers:
            status, body = Answers.answers.pop(0)
        else:
            Answers.done.wait(10)
            status, body = 200, b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def test_a_watch_answered_gone_is_relisted_then_watched_from_the_new_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gone = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version: 20 (30)",
    }
    listed = {
        "kind": "NodeList",
        "metadata": {"resourceVersion": "31"},
        "items": [node("a", "29", {"zone": "relisted"})],
    }
    Answers.answers = [
        (200, line("ERROR", gone)),  # as the watch cache answers an expired resourceVersion
        (200, json.dumps(listed).encode()),
    ]
    Answers.paths = []
    Answers.done.clear()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    store = NodeStore()
    store.replace([store.trim(node("a", "10", {}))])
    cfg = k8s_client.Configuration(host=f"http://127.0.0.1:{srv.server_address[1]}")
    stop = threading.Event()
    restarts: list[str] = []
    r = Reflector(
        KubeResources(Kube(cfg, "kumaco-test/1 (unit)", env={})).nodes(""),
        store,
        stop,
        name="nodes",
        silence=30.0,
        on_restart=lambda _c, reason: restarts.append(reason),
    )
    r.resource_version = "20"  # listed before: straight to the watch
    caplog.set_level(logging.INFO, logger="kumaco.kube")
    r.start()
    try:
        deadline = time.monotonic() + 30  # a hang catcher: the steps below are counted, not timed
        while time.monotonic() < deadline and len(Answers.paths) < 3:
            time.sleep(0.02)
    finally:
        stop.set()
        Answers.done.set()
        r.thread.join(30)
        srv.shutdown()
        srv.server_close()
    watch, relist, again = Answers.paths[:3]
    assert watch.startswith("/api/v1/nodes?") and "watch=true" in watch
    assert "resourceVersion=20" in watch
    assert relist.startswith("/api/v1/nodes?") and "watch" not in relist and "limit=" in relist
    assert "watch=true" in again and "resourceVersion=31" in again
    assert restarts[0] == "expired"
    logged = [(rec.getMessage(), getattr(rec, "collection", "")) for rec in caplog.records]
    assert logged[:2] == [("watch expired; relisting", "nodes"), ("listed", "nodes")]
    assert getattr(caplog.records[0], "error", "").endswith("too old resource version: 20 (30)")
    assert r.relists == 1
    with store.read() as (nodes, _versions):
        a = nodes.get("a")
        assert a is not None and dict(a.labels) == {"zone": "relisted"}  # the LIST replaced it
