"""What the maintenance manager asked for: nothing silent, through the ``kumaco`` script.

Each case runs the installed console script and checks the exit code and the message
text: checks meant for CI fail on nothing (point 3), the forecast's next chance and
its release-delay waves (point 4), daylight-saving surprises shown (point 5), errors
with a location and a fix (point 6), and "first Saturday of the month" (point 2).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

KUMACO = shutil.which("kumaco", path=str(Path(sys.executable).parent))
LABEL = "kured.dev/maintenance-window"
REQ = "kured.dev/RebootRequired"


def kumaco(
    *args: str, stdin: str | bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    assert KUMACO, "the kumaco console script is not installed in this environment"
    done = subprocess.run(
        [KUMACO, *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def window(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "m",
            "labels": {LABEL: ""} if labels is None else labels,
        },
        "data": {"nodeSelector": "", **data},
    }


def node(name: str, **conditions: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"pool": "a"}},
        "status": {
            "nodeInfo": {"bootID": f"boot-{name}"},
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": "2026-12-01T00:00:00Z"}
                for t, s in {"Ready": "True", **conditions}.items()
            ],
        },
    }


def rejected(*files: str) -> str:
    """``kumaco validate`` of files with an invalid window: exit 1, the verdicts printed."""
    done = kumaco("validate", *files)
    assert done.returncode == 1, done.stderr
    return done.stdout


def write(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def listed(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return str(path)


def six_nodes(tmp_path: Path) -> str:
    return listed(tmp_path / "nodes.yaml", *(node(f"n{i}", **{REQ: "True"}) for i in range(6)))


NIGHTLY = {"startTime": "0 2 * * *", "duration": "4h"}
SPAN = ("--from", "2026-12-19T02:00:00Z", "--until", "2026-12-19T03:00:00Z")


def forecast(windows: str, nodes: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``kumaco forecast`` of 30-minute maintenances (the policy and span in ``args``)."""
    return kumaco(
        "forecast", "--windows", windows, "--nodes", nodes, "--maintenance-duration", "30m", *args
    )


# ----------------------------------------------------------------------------- point 3


def test_validate_of_a_file_whose_only_window_has_a_label_typo_fails(tmp_path: Path) -> None:
    f = write(tmp_path / "w.yaml", window("w", {"kured.dev/maintenance-windwo": ""}, **NIGHTLY))
    for output in ("text", "json"):
        done = kumaco("validate", f, "-o", output)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.splitlines() == [
            "skipping m/w: not selected by --configmap-selector 'kured.dev/maintenance-window'",
            "warning: m/w has the label kured.dev/maintenance-windwo, not "
            "kured.dev/maintenance-window (a typo?): kumaco will ignore it",
            "kumaco validate: no window ConfigMap selected by --configmap-selector "
            "'kured.dev/maintenance-window' in the input: 1 ConfigMap skipped (see above)",
        ]


def test_a_required_condition_no_node_carries_fails_the_forecast_and_warns_in_plan(
    tmp_path: Path,
) -> None:
    w = write(tmp_path / "w.yaml", window("nightly", **NIGHTLY))
    nodes = six_nodes(tmp_path)
    policy = ["--max-in-progress", "1", "--require-condition", "kured.dev/RebootRequierd"]
    done = forecast(w, nodes, *SPAN, *policy)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kumaco forecast: no node in scope carries the condition kured.dev/RebootRequierd "
        "(--require-condition): no node needs maintenance and the forecast checks nothing; "
        "did you mean kured.dev/RebootRequired?\n"
    )
    blocked = ["--block-condition", "kured.dev/RebootInhibited"]
    done = kumaco("plan", "--windows", w, "--nodes", nodes, "--at", SPAN[1], *policy, *blocked)
    assert done.returncode == 0
    assert done.stderr == (
        "warning: no node in scope carries the condition kured.dev/RebootRequierd "
        "(--require-condition): no node can be admitted; did you mean kured.dev/RebootRequired?\n"
        "warning: no node in scope carries the condition kured.dev/RebootInhibited "
        "(--block-condition): it blocks no node\n"
    )
    # A blocking condition nobody carries only warns in a forecast too.
    done = forecast(w, nodes, *SPAN, "--max-in-progress", "1", "--require-condition", REQ, *blocked)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "warning: no node in scope carries the condition kured.dev/RebootInhibited"
    )


def test_windows_and_nodes_swapped_is_an_error_saying_so(tmp_path: Path) -> None:
    w = write(tmp_path / "w.yaml", window("nightly", **NIGHTLY))
    nodes = six_nodes(tmp_path)
    policy = ["--max-in-progress", "1", "--require-condition", REQ]
    swapped = forecast(nodes, w, *SPAN, *policy)
    assert (swapped.returncode, swapped.stdout) == (2, "")
    assert swapped.stderr == (
        "kumaco forecast: the input holds 6 Nodes and no window ConfigMap: were --windows "
        "and --nodes swapped?\n"
    )
    # The ConfigMaps as --nodes: no longer zero nodes.
    done = kumaco("plan", "--windows", w, "--nodes", w, *policy)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"kumaco plan: --nodes {w}: no Node in it (it holds 1 ConfigMap): were --windows and "
        "--nodes swapped?\n"
    )
    assert kumaco("validate", nodes).stderr == (
        "kumaco validate: the input holds 6 Nodes and no window ConfigMap: give the window "
        "ConfigMaps (kubectl get cm -n NAMESPACE -o yaml)\n"
    )


# ----------------------------------------------------------------------------- point 6


def test_yaml_errors_give_the_line_the_column_and_the_fix(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n"
        "  startTime: */5 * * * *\n  duration: 1h\n"
    )
    done = kumaco("validate", str(f))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"kumaco validate: {f}:6:15: not valid YAML/JSON: while scanning an alias, did not find "
        "expected alphabetic or numeric character; a value starting with * is read as a YAML "
        'alias: quote it, startTime: "*/5 * * * *"\n'
    )
    done = kumaco("validate", "-", stdin="data:\n  nodeSelector: zone: a\n")
    assert done.stderr == (
        "kumaco validate: <stdin>:2:21: not valid YAML/JSON: mapping values are not allowed in "
        'this context; a selector uses = (not :) and is quoted: nodeSelector: "zone=a"\n'
    )


def test_binary_input_is_named_as_such(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_bytes(b"kind: ConfigMap\n\xca\xfe\xba\xbe\n")
    expected = (
        "not UTF-8 text (byte 0xca at offset 16): expected YAML or JSON, as kubectl get -o "
        "yaml prints it\n"
    )
    done = kumaco("validate", str(f))
    assert (done.returncode, done.stderr) == (2, f"kumaco validate: {f}: {expected}")
    done = kumaco("validate", "-", stdin=f.read_bytes())
    assert (done.returncode, done.stderr) == (2, f"kumaco validate: <stdin>: {expected}")


def test_value_errors_name_the_fix(tmp_path: Path) -> None:
    f = write(
        tmp_path / "w.yaml",
        window("x", startTime="0 2 * * *", duration="99999999999h", nodeSelector="zone: a"),
    )
    assert rejected(f) == (
        'invalid m/x: duration: invalid duration "99999999999h"; over Go\'s maximum duration, '
        "2562047h47m16.854775807s (about 292 years); nodeSelector: LabelSelector: unknown field "
        "'zone' in the LabelSelector (a selector string goes directly in nodeSelector); a "
        "selector uses = not ':': write 'zone=a' (or put it in matchLabels)\n"
    )
    done = kumaco("plan", "--windows", f, "--nodes", f, "--release-delay", "99999999999h")
    assert (done.returncode, done.stderr) == (
        2,
        'kumaco plan: --release-delay: invalid duration "99999999999h"; over Go\'s maximum '
        "duration, 2562047h47m16.854775807s (about 292 years)\n",
    )


def test_a_document_that_is_not_an_object_is_named_in_yaml_words(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(window("x", **NIGHTLY)) + "---\njust a string\n---\n42\n")
    done = kumaco("validate", str(f))
    assert done.returncode == 1
    assert done.stdout == (
        "valid m/x\n"
        "invalid default/<document 2>: kind: expected a ConfigMap, got a string\n"
        "invalid default/<document 3>: kind: expected a ConfigMap, got an integer\n"
    )


def test_the_same_namespace_and_name_twice_is_flagged(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", window("x", **NIGHTLY))
    b = write(tmp_path / "b.yaml", window("y", **NIGHTLY), window("x", **NIGHTLY))
    done = kumaco("validate", a, b)
    assert done.returncode == 1
    dup = (
        f"invalid m/x: metadata.name: m/x is in the input 2 times ({a}, object 1; {b}, object "
        "2): applied together, the last would replace the others; keep one\n"
    )
    assert done.stdout == dup + "valid m/y\n" + dup
    as_json = json.loads(kumaco("validate", a, b, "-o", "json").stdout)
    assert [e["valid"] for e in as_json] == [False, True, False]
    nodes = listed(tmp_path / "n.yaml", node("n0"), node("n1"), node("n0"))
    done = kumaco("plan", "--windows", a, "--nodes", nodes)
    assert (done.returncode, done.stderr) == (
        2,
        f"kumaco plan: --nodes {nodes}: the node n0 is in it more than once; a node has one "
        "state: keep one\n",
    )


# ----------------------------------------------------------------------------- point 4


def test_the_next_chance_honours_freezes_and_says_for_whom(tmp_path: Path) -> None:
    w = write(
        tmp_path / "w.yaml",
        window("nightly", startTime="0 2 * * *", duration="4h", nodeSelector="pool=a"),
        window("xmas", startTime="0 23 19 12 *", duration="336h", freeze="true"),
    )
    gpu = node("gpu0", **{REQ: "True"})
    gpu["metadata"]["labels"] = {"pool": "gpu"}
    blocked = node("n9", **{REQ: "True", "kured.dev/RebootInhibited": "True"})
    nodes = listed(
        tmp_path / "n.yaml", *(node(f"n{i}", **{REQ: "True"}) for i in range(4)), gpu, blocked
    )
    span = ("--from", "2026-12-19T02:00:00Z", "--until", "2026-12-19T23:30:00Z")
    policy = ("--max-in-progress", "1", "--require-condition", REQ)
    done = kumaco(
        *("forecast", "--windows", w, "--nodes", nodes, "--maintenance-duration", "3h"),
        *(*span, *policy, "--block-condition", "kured.dev/RebootInhibited"),
    )
    assert (done.returncode, done.stderr) == (1, "")
    # The freeze runs 2026-12-19T23:00Z to 2027-01-02T23:00Z: the next chance comes after it.
    assert done.stdout.splitlines()[-5:] == [
        "2 of 6 nodes finished by 2026-12-19T08:00:00Z; 3 did not fit: n2, n3, n9; 1 in no window",
        "next chance: 2027-01-03T02:00:00Z (m/nightly) for n2, n3",
        "no chance: n9 (blocked by condition: kured.dev/RebootInhibited; a forecast keeps "
        "conditions and ceilings as they are)",
        "in no window: gpu0 (selected by no maintenance window)",
        # asked 2026-12-01T00:00Z, not admitted by --until: 18 days 23 h 30 min (the blocked
        # n9 does not wait: it does not ask to be admitted)
        "longest waits from the request: gpu0 455h30m0s (not admitted), n2 455h30m0s "
        "(not admitted), n3 455h30m0s (not admitted)",
    ]


def test_release_delays_add_no_second_to_the_forecasts_waves(tmp_path: Path) -> None:
    w = write(tmp_path / "w.yaml", window("nightly", **NIGHTLY))
    done = forecast(
        w,
        six_nodes(tmp_path),
        *("--from", "2026-12-10T02:00:00Z", "--until", "2026-12-10T06:00:00Z"),
        *("--max-in-progress", "2", "--require-condition", REQ, "--release-delay", "10m"),
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [(n["admitted"][11:], n["finished"][11:]) for n in doc["nodes"]] == [
        ("02:00:00Z", "02:30:00Z"),
        ("02:00:00Z", "02:30:00Z"),
        ("02:40:00Z", "03:10:00Z"),
        ("02:40:00Z", "03:10:00Z"),
        ("03:20:00Z", "03:50:00Z"),
        ("03:20:00Z", "03:50:00Z"),
    ]
    assert doc["finishedAt"] == "2026-12-10T03:50:00Z"


# ----------------------------------------------------------------------------- point 2


def test_both_day_fields_restricted_warns_and_days_of_month_writes_the_first_saturday(
    tmp_path: Path,
) -> None:
    either = write(tmp_path / "either.yaml", window("w", startTime="0 1 1-7 * SAT", duration="3h"))
    done = kumaco("validate", either)
    assert (done.returncode, done.stdout) == (0, "valid m/w\n")
    warning = (
        "fires on days 1-7 of the month OR on Saturdays (robfig's rule when both day fields "
        'are restricted); for the first Saturday of the month only, write startTime: "0 1 * * '
        'SAT" with daysOfMonth: "1-7"'
    )
    assert done.stderr == f"warning: m/w {warning}\n"
    assert json.loads(kumaco("validate", either, "-o", "json").stdout)[0]["warnings"] == [warning]

    first = write(
        tmp_path / "first.yaml",
        window("w", startTime="0 1 * * SAT", daysOfMonth="1-7", duration="3h"),
    )
    done = kumaco("validate", first)
    assert (done.returncode, done.stdout, done.stderr) == (0, "valid m/w\n", "")
    span = ("--from", "2026-12-01", "--until", "2027-03-01")
    done = kumaco("windows", first, *span)
    assert (done.returncode, done.stdout) == (
        0,
        "2026-12-05T01:00:00Z  2026-12-05T04:00:00Z  m/w\n"
        "2027-01-02T01:00:00Z  2027-01-02T04:00:00Z  m/w\n"
        "2027-02-06T01:00:00Z  2027-02-06T04:00:00Z  m/w\n",
    )
    calendar = kumaco("windows", first, *span, "-o", "ics").stdout
    assert calendar.count("BEGIN:VEVENT") == 3 and "daysOfMonth: 1-7" in calendar
    page = kumaco("timeline", first, *span, "-o", "html").stdout
    assert "on days <code>1-7</code>" in page
    picture = kumaco("timeline", first, *span, "-o", "svg").stdout
    assert "days 1-7" in picture and "daysOfMonth: 1-7" in picture


def test_quartz_nth_weekday_points_at_days_of_month(tmp_path: Path) -> None:
    f = write(
        tmp_path / "w.yaml",
        window("w", startTime="CRON_TZ=Europe/Berlin 0 1 * * 6#1", duration="3h"),
    )
    assert rejected(f) == (
        "invalid m/w: startTime: day of week: value '6#1' is not a number in '6#1'; Quartz's # is "
        "not supported by robfig's cron; for the first Saturday of the month write startTime: "
        '"CRON_TZ=Europe/Berlin 0 1 * * 6" with daysOfMonth: "1-7"\n'
    )


def test_days_of_month_mistakes_are_named(tmp_path: Path) -> None:
    f = write(
        tmp_path / "w.yaml",
        window("a", startTime="0 1 * * SAT", duration="3h", daysOfMonth="0-6"),
        window("b", startTime="0 1 15 * *", duration="3h", daysOfMonth="1-7"),
        window("c", startTime="0 1 * * SAT", duration="3h", daysofmonth="1-7"),
    )
    assert rejected(f) == (
        "invalid m/a: daysOfMonth: day of month: 0 is below the minimum 1 in '0-6'\n"
        "invalid m/b: daysOfMonth: '1-7' and startTime '0 1 15 * *' never meet: no firing "
        "falls on these days\n"
        "invalid m/c: daysofmonth: is not a window key: did you mean daysOfMonth? (keys are "
        "case-sensitive)\n"
    )


# ----------------------------------------------------------------------------- point 5

BERLIN = {"startTime": "CRON_TZ=Europe/Berlin 0 2 * * SUN", "duration": "3h"}
SKIPPED = "02:00 does not exist on 2026-03-29 in Europe/Berlin: no window that night"
LONGER = (
    "02:00 happens twice on 2026-10-25 in Europe/Berlin: the window opens at "
    "2026-10-25T00:00:00Z and again at 2026-10-25T01:00:00Z, and is open 4h in one piece "
    "(until 2026-10-25T04:00:00Z)"
)


def test_validate_says_what_daylight_saving_time_does_in_the_coming_year(tmp_path: Path) -> None:
    f = write(tmp_path / "w.yaml", window("sunday", **BERLIN))
    done = kumaco("validate", f, "--at", "2026-01-01")
    assert (done.returncode, done.stdout) == (0, "valid m/sunday\n")
    assert done.stderr == f"warning: m/sunday: {SKIPPED}\nwarning: m/sunday: {LONGER}\n"
    as_json = json.loads(kumaco("validate", f, "--at", "2026-01-01", "-o", "json").stdout)
    assert as_json[0]["warnings"] == [SKIPPED, LONGER]
    # The coming year from --at: after the fall-back of 2026, only 2027's changes.
    later = kumaco("validate", f, "--at", "2026-11-01").stderr
    assert "2027-03-28" in later and "2027-10-31" in later and "2026-" not in later


def test_windows_says_so_and_shows_local_time_beside_utc(tmp_path: Path) -> None:
    f = write(tmp_path / "w.yaml", window("sunday", **BERLIN))
    done = kumaco("windows", f, "--from", "2026-03-20", "--until", "2026-04-06", "-o", "wide")
    assert done.returncode == 0
    assert done.stdout == (
        "2026-03-22T01:00:00Z  2026-03-22T04:00:00Z  m/sunday  Sun 2026-03-22 02:00 CET - "
        "05:00 CET (Europe/Berlin)\n"
        "2026-04-05T00:00:00Z  2026-04-05T03:00:00Z  m/sunday  Sun 2026-04-05 02:00 CEST - "
        "05:00 CEST (Europe/Berlin)\n"
    )
    assert done.stderr == f"warning: m/sunday: {SKIPPED}\n"
    done = kumaco("windows", f, "--from", "2026-10-24", "--until", "2026-10-26", "-o", "wide")
    assert done.stdout == (
        "2026-10-25T00:00:00Z  2026-10-25T04:00:00Z  m/sunday  Sun 2026-10-25 02:00 CEST - "
        "05:00 CET (Europe/Berlin)\n"
    )
    assert done.stderr == f"warning: m/sunday: {LONGER}\n"
    # Outside the changes: nothing to say.
    quiet = kumaco("windows", f, "--from", "2026-05-01", "--until", "2026-06-01")
    assert (quiet.returncode, quiet.stderr) == (0, "")
