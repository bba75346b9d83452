"""What daylight-saving changes do to a window, said in words (kumaco.core.windows.daylight_saving).

The table pins the notes; the oracle test checks each note's claim against the real
robfig: a skipped night has no firing on that calendar day (Go's), and the two
openings a fall-back note names are robfig's firings.
"""

from __future__ import annotations

import datetime as dt

import pytest

from kumaco.core.time.durations import SECOND
from kumaco.core.windows.daylight_saving import dst_notes, posix_sign_warning
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window
from tests.support.judges.oracle import Oracle


def at(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()) * SECOND


def window(start: str, duration: str, **extra: str) -> Window:
    w = parse_window(
        "m", "w", {"startTime": start, "duration": duration, "nodeSelector": "", **extra}
    )
    assert isinstance(w, Window), w
    return w


YEAR_2026 = (at("2026-01-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))

NOTES = [
    (
        "CRON_TZ=Europe/Berlin 0 2 * * SUN",
        "3h",
        {},
        [
            "02:00 does not exist on 2026-03-29 in Europe/Berlin: no window that night",
            "02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens at "
            "2026-10-25T00:00:00Z and again at 2026-10-25T01:00:00Z, and is open 4h in one "
            "piece (until 2026-10-25T04:00:00Z)",
        ],
    ),
    (
        "CRON_TZ=Europe/Berlin 0 2 * * SUN",
        "30m",
        {},
        [
            "02:00 does not exist on 2026-03-29 in Europe/Berlin: no window that night",
            "02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens twice, at "
            "2026-10-25T00:00:00Z and at 2026-10-25T01:00:00Z",
        ],
    ),
    (
        "CRON_TZ=America/New_York 30 1 * * *",
        "1h",
        {},
        [
            "01:30 happens twice on 2026-11-01 in America/New_York: the window opens at "
            "2026-11-01T05:30:00Z and again at 2026-11-01T06:30:00Z, and is open 2h in one "
            "piece (until 2026-11-01T07:30:00Z)"
        ],
    ),
    (
        "CRON_TZ=Europe/Berlin 0 1-4 * * *",
        "30m",
        {},
        [
            "02:00 does not exist on 2026-03-29 in Europe/Berlin: no occurrence starts at 02:00",
            "02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens twice, at "
            "2026-10-25T00:00:00Z and at 2026-10-25T01:00:00Z",
        ],
    ),
    (
        "CRON_TZ=Europe/Berlin 15,45 2 * * *",
        "5m",
        {},
        [
            "02:15 and 02:45 do not exist on 2026-03-29 in Europe/Berlin: no window that night",
            "02:15 and 02:45 happen twice on 2026-10-25 in Europe/Berlin: the window opens 4 "
            "times, from 2026-10-25T00:15:00Z to 2026-10-25T01:45:00Z",
        ],
    ),
    # Not on a DST night: nothing to say. UTC: nothing. Never closes: nothing.
    ("CRON_TZ=Europe/Berlin 0 3 * * SUN", "3h", {}, []),
    ("0 2 * * SUN", "3h", {}, []),
    ("CRON_TZ=Europe/Berlin */5 * * * *", "10m", {}, []),
    # daysOfMonth: the last Sunday of March is on days 25-31, so its gap applies.
    (
        "CRON_TZ=Europe/Berlin 0 2 * * SUN",
        "1h",
        {"daysOfMonth": "25-31"},
        [
            "02:00 does not exist on 2026-03-29 in Europe/Berlin: no window that night",
            "02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens at "
            "2026-10-25T00:00:00Z and again at 2026-10-25T01:00:00Z, and is open 2h in one "
            "piece (until 2026-10-25T02:00:00Z)",
        ],
    ),
    ("CRON_TZ=Europe/Berlin 0 2 * * SUN", "1h", {"daysOfMonth": "1-7"}, []),
    # Lord Howe's 30-minute shifts: robfig's chain skips times that exist and fires twice
    # where a time happens once; each note is where the firings say so, and only there.
    (
        "CRON_TZ=Australia/Lord_Howe 0 0 * * *",
        "10m",
        {},
        [
            "00:00 is skipped on 2026-04-06 in Australia/Lord_Howe (robfig, after the 30m "
            "daylight-saving shift): no window that night",
            "00:00 is skipped on 2026-10-05 in Australia/Lord_Howe (robfig, after the 30m "
            "daylight-saving shift): no window that night",
        ],
    ),
    (
        "CRON_TZ=Australia/Lord_Howe 15 2 * * *",
        "10m",
        {},
        [
            "02:15 is skipped on 2026-04-05 in Australia/Lord_Howe (robfig, after the 30m "
            "daylight-saving shift): no window that night",
            "02:15 does not exist on 2026-10-04 in Australia/Lord_Howe: no window that night",
        ],
    ),
    (
        "CRON_TZ=Australia/Lord_Howe 45 1 * * *",
        "10m",
        {},
        [
            "01:45 happens twice on 2026-04-05 in Australia/Lord_Howe: the window opens twice, "
            "at 2026-04-04T14:45:00Z and at 2026-04-04T15:15:00Z",
            "01:45 happens once on 2026-10-04 in Australia/Lord_Howe but robfig fires twice "
            "that day (after the 30m daylight-saving shift): the window opens twice, at "
            "2026-10-03T15:15:00Z and at 2026-10-03T15:45:00Z",
        ],
    ),
    ("CRON_TZ=Australia/Lord_Howe 30 2 * * *", "10m", {}, []),
]


@pytest.mark.parametrize(("start", "duration", "extra", "expected"), NOTES)
def test_the_notes_of_a_year(
    start: str, duration: str, extra: dict[str, str], expected: list[str]
) -> None:
    assert [n.text for n in dst_notes(window(start, duration, **extra), *YEAR_2026)] == expected


LORD_HOWE_TIMES = [f"{m} {h}" for h in (0, 1, 2, 3) for m in (0, 15, 30, 45)]


@pytest.mark.parametrize("time", LORD_HOWE_TIMES)
def test_lord_howe_notes_fall_exactly_on_the_days_robfig_skips_or_repeats(time: str) -> None:
    """Every day near a 30-minute shift where the firings differ from once a day has a note."""
    w = window(f"CRON_TZ=Australia/Lord_Howe {time} * * *", "10m")
    tz = w.schedule.location
    counts: dict[str, int] = {}
    for f in w.firings(*YEAR_2026, limit=1000):
        s = f // SECOND
        day = dt.datetime.fromtimestamp(s + tz.offset(s), dt.UTC).date().isoformat()
        counts[day] = counts.get(day, 0) + 1
    days = [
        (dt.date(2026, 1, 2) + dt.timedelta(days=i)).isoformat() for i in range(363)
    ]  # 2026-01-01 starts before the range's first local midnight
    odd = {d for d in days if counts.get(d, 0) != 1}
    noted = {n.text.split(" on ", 1)[1][:10] for n in dst_notes(w, *YEAR_2026)}
    assert noted == odd


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("start", "duration", "extra", "expected"),
    [n for n in NOTES if n[3]],
    ids=lambda x: str(x)[:40],
)
def test_each_note_says_what_robfig_does(
    robfig_oracle: Oracle, start: str, duration: str, extra: dict[str, str], expected: list[str]
) -> None:
    w = window(start, duration, **extra)
    for note in dst_notes(w, *YEAR_2026):
        t = note.at // SECOND
        fires = robfig_oracle.chain(w.start_time, t - 2 * 86400, t + 2 * 86400)
        walls = robfig_oracle.walls(w.zone_name, fires)
        on_days = [
            (f, wall)
            for f, wall in zip(fires, walls, strict=True)
            if not w.days or w.days >> wall[2] & 1
        ]
        date = note.text.split(" on ", 1)[1][:10]
        that_day = [
            f for f, wall in on_days if f"{wall[0]:04d}-{wall[1]:02d}-{wall[2]:02d}" == date
        ]
        if note.text.endswith("no window that night"):
            assert that_day == [], note.text
        elif "does not exist" in note.text:
            assert that_day, note.text
        else:  # the openings named are robfig's firings
            named = [
                int(dt.datetime.fromisoformat(word.rstrip(",").replace("Z", "+00:00")).timestamp())
                for word in note.text.split()
                if word.startswith("20") and word.rstrip(",").endswith("Z")
            ]
            assert named and set(named[:2]) <= {f for f, _wall in on_days}, note.text


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        (
            "Etc/GMT+1",
            "Etc/GMT+1 is UTC-01:00: the Etc/ zones' signs are inverted (POSIX); for UTC+01:00 "
            "write Etc/GMT-1",
        ),
        (
            "Etc/GMT-10",
            "Etc/GMT-10 is UTC+10:00: the Etc/ zones' signs are inverted (POSIX); for UTC-10:00 "
            "write Etc/GMT+10",
        ),
        (
            "Etc/GMT-14",
            "Etc/GMT-14 is UTC+14:00: the Etc/ zones' signs are inverted (POSIX); for UTC-14:00 "
            "there is no zone at all",
        ),
        ("Etc/GMT+0", ""),
        ("Etc/GMT", ""),
        ("Etc/UTC", ""),
        ("Europe/Berlin", ""),
    ],
)
def test_an_etc_zone_names_its_real_offset(zone: str, expected: str) -> None:
    assert posix_sign_warning(zone) == expected
    if expected:  # the offset said is the zone's own, as robfig reads it
        w = window(f"CRON_TZ={zone} 0 2 * * *", "1h")
        hours = w.schedule.location.offset(0) // 3600
        assert f" is UTC{hours:+03d}:00:" in expected


_KINDS = {"gap": " not exist on ", "skipped": " skipped on ", "twice": " twice on "}


@pytest.mark.parametrize(
    "w",
    [window(start, duration, **extra) for start, duration, extra, _notes in NOTES]
    + [window(f"CRON_TZ=Australia/Lord_Howe {t} * * *", "10m") for t in LORD_HOWE_TIMES],
    ids=lambda w: w.start_time,
)
def test_each_note_says_its_kind_and_where_it_falls(w: Window) -> None:
    """Firings for a repeated start, none for a missing one, which falls on its day."""
    zone = w.schedule.zone
    for note in dst_notes(w, *YEAR_2026):
        said = _KINDS.get(note.kind, " but robfig fires ")
        assert said in note.text, (note.kind, note.text)
        assert note.instants, note.text
        around = w.firings(note.at - 3 * 86400 * SECOND, note.at + 3 * 86400 * SECOND, 5000)
        date = note.text.split(" on ", 1)[1][:10]
        if note.kind in ("twice", "extra"):
            assert len(note.instants) >= 2 and set(note.instants) <= set(around), note.text
            continue
        for i in note.instants:
            wall = dt.datetime.fromtimestamp(i // SECOND, dt.UTC).astimezone(zone)
            if note.kind == "skipped":  # a start time that exists that day, robfig does not fire
                assert i not in around, note.text
                assert f"{wall:%Y-%m-%d}" == date and f"{wall:%H:%M}" in note.text, note.text
            else:  # one in the gap has no instant: it is put at the offset before the change
                utc = dt.datetime.fromtimestamp(i // SECOND, dt.UTC)
                before = dt.datetime.fromtimestamp(note.at // SECOND - 1, dt.UTC).astimezone(zone)
                named = utc + (before.utcoffset() or dt.timedelta())
                assert f"{named:%Y-%m-%d}" == date and f"{named:%H:%M}" in note.text, note.text
