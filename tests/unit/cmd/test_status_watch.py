"""``kubectl kumaco status --watch`` without a server: successive states -> frames.

The pure renderings (:mod:`kumaco.views.statuswatch`): what counts as a change, the
separators of successive snapshots, a terminal frame cut to its size. The feed's
stores and their problems (:mod:`kumaco.cmd.statusfeed`), and the whole loop
(:func:`kumaco.cmd.statuswatch.watch`) on fake collections behind real reflectors:
each state the collections go through becomes the snapshot printed. The command
against the real API server is tests/e2e/test_status_watch.py.
"""

from __future__ import annotations

import io
import json
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import yaml

from kumaco.cmd.cluster import Cluster
from kumaco.cmd.kubectl import build_parser
from kumaco.cmd.status import status_report
from kumaco.cmd.statusfeed import Reported, Store, relisting
from kumaco.cmd.statuswatch import Screen, _View, watch
from kumaco.core.objects.nodes import node_view
from kumaco.core.planning.instance import Instance
from kumaco.kube.errors import ApiError, Expired, TransportError
from kumaco.kube.retry import backoff_forever
from kumaco.views.status import Snapshot, StatusReport
from kumaco.views.statuswatch import FOOTER, change_key, cut, footer, screen, separator

S = 10**9
AT = 1_774_748_400 * S  # 2026-03-29T01:40:00Z
UM, MIP = "kured.dev/UnderMaintenance", "MaintenanceInProgress"
INSTANCE = Instance(lease_namespace="ops", field_manager="kumaco/kumaco")


def _node(name: str, um: str | None = None, beat: str = "2026-03-29T01:00:00Z") -> dict[str, Any]:
    conditions = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": beat, "reason": "KubeletReady"}
    ]
    if um is not None:
        conditions.append({"type": UM, "status": um, "lastTransitionTime": "2026-03-29T01:30:00Z"})
    return {
        "metadata": {"name": name, "labels": {"pool": "a"}, "resourceVersion": beat},
        "status": {"conditions": conditions},
    }


def _window(start: str = "30 1 * * *") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ops", "name": "nightly", "resourceVersion": "5"},
        "data": {"startTime": start, "duration": "1h", "nodeSelector": "pool=a"},
    }


def _lease(holder: str, renewed: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ops", "name": "kumaco"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renewed},
    }


def _report(
    nodes: Sequence[dict[str, Any]] = (),
    configmaps: Sequence[dict[str, Any]] = (),
    lease: dict[str, Any] | None = None,
    at: int = AT,
    problems: tuple[str, ...] = (),
) -> StatusReport:
    views = tuple(v for n in nodes if (v := node_view(n, (UM, MIP))) is not None)
    snapshot = Snapshot(tuple(configmaps), views, lease, problems, namespaces=("ops",))
    return status_report(snapshot, INSTANCE, at)


# ----------------------------------------------------------------------------- views


def test_a_change_is_what_the_status_says_not_the_clock_nor_a_lease_renewal() -> None:
    lease = _lease("kumaco-a_1", "2026-03-29T01:39:59.000000Z")
    base = _report([_node("w1")], [_window()], lease)
    assert change_key(base) == change_key(_report([_node("w1")], [_window()], lease, AT + 3 * S))
    renewed = _lease("kumaco-a_1", "2026-03-29T01:40:01.000000Z")
    assert change_key(base) == change_key(_report([_node("w1")], [_window()], renewed, AT + 2 * S))
    changed = [
        _report([_node("w1", um="True")], [_window()], lease),  # a node condition
        _report([_node("w1")], [_window("45 1 * * *")], lease),  # a ConfigMap edit
        _report([_node("w1")], [_window()], _lease("kumaco-b_2", "2026-03-29T01:40:00Z")),
        _report([_node("w1")], [_window()], lease, AT + 16 * S),  # the lease ran out
        _report([_node("w1")], [_window()], lease, AT + 51 * 60 * S),  # the window closed
        _report([_node("w1")], [_window()], lease, problems=("cannot list nodes: 403",)),
    ]
    keys = {change_key(r) for r in changed}
    assert change_key(base) not in keys and len(keys) == len(changed)


def test_snapshots_are_separated_as_kubectl_get_w_separates_them() -> None:
    assert (separator("text"), separator("table"), separator("yaml"), separator("json")) == (
        "\n",
        "\n",
        "---\n",
        "",
    )
    lease = _lease("kumaco-a_1", "2026-03-29T01:39:59.000000Z")
    states = [
        _report([_node("w1")], [_window()], lease),
        _report([_node("w1")], [_window()], lease, AT + S),  # only the clock: nothing printed
        _report([_node("w1", um="True")], [_window()], lease, AT + 2 * S),
    ]
    for output in ("text", "json", "yaml"):
        out, err = io.StringIO(), io.StringIO()
        view = _View(output, out, err, None, False, _NoHooks())
        for r in states:
            view.show(r)
        text = out.getvalue()
        if output == "text":
            assert text.count("kumaco status at ") == 2
            first, second = text.split("\nkumaco status at ")
            assert first.endswith("current\n") and "2026-03-29T01:40:00Z" in first
            assert second.startswith("2026-03-29T01:40:02Z") and "1 with" not in second
            assert (
                "NODES UNDER MAINTENANCE (kured.dev/UnderMaintenance=True) OR IN PROGRESS: 1"
                in (second)
            )
        elif output == "json":
            docs, at = [], 0
            decoder = json.JSONDecoder()
            while at < len(text):
                doc, at = decoder.raw_decode(text, at)
                docs.append(doc)
                at += len(text[at:]) - len(text[at:].lstrip())
            assert [d["at"] for d in docs] == ["2026-03-29T01:40:00Z", "2026-03-29T01:40:02Z"]
        else:
            docs = list(yaml.safe_load_all(text))
            assert [len(d["nodes"]) for d in docs] == [0, 1]
        assert err.getvalue() == ""


def test_problems_go_to_standard_error_once_per_change() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = _View("text", out, err, None, False, _NoHooks())
    trouble = ("cannot watch nodes: 403 Forbidden: no",)
    for r in (_report(), _report(problems=trouble), _report(problems=trouble, at=AT + S)):
        view.show(r)
    view.show(_report(at=AT + 2 * S))
    assert err.getvalue() == "kubectl-kumaco status: cannot watch nodes: 403 Forbidden: no\n"
    assert out.getvalue().count("error: cannot watch nodes: 403 Forbidden: no\n") == 1
    assert out.getvalue().count("kumaco status at ") == 3


def test_cut_counts_visible_characters_and_closes_a_colour_it_cuts() -> None:
    red = "\x1b[31mabcdef\x1b[0m"
    assert cut("plain text", 5) == "plain"
    assert cut(red + "gh", 3) == "\x1b[31mabc\x1b[0m"
    assert cut(red + "gh", 7) == red + "g"
    assert cut(red, 6) == red
    assert cut("", 3) == ""


def test_a_frame_fills_the_terminal_exactly_with_the_footer_on_the_last_row() -> None:
    body = "kumaco status at X\n\nWINDOWS\n" + "w" * 200 + "\n"
    lines = screen(body, 40, 12, bottom=footer(False))
    assert len(lines) == 12
    assert lines[:4] == ["kumaco status at X", "", "WINDOWS", "w" * 39]
    assert lines[4:11] == [""] * 7 and lines[11] == FOOTER[:39]
    coloured = screen("\x1b[1m" + "b" * 50 + "\x1b[0m", 20, 5, bottom=footer(True))
    assert coloured[0] == "\x1b[1m" + "b" * 19 + "\x1b[0m"
    assert coloured[-1].startswith("\x1b[2m") and coloured[-1].endswith("\x1b[0m")


def test_a_short_terminal_shows_what_it_hides_and_the_newest_panel_lines() -> None:
    body = "\n".join(f"line {i}" for i in range(10))
    short = screen(body, 80, 6, bottom=["footer"])
    assert short == [
        "line 0",
        "line 1",
        "line 2",
        "line 3",
        "... 6 more lines: a taller terminal shows them",
        "footer",
    ]
    events = [f"event {i}" for i in range(8)]
    roomy = screen("a\nb", 80, 8, panel=events, panel_title="-- events", bottom=["f1", "f2"])
    assert roomy == ["a", "b", "-- events", "event 5", "event 6", "event 7", "f1", "f2"]


# ----------------------------------------------------------------------------- the feed


def _store() -> tuple[Store, threading.Event]:
    wake = threading.Event()
    return Store(
        "nodes", lambda o: (o["metadata"]["name"], node_view(o, (), heartbeats=())), wake
    ), wake


def test_a_store_wakes_the_loop_only_when_what_it_shows_changed() -> None:
    store, wake = _store()
    assert store.read() == (None, None) and not store.settled
    store.replace([store.trim(_node("w1"))])
    assert wake.is_set() and store.settled
    items, trouble = store.read()
    assert [v.name for v in items or ()] == ["w1"] and trouble is None
    wake.clear()
    store.replace([store.trim(_node("w1", beat="2026-03-29T01:00:10Z"))])  # a heartbeat only
    store.apply("MODIFIED", store.trim(_node("w1", beat="2026-03-29T01:00:20Z")))
    assert not wake.is_set()
    store.apply("MODIFIED", store.trim(_node("w1", um="True")))
    assert wake.is_set()
    wake.clear()
    store.apply("DELETED", store.trim(_node("w1")))
    assert wake.is_set() and store.read()[0] == []
    wake.clear()
    store.apply("DELETED", store.trim(_node("w1")))
    assert not wake.is_set()


def test_a_problem_lasts_until_what_failed_works_again() -> None:
    store, wake = _store()
    store.failed("cannot list nodes: unreachable", until_event=False)
    assert store.settled and store.read() == (None, "cannot list nodes: unreachable")
    store.replace([])  # a LIST that succeeds ends it
    assert store.read() == ([], None)
    store.failed("cannot watch nodes: 403 Forbidden", until_event=True)
    wake.clear()
    store.failed("cannot watch nodes: 403 Forbidden", until_event=True)
    assert not wake.is_set()  # the same problem again: nothing new to show
    store.replace([])  # the LIST works, the WATCH still does not
    assert store.read() == ([], "cannot watch nodes: 403 Forbidden")
    store.answered()  # the watch delivered something
    assert store.read() == ([], None) and wake.is_set()


class _Failing:
    """A collection whose LIST or WATCH fails with a given exception."""

    def __init__(self, on_list: Exception | None = None, on_watch: Exception | None = None) -> None:
        self.on_list, self.on_watch = on_list, on_watch

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        if self.on_list is not None:
            raise self.on_list
        yield [], "1"

    def list_all(self) -> tuple[list[Any], str]:
        return [], "1"

    def watch(self, resource_version: str, timeout_seconds: int, **_kw: Any) -> Iterator[Any]:
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "2"}}}
        if self.on_watch is not None:
            raise self.on_watch


def test_a_collection_reports_its_failures_to_its_store_in_the_one_shots_words() -> None:
    forbidden = ApiError(403, "Forbidden", 'nodes is forbidden: cannot watch resource "nodes"')
    cases: list[tuple[_Failing, str, str | None]] = [
        (
            _Failing(on_list=forbidden),
            "list",
            "cannot list nodes: 403 Forbidden: nodes is forbidden",
        ),
        (
            _Failing(on_watch=forbidden),
            "watch",
            "cannot watch nodes: 403 Forbidden: nodes is forbidden",
        ),
        (
            _Failing(on_list=TransportError("GET /api/v1/nodes: refused <x object at 0x7f12ab>")),
            "list",
            "cannot list nodes: cannot reach the API server: GET /api/v1/nodes: refused <x>",
        ),
        (_Failing(on_watch=TransportError("no byte for 130s", silent=True)), "watch", None),
        (_Failing(on_watch=Expired("too old")), "watch", None),
    ]
    for collection, verb, expected in cases:
        store, _wake = _store()
        reported = Reported(collection, store)
        try:
            if verb == "list":
                list(reported.list_pages())
            else:
                list(reported.watch("1", 300))
        except (ApiError, TransportError, Expired):
            pass
        problem = store.read()[1]
        assert problem is None if expected is None else problem.startswith(expected), problem


def test_every_retry_starts_from_a_fresh_list_after_the_one_policys_wait() -> None:
    policy = backoff_forever(random.Random(7))
    mine = relisting(backoff_forever(random.Random(7)))
    for failures in (1, 2, 6):
        exc = TransportError("refused")
        then, theirs = mine(exc, failures), policy(exc, failures)
        assert then.relist and then.sleep == theirs.sleep


# ----------------------------------------------------------------------------- the loop


class _Live:
    """A collection whose LIST answers ``items`` and whose WATCH streams ``events``."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        yield list(self.items), "1"

    def list_all(self) -> tuple[list[Any], str]:
        return list(self.items), "1"

    def watch(self, resource_version: str, timeout_seconds: int, **_kw: Any) -> Iterator[Any]:
        try:
            yield self.events.get(timeout=0.05)
        except queue.Empty:
            return  # the watch ends; the reflector resumes it


class _Resources:
    def __init__(self) -> None:
        self.node = _Live([_node("w1")])
        self.cms = _Live([_window()])
        self.leases = _Live([_lease("kumaco-a_1", "2026-03-29T01:39:59.000000Z")])

    def nodes(self, label_selector: str = "") -> _Live:
        return self.node

    def configmaps(self, namespace: str, label_selector: str = "") -> _Live:
        return self.cms

    def lease(self, namespace: str, name: str) -> _Live:
        return self.leases


class _NoHooks:
    def on_report(self, snapshot: Snapshot, report: StatusReport) -> None:
        return None

    def panel(self, report: StatusReport, color: bool) -> tuple[str, Sequence[str]]:
        return "", ()

    def footer(self, report: StatusReport, color: bool) -> Sequence[str]:
        return []


class _Script(_NoHooks):
    """Changes the cluster one step at a time, each once the last shows; then stops."""

    def __init__(self, resources: _Resources, stop: threading.Event) -> None:
        self.stop, self.reports = stop, 0
        renewed = _lease("kumaco-a_1", "2026-03-29T01:40:01Z")
        self.moves: list[tuple[Callable[[], None], Callable[[StatusReport], bool]]] = [
            (
                lambda: resources.node.events.put(
                    {"type": "MODIFIED", "object": _node("w1", um="True")}
                ),
                lambda r: len(r.nodes) == 1,
            ),
            (  # a renewal: no snapshot
                lambda: resources.leases.events.put({"type": "MODIFIED", "object": renewed}),
                lambda r: r.leader is not None and r.leader.renew_time == "2026-03-29T01:40:01Z",
            ),
            (
                lambda: resources.cms.events.put({"type": "DELETED", "object": _window()}),
                lambda r: not r.windows,
            ),
        ]
        self.shown: Callable[[StatusReport], bool] = lambda r: True

    def on_report(self, snapshot: Snapshot, report: StatusReport) -> None:
        self.reports += 1
        if self.shown(report):
            if not self.moves:
                self.stop.set()
                return
            move, self.shown = self.moves.pop(0)
            move()
        if self.reports > 500:  # a bound: the assertions then say what was missing
            self.stop.set()


def test_the_loop_prints_one_snapshot_per_state_the_cluster_goes_through() -> None:
    resources = _Resources()
    stop = threading.Event()
    script = _Script(resources, stop)
    cluster = Cluster(None, "ctx", ("ops",), lambda: None, resources)  # type: ignore[arg-type]
    args = build_parser().parse_args(["status", "--watch", "-n", "ops"])
    out, err = io.StringIO(), io.StringIO()
    instants = iter(range(AT, AT + 1000 * S, S // 10))
    started = time.monotonic()
    rc = watch(
        args,
        cluster,
        INSTANCE,
        out,
        err,
        hooks=script,
        stop=stop,
        clock=lambda: next(instants),
        tick=0.05,
    )
    assert rc == 0 and err.getvalue() == ""
    assert time.monotonic() - started < 120  # a hang catcher only: the bound below is a count
    snapshots = out.getvalue().split("\nkumaco status at ")
    assert len(snapshots) == 3, out.getvalue()
    assert "ops/nightly" in snapshots[0] and "ops/nightly" in snapshots[1]
    assert "OR IN PROGRESS: 0" in snapshots[0] and "OR IN PROGRESS: 1" in snapshots[1]
    assert "no window ConfigMap found" in snapshots[2]
    assert not script.moves and script.reports <= 500


class _Host(_NoHooks):
    def panel(self, report: StatusReport, color: bool) -> tuple[str, Sequence[str]]:
        return "-- events", [f"event {i}" for i in range(40)]

    def footer(self, report: StatusReport, color: bool) -> Sequence[str]:
        return [f"footer at {report.at}"]


def test_on_a_terminal_every_report_is_a_whole_frame_drawn_from_the_top_left() -> None:
    out = io.StringIO()
    screen = Screen(out, stdin=io.StringIO())
    screen.size = lambda: (60, 20)  # type: ignore[method-assign]
    view = _View("text", out, io.StringIO(), screen, False, _Host())
    lease = _lease("kumaco-a_1", "2026-03-29T01:39:59.000000Z")
    view.show(_report([_node("w1")], [_window()], lease))
    view.show(_report([_node("w1")], [_window()], lease, AT + S))  # the clock alone: redrawn
    screen.resized = True
    view.show(_report([_node("w1", um="True")], [_window()], lease, AT + 2 * S))
    frames = out.getvalue().split("\x1b[H")[1:]
    assert len(frames) == 3
    assert [f.endswith("\x1b[2J") for f in out.getvalue().split("\x1b[H")[:-1]] == [
        False,
        False,
        True,  # a resize clears the screen before the next frame
    ]
    for frame, at in zip(frames, (AT, AT + S, AT + 2 * S), strict=True):
        lines = frame.removesuffix("\x1b[2J").removesuffix("\x1b[K\x1b[J").split("\x1b[K\n")
        assert len(lines) == 20 and all(len(line) <= 59 for line in lines)
        assert lines[0].startswith("kumaco status at") and lines[-1] == f"footer at {at}"
        assert "-- events" in lines and lines[-2] == "event 39"
    assert (
        "\nw1    ops/nightly" in frames[2] and "\nw1 " not in frames[0]
    )  # the node, as it changed
