"""What daylight-saving changes do to a window, said in words (kumaco.core.windows.daylight_saving).

The table pins the notes; the oracle test checks each note's claim against the real
robfig: a skipped night has no firing on that calendar day (Go's), and the two
openings a fall-back note names are robfig's firings.
"""

from __future__ import annotations

import datetime as dt

import pytest

from kumaco.core.time.durations import SECOND
from kumaco.core.windows.daylight_saving import dst_notes
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
]


@pytest.mark.parametrize(("start", "duration", "extra", "expected"), NOTES)
def test_the_notes_of_a_year(
    start: str, duration: str, extra: dict[str, str], expected: list[str]
) -> None:
    assert [n.text for n in dst_notes(window(start, duration, **extra), *YEAR_2026)] == expected


def test_lord_howe_half_hour_fall_back() -> None:
    """Lord Howe falls back 30 minutes at 02:00 +11: 01:45 happens twice, robfig fires twice."""
    notes = dst_notes(window("CRON_TZ=Australia/Lord_Howe 45 1 * * *", "10m"), *YEAR_2026)
    assert [n.text for n in notes] == [
        "01:45 happens twice on 2026-04-05 in Australia/Lord_Howe: the window opens twice, at "
        "2026-04-04T14:45:00Z and at 2026-04-04T15:15:00Z",
    ]  # its spring-forward gap (02:00 to 02:30) holds no start time


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
