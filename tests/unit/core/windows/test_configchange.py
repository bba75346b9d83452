"""The config-change machine (kumaco.core.windows.config_change): adopt, settle, exit -- as pure decisions.

The controller's own tests (test_controller.py) show what the loop does with each
answer; these pin the answers themselves, with ``now`` passed in.
"""

from __future__ import annotations

from kumaco.core.windows.config_change import (
    Adopted,
    ConfigChange,
    Loaded,
    ParsedWindow,
    Settled,
    Settling,
    short_hash,
)
from kumaco.core.windows.configmaps import WindowConfigMap, config_digest, window_of


def parsed(name: str, start: str = "0 2 * * *") -> ParsedWindow:
    obj = {
        "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}"},
        "data": {"startTime": start, "duration": "3h", "nodeSelector": ""},
    }
    cm = WindowConfigMap.from_object(obj)
    assert cm is not None
    return ParsedWindow(cm, window_of(cm))


def test_the_first_look_is_the_baseline_and_nothing_else_changes() -> None:
    m = ConfigChange(settle=2.0)
    entries = [parsed("w"), parsed("v")]
    digests = config_digest(p.cm for p in entries)
    assert m.observe(entries, leader=True, now=0.0) == Loaded(short_hash(digests), 2)
    assert len(short_hash(digests)) == 16
    assert m.observe(entries, leader=True, now=1.0) is None


def test_a_follower_adopts_a_change_at_once() -> None:
    m = ConfigChange(settle=2.0)
    m.observe([parsed("w")], leader=False, now=0.0)
    d = m.observe([parsed("w", "0 4 * * *")], leader=False, now=0.0)
    assert isinstance(d, Adopted) and d.before != d.after
    assert d.change == {"added": [], "removed": [], "edited": ["ns/w"]}
    assert m.observe([parsed("w", "0 4 * * *")], leader=True, now=0.0) is None


def test_the_leader_waits_until_a_burst_is_quiet_then_exits_with_the_deleted_windows() -> None:
    m = ConfigChange(settle=2.0)
    w, v = parsed("w"), parsed("v", "0 9 * * *")
    m.observe([w, v], leader=True, now=0.0)
    first = m.observe([w, parsed("v", "0 4 * * *")], leader=True, now=10.0)
    assert first == Settling({"added": [], "removed": [], "edited": ["ns/v"]}, True, 2.0)
    again = m.observe([w, parsed("v", "0 4 * * *")], leader=True, now=11.5)
    assert isinstance(again, Settling) and not again.first and again.wait == 0.5
    burst = m.observe([parsed("v", "0 5 * * *")], leader=True, now=11.5)  # w deleted too
    assert isinstance(burst, Settling) and not burst.first and burst.wait == 2.0
    settled = m.observe([parsed("v", "0 5 * * *")], leader=True, now=13.5)
    assert isinstance(settled, Settled)
    assert settled.change == {"added": [], "removed": ["ns/w"], "edited": ["ns/v"]}
    assert settled.deleted == ((w.result, w.cm),)
    # The baseline is kept: asked again, the same answer.
    assert m.observe([parsed("v", "0 5 * * *")], leader=True, now=20.0) == settled


def test_a_change_undone_within_the_settle_time_is_forgotten() -> None:
    m = ConfigChange(settle=2.0)
    m.observe([parsed("w")], leader=True, now=0.0)
    assert isinstance(m.observe([parsed("w", "0 4 * * *")], leader=True, now=1.0), Settling)
    assert m.observe([parsed("w")], leader=True, now=2.0) is None
    d = m.observe([parsed("w", "0 5 * * *")], leader=True, now=10.0)
    assert isinstance(d, Settling) and d.first and d.wait == 2.0
