"""Fuzzing the pure core with hypothesis: robustness, then the planner's invariants.

Robustness: the parsers (schedules, durations, selectors), ``parse_window`` on
arbitrary decoded YAML/JSON values, ``load_documents``/``window_entries`` on
arbitrary text and ``node_view`` on malformed Nodes raise nothing but
:class:`~kumaco.core.errors.InvalidInput` (``ManifestError`` for unreadable text), and
the planner never crashes on what ``node_view`` makes of malformed Nodes.

Invariants of :func:`kumaco.core.planning.planner.plan`, over valid windows built from small
vocabularies (so that many open and match), nodes with labels and conditions
from small vocabularies, random instants and random policies: the ceiling,
the scope, eligibility, holders kept, UnderMaintenance exactly when an open
window selects the node, ``next_change`` (strictly later, and nothing changes
before it), determinism and independence from the order of the inputs.

Every test runs with ``deadline=None``; ``max_examples`` are set so that the
module stays well under a minute.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.labels.selectors import parse_selector
from kumaco.core.objects.nodes import NodeSet, NodeView, node_view
from kumaco.core.planning.planner import plan
from kumaco.core.planning.policy import IN_PROGRESS, UNDER_MAINTENANCE, Plan, Policy
from kumaco.core.time.durations import parse_go_duration, parse_window_duration
from kumaco.core.time.instants import parse_timestamp
from kumaco.core.time.schedule import parse_schedule
from kumaco.core.windows.ceilings import parse_ceiling
from kumaco.core.windows.format import KNOWN_KEYS, parse_window
from kumaco.core.windows.manifests import ManifestError, load_documents, node_views, window_entries
from kumaco.core.windows.window import InvalidWindow, Window
from tests.support.builders.policies import policy_of
from tests.support.judges.strategies import selector_texts

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

# ----------------------------------------------------------------------------- vocabularies

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")
# Cheap, well-spread values first: hypothesis shrinks towards the first element.
MINUTES = ("0", "30", "15", "0,30", "45", "*/20", "5-10", "59")
HOURS = ("3", "*/4", "22", "1", "2", "0-23/6", "9-17", "*", "23")
DAYS = ("*", "1", "15", "1-7", "29", "*/10", "31")
MONTHS = ("*", "1-12", "jan", "*/3", "feb,mar", "11")
WEEKDAYS = ("*", "mon-fri", "0", "sat,sun", "1", "FRI")
DESCRIPTORS = ("@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@midnight")
DURATIONS = ("30m", "1h", "10m", "45m", "90m", "2h", "3h", "6h", "25h", "1s", "1ns", "1h30m")
WINDOW_SELECTORS = (
    "",
    "zone=a",
    "zone in (a,b)",
    "zone notin (c)",
    "role!=db",
    "!gpu",
    "gpu",
    "rack",
    "tier>1",
    "tier<2",
    "zone=a,role=web",
    "role=web,tier>0",
    "zone==b",
)
SCOPES = ("", "", "zone in (a,b)", "role=web", "!gpu", "tier<3", "rack")
LABEL_VOCABULARY = {
    "zone": ("a", "b", "c"),
    "role": ("web", "db"),
    "gpu": ("true", ""),
    "rack": ("r1", "r2"),
    "tier": ("0", "1", "2", "3", "x", "007"),
}
REBOOT = "kured.dev/RebootRequired"
READY = "Ready"
BLOCKED = "kured.dev/Blocked"
NET = "NetworkUnavailable"
REQUIRABLE = (REBOOT, READY)
BLOCKERS = (BLOCKED, NET)
CONDITION_TYPES = (REBOOT, READY, BLOCKED, NET, IN_PROGRESS, UNDER_MAINTENANCE)
CEILINGS = ("1", "0", "2", "1", "3", "1%", "10%", "50%", "100%", "34%", "5")
# 2024-01-01T00:00:00Z .. 2030-01-01T00:00:00Z, in minutes
FIRST_MINUTE, LAST_MINUTE = 1_704_067_200 // 60, 1_893_456_000 // 60

# ----------------------------------------------------------------------------- decoded values

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
# Fixed UTC offsets, as a YAML timestamp such as 2024-01-01T00:00:00+05:30 carries.
offsets = st.builds(
    dt.timezone,
    st.timedeltas(min_value=dt.timedelta(hours=-23, minutes=-59), max_value=dt.timedelta(hours=23)),
)
#: Timestamps at the ends of what a YAML loader can produce (years 1 and 9999 with an offset).
EDGE_DATETIMES = (
    dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone(dt.timedelta(hours=-1))),
    dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59),
)
# What a YAML loader produces besides JSON types: dates, timestamps, !!binary, !!set.
yaml_scalars = st.one_of(
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=offsets),
    st.sampled_from(EDGE_DATETIMES),
    st.binary(max_size=8),
    st.frozensets(st.integers(), max_size=3),
)
json_values = st.recursive(
    st.one_of(json_scalars, yaml_scalars),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), children, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def cron_texts(draw: st.DrawFn) -> str:
    """Mostly valid cron texts (robfig's ParseStandard), some with a zone prefix."""
    if draw(st.integers(0, 5)) == 0:
        body = draw(st.sampled_from(DESCRIPTORS))
    else:
        body = " ".join(
            draw(st.sampled_from(vocabulary))
            for vocabulary in (MINUTES, HOURS, DAYS, MONTHS, WEEKDAYS)
        )
    prefix = draw(st.sampled_from(("", "", "", "CRON_TZ=", "TZ=")))
    if prefix:
        return f"{prefix}{draw(st.sampled_from(ZONES))} {body}"
    return body


# Texts around the edges of each grammar, mixed with arbitrary text.
cron_like = st.one_of(
    cron_texts(),
    st.text(),
    st.lists(
        st.sampled_from(
            (*MINUTES, *HOURS, *WEEKDAYS, "L", "W", "#", "?", "-", "/", ",", "7", "60", " ", "\t")
        ),
        max_size=8,
    ).map(" ".join),
    st.builds(
        lambda p, z, r: f"{p}{z} {r}",
        st.sampled_from(("TZ=", "CRON_TZ=", "TZ", "CRON_TZ=\u3000")),
        st.one_of(st.sampled_from((*ZONES, "Local", "", "../etc/passwd", "a" * 200)), st.text()),
        st.text(max_size=20),
    ),
)
duration_like = st.one_of(
    st.sampled_from(DURATIONS),
    st.text(),
    st.lists(
        st.sampled_from(
            (
                "1",
                "0",
                ".",
                "5",
                "9" * 20,
                "h",
                "m",
                "s",
                "ms",
                "µs",
                "μs",
                "ns",
                "d",
                "-",
                "+",
                " ",
            )
        ),
        max_size=10,
    ).map("".join),
)


#: Dates and date-times as a person writes them, and near misses (a skipped local time,
#: month 13, a fraction, no time).
dated_like = st.one_of(
    st.sampled_from(
        (
            "2027-01-15T02:00:00+01:00",
            "2027-03-28T02:30:00",
            "2027-10-31T02:30",
            "2027-13-01",
            "2027-02-01",
            "2027-01-15T02:00:00.5Z",
            "9999-01-01T00:00:00Z",
            "2027-01-15 02:00",
        )
    ),
    st.text(alphabet="0123456789-:TZ+ .", max_size=26),
)


@st.composite
def window_data(draw: st.DrawFn) -> object:
    """A ConfigMap's ``data``: usually a map with some of the known keys, any values."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    plausible: dict[str, st.SearchStrategy[Any]] = {
        "startTime": st.one_of(cron_like, dated_like),
        "duration": duration_like,
        "nodeSelector": st.one_of(selector_texts(), st.text()),
        "timeZone": st.one_of(st.sampled_from((*ZONES, "Local", "")), st.text(max_size=30)),
        "daysOfMonth": st.one_of(
            st.sampled_from(("1-7", "8-14", "31", "1,15", "*/2", "0", "32", "L", "", ",")),
            st.text(max_size=8),
        ),
        "notBefore": dated_like,
        "notAfter": dated_like,
        "maxInProgress": st.one_of(st.sampled_from(CEILINGS), st.text(max_size=6)),
        "freeze": st.one_of(st.sampled_from(("true", "false", "True", "")), st.text(max_size=6)),
    }
    data: dict[object, object] = {}
    for key in KNOWN_KEYS:
        choice = draw(st.integers(0, 5))
        if choice == 0:
            continue  # missing
        if choice == 1:
            data[key] = draw(json_values)
        else:
            data[key] = draw(plausible[key])
    extra = draw(
        st.dictionaries(
            st.one_of(
                st.sampled_from(("starttime", "Duration", "NODESELECTOR", "description")),
                st.text(max_size=12),
                st.integers(),
            ),
            json_values,
            max_size=3,
        )
    )
    for key, value in extra.items():
        data.setdefault(key, value)
    return data


# ----------------------------------------------------------------------------- robustness


def _only_invalid_input(parse: Any, text: str) -> None:
    try:
        parse(text)
    except InvalidInput as exc:
        assert isinstance(exc.reason, str)


@settings(max_examples=400, deadline=None, suppress_health_check=SUPPRESS)
@given(cron_like)
def test_parse_schedule_raises_only_invalid_input(text: str) -> None:
    _only_invalid_input(parse_schedule, text)


@settings(max_examples=300, deadline=None, suppress_health_check=SUPPRESS)
@given(duration_like)
def test_parse_durations_raise_only_invalid_input(text: str) -> None:
    _only_invalid_input(parse_go_duration, text)
    _only_invalid_input(parse_window_duration, text)


@settings(max_examples=300, deadline=None, suppress_health_check=SUPPRESS)
@given(st.one_of(selector_texts(), st.text()))
def test_parse_selector_raises_only_invalid_input(text: str) -> None:
    _only_invalid_input(parse_selector, text)


@settings(max_examples=400, deadline=None, suppress_health_check=SUPPRESS)
@given(window_data(), st.text(max_size=10), st.text(max_size=10), st.booleans())
def test_parse_window_never_raises(data: Any, namespace: str, name: str, binary: bool) -> None:
    result = parse_window(namespace, name, data, has_binary_data=binary)
    assert isinstance(result, Window | InvalidWindow)
    if isinstance(result, Window):
        assert isinstance(data, Mapping)
        assert all(isinstance(data[k], str) for k in ("startTime", "duration", "nodeSelector"))
        return
    assert result.errors, "an invalid window says why"
    for error in result.errors:
        # A window key, or a key of the data that is not one (named as such).
        assert error.key in KNOWN_KEYS or (
            isinstance(data, Mapping) and error.message.startswith("is not a window key")
        ), error
        assert isinstance(error.message, str)
        assert error.message
    named = {e.key for e in result.errors}
    if isinstance(data, Mapping):
        for key in KNOWN_KEYS:
            # A present key that is not a string is always reported.
            if key in data and not isinstance(data[key], str):
                assert key in named, key
        for key in ("startTime", "duration", "nodeSelector"):
            if key not in data:
                assert key in named, key
        missing = {k.lower() for k in ("startTime", "duration", "nodeSelector") if k not in data}
        for key in data:
            # Every other key is an error, unless it names a missing key's miscased form.
            shown_as_is = isinstance(key, str) and key.isprintable() and len(key) < 200
            if shown_as_is and key not in KNOWN_KEYS and key.lower() not in missing:
                assert key in named, key
    else:
        assert named == {"startTime", "duration", "nodeSelector"}


GOOD_MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: w
  namespace: ns
  labels:
    kured.dev/maintenance-window: ""
data:
  startTime: "0 3 * * *"
  duration: 1h
  nodeSelector: "zone in (a,b)"
"""
YAML_FRAGMENTS = (
    "apiVersion: v1\n",
    "kind: ConfigMap\n",
    "kind: List\n",
    "kind: NodeList\n",
    "kind: Node\n",
    "items:\n",
    "- ",
    "  ",
    "metadata:\n",
    "  name: w\n",
    "  name: 1\n",
    "data:\n",
    '  startTime: "0 3 * * *"\n',
    "  duration: 1h\n",
    "  nodeSelector: ''\n",
    "binaryData:\n",
    "status:\n",
    "  conditions:\n",
    "---\n",
    "...\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    ": ",
    "? ",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!!timestamp ",
    "!!set ",
    "!!omap ",
    "!!pairs ",
    "!!python/object/apply:os.system ",
    "!!int ",
    "!!float ",
    "!local ",
    "2024-02-30",
    "2024-01-01T00:00:00+25:00",
    "0x1F",
    "0b102",
    "1e400",
    ".nan",
    "~",
    "null",
    "yes",
    '"\\u202e"',
    '"\\0"',
    '"\\x7f"',
    "'",
    '"',
    "#",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "\t",
    "\n",
    "\ufeff",
    "\x00",
    "\x85",
    "\u2028",
    "\ud800",
    "😀",
    "9" * 50,
    "9" * 5000,
    "|\n",
    ">-\n",
    "@",
    "`",
)


@st.composite
def manifest_texts(draw: st.DrawFn) -> str:
    """Arbitrary text, YAML-ish fragment soups and mutated manifests."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.text())
    if kind == 1:
        parts = draw(st.lists(st.one_of(st.sampled_from(YAML_FRAGMENTS), st.text(max_size=4))))
        return "".join(parts)
    text = GOOD_MANIFEST if kind == 2 else GOOD_MANIFEST + "---\n" + GOOD_MANIFEST
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(YAML_FRAGMENTS)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
    return text


@settings(max_examples=500, deadline=None, suppress_health_check=SUPPRESS)
@example("!!int ")  # PyYAML's int constructor indexes an empty string
@example("a: !!timestamp x")  # ... and its timestamp constructor a failed match
@example("a: !!bool maybe")  # ... and its bool constructor a dict
@given(manifest_texts())
def test_load_documents_and_window_entries_never_crash(text: str) -> None:
    try:
        docs = load_documents(text)
    except ManifestError as exc:
        assert str(exc)
        return
    assert isinstance(docs, list)
    entries = window_entries(docs)
    assert len(entries) == len(docs)
    for entry in entries:
        assert isinstance(entry, Window | InvalidWindow)
        if isinstance(entry, InvalidWindow):
            assert entry.errors
    for view in node_views(docs):
        assert isinstance(view, NodeView)


# ----------------------------------------------------------------------------- malformed Nodes


def _timestamp(minute: int) -> str:
    return dt.datetime.fromtimestamp(minute * 60, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


transition_times = st.one_of(
    st.integers(FIRST_MINUTE - 100_000, LAST_MINUTE).map(_timestamp),
    st.sampled_from(("", "garbage", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00", "0")),
    st.datetimes(),
    st.datetimes(timezones=offsets),
    st.sampled_from(EDGE_DATETIMES),
    json_values,
)


@st.composite
def malformed_conditions(draw: st.DrawFn) -> object:
    def one() -> object:
        if draw(st.integers(0, 6)) == 0:
            return draw(json_values)
        condition: dict[str, object] = {}
        if draw(st.integers(0, 6)):
            condition["type"] = draw(
                st.one_of(st.sampled_from((*CONDITION_TYPES, "")), json_values)
            )
        if draw(st.integers(0, 6)):
            condition["status"] = draw(
                st.one_of(st.sampled_from(("True", "False", "Unknown", "true", "")), json_values)
            )
        if draw(st.booleans()):
            condition["lastTransitionTime"] = draw(transition_times)
        if draw(st.booleans()):
            condition["reason"] = draw(json_values)
        if draw(st.booleans()):
            condition["message"] = draw(json_values)
        return condition

    if draw(st.integers(0, 8)) == 0:
        return draw(json_values)  # conditions not a list
    return [one() for _ in range(draw(st.integers(0, 8)))]


@st.composite
def malformed_nodes(draw: st.DrawFn) -> object:
    """Node-shaped values with every part possibly missing, mistyped or duplicated."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    node: dict[str, object] = {}
    if draw(st.booleans()):
        node["kind"] = draw(st.one_of(st.just("Node"), json_values))
    meta_choice = draw(st.integers(0, 9))
    if meta_choice == 1:
        node["metadata"] = draw(json_values)
    elif meta_choice > 1:
        meta: dict[str, object] = {}
        if draw(st.integers(0, 8)):
            meta["name"] = draw(
                st.one_of(st.sampled_from(("n1", "n2", "n3", "n4", "")), json_values)
            )
        if draw(st.integers(0, 5)):
            vocabulary_labels = st.dictionaries(
                st.sampled_from(tuple(LABEL_VOCABULARY)),
                st.one_of(st.sampled_from(("a", "b", "web", "1", "2")), json_values),
                max_size=5,
            )
            meta["labels"] = draw(
                st.one_of(
                    vocabulary_labels,
                    st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), json_values),
                    json_values,
                )
            )
        node["metadata"] = meta
    status_choice = draw(st.integers(0, 5))
    if status_choice == 1:
        node["status"] = draw(json_values)
    elif status_choice > 1:
        status: dict[str, object] = {}
        if draw(st.integers(0, 5)):
            status["conditions"] = draw(malformed_conditions())
        node["status"] = status
    return node


@st.composite
def policies(draw: st.DrawFn, managed: bool | None = None) -> Policy:
    """Random scope, ceiling (integer or percent, or none) and require/block lists."""
    with_ceiling = draw(st.booleans()) if managed is None else managed
    ceiling = parse_ceiling(draw(st.sampled_from(CEILINGS))) if with_ceiling else None
    return policy_of(
        scope=parse_selector(draw(st.sampled_from(SCOPES))),
        ceiling=ceiling,
        require=tuple(draw(st.lists(st.sampled_from(REQUIRABLE), unique=True, max_size=2))),
        block=tuple(draw(st.lists(st.sampled_from(BLOCKERS), unique=True, max_size=2))),
    )


@st.composite
def valid_windows(
    draw: st.DrawFn,
    max_size: int = 4,
    selectors: tuple[str, ...] = WINDOW_SELECTORS,
    prefix: str = "w",
) -> list[Window]:
    """Windows parsed by parse_window from vocabulary texts (invalid draws are dropped)."""
    out: list[Window] = []
    for i in range(draw(st.integers(1, max_size))):
        data: dict[str, str] = {
            "startTime": draw(cron_texts()),
            "duration": draw(st.sampled_from(DURATIONS)),
            "nodeSelector": draw(st.sampled_from(selectors)),
        }
        if draw(st.integers(0, 4)) == 0:
            data["timeZone"] = draw(st.sampled_from(ZONES))
        window = parse_window("maint", f"{prefix}{i}", data)
        if isinstance(window, Window):
            out.append(window)
    return out


instants = st.builds(
    lambda minute, offset: minute * MINUTE + offset,
    st.integers(FIRST_MINUTE, LAST_MINUTE),
    st.one_of(
        st.sampled_from((0, -1, 1, SECOND, -SECOND)),
        st.integers(0, MINUTE - 1),
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=SUPPRESS)
@example(  # a YAML timestamp 0001-01-01T00:00:00+01:00 is before datetime.min in UTC
    objects=[
        {
            "metadata": {"name": "n1"},
            "status": {
                "conditions": [
                    {"type": REBOOT, "status": "True", "lastTransitionTime": EDGE_DATETIMES[0]}
                ]
            },
        }
    ],
    windows=[],
    now=FIRST_MINUTE * MINUTE,
    policy=policy_of(),
)
@given(
    st.lists(malformed_nodes(), max_size=8),
    valid_windows(max_size=2),
    instants,
    policies(),
)
def test_malformed_nodes_never_crash_node_view_or_plan(
    objects: list[object], windows: list[Window], now: int, policy: Policy
) -> None:
    views = []
    for obj in objects:
        view = node_view(obj)
        if view is None:
            continue
        assert isinstance(view, NodeView)
        _check_view(obj, view)
        views.append(view)
    nodes = NodeSet(views)
    result = plan(windows, nodes, now, policy)
    assert {n.name for n in result.nodes} <= {v.name for v in views}


def _check_view(obj: Any, view: NodeView) -> None:
    """What node_view kept: a name, string labels, typed conditions, the first of each type."""
    assert isinstance(view.name, str)
    assert view.name
    assert view.name == obj["metadata"]["name"]
    for key, value in view.labels.items():
        assert isinstance(key, str)
        assert isinstance(value, str)
    raw_labels = obj["metadata"].get("labels")
    if isinstance(raw_labels, Mapping):
        expected = {
            k: v for k, v in raw_labels.items() if isinstance(k, str) and isinstance(v, str)
        }
        assert dict(view.labels) == expected
    first: dict[str, Mapping[str, Any]] = {}
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for c in conditions if isinstance(conditions, list) else []:
        if not isinstance(c, Mapping):
            continue
        ctype, cstatus = c.get("type"), c.get("status")
        if isinstance(ctype, str) and ctype and isinstance(cstatus, str):
            first.setdefault(ctype, c)
    assert set(view.conditions) == set(first)
    for ctype, condition in view.conditions.items():
        assert condition.type == ctype
        assert condition.status == first[ctype]["status"]
        assert isinstance(condition.reason, str)
        assert isinstance(condition.message, str)
        assert condition.last_transition_time is None or isinstance(
            condition.last_transition_time, str
        )


@settings(max_examples=15, deadline=None, suppress_health_check=SUPPRESS)
@given(
    st.integers(1_000, 6_000),
    st.integers(0, 2**32 - 1),
    valid_windows(max_size=2),
    instants,
    policies(),
)
def test_huge_label_sets_never_crash(
    size: int, seed: int, windows: list[Window], now: int, policy: Policy
) -> None:
    rng = random.Random(seed)
    odd_values: tuple[object, ...] = (None, 1, 1.5, True, [], {}, ["a"], {"a": "b"})
    nodes = []
    for n in range(3):
        labels: dict[object, object] = {}
        for i in range(size):
            key = rng.choice((f"k{i}", f"example.com/k{i}", f"bad key {i}", i, f"zone{i % 7}"))
            value = rng.choice((f"v{i}", "a", "", rng.choice(odd_values), "x" * 70))
            labels[key] = value
        labels["zone"] = rng.choice(("a", "b", 3))
        nodes.append(
            {
                "metadata": {"name": f"n{n}", "labels": labels},
                "status": {"conditions": [{"type": REBOOT, "status": "True"}]},
            }
        )
    views = [v for v in (node_view(o) for o in nodes) if v is not None]
    assert len(views) == 3
    for obj, view in zip(nodes, views, strict=True):
        _check_view(obj, view)
    result = plan(windows, NodeSet(views), now, policy)
    assert {n.name for n in result.nodes} <= {"n0", "n1", "n2"}


# ----------------------------------------------------------------------------- planner invariants


#: How often each condition type is present on a node, and how often it is then True:
#: required conditions are usually True, blockers usually not.
CONDITION_ODDS = {
    REBOOT: (0.85, 0.75),
    READY: (0.9, 0.85),
    BLOCKED: (0.4, 0.3),
    NET: (0.4, 0.3),
    IN_PROGRESS: (0.5, 0.6),
    UNDER_MAINTENANCE: (0.5, 0.5),
}


def _chance(draw: st.DrawFn, p: float) -> bool:
    return draw(st.integers(0, 99)) < p * 100


@st.composite
def node_sets(draw: st.DrawFn, prefix: str = "node-", min_size: int = 0) -> list[NodeView]:
    """Up to 8 nodes with vocabulary labels and random conditions (via node_view)."""
    views = []
    for i in range(draw(st.integers(min_size, 8))):
        labels = draw(
            st.fixed_dictionaries(
                {}, optional={k: st.sampled_from(v) for k, v in LABEL_VOCABULARY.items()}
            )
        )
        conditions = []
        for ctype, (present, true) in CONDITION_ODDS.items():
            if not _chance(draw, present):
                continue
            status = "True" if _chance(draw, true) else draw(st.sampled_from(("False", "Unknown")))
            condition: dict[str, object] = {"type": ctype, "status": status}
            if draw(st.integers(0, 5)):
                condition["lastTransitionTime"] = draw(
                    st.one_of(
                        st.integers(FIRST_MINUTE - 1000, FIRST_MINUTE + 1000).map(_timestamp),
                        st.sampled_from(("garbage", "")),
                    )
                )
            conditions.append(condition)
        view = node_view(
            {
                "metadata": {"name": f"{prefix}{i}", "labels": labels},
                "status": {"conditions": conditions},
            }
        )
        assert view is not None
        views.append(view)
    return views


@st.composite
def instants_near(draw: st.DrawFn, windows: list[Window]) -> int:
    """An instant, usually at, just around or inside an occurrence of one of ``windows``."""
    start = draw(instants)
    if not windows or draw(st.integers(0, 9)) == 0:
        return start
    window = draw(st.sampled_from(windows))
    interval = next(iter(window.intervals(start, start + 400 * 24 * 3600 * SECOND)), None)
    if interval is None:
        return start
    length = interval.end - interval.start
    if draw(st.integers(0, 4)) < 4:  # inside the interval, most of the time
        return interval.start + draw(st.integers(0, length - 1))
    anchor = draw(st.sampled_from((interval.start, interval.end)))
    offset = draw(
        st.one_of(
            st.sampled_from((0, -1, 1, -SECOND, SECOND)),
            st.integers(-length, length),
        )
    )
    return anchor + offset


@st.composite
def scenarios(
    draw: st.DrawFn, managed: bool | None = None
) -> tuple[list[Window], list[NodeView], int, Policy]:
    """Windows, nodes, an instant often near a window's edges, and a policy."""
    windows = draw(valid_windows())
    # Windows over every node, or over nodes the scope keeps, open more nodes.
    if windows and draw(st.booleans()):
        windows = [
            *windows,
            *draw(valid_windows(max_size=1, selectors=("", "zone in (a,b)"), prefix="wide")),
        ]
    views = draw(node_sets(min_size=2))
    now = draw(instants_near(windows))
    return windows, views, now, draw(policies(managed))


def _eligible(node: NodeView, under: bool, policy: Policy) -> bool:
    return (
        under
        and all(node.is_true(r) for r in policy.require)
        and not any(node.is_true(b) for b in policy.block)
    )


def _admission(node: NodeView, policy: Policy) -> tuple[int, int, str]:
    """Oldest first: the latest required transition, then the name; unknown times last."""
    times = [parse_timestamp(node.conditions[r].last_transition_time) for r in policy.require]
    if any(t is None for t in times):
        return (1, 0, node.name)
    return (0, max((t for t in times if t is not None), default=0), node.name)


def _um_answers(result: Plan) -> dict[str, tuple[bool, tuple[str, ...]]]:
    return {n.name: (n.is_under_maintenance, n.windows) for n in result.nodes}


@settings(max_examples=500, deadline=None, suppress_health_check=SUPPRESS)
@given(scenarios(), st.data())
def test_planner_invariants(
    scenario: tuple[list[Window], list[NodeView], int, Policy], data: st.DataObject
) -> None:
    windows, views, now, policy = scenario
    nodes = NodeSet(views)
    result = plan(windows, nodes, now, policy)
    by_name = {v.name: v for v in views}

    # Scope: exactly the nodes in scope are planned; nothing outside is ever touched.
    in_scope = {v.name for v in views if policy.scope.matches(v.labels)}
    assert [n.name for n in result.nodes] == sorted(in_scope)

    # UnderMaintenance True iff some open window selects the node.
    open_windows = sorted((w for w in windows if w.state_at(now).open), key=lambda w: w.key)
    under: dict[str, bool] = {}
    for node_plan in result.nodes:
        labels = by_name[node_plan.name].labels
        selecting = tuple(w.key for w in open_windows if w.selector.matches(labels))
        under[node_plan.name] = bool(selecting)
        assert node_plan.is_under_maintenance == bool(selecting), node_plan
        assert node_plan.windows == selecting
        assert node_plan.under_maintenance.type == policy.under_maintenance

    event("under maintenance: " + ("some nodes" if any(under.values()) else "no node"))

    # MaintenanceInProgress: managed only with a ceiling (its lifecycle and every ceiling
    # rule are properties of tests/unit/core/planning/test_lifecycle.py).
    if policy.ceiling is None:
        assert all(n.in_progress is None for n in result.nodes)
        assert result.ceiling is None
    else:
        assert all(n.in_progress is not None for n in result.nodes)
        assert result.ceiling == policy.ceiling.limit(len(in_scope))

    # next_change: strictly later, and nothing changes before it.
    answers = _um_answers(result)
    event("next_change: " + ("none" if result.next_change is None else "set"))
    if result.next_change is not None:
        assert result.next_change > now
        horizon = result.next_change
    else:
        horizon = now + data.draw(st.integers(2, 400 * 24 * 3600 * SECOND), label="horizon")
    samples = set()
    if horizon - now >= 2:
        samples = {now + 1, horizon - 1, data.draw(st.integers(now + 1, horizon - 1), label="t")}
    for t in sorted(samples):
        later = plan(windows, nodes, t, policy)
        assert _um_answers(later) == answers, f"changed at {t}, before {horizon}"

    # Determinism, and independence from the order of windows and nodes.
    assert plan(windows, nodes, now, policy) == result
    shuffled_windows = data.draw(st.permutations(_fresh(windows)), label="windows order")
    shuffled_views = data.draw(st.permutations(views), label="nodes order")
    assert plan(shuffled_windows, NodeSet(shuffled_views), now, policy) == result


def _fresh(windows: list[Window]) -> list[Window]:
    """The same windows parsed anew, so that nothing is memoised in them."""
    out = []
    for w in windows:
        data = {
            "startTime": w.start_time,
            "duration": w.duration_text,
            "nodeSelector": w.selector_text,
        }
        if w.schedule.prefix_zone is None and w.zone_name != "UTC":
            data["timeZone"] = w.zone_name
        again = parse_window(w.namespace, w.name, data)
        assert again == w
        out.append(again)
    return out


# A run of 120 overlapping firings (every minute 03:00-04:59, 2m each): asked at 03:00:30
# its end is beyond what is followed; asked afresh at 04:00:30 it ends at 05:01.
LONG_RUN = parse_window(
    "maint", "long-run", {"startTime": "* 3-4 * * *", "duration": "2m", "nodeSelector": ""}
)
DEC_1_0400_30 = 1_796_097_630 * SECOND  # 2026-12-01T04:00:30Z


@settings(max_examples=200, deadline=None, suppress_health_check=SUPPRESS)
@example(
    scenario=([LONG_RUN], [node_view({"metadata": {"name": "n1"}})], DEC_1_0400_30, policy_of()),
    earlier_calls=[-HOUR],
)
@given(
    scenarios(),
    st.lists(
        st.one_of(
            st.sampled_from((-1, -MINUTE, -HOUR, -SECOND, 1, MINUTE, HOUR)),
            st.integers(-3 * 24 * HOUR, 3 * 24 * HOUR),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_plan_does_not_depend_on_what_was_planned_before(
    scenario: tuple[list[Window], list[NodeView], int, Policy], earlier_calls: list[int]
) -> None:
    """plan is pure: the same windows, nodes, instant and policy give the same Plan,
    whatever instants the same Window objects were asked about before."""
    windows, views, now, policy = scenario
    expected = plan(_fresh(windows), NodeSet(views), now, policy)
    for offset in earlier_calls:
        plan(windows, NodeSet(views), now + offset, policy)
    assert plan(windows, NodeSet(views), now, policy) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=SUPPRESS)
@given(scenarios(), st.sampled_from(("node-", "old-")).flatmap(node_sets), st.data())
def test_a_node_set_updated_in_place_plans_like_a_fresh_one(
    scenario: tuple[list[Window], list[NodeView], int, Policy],
    other_versions: list[NodeView],
    data: st.DataObject,
) -> None:
    """The controller updates one NodeSet from watch events; its caches must follow.

    After every step of a random history of puts and removals, planning with the
    updated set gives the same Plan as planning with a set built afresh.
    """
    windows, views, now, policy = scenario
    nodes = NodeSet(other_versions)
    operations: list[tuple[str, NodeView]] = [("put", v) for v in views + other_versions]
    operations += [("remove", v) for v in other_versions + views[:1]]
    history = data.draw(st.permutations(operations), label="history")
    plan(windows, nodes, now, policy)  # fills the caches
    for op, view in history:
        if op == "put":
            nodes.put(view)
        else:
            nodes.remove(view.name)
        if data.draw(st.booleans(), label="plan now"):
            fresh = NodeSet(list(nodes))
            assert plan(windows, nodes, now, policy) == plan(windows, fresh, now, policy)
    assert plan(windows, nodes, now, policy) == plan(windows, NodeSet(list(nodes)), now, policy)


ALWAYS_OPEN = parse_window(
    "maint", "always", {"startTime": "@daily", "duration": "25h", "nodeSelector": ""}
)


@settings(max_examples=400, deadline=None, suppress_health_check=SUPPRESS)
@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.integers(FIRST_MINUTE - 30, FIRST_MINUTE + 30).map(_timestamp),
                st.integers(FIRST_MINUTE - 30, FIRST_MINUTE + 30).map(_timestamp),
                st.sampled_from(("garbage", "", None)),
            ),
            st.one_of(
                st.integers(FIRST_MINUTE - 30, FIRST_MINUTE + 30).map(_timestamp),
                st.integers(FIRST_MINUTE - 30, FIRST_MINUTE + 30).map(_timestamp),
                st.sampled_from(("garbage", None)),
            ),
            st.integers(0, 3).map(lambda n: n == 0),  # holds MaintenanceInProgress already
        ),
        min_size=2,
        max_size=8,
    ),
    st.sampled_from(((REBOOT, READY), (REBOOT,), (REBOOT, READY), ())),
    st.integers(0, 6),
    instants,
)
def test_new_nodes_are_admitted_oldest_first(
    nodes_spec: list[tuple[str | None, str | None, bool]],
    require: tuple[str, ...],
    limit: int,
    now: int,
) -> None:
    """Every node is eligible: holders stay, then the oldest candidates fill the free places."""
    assert isinstance(ALWAYS_OPEN, Window)
    views = []
    for i, (reboot_time, ready_time, holds) in enumerate(nodes_spec):
        conditions = [
            {"type": REBOOT, "status": "True", "lastTransitionTime": reboot_time},
            {"type": READY, "status": "True", "lastTransitionTime": ready_time},
        ]
        if holds:
            conditions.append({"type": IN_PROGRESS, "status": "True"})
        view = node_view({"metadata": {"name": f"n{i}"}, "status": {"conditions": conditions}})
        assert view is not None
        views.append(view)
    policy = policy_of(ceiling=parse_ceiling(str(limit)), require=require)
    result = plan([ALWAYS_OPEN], NodeSet(views), now, policy)
    holders = {v.name for v in views if v.is_true(IN_PROGRESS)}
    candidates = sorted(
        (v for v in views if v.name not in holders), key=lambda v: _admission(v, policy)
    )
    expected = holders | {v.name for v in candidates[: max(0, limit - len(holders))]}
    assert {n.name for n in result.nodes if n.is_in_progress} == expected


@settings(max_examples=100, deadline=None, suppress_health_check=SUPPRESS)
@given(scenarios(managed=True))
def test_planner_is_stable_when_its_own_answer_is_applied(
    scenario: tuple[list[Window], list[NodeView], int, Policy],
) -> None:
    """Writing the planned conditions back and planning again changes nothing (no flapping)."""
    windows, views, now, policy = scenario
    first = plan(windows, NodeSet(views), now, policy)
    planned = {n.name: n for n in first.nodes}
    applied: list[NodeView] = []
    for view in views:
        node_plan = planned.get(view.name)
        if node_plan is None:
            applied.append(view)
            continue
        raw = [
            {
                "type": c.type,
                "status": c.status,
                "lastTransitionTime": c.last_transition_time,
            }
            for c in view.conditions.values()
            if c.type not in policy.owned
        ]
        # As kumaco writes them: status, reason and message (a transition time moves only
        # with the status).
        raw += [
            {
                "type": d.type,
                "status": d.status,
                "reason": d.reason,
                "message": d.message,
                "lastTransitionTime": (
                    view.conditions[d.type].last_transition_time
                    if d.type in view.conditions and view.conditions[d.type].status == d.status
                    else _timestamp(now // MINUTE)
                ),
            }
            for d in node_plan.desired
        ]
        again = node_view(
            {
                "metadata": {"name": view.name, "labels": dict(view.labels)},
                "status": {"conditions": raw},
            }
        )
        assert again is not None
        applied.append(again)
    second = plan(windows, NodeSet(applied), now, policy)
    assert [(n.name, n.desired) for n in second.nodes] == [(n.name, n.desired) for n in first.nodes]
    assert second.in_progress == first.in_progress


# ----------------------------------------------------------------------------- long windows


@pytest.mark.timeout(3)
@pytest.mark.parametrize(
    ("start_time", "duration"),
    [("0 3 * * *", "2562047h"), ("* * * * *", "8760h"), ("0 3 * * *", "87600h")],
)
def test_intervals_of_a_long_window_are_cheap(start_time: str, duration: str) -> None:
    """A valid window that is always open (a long duration) is listed over a day in moments.

    ``Window.intervals`` (``kumaco windows``, the controller's catch-up) must not follow
    the run from where it began -- hundreds of durations back -- firing by firing.
    """
    window = parse_window(
        "maint", "long", {"startTime": start_time, "duration": duration, "nodeSelector": ""}
    )
    assert isinstance(window, Window)
    day = FIRST_MINUTE * MINUTE
    found = list(window.intervals(day, day + 24 * HOUR))
    assert len(found) == 1
    assert found[0].start <= day
    assert found[0].end >= day + 24 * HOUR
