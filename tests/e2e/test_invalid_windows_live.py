"""The malformed-window corpus, live: kumaco keeps serving the valid windows (issue: invalid windows).

Every file of ``tests/data/invalid`` is sent to the real API server as a
ConfigMap, in each of two namespaces, next to the files of ``tests/data/valid``
and a window open now (``* * * * *`` for ``2m``) covering two of the four
nodes. What the server does with each file is recorded, and nothing is
skipped silently:

* names are lower-cased (a ConfigMap name must be a DNS-1123 subdomain;
  ``odd-nul-startTime`` is not), the data is sent as the file has it, YAML
  dates as the string kubectl would send;
* files whose ``data`` is not a map of strings (numbers, booleans, lists,
  maps) are refused by the server (400): they are counted, and they must be
  exactly those files;
* the ``huge-*`` placeholders (one per key) are sent as their 1 MiB variants (the value
  1 MiB long); a ConfigMap holds at most 1 MiB of data in total, so the server
  refuses them (422), and the largest variant it accepts -- the value cut so
  that the data totals exactly 1 MiB -- is created instead.

The test states the count it loaded and asserts it is at least 100 per
namespace. Then one kumaco replica must:

* keep serving the valid windows: every node's ``kured.dev/UnderMaintenance``
  (status, reason and message) equals the planner's answer for the valid
  windows at that instant;
* emit exactly one ``events.k8s.io`` Warning Event, reason ``WindowInvalid``,
  per invalid ConfigMap (and none for a valid one);
* after one restart, bump that same Event's ``series.count`` to 2 instead of
  creating a second Event.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kumaco.core.labels.selectors import parse_selector
from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import InvalidWindow, Window
from tests.support.builders.policies import policy_of
from tests.support.env.harness import RUN_LABEL, UM, Api, Kumaco, log_message, unique, wait_for
from tests.support.judges.corpus import HUGE_PATTERNS, INFLATE, ONE_MIB, inflated_value
from tests.support.judges.figures import Figures

DATA = Path(__file__).resolve().parents[1] / "data"
WINDOW_LABEL = "kured.dev/maintenance-window"
MIN_LOADED = 100
NOW_WINDOW = {"startTime": "* * * * *", "duration": "2m", "nodeSelector": "now=yes"}


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), path.name
    return doc


def _map_of_strings(data: object) -> bool:
    """What the API server's ``map[string]string`` takes (null is an empty map; dates become strings)."""
    if data is None:
        return True
    return isinstance(data, dict) and all(
        isinstance(v, str) or hasattr(v, "isoformat") for v in data.values()
    )


def _body(obj: dict[str, Any], ns: str, name: str) -> bytes:
    body = json.loads(json.dumps(obj, default=str))  # a YAML date goes out as kubectl sends it
    body["metadata"] = {**body["metadata"], "name": name, "namespace": ns}
    return json.dumps(body).encode()


def _post(raw: Api, ns: str, body: bytes) -> tuple[int, dict[str, Any]]:
    conn = raw.cp.connection()
    try:
        conn.request(
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            body=body,
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        answer: dict[str, Any] = json.loads(resp.read() or b"{}")
        return resp.status, answer
    finally:
        conn.close()


def _huge(obj: dict[str, Any], total: int | None = None) -> dict[str, Any]:
    """``obj`` with its placeholder inflated: to 1 MiB, or so that the data totals ``total`` bytes."""
    out: dict[str, Any] = json.loads(json.dumps(obj))
    key = out["metadata"]["annotations"][INFLATE]
    others = sum(len(v.encode()) for k, v in out["data"].items() if k != key)
    length = ONE_MIB if total is None else total - others
    out["data"][key] = inflated_value(key, length)
    return out


def _load_corpus(raw: Api, ns: str) -> tuple[list[str], dict[str, str]]:
    """Create the invalid corpus in ``ns``; returns the names created and what was refused."""
    created: list[str] = []
    refused: dict[str, str] = {}
    for path in sorted((DATA / "invalid").glob("*.yaml")):
        obj = _load(path)
        name = str(obj["metadata"]["name"]).lower()
        if INFLATE in obj["metadata"].get("annotations", {}):
            # First the 1 MiB value itself, then the largest variant the server accepts.
            status, answer = _post(raw, ns, _body(_huge(obj), ns, f"{name}-1mib"))
            if status < 300:
                created.append(f"{name}-1mib")
                continue
            refused[f"{path.name}@1MiB"] = f"{status} {answer.get('message', '')[:160]}"
            big = _huge(obj, total=ONE_MIB)
            status, answer = _post(raw, ns, _body(big, ns, f"{name}-max"))
            assert status < 300, f"{path.name}: even a 1 MiB total was refused: {answer}"
            created.append(f"{name}-max")
            continue
        status, answer = _post(raw, ns, _body(obj, ns, name))
        if status < 300:
            created.append(name)
        else:
            refused[path.name] = f"{status} {answer.get('message', '')[:160]}"
    return created, refused


def test_invalid_corpus_live_valid_windows_served_and_one_aggregated_warning_each(
    raw: Api, spawn: Callable[..., Kumaco], figures: Figures
) -> None:
    run = unique("inv")
    namespaces = [raw.namespace(unique("inv-a")), raw.namespace(unique("inv-b"))]
    nodes = {
        f"{run}-0": {"kubernetes.io/os": "linux", "zone": "a", "rack": "r1", "now": "yes"},
        f"{run}-1": {"kubernetes.io/os": "linux", "zone": "b", "role": "db", "tier": "2"},
        f"{run}-2": {"zone": "a", "tier": "3", "now": "yes"},
        f"{run}-3": {"kubernetes.io/os": "windows", "gpu": "true"},
    }
    for name, labels in nodes.items():
        raw.node(name, {RUN_LABEL: run, **labels})

    files = sorted((DATA / "invalid").glob("*.yaml"))
    not_strings = {p.name for p in files if not _map_of_strings(_load(p).get("data"))}
    loaded: dict[str, list[str]] = {}
    for ns in namespaces:
        created, refused = _load_corpus(raw, ns)
        loaded[ns] = created
        huge = {k: v for k, v in refused.items() if k.endswith("@1MiB")}
        typed = {k: v for k, v in refused.items() if not k.endswith("@1MiB")}
        assert set(typed) == not_strings, f"refused: {typed}"
        assert all(v.startswith("400 ") for v in typed.values()), typed
        inflated = sum(1 for p in files if INFLATE in _load(p)["metadata"].get("annotations", {}))
        assert len(huge) == inflated == len(HUGE_PATTERNS), huge
        assert all(v.startswith("422 ") for v in huge.values()), huge
        print(
            f"corpus live ({ns}): loaded {len(created)} invalid ConfigMaps from {len(files)} files; "
            f"refused as not a map of strings (400): {sorted(typed)}; "
            f"1 MiB values refused (422, data over 1 MiB): {sorted(huge)}, "
            "created instead with the data at exactly 1 MiB"
        )
        print(f"  e.g. {next(iter(huge.values()))}")
        print(f"  e.g. {next(iter(typed.values()))}")
        assert len(created) >= MIN_LOADED
        for path in sorted((DATA / "valid").glob("*.yaml")):
            obj = _load(path)
            status, answer = _post(raw, ns, _body(obj, ns, str(obj["metadata"]["name"])))
            assert status < 300, answer
    raw.window(namespaces[0], "now", NOW_WINDOW)

    # What the server holds, read back: the valid windows and the invalid ones.
    windows: list[Window] = []
    invalid: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name)
    for ns in namespaces:
        items = raw.request(
            "GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector={WINDOW_LABEL}"
        )
        for cm in items["items"]:
            meta = cm["metadata"]
            parsed = parse_window(
                ns, meta["name"], cm.get("data"), has_binary_data=bool(cm.get("binaryData"))
            )
            if isinstance(parsed, InvalidWindow):
                invalid[meta["uid"]] = (ns, meta["name"])
            else:
                windows.append(parsed)
    valid_count = 2 * len(list((DATA / "valid").glob("*.yaml"))) + 1
    assert len(windows) == valid_count
    assert len(invalid) == sum(len(v) for v in loaded.values())

    k = spawn(
        "--namespaces",
        ",".join(namespaces),
        "--leader-election-namespace",
        namespaces[0],
        "--leader-election-id",
        run,
        "--node-selector",
        f"{RUN_LABEL}={run}",
    )
    policy = policy_of(scope=parse_selector(f"{RUN_LABEL}={run}"))

    def conditions_right() -> bool:
        current = [node_view(n) for n in raw.nodes(run).values()]
        views = [v for v in current if v is not None]
        want = plan(windows, NodeSet(views), time.time_ns(), policy)
        by_name = {v.name: v for v in views}
        for np in want.nodes:
            c = by_name[np.name].condition(UM)
            d = np.under_maintenance
            if c is None or (c.status, c.reason, c.message) != (d.status, d.reason, d.message):
                return False
        return len(want.nodes) == len(nodes)

    started = time.monotonic()
    # 1.16 s measured (corpus_live.conditions_right_s); 90 s for a loaded machine.
    wait_for(conditions_right, 90, interval=0.2, what="the valid windows' conditions")
    served = time.monotonic() - started
    for name in (f"{run}-0", f"{run}-2"):  # the window open now covers them
        assert raw.conditions(name)[UM]["status"] == "True"

    def warnings() -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for ns in namespaces:
            for e in raw.events(ns):
                if e.get("reason") == "WindowInvalid":
                    out.setdefault(e["regarding"]["uid"], []).append(e)
        return out

    # 308 Warnings in the recorded run (not timed; bumping them all after a restart took
    # 5.74 s, corpus_live): 120 s for a loaded machine.
    wait_for(
        lambda: set(warnings()) >= set(invalid), 120, interval=0.5, what="one Warning per invalid"
    )
    first = warnings()
    assert set(first) == set(invalid), "a WindowInvalid Event regards a valid ConfigMap"
    duplicates = {invalid[uid]: len(evs) for uid, evs in first.items() if len(evs) != 1}
    assert not duplicates, f"more than one Event for: {duplicates}"
    for uid, (ns, name) in invalid.items():
        e = first[uid][0]
        assert e["type"] == "Warning", e
        assert e["reportingController"] == "kured.dev/kumaco"
        assert e["regarding"]["kind"] == "ConfigMap" and e["regarding"]["name"] == name
        assert e["metadata"]["namespace"] == ns
        assert str(e["note"]).startswith("window ignored: ")
        assert len(str(e["note"]).encode()) <= 1024
        assert not (e.get("series") or {}).get("count")
    loaded_events = Counter(
        e["regarding"]["uid"]
        for ns in namespaces
        for e in raw.events(ns)
        if e.get("reason") == "WindowLoaded"
    )
    assert len(loaded_events) == valid_count and set(loaded_events.values()) == {1}

    # One restart: the same Events are bumped to count 2; none is added.
    assert k.stop() == 0
    restarted = time.monotonic()
    k2 = spawn(*k.args)

    def all_counted_twice() -> bool:
        return all(
            len(evs) == 1 and (evs[0].get("series") or {}).get("count") == 2
            for evs in warnings().values()
        ) and set(warnings()) == set(invalid)

    # 5.74 s measured (corpus_live.aggregated_after_restart_s); 120 s for a loaded machine.
    wait_for(all_counted_twice, 120, interval=0.5, what="every Warning aggregated to count 2")
    aggregated = time.monotonic() - restarted
    after = warnings()
    assert {uid: evs[0]["metadata"]["name"] for uid, evs in after.items()} == {
        uid: evs[0]["metadata"]["name"] for uid, evs in first.items()
    }, "the restart created new Events instead of aggregating"
    # Already right (the restarted leader finds nothing to write): 30 s for a loaded machine.
    wait_for(conditions_right, 30, interval=0.2, what="the conditions after the restart")
    assert k2.alive
    for proc in (k, k2):
        text = proc.log_path.read_text(errors="replace")
        assert "Traceback" not in text
        assert "reconcile failed" not in text
        assert "could not record an event" not in text
    for proc in (k, k2):  # Events a new leader posts before its first status write (expected: none)
        records = proc.logs()
        led = next(r["time"] for r in records if log_message(r) == "became leader")
        # a restarted leader finds the conditions already right and may write nothing
        first_write = next(
            (r["time"] for r in records if log_message(r) == "status writes"), "(none)"
        )
        events_before = sum(
            1
            for r in records
            if log_message(r) == "event" and (first_write == "(none)" or r["time"] < first_write)
        )
        print(
            f"  {proc.log_path.name}: led at {led}, {events_before} Events, first write {first_write}"
        )
        if first_write != "(none)":
            assert events_before == 0, "the conditions waited behind the Events"
    total = sum(len(v) for v in loaded.values())
    print(
        f"corpus live: {total} invalid ConfigMaps in {len(namespaces)} namespaces, "
        f"{valid_count} valid windows; conditions right {served:.2f}s after start; "
        f"{len(invalid)} Warnings, each bumped to count 2 {aggregated:.2f}s after a restart"
    )
    figures.record(
        "corpus_live",
        invalid_configmaps=total,
        namespaces=len(namespaces),
        valid_windows=valid_count,
        conditions_right_s=round(served, 2),
        warnings=len(invalid),
        aggregated_after_restart_s=round(aggregated, 2),
    )
