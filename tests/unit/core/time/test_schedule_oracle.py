"""kumaco.core.time.schedule against the real robfig/cron v3.0.1 (built from the Go module proxy).

Acceptance and every ``next_fire`` must equal robfig's, except for kumaco's
deliberate rejections (the ``Local`` zone and ``@every``) and its one deliberate
answer where robfig has none: robfig's ``Next`` loops forever when its search
crosses a calendar day that a zone skipped (a date-line change, e.g. Apia's
2011-12-30). That is proven of every case of ``DATE_LINE_CASES`` by CPU time
(:meth:`Oracle.hangs`), and a random input is taken for such a hang only when it
is of that kind: its zone skipped a day between the instant asked and kumaco's
answer. Every other request must be answered; a slow oracle is asked again and
then fails the test (:class:`tests.support.judges.oracle.OracleTimeout`), it never
weakens a comparison.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kumaco.core.errors import InvalidInput
from kumaco.core.time.cronfields import GO_SPACE, parse_day_of_month
from kumaco.core.time.schedule import Schedule, parse_schedule
from kumaco.core.time.zones import zone_location
from kumaco.core.windows.days_of_month import never_on_days, next_on_days
from tests.support.builders.schedules import (
    DATE_LINE_CASES,
    DAY_COMBINATION,
    DST_CASES,
    INVALID,
    NEVER_FIRES,
    VALID,
    VALID_ZONES,
    instants,
    specs,
    unix,
)
from tests.support.judges.oracle import Oracle

pytestmark = pytest.mark.oracle


def deliberate_rejection(spec: str) -> bool:
    """Specs robfig accepts and kumaco rejects on purpose."""
    rest = spec
    if spec.startswith(("TZ=", "CRON_TZ=")) and " " in spec:
        space = spec.index(" ")
        if spec[spec.index("=") + 1 : space] == "Local":
            return True
        rest = spec[space:].strip(GO_SPACE)
    return rest.startswith("@every")


HANG = "robfig never returns"


@functools.cache
def skipped_days(zone: str) -> tuple[int, ...]:
    """The instants (UTC) at which ``zone`` jumped over a whole calendar day, from its tz data."""
    loc = zone_location(zone)
    out = []
    for t in loc.transitions[1:]:
        before = (t - 1 + loc.offset(t - 1)) // 86400
        after = (t + loc.offset(t)) // 86400
        if after - before >= 2:
            out.append(t)
    return tuple(out)


def may_hang(schedule: Schedule, after: int) -> bool:
    """Whether robfig's search from ``after`` crosses a calendar day its zone skipped.

    Only then may robfig loop forever; kumaco's answer (or robfig's five-year horizon,
    when kumaco finds none) bounds the search.
    """
    mine = schedule.next_fire(after)
    horizon = mine if mine is not None else after + 6 * 366 * 86400
    return any(after < t <= horizon for t in skipped_days(schedule.zone_name))


def robfig_next(oracle: Oracle, spec: str, afters: list[int]) -> dict[str, Any]:
    """The oracle's answer, with :data:`HANG` where robfig loops forever.

    Instants whose search crosses a skipped day (:func:`may_hang`) are asked one by one
    and proven to hang by CPU time (:meth:`Oracle.hangs`) when robfig does not answer;
    every other instant must be answered (a slow oracle fails the test).
    """
    try:
        schedule: Schedule | None = parse_schedule(spec)
    except InvalidInput:
        schedule = None
    risky = {a for a in afters if schedule is not None and may_hang(schedule, a)}
    plain = [a for a in afters if a not in risky]
    robfig = oracle.cron(spec, plain) if plain else {"next": []}
    if "error" in robfig or not risky:
        return robfig
    answers = dict(zip(plain, robfig["next"], strict=True))
    for a in sorted(risky):
        answers[a] = HANG if oracle.hangs(spec, a) else oracle.cron(spec, [a])["next"][0]
    return {"next": [answers[a] for a in afters]}


def check(oracle: Oracle, spec: str, afters: list[int]) -> None:
    robfig = robfig_next(oracle, spec, afters)
    rejected: str | None = None
    try:
        schedule = parse_schedule(spec)
    except InvalidInput as err:
        rejected = str(err)
    if rejected is not None:
        assert "error" in robfig or deliberate_rejection(spec), (spec, rejected, robfig)
        return
    assert "error" not in robfig, (spec, robfig)
    assert not deliberate_rejection(spec)
    for after, theirs in zip(afters, robfig["next"], strict=True):
        mine = schedule.next_fire(after)
        if theirs == HANG:  # kumaco's one deliberate answer where robfig has none
            assert may_hang(schedule, after)
            assert mine is not None
            assert mine > after
        else:
            assert mine == theirs, (spec, after)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_specs_match_robfig(robfig_oracle: Oracle, data: st.DataObject) -> None:
    spec, zone = data.draw(specs())
    check(robfig_oracle, spec, data.draw(instants(zone)))


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from("0123456789*?,-/ \t\u3000\x1cjanMONİ@TZ=CRON_UTC"), max_size=30
    )
)
def test_random_text_acceptance_matches_robfig(robfig_oracle: Oracle, text: str) -> None:
    check(robfig_oracle, text, [1_700_000_000])


SAMPLE_AFTERS = [
    0,
    1_700_000_000,
    unix("2024-03-10T06:59:59+00:00"),
    unix("2024-10-27T00:30:00+00:00"),
    unix("2096-10-02T00:00:00+00:00"),
    unix("2099-12-31T23:59:59+00:00"),
    -62135596800,  # 0001-01-01
    253402300799,  # 9999-12-31T23:59:59
]


@pytest.mark.parametrize("spec", list(VALID) + [spec for spec, _ in INVALID])
def test_tables_match_robfig(robfig_oracle: Oracle, spec: str) -> None:
    check(robfig_oracle, spec, SAMPLE_AFTERS)


@pytest.mark.parametrize("spec", NEVER_FIRES)
def test_never_fires_matches_robfig(robfig_oracle: Oracle, spec: str) -> None:
    afters = SAMPLE_AFTERS[1:4]  # robfig needs ~0.1 s per instant to give up
    check(robfig_oracle, spec, afters)
    if parse_schedule(spec).never_fires:
        assert robfig_oracle.cron(spec, afters)["next"] == [None] * len(afters)


@pytest.mark.parametrize(
    "spec",
    [
        "TZ=Local 0 0 * * *",
        "@every 1h",
        "TZ=UTC @every 5m",
        # robfig panics without a space after the prefix: an error for both.
        "TZ=Europe/Berlin",
        "CRON_TZ=",
    ],
)
def test_deliberate_deviations(robfig_oracle: Oracle, spec: str) -> None:
    check(robfig_oracle, spec, [0])


@pytest.mark.parametrize(
    "spec",
    [
        # Go also finds these outside the tzdata package (host files, path
        # variants); kumaco accepts only the package's canonical zone names.
        "TZ=America//New_York 0 0 * * *",
        "TZ=./UTC 0 0 * * *",
    ],
)
def test_zone_names_stricter_than_go(robfig_oracle: Oracle, spec: str) -> None:
    assert "next" in robfig_oracle.cron(spec, [0])
    with pytest.raises(InvalidInput):
        parse_schedule(spec)


@pytest.mark.parametrize(("zone", "spec", "after", "expected"), DST_CASES)
def test_dst_table_is_robfigs(
    robfig_oracle: Oracle, zone: str, spec: str, after: str, expected: list[str]
) -> None:
    t = unix(after)
    for want in expected:
        (got,) = robfig_oracle.cron(f"CRON_TZ={zone} {spec}", [t])["next"]
        assert got == unix(want)
        t = got


@pytest.mark.parametrize(("spec", "after", "expected"), DAY_COMBINATION)
def test_day_combination_table_is_robfigs(
    robfig_oracle: Oracle, spec: str, after: str, expected: list[str]
) -> None:
    t = unix(after)
    for want in expected:
        (got,) = robfig_oracle.cron(spec, [t])["next"]
        assert got == unix(want + "T00:00:00+00:00")
        t = got


def test_duration_mode(robfig_oracle: Oracle) -> None:
    assert robfig_oracle.duration("1h30m") == {"ns": 5_400_000_000_000}
    assert "error" in robfig_oracle.duration("1d")


@pytest.mark.parametrize(("zone", "spec", "after", "expected"), DATE_LINE_CASES)
def test_robfig_loops_forever_where_a_day_is_skipped(
    robfig_oracle: Oracle, zone: str, spec: str, after: str, expected: list[str]
) -> None:
    """Every case kumaco answers on its own (test_schedule.py) is one where robfig has none:
    it burns a second of CPU without answering (its longest legitimate search, giving up on
    a schedule that never fires, costs it well under a millisecond)."""
    schedule = parse_schedule(f"TZ={zone} {spec}")
    assert may_hang(schedule, unix(after))
    assert robfig_oracle.hangs(f"TZ={zone} {spec}", unix(after))


def test_a_search_that_does_not_cross_a_skipped_day_is_answered(robfig_oracle: Oracle) -> None:
    """The hang is the skipped day's, not the zone's: robfig answers in Apia after it."""
    spec = "TZ=Pacific/Apia 0 3 1 * *"
    after = unix("2012-01-05T00:00:00+14:00")
    assert not may_hang(parse_schedule(spec), after)
    assert not robfig_oracle.hangs(spec, after)
    assert robfig_oracle.cron(spec, [after]) == {"next": [unix("2012-02-01T03:00:00+14:00")]}


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_days_of_month_keep_robfigs_firings_on_those_days(
    robfig_oracle: Oracle, data: st.DataObject
) -> None:
    """A window's ``daysOfMonth`` (kumaco.core.windows.days_of_month): the next firing on a listed day is
    the first firing on such a day along robfig's own chain (its calendar day as Go says)."""
    spec, zone = data.draw(specs(VALID_ZONES))
    try:
        schedule = parse_schedule(spec)
    except InvalidInput:
        return
    days = parse_day_of_month(
        data.draw(st.sampled_from(["1-7", "8-14", "29-31", "1,15", "*/2", "31", "13"]))
    )
    if never_on_days(schedule, days):
        return
    for after in data.draw(instants(zone)):
        mine = next_on_days(schedule, days, after)
        if mine is None or may_hang(schedule, after) or mine - after > 80 * 86400:
            event("daysOfMonth: not compared (no firing, a skipped day, a long chain)")
            continue  # robfig's horizon, its endless loops, or a chain too long to ask for
        event("daysOfMonth: compared with robfig's chain")
        chain = robfig_oracle.chain(spec, after, mine)
        walls = robfig_oracle.walls(schedule.zone_name, chain)
        on_days = [f for f, wall in zip(chain, walls, strict=True) if days >> wall[2] & 1]
        assert on_days[:1] == [mine], (spec, after)


def test_days_of_month_follow_robfigs_chain_in_a_zone_offset_by_seconds(
    robfig_oracle: Oracle,
) -> None:
    """Monrovia was 44 min 30 s behind UTC until 1972: robfig's Next from just before a
    listed day passes the chain's first firing on it (its Truncate is UTC's), so the days'
    filter follows the chain there (found by the property test above, seed 2296921414)."""
    spec = "TZ=Africa/Monrovia 1/1 0/1 1 */1 sun/1"
    schedule = parse_schedule(spec)
    assert robfig_oracle.cron(spec, [2610, 2669]) == {"next": [2730, 2790]}  # the quirk
    assert next_on_days(schedule, parse_day_of_month("1-7"), 0) == 2730
    assert robfig_oracle.chain(spec, 0, 2730)[-2:] == [2610, 2730]
