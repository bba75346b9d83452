"""``kubectl-kumaco status --watch`` against the real API server: changes show, Ctrl-C ends it.

The console script runs as a subprocess on the session's control plane, in a
namespace and with a node selector of its own (removed afterwards). The test plays
the writers -- a maintenance manager's window ConfigMaps, the conditions and the Lease
as kumaco writes them -- and reads what the watch prints:

* piped (text and ``-o json``): one snapshot at once, then one per change -- a window
  ConfigMap created, a node condition, the leader -- each within :data:`BOUND`
  seconds; a Lease renewal alone prints nothing; SIGINT and SIGTERM end it with exit
  status 0 and no traceback;
* on a terminal (a pty): the alternate screen, a frame redrawn in place with the
  change, a resize (SIGWINCH) redrawn at the new width, the terminal restored on
  SIGINT;
* what the API refuses or cannot answer: an impersonated user without rights sees
  ``cannot list ...: 403 Forbidden`` and, once granted the rights, the status within
  one retry; a user who may list but not watch sees the nodes and ``cannot watch
  nodes: 403``; an unreachable server is said so. None of them ends the watch.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import Api

VENV_BIN = Path(sys.executable).parent
RUN_KEY = "kumaco-status-watch-e2e/run"
UM, MIP = "kured.dev/UnderMaintenance", "MaintenanceInProgress"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
#: How long a change may take to show (s): a watch event, the 0.1 s settle, one render.
BOUND = 5.0
#: The first snapshot: the first LIST of every collection.
FIRST = 15.0
SNAPSHOT = "kumaco status at "


@dataclass
class Scene:
    run: str
    ns: str
    selector: str
    nodes: tuple[str, str]
    kubeconfig: Path

    @property
    def args(self) -> tuple[str, ...]:
        """The watch's flags: the admin kubeconfig, the namespace, the node selector."""
        return (
            "--kubeconfig",
            str(self.kubeconfig),
            "-n",
            self.ns,
            "--node-selector",
            self.selector,
        )


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro(seconds_ago: float = 0.0) -> str:
    t = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture(scope="module")
def scene(control_plane: ControlPlane, kubeconfig_path: Path) -> Iterator[Scene]:
    api = Api(control_plane)
    run = uuid.uuid4().hex[:6]
    ns = api.namespace(f"ksw-{run}")
    nodes = (f"ksw-{run}-a", f"ksw-{run}-b")
    for name in nodes:
        api.node(name, {RUN_KEY: run, "pool": "a"})
    try:
        yield Scene(run, ns, f"{RUN_KEY}={run}", nodes, kubeconfig_path)
    finally:
        for name in nodes:
            api.try_request("DELETE", f"/api/v1/nodes/{name}")
        api.try_request("DELETE", f"/api/v1/namespaces/{ns}")
        for kind in ("clusterrolebindings", "clusterroles"):
            for who in ("denied", "listonly"):
                api.try_request("DELETE", f"{RBAC}/{kind}/ksw-{run}-{who}")


# ----------------------------------------------------------------------------- the watch


class Watch:
    """``kubectl-kumaco status --watch ...`` with its stdout a pipe, read as it comes."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "kubectl-kumaco"), "status", "--watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")},
        )
        self.out = ""
        self.err = ""
        self._lock = threading.Lock()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(
                target=self._read, args=(self.proc.stdout.fileno(), "out"), daemon=True
            ),
            threading.Thread(
                target=self._read, args=(self.proc.stderr.fileno(), "err"), daemon=True
            ),
        ]
        for t in self._readers:
            t.start()

    def _read(self, fd: int, name: str) -> None:
        # Whole writes as they come (a snapshot is one write), never half a snapshot.
        while chunk := os.read(fd, 1 << 16):
            with self._lock:
                setattr(self, name, getattr(self, name) + chunk.decode(errors="replace"))

    def text(self) -> str:
        with self._lock:
            return self.out

    def snapshots(self) -> list[str]:
        return self.text().split(SNAPSHOT)[1:]

    def wait(self, what: str, check: Callable[[str], bool], timeout: float = BOUND) -> float:
        """Seconds until ``check`` holds for the newest snapshot (fails after ``timeout``)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            shots = self.snapshots()
            if shots and check(shots[-1]):
                return time.monotonic() - started
            assert self.proc.poll() is None, f"the watch exited: {self.end(0)}"
            time.sleep(0.05)
        pytest.fail(f"no snapshot {what} within {timeout}s:\n{self.text()[-3000:]}\n{self.err}")

    def end(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        """Stop it with ``sig``; its exit status, stdout and stderr."""
        if sig and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for t in self._readers:
            t.join(5)
        return rc, self.out, self.err


def _window(api: Api, ns: str, name: str, node_selector: str = "pool=a") -> None:
    api.window(
        ns, name, {"startTime": "* * * * *", "duration": "1h", "nodeSelector": node_selector}
    )


def _lease(api: Api, ns: str, holder: str) -> None:
    body = {
        "metadata": {"name": "kumaco", "namespace": ns},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "acquireTime": _micro(),
            "renewTime": _micro(),
        },
    }
    api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", body)


def _renew(api: Api, ns: str) -> None:
    api.request(
        "PATCH",
        f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/kumaco",
        {"spec": {"renewTime": _micro()}},
        "application/merge-patch+json",
    )


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Exception" not in err, err


# ----------------------------------------------------------------------------- piped


def test_piped_a_snapshot_per_change_within_the_bound_and_sigint_ends_it(
    scene: Scene, control_plane: ControlPlane
) -> None:
    api = Api(control_plane)
    w = Watch(
        "--kubeconfig", str(scene.kubeconfig), "-n", scene.ns, "--node-selector", scene.selector
    )
    took: dict[str, float] = {}
    try:
        took["first"] = w.wait(
            "at start",
            lambda s: "nodes in scope: 2" in s and "no window ConfigMap found" in s,
            FIRST,
        )
        _window(api, scene.ns, "opens-now")
        took["window"] = w.wait(
            "with the window open",
            lambda s: f"{scene.ns}/opens-now  valid" in s and "  yes  " in s,
        )
        a = scene.nodes[0]
        api.set_condition(a, UM, "True", reason="MaintenanceWindowOpen")
        api.set_condition(a, MIP, "True", reason="MaintenanceAllowed")
        took["condition"] = w.wait(
            "with the node in progress",
            lambda s: (
                "OR IN PROGRESS: 1, 1 with MaintenanceInProgress=True" in s
                and f"\n{a}  {scene.ns}/opens-now" in s
            ),
        )
        _lease(api, scene.ns, f"ksw-{scene.run}_1")
        took["leader"] = w.wait("with the leader", lambda s: f"ksw-{scene.run}_1\n  renewed" in s)
        shown = len(w.snapshots())
        for _ in range(3):  # renewals only move renewTime: nothing new to print
            time.sleep(0.7)
            _renew(api, scene.ns)
        time.sleep(1.5)
        assert len(w.snapshots()) == shown, w.text()[-2000:]
    finally:
        rc, out, err = w.end(signal.SIGINT)
    assert rc == 0, err
    _no_traceback(err)
    assert err == ""
    assert all(b <= BOUND for b in took.values()), took
    # snapshots as kubectl get -w would print them: the first at once, one empty line between
    assert out.startswith(SNAPSHOT) and out.count(f"\n\n{SNAPSHOT}") == out.count(SNAPSHOT) - 1
    print(f"status --watch latencies (s): {json.dumps({k: round(v, 2) for k, v in took.items()})}")


def test_json_documents_one_after_the_other_and_sigterm_ends_it(
    scene: Scene, control_plane: ControlPlane
) -> None:
    api = Api(control_plane)
    w = Watch(
        *scene.args,
        "-o",
        "json",
    )
    try:
        # The first document may carry a problem (a LIST that failed on a loaded machine is
        # shown, then retried): wait for the one that shows the node the last test left.
        docs = _wait_documents(w, 1, FIRST, lambda d: _names(d) == {scene.nodes[0]})
        api.set_condition(scene.nodes[1], UM, "True", reason="MaintenanceWindowOpen")
        docs = _wait_documents(w, len(docs) + 1, BOUND)
    finally:
        rc, out, err = w.end(signal.SIGTERM)
    assert rc == 0, err
    _no_traceback(err)
    docs = _documents(out)
    assert len(docs) >= 2, out[-3000:]
    shown = [_names(d) for d in docs]
    before = shown.index({scene.nodes[0]})  # the node the last test left, alone
    assert scene.nodes[1] in shown[-1] and all(scene.nodes[1] not in s for s in shown[: before + 1])


def test_with_output_file_the_snapshots_go_into_the_file_one_after_the_other(
    scene: Scene, control_plane: ControlPlane, tmp_path: Path
) -> None:
    api = Api(control_plane)
    path = tmp_path / "status.json"
    path.write_text("left from before\n")  # emptied when the watch starts
    w = Watch(*scene.args, "-o", "json", "--output-file", str(path))
    try:
        deadline = time.monotonic() + FIRST
        while time.monotonic() < deadline and not _documents(path.read_text()):
            time.sleep(0.05)
        first = _documents(path.read_text())
        assert len(first) == 1, path.read_text()[-3000:]
        api.set_condition(scene.nodes[1], MIP, "True", reason="MaintenanceAllowed")
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline and len(_documents(path.read_text())) < 2:
            time.sleep(0.05)
    finally:
        rc, out, err = w.end(signal.SIGINT)
    assert rc == 0, err
    _no_traceback(err)
    assert out == ""  # nothing on standard output: the file has it all
    text = path.read_text()
    assert not text.startswith("left from before")
    docs = _documents(text)
    assert len(docs) >= 2, text[-3000:]


def _names(doc: dict[str, Any]) -> set[str]:
    return {n["name"] for n in doc["nodes"]}


def _wait_documents(
    w: Watch,
    count: int,
    timeout: float,
    last: Callable[[dict[str, Any]], bool] = lambda _doc: True,
) -> list[dict[str, Any]]:
    """At least ``count`` documents, the newest one passing ``last``, within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        docs = _documents(w.text())
        if len(docs) >= count and last(docs[-1]):
            return docs
        time.sleep(0.05)
    pytest.fail(f"no {count} documents as expected within {timeout}s:\n{w.text()[-3000:]}\n{w.err}")


def _documents(text: str) -> list[dict[str, Any]]:
    decoder, docs, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            break  # a document still being written
        docs.append(doc)
        while at < len(text) and text[at].isspace():
            at += 1
    return docs


# ----------------------------------------------------------------------------- a terminal


class Terminal:
    """The watch on a pty of ``cols`` x ``rows``; what it wrote, as bytes."""

    def __init__(self, cols: int, rows: int, *args: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the console script on the pty
            env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
            env["TERM"] = "xterm-256color"
            os.execve(
                str(VENV_BIN / "kubectl-kumaco"), ["kubectl-kumaco", "status", "-w", *args], env
            )
        self.size(cols, rows)
        self.data = b""

    def size(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                self.data += chunk

    def until(self, what: str, check: Callable[[bytes], bool], timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.1)
            if check(self.data):
                return
        pytest.fail(f"the terminal never showed {what}:\n{self.data[-3000:]!r}")

    def end(self) -> int:
        os.kill(self.pid, signal.SIGINT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            self.pump(0.1)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.pump(0.2)
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        pytest.fail("the watch did not end within 15 s of SIGINT")


def _last_frame(data: bytes) -> list[str]:
    """The lines of the last whole frame (from the top left to its erase), escapes removed."""
    end = data.rfind(b"\x1b[K\x1b[J")
    frame = data[data.rfind(b"\x1b[H", 0, end) + 3 : end].decode(errors="replace")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", frame)
    return plain.replace("\r", "").split("\n")


def test_on_a_terminal_it_draws_in_place_follows_a_resize_and_restores_the_terminal(
    scene: Scene, control_plane: ControlPlane
) -> None:
    api = Api(control_plane)
    t = Terminal(120, 30, *scene.args)
    rc: int | None = None
    try:
        t.until("a status frame", lambda d: SNAPSHOT.encode() in d, FIRST)
        assert t.data.startswith(b"\x1b[?1049h")  # the alternate screen
        b = scene.nodes[1]
        api.set_condition(b, MIP, "True", reason="MaintenanceAllowed")
        t.until(
            "the node in progress",
            lambda d: any(line.startswith(b) and " yes " in line for line in _last_frame(d)),
            BOUND,
        )
        frame = _last_frame(t.data)
        assert len(frame) == 30 and all(len(line) <= 119 for line in frame)
        assert "watching: redrawn on every change" in frame[-1]
        assert b"\x1b[1m" in t.data  # coloured, as status on a terminal
        t.size(60, 15)
        os.kill(t.pid, signal.SIGWINCH)
        cleared = len(t.data)
        t.until("a cleared frame at the new size", lambda d: b"\x1b[2J" in d[cleared:], BOUND)
        t.pump(1.2)
        frame = _last_frame(t.data)
        assert len(frame) == 15 and all(len(line) <= 59 for line in frame), frame
        rc = t.end()
    finally:
        if rc is None:
            os.kill(t.pid, signal.SIGKILL)
            os.waitpid(t.pid, 0)
    assert rc == 0
    tail = t.data[-200:]
    assert tail.endswith(b"\x1b[?1049l"), tail  # the alternate screen left: the terminal restored
    assert b"Traceback" not in t.data


# ----------------------------------------------------------------------------- refusals


def _grant(api: Api, scene: Scene, who: str, verbs: list[str]) -> None:
    """ClusterRole and binding for the impersonated user ``who``: nodes, ConfigMaps, Leases."""
    name = f"ksw-{scene.run}-{who}"
    rules = [
        {"apiGroups": [""], "resources": ["nodes", "configmaps"], "verbs": verbs},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs},
    ]
    api.request("POST", f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": rules})
    api.request(
        "POST",
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}],
        },
    )


def test_what_rbac_denies_is_shown_and_the_status_follows_once_granted(
    scene: Scene, control_plane: ControlPlane
) -> None:
    api = Api(control_plane)
    user = f"ksw-{scene.run}-denied"
    w = Watch(*scene.args, "--as", user)
    try:
        w.wait("with the refusals", lambda s: "error: cannot list nodes: 403 Forbidden" in s, FIRST)
        said = "kubectl-kumaco status: cannot list nodes: 403 Forbidden"
        deadline = time.monotonic() + BOUND
        while said not in w.err and time.monotonic() < deadline:
            time.sleep(0.05)  # standard error is written just after the snapshot
        assert said in w.err, w.err
        assert w.proc.poll() is None  # it keeps trying
        _grant(api, scene, "denied", ["get", "list", "watch"])
        took = w.wait(
            "without refusals",
            lambda s: "nodes in scope: 2" in s and "error:" not in s,
            30.0,  # the next retry of kumaco's backoff (at most a few seconds after 3 failures)
        )
    finally:
        rc, _out, err = w.end(signal.SIGINT)
    assert rc == 0, err
    _no_traceback(err)
    print(f"status --watch recovered {took:.1f}s after the grant")


def test_a_user_who_may_list_but_not_watch_sees_the_nodes_and_why_they_may_go_stale(
    scene: Scene, control_plane: ControlPlane
) -> None:
    api = Api(control_plane)
    _grant(api, scene, "listonly", ["get", "list"])
    user = f"ksw-{scene.run}-listonly"
    w = Watch(*scene.args, "--as", user)
    try:
        w.wait(
            "with the nodes and the watch refused",
            lambda s: "nodes in scope: 2" in s and "error: cannot watch nodes: 403 Forbidden" in s,
            FIRST,
        )
    finally:
        rc, _out, err = w.end(signal.SIGINT)
    assert rc == 0, err


def test_an_unreachable_server_is_said_and_sigint_still_ends_it(
    tmp_path: Path, control_plane: ControlPlane
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    dead = control_plane.write_kubeconfig(
        tmp_path / "dead.kubeconfig", server=f"https://127.0.0.1:{port}"
    )
    w = Watch("--kubeconfig", str(dead), "-n", "default")
    try:
        w.wait(
            "saying the server cannot be reached",
            lambda s: "error: cannot list nodes: cannot reach the API server" in s,
            FIRST,
        )
        started = time.monotonic()
    finally:
        rc, _out, err = w.end(signal.SIGINT)
    assert rc == 0, err
    assert time.monotonic() - started < 5
    assert "Traceback" not in err
