"""The maintenance manager's offline tools, black-box through the installed ``kumaco`` script.

Each case checks stdout, stderr and the exit code: selection-aware input (what
``kubectl get cm -o yaml`` really gives), windows that never close, ``-o`` as the
format everywhere, the plan's detail, hints that say how to fix a mistake, the
iCalendar feed, and the forecast's contract.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import icalendar
import pytest
import yaml

from tests.support.builders.cli import (
    KUMACO,
    LABEL,
    NIGHTLY,
    REQ,
    cm,
    kumaco,
)


def kubectl_list() -> str:
    """What ``kubectl get cm -A -o yaml`` prints for a realistic namespace."""
    items = [
        cm("kube-root-ca.crt", {"ca.crt": "-----BEGIN CERTIFICATE-----\n..."}, labels=None),
        cm("app-settings", {"LOG_LEVEL": "debug"}, labels={"app": "shop"}),
        cm("nightly", NIGHTLY, labels={LABEL: ""}),
        cm("typo-label", NIGHTLY, labels={"kured.dev/maintenance-windows": ""}),
        cm("forgot-label", NIGHTLY, labels={"team": "sre"}),
    ]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


def test_a_kubectl_list_is_valid_and_says_what_it_skipped() -> None:
    done = kumaco("validate", "-", stdin=kubectl_list())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "valid maintenance/nightly\n"
    lines = done.stderr.splitlines()
    assert (
        "skipping maintenance/kube-root-ca.crt: not selected by --configmap-selector 'kured.dev/maintenance-window'"
        in lines
    )
    assert (
        "skipping maintenance/app-settings: not selected by --configmap-selector 'kured.dev/maintenance-window'"
        in lines
    )
    assert (
        "warning: maintenance/typo-label has the label kured.dev/maintenance-windows, not "
        "kured.dev/maintenance-window (a typo?): kumaco will ignore it"
    ) in lines
    assert (
        "warning: maintenance/forgot-label has startTime/duration/nodeSelector but is not "
        "selected by --configmap-selector 'kured.dev/maintenance-window': kumaco will ignore it"
    ) in lines
    assert not any("app-settings" in line and "warning" in line for line in lines)


def test_an_invalid_selected_window_still_fails_and_a_selector_can_select_others() -> None:
    broken = cm("broken", {**NIGHTLY, "duration": "1d"}, labels={LABEL: ""})
    text = yaml.safe_dump(
        {"kind": "List", "items": [broken, cm("other", NIGHTLY, labels={"pool": "x"})]}
    )
    done = kumaco("validate", "-", stdin=text)
    assert done.returncode == 1
    assert done.stdout == (
        'invalid maintenance/broken: duration: unknown unit "d" in duration "1d"; '
        "Go durations have no days or weeks: write 24h\n"
    )
    picked = kumaco("validate", "-", "--configmap-selector", "pool=x", stdin=text)
    assert (picked.returncode, picked.stdout) == (0, "valid maintenance/other\n")
    nothing = kumaco("validate", "-", "--configmap-selector", "pool=none", stdin=text)
    assert nothing.returncode == 2 and nothing.stdout == ""  # a check of nothing fails
    assert (
        "kumaco validate: no window ConfigMap selected by --configmap-selector 'pool=none' "
        "in the input: 2 ConfigMaps skipped (see above)\n"
    ) in nothing.stderr


@pytest.mark.parametrize(("start", "duration"), [("*/5 * * * *", "10m"), ("0 0 1 1 *", "9000h")])
def test_a_window_that_never_closes_is_valid_with_a_warning_and_has_no_end(
    tmp_path: Path, start: str, duration: str
) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(
        yaml.safe_dump(
            cm(
                "forever",
                {"startTime": start, "duration": duration, "nodeSelector": ""},
                labels={LABEL: ""},
            )
        )
    )
    done = kumaco("validate", str(f))
    assert (done.returncode, done.stdout) == (0, "valid maintenance/forever\n")
    assert done.stderr == (
        f"warning: maintenance/forever never closes: its occurrences chain without a gap "
        f"({start!r} for {duration}), so its nodes would stay under maintenance for good\n"
    )
    as_json = json.loads(kumaco("validate", str(f), "-o", "json").stdout)
    assert as_json[0]["valid"] is True and "never closes" in as_json[0]["warnings"][0]
    span = ["--from", "2027-01-01", "--until", "2027-01-02"]
    rows = json.loads(kumaco("windows", str(f), *span, "-o", "json").stdout)
    assert len(rows) == 1 and rows[0]["end"] is None
    assert kumaco("windows", str(f), *span).stdout.split()[1] == "open-ended"


def test_a_bounded_window_has_no_warning_and_an_end_independent_of_until(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(
        yaml.safe_dump(
            cm(
                "long",
                {"startTime": "0 0 1 * *", "duration": "100h", "nodeSelector": ""},
                labels={LABEL: ""},
            )
        )
    )
    done = kumaco("validate", str(f))
    assert (done.returncode, done.stderr) == (0, "")
    for until in ("2027-01-02T00:00:00Z", "2027-01-03T00:00:00Z", "2027-01-20T00:00:00Z"):
        rows = json.loads(
            kumaco("windows", str(f), "--from", "2027-01-01", "--until", until, "-o", "json").stdout
        )
        assert rows[0]["end"] == "2027-01-05T04:00:00Z"


@pytest.mark.parametrize(
    ("start", "hint"),
    [
        ("0 3 * * 7", "robfig has no 7 for Sunday: use 0 or SUN"),
        (
            "cron_tz=Europe/Berlin 0 3 * * *",
            "the zone prefix is case-sensitive: write CRON_TZ=Europe/Berlin",
        ),
        ("0 0 3 * * 1", "drop the first field if it is seconds"),
        ("0 3 L * *", "Quartz's L, W and # are not supported"),
    ],
)
def test_errors_say_how_to_fix_them(tmp_path: Path, start: str, hint: str) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(cm("w", {**NIGHTLY, "startTime": start}, labels={LABEL: ""})))
    done = kumaco("validate", str(f))
    assert done.returncode == 1
    assert done.stdout.startswith("invalid maintenance/w: startTime: ") and hint in done.stdout


def test_times_accept_a_date_as_midnight_utc_and_say_how_to_write_one(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    assert kumaco("windows", str(f), "--from", "2027-03-20", "--until", "2027-03-21").stdout == (
        "2027-03-20T02:00:00Z  2027-03-20T05:00:00Z  maintenance/w\n"
    )
    bad = kumaco("windows", str(f), "--from", "2027-03-20T02:00", "--until", "2027-03-21")
    assert bad.returncode == 2
    assert bad.stderr == (
        "kumaco windows: --from: '2027-03-20T02:00' has no UTC offset; write e.g. 2026-12-01T03:00:00Z "
        "(or +01:00 for an offset), or a date alone for its midnight UTC\n"
    )


def nodes_file(tmp_path: Path) -> Path:
    def node(name: str, *true: str) -> dict[str, Any]:
        return {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": name[0]}},
            "status": {
                "conditions": [
                    {"type": t, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
                    for t in true
                ]
            },
        }

    f = tmp_path / "nodes.json"
    items = [
        node("a1", REQ, "MaintenanceInProgress"),
        node("a2", REQ),
        node("b1", REQ, "kured.dev/RebootInhibited"),
        node("c1"),
    ]
    f.write_text(json.dumps({"kind": "List", "items": items}))
    return f


def plan_args(tmp_path: Path) -> list[str]:
    """``kumaco plan`` on a nightly window and :func:`nodes_file`, at 03:00 (it is open)."""
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    nodes = str(nodes_file(tmp_path))
    return ["plan", "--windows", str(w), "--nodes", nodes, "--at", "2027-01-13T03:00:00Z"]


def test_plan_names_the_rule_the_conditions_and_who_holds_the_place(tmp_path: Path) -> None:
    args = [
        *plan_args(tmp_path),
        "--max-in-progress",
        "1",
        "--require-condition",
        REQ,
        "--block-condition",
        "kured.dev/RebootInhibited",
    ]
    doc = json.loads(kumaco(*args, "-o", "json").stdout)
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["a1"]["rule"] == "MaintenanceAllowed" and nodes["a1"]["countsToward"] == ["global"]
    assert nodes["a2"]["rule"] == "ConcurrencyCeilingReached"
    assert nodes["a2"]["ceiling"] == {"name": "global", "limit": 1, "heldBy": ["a1"]}
    assert (nodes["b1"]["rule"], nodes["b1"]["blocking"]) == (
        "BlockedByCondition",
        ["kured.dev/RebootInhibited"],
    )
    assert (nodes["c1"]["rule"], nodes["c1"]["missing"]) == ("RequiredConditionNotTrue", [REQ])
    text = kumaco(*args).stdout
    assert "global full (held by a1)" in text and f"missing {REQ}" in text
    as_yaml = yaml.safe_load(kumaco(*args, "-o", "yaml").stdout)
    assert as_yaml == doc
    paused = kumaco(*args[:-4], "--max-in-progress", "0%", "--require-condition", REQ)
    assert paused.returncode == 0, paused.stderr
    assert (
        paused.stdout.splitlines()[0]
        == "at 2027-01-13T03:00:00Z; in progress 1 (ceiling 0: paused, nobody new is admitted)"
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--require-condition",
            "bad condition!",
            "--require-condition: 'bad condition!' is not a condition type",
        ),
        ("--max-in-progress", "-1", "--max-in-progress: '-1' is not a count"),
        ("--max-in-progress-per", "zone", "--max-in-progress-per: 'zone' is not KEY=N or KEY=P%"),
        ("--release-delay", "5 minutes", "--release-delay: "),
    ],
)
def test_bad_policy_flags_are_usage_errors_naming_the_flag(
    tmp_path: Path, flag: str, value: str, message: str
) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    done = kumaco("plan", "--windows", str(w), "--nodes", str(nodes_file(tmp_path)), flag, value)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("kumaco plan: " + message), done.stderr


#: Every flag that decides MaintenanceInProgress, with a valid value.
ADMISSION_FLAGS = (
    ("--require-condition", REQ),
    ("--block-condition", "kured.dev/RebootInhibited"),
    ("--max-in-progress-per", "zone=1"),
    ("--release-delay", "5m"),
    ("--in-progress-timeout", "1h"),
    ("--count-unavailable", "true"),
    ("--count-released-unavailable", "30m"),
    ("--admission-cutoff", "30m"),
    ("--respect-pdbs", "true"),
    ("--admission-rate", "1/1h"),
    ("--one-group-at-a-time", "zone"),
    ("--node-min-interval", "1h"),
)


def test_every_admission_flag_names_what_it_needs_in_the_rulebook() -> None:
    from kumaco.core.planning.rulebook import RULEBOOK, flags

    needing = {f.name for f in flags(RULEBOOK) if f.needs_ceiling}
    assert needing | {"--require-condition", "--block-condition"} == {
        f for f, _v in ADMISSION_FLAGS
    }


@pytest.mark.parametrize(("flag", "value"), ADMISSION_FLAGS)
@pytest.mark.parametrize("command", ["plan", "forecast"])
def test_an_admission_flag_without_a_ceiling_is_refused_naming_it(
    tmp_path: Path, command: str, flag: str, value: str
) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    span = ["--from", "2027-01-13T00:00:00Z", "--until", "2027-01-14T00:00:00Z"]
    extra = [*span, "--maintenance-duration", "10m"] if command == "forecast" else []
    args = [command, "--windows", str(w), "--nodes", str(nodes_file(tmp_path)), *extra]
    done = kumaco(*args, f"{flag}={value}")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"kumaco {command}: {flag}: needs --max-in-progress: it decides which nodes get "
        "MaintenanceInProgress, which kumaco manages only under a ceiling (set "
        "--max-in-progress, e.g. --max-in-progress=1, or drop it)\n"
    )
    # With a ceiling, the flag is taken (what else the command needs is another matter).
    assert (
        "needs --max-in-progress"
        not in kumaco(*args, f"{flag}={value}", "--max-in-progress=1").stderr
    )


def test_admission_flags_without_a_ceiling_are_refused_all_at_once_from_the_environment(
    tmp_path: Path,
) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    env = {**os.environ, "KUMACO_ADMISSION_RATE": "1/1h", "KUMACO_ONE_GROUP_AT_A_TIME": "zone"}
    done = subprocess.run(
        [KUMACO, "plan", "--windows", str(w), "--nodes", str(nodes_file(tmp_path))],
        env={**env, "KUMACO_NODE_MIN_INTERVAL": "1h"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "kumaco plan: --node-min-interval, --one-group-at-a-time, --admission-rate: need "
        "--max-in-progress: they decide"
    ), done.stderr


def test_the_output_flag_is_the_format_everywhere(tmp_path: Path) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    span = ["--from", "2027-01-01", "--until", "2027-01-03"]
    target = tmp_path / "out.json"
    done = kumaco("windows", str(w), *span, "-o", "json", "--output-file", str(target))
    assert (done.returncode, done.stdout) == (0, "")
    assert [r["start"] for r in json.loads(target.read_text())] == [
        "2027-01-01T02:00:00Z",
        "2027-01-02T02:00:00Z",
    ]
    assert kumaco("timeline", str(w), *span, "-o", "html").stdout.startswith("<!doctype html>")
    assert kumaco("timeline", str(w), *span, "-o", "json").returncode == 2
    for command in (["validate", str(w)], ["windows", str(w), *span]):
        assert yaml.safe_load(kumaco(*command, "-o", "yaml").stdout) == json.loads(
            kumaco(*command, "-o", "json").stdout
        )
    assert "--output-file PATH" in kumaco("timeline", "--help").stdout


def test_the_calendar_feed_has_one_event_per_occurrence(tmp_path: Path) -> None:
    w = tmp_path / "w.yaml"
    freeze = cm(
        "black-friday",
        {"startTime": "0 0 27 11 *", "duration": "96h", "nodeSelector": "", "freeze": "true"},
        labels={LABEL: ""},
    )
    w.write_text(
        yaml.safe_dump_all(
            [
                cm(
                    "nightly",
                    {**NIGHTLY, "timeZone": "Europe/Berlin", "nodeSelector": "pool=a"},
                    labels={LABEL: ""},
                ),
                freeze,
            ]
        )
    )
    span = ["--from", "2027-11-25", "--until", "2027-12-02"]
    ics = kumaco("windows", str(w), *span, "-o", "ics")
    assert ics.returncode == 0, ics.stderr
    cal = icalendar.Calendar.from_ical(ics.stdout)
    events = list(cal.walk("VEVENT"))
    rows = json.loads(kumaco("windows", str(w), *span, "-o", "json").stdout)
    assert sorted(
        (
            str(e["summary"]).split(": ", 1)[1],
            e.decoded("dtstart").strftime("%Y-%m-%dT%H:%M:%SZ"),
            e.decoded("dtend").strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        for e in events
    ) == sorted((f"{r['namespace']}/{r['name']}", r["start"], r["end"]) for r in rows)
    assert len({str(e["uid"]) for e in events}) == len(events) == len(rows)
    again = icalendar.Calendar.from_ical(
        kumaco(
            "windows", str(w), "--from", "2027-11-26", "--until", "2027-12-02", "-o", "ics"
        ).stdout
    )
    assert {str(e["uid"]) for e in again.walk("VEVENT")} <= {
        str(e["uid"]) for e in events
    }  # stable
    frozen = [e for e in events if "black-friday" in str(e["summary"])]
    assert frozen and all(str(e["summary"]).startswith("Change freeze") for e in frozen)
    nightly = next(e for e in events if "nightly" in str(e["summary"]))
    assert "time zone: Europe/Berlin" in str(
        nightly["description"]
    ) and "nodeSelector: pool=a" in str(nightly["description"])
    assert (
        nightly.decoded("dtstart").tzinfo is not None
        and nightly.decoded("dtstart").utcoffset().total_seconds() == 0
    )


def test_forecast_exit_codes_and_json(tmp_path: Path) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(
        yaml.safe_dump(
            cm(
                "night",
                {"startTime": "0 2 13 1 *", "duration": "2h", "nodeSelector": ""},
                labels={LABEL: ""},
            )
        )
    )
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {
                "conditions": [
                    {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
                ]
            },
        }
        for i in range(5)
    ]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": items}))
    base = [
        "forecast",
        "--windows",
        str(w),
        "--nodes",
        str(nodes),
        "--from",
        "2027-01-13",
        "--until",
        "2027-01-13T06:00:00Z",
        "--max-in-progress",
        "2",
        "--require-condition",
        REQ,
    ]
    fits = kumaco(*base, "--maintenance-duration", "30m", "-o", "json")
    assert fits.returncode == 0, fits.stderr
    doc = json.loads(fits.stdout)
    assert doc["finishedAt"] == "2027-01-13T03:30:00Z" and doc["unfinished"] == []
    assert set(doc) >= {"from", "until", "finishedAt", "nodes", "unfinished"}
    too_long = kumaco(*base, "--maintenance-duration", "90m")
    assert too_long.returncode == 1
    assert "2 did not fit" not in too_long.stdout and "did not fit" in too_long.stdout
    assert kumaco(*base, "--maintenance-duration", "1d").returncode == 2
    picture = kumaco(*base, "--maintenance-duration", "30m", "-o", "svg").stdout
    assert picture.count('class="kt-lane kt-turn"') == 5


def test_policy_flags_come_from_the_environment_for_plan_too(tmp_path: Path) -> None:
    args = [*plan_args(tmp_path), "-o", "json"]
    env = {**os.environ, "KUMACO_MAX_IN_PROGRESS": "2", "KUMACO_REQUIRE_CONDITION": REQ}
    done = subprocess.run([KUMACO, *args], capture_output=True, text=True, env=env, check=False)  # type: ignore[list-item]
    doc = json.loads(done.stdout)
    assert doc["ceilings"][0]["limit"] == 2
    assert [n["name"] for n in doc["nodes"] if n["maintenanceInProgress"]] == ["a1", "a2"]
    flag_wins = subprocess.run(
        [KUMACO, *args, "--max-in-progress", "1"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )  # type: ignore[list-item]
    assert json.loads(flag_wins.stdout)["ceilings"][0]["limit"] == 1


@pytest.mark.parametrize("command", ["windows", "forecast", "plan", "timeline"])
def test_every_command_writes_its_output_file_through_the_one_writer(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--output-file`` (kumaco.cmd.common.write_output): the file, ``-``, and a bad path."""
    from kumaco.cmd import cli

    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(cm("w", NIGHTLY, labels={LABEL: ""})))
    span = ["--from", "2027-01-01", "--until", "2027-01-03"]
    args = {
        "windows": ["windows", str(w), *span],
        "forecast": [
            *("forecast", "--windows", str(w), "--nodes", str(nodes_file(tmp_path))),
            *("--maintenance-duration", "30m", "--require-condition", REQ),
            *("--max-in-progress", "1", *span),
        ],
        "plan": [
            "plan",
            "--windows",
            str(w),
            "--nodes",
            str(nodes_file(tmp_path)),
            "--at",
            "2027-01-02",
        ],
        "timeline": ["timeline", str(w), *span, "--at", "2027-01-02"],  # a fixed "now"
    }[command]
    rc = cli.main([*args, "--output-file", "-"])
    assert rc in (0, 1), capsys.readouterr().err
    to_stdout = capsys.readouterr().out
    target = tmp_path / "out"
    assert cli.main([*args, "--output-file", str(target)]) == rc
    assert capsys.readouterr().out == "" and target.read_text() == to_stdout != ""
    assert cli.main([*args, "--output-file", str(tmp_path / "no" / "such" / "dir")]) == 2
    assert f"--output-file {tmp_path / 'no' / 'such' / 'dir'}: " in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--metrics-bind-address", "--health-probe-bind-address"])
def test_run_with_a_port_in_use_is_a_start_up_error_naming_the_flag(
    flag: str, tmp_path: Path
) -> None:
    """No traceback: one error line naming the flag and the address, exit 1 (start failed)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        others = {"--metrics-bind-address": "0", "--health-probe-bind-address": "0"}
        others[flag] = address
        done = kumaco(
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--namespaces",
            "maintenance",
            *(part for pair in others.items() for part in pair),
        )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    errors = [json.loads(line) for line in done.stderr.splitlines() if '"ERROR"' in line]
    assert len(errors) == 1, done.stderr
    assert errors[0]["msg"] == "cannot listen"
    assert (errors[0]["flag"], errors[0]["address"]) == (flag, address)
    assert "in use" in errors[0]["error"]


def validated(
    tmp_path: Path, name: str, data: dict[str, str], at: str
) -> subprocess.CompletedProcess[str]:
    """``kumaco validate`` of one window ConfigMap ``name`` at ``at``."""
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(cm(name, data, labels={LABEL: ""})))
    return kumaco("validate", str(path), "--at", at)


def test_validate_notes_the_nights_a_half_hour_shift_skips_or_doubles(tmp_path: Path) -> None:
    """Lord Howe's 30-minute shifts: robfig skips 00:00 the day after; each night is named."""
    data = {**NIGHTLY, "startTime": "CRON_TZ=Australia/Lord_Howe 0 0 * * *", "duration": "10m"}
    done = validated(tmp_path, "lord-howe", data, "2026-01-01T00:00:00Z")
    assert (done.returncode, done.stdout) == (0, "valid maintenance/lord-howe\n"), done.stderr
    assert done.stderr.splitlines() == [
        f"warning: maintenance/lord-howe: 00:00 is skipped on {day} in Australia/Lord_Howe "
        "(robfig, after the 30m daylight-saving shift): no window that night"
        for day in ("2026-04-06", "2026-10-05")
    ]


def test_validate_warns_of_a_node_selector_that_can_match_no_node(tmp_path: Path) -> None:
    """The comma is AND: ``zone=a,zone=b`` matches nothing; a LabelSelector is read alike."""
    items = [
        cm(
            "either-zone",
            {**NIGHTLY, "nodeSelector": "zone=zone-a,zone=zone-b"},
            labels={LABEL: ""},
        ),
        cm(
            "structured",
            {
                **NIGHTLY,
                "nodeSelector": "matchExpressions: [{key: pool, operator: Exists},"
                " {key: pool, operator: DoesNotExist}]",
            },
            labels={LABEL: ""},
        ),
        cm("fine", {**NIGHTLY, "nodeSelector": "zone in (zone-a,zone-b)"}, labels={LABEL: ""}),
    ]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    done = kumaco("validate", str(path), "--at", "2026-06-01T00:00:00Z")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "valid maintenance/either-zone",
        "valid maintenance/structured",
        "valid maintenance/fine",
    ]
    assert done.stderr.splitlines() == [
        'warning: maintenance/either-zone nodeSelector "zone=zone-a,zone=zone-b" matches no '
        "node: zone cannot equal zone-a and zone-b at once (the comma is AND); for any of "
        "them, write zone in (zone-a,zone-b)",
        'warning: maintenance/structured nodeSelector "pool,!pool" matches no node: pool '
        "must exist and must not (pool,!pool)",
    ]


def test_validate_says_which_offset_an_etc_gmt_zone_is(tmp_path: Path) -> None:
    """``Etc/GMT+1`` is UTC-01:00 (POSIX's sign): valid, with a warning naming the other one."""
    data = {**NIGHTLY, "timeZone": "Etc/GMT+1"}
    done = validated(tmp_path, "etc", data, "2026-06-01T00:00:00Z")
    assert (done.returncode, done.stdout) == (0, "valid maintenance/etc\n"), done.stderr
    assert done.stderr == (
        "warning: maintenance/etc zone Etc/GMT+1 is UTC-01:00: the Etc/ zones' signs are "
        "inverted (POSIX); for UTC+01:00 write Etc/GMT-1\n"
    )


def test_validate_day_field_warning_says_what_fires_with_days_of_month(tmp_path: Path) -> None:
    """``0 2 15 * SAT`` kept on days 1-7 fires on the first Saturday only: said so."""
    data = {**NIGHTLY, "startTime": "0 2 15 * SAT", "daysOfMonth": "1-7"}
    done = validated(tmp_path, "first-saturday", data, "2026-06-01T00:00:00Z")
    assert (done.returncode, done.stdout) == (0, "valid maintenance/first-saturday\n"), done.stderr
    assert done.stderr == (
        "warning: maintenance/first-saturday fires only on Saturdays on days 1-7 (the first "
        'Saturday of the month): day 15 of startTime is never one of daysOfMonth: "1-7"; '
        'write startTime: "0 2 * * SAT" to say so\n'
    )
