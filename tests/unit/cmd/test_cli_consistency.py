"""One command line for ``kumaco`` and ``kubectl kumaco``: the same flags, output and errors.

Through the installed console scripts where the contract is what a user types: the window
files as ``FILE`` or ``--windows FILE`` for every command, ``--output-file`` everywhere,
``windows``' defaults and ``now``, unknown ``KUMACO_*`` variables, and the calendar's
updates (RFC 5545 ``SEQUENCE``/``DTSTAMP``). The parsers themselves for what every flag
must have: a help line stating its default, and one metavar in both programs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import icalendar
import pytest
import yaml

from kumaco.cmd import cli, kubectl
from kumaco.cmd.flags import NOT_FLAGS, env_names
from kumaco.cmd.registry import HelpFormatter
from tests.support.builders import cli as script

ROOT = Path(__file__).resolve().parents[3]
LABEL = "kured.dev/maintenance-window"
REQ = "kured.dev/RebootRequired"
NIGHTLY = {"startTime": "0 2 * * *", "duration": "3h", "nodeSelector": ""}


def kumaco(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return script.kumaco(*args, stdin=stdin, env=env)


def window(name: str, data: dict[str, str]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "maintenance", "labels": {LABEL: ""}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A nightly window (02:00 UTC, 3h) and two nodes needing a reboot."""
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(window("nightly", NIGHTLY)))
    cond = {"type": REQ, "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    items = [
        {"kind": "Node", "metadata": {"name": n}, "status": {"conditions": [cond]}}
        for n in ("n1", "n2")
    ]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": items}))
    return w, nodes


def parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for program in (cli.build_parser(), kubectl.build_parser()):
        yield program.prog, program
        sub = next(a for a in program._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            yield f"{program.prog} {name}", p


def flags(p: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in p._actions:
        if action.option_strings and action.dest not in ("help", "version"):
            yield action


# --- point 8: --help and metavars ---------------------------------------------------------


def test_every_flag_has_a_help_line_that_states_its_default() -> None:
    missing = []
    for where, p in parsers():
        formatter = HelpFormatter(where)
        for action in flags(p):
            text = formatter._get_help_string(action)
            if not text or text == argparse.SUPPRESS:
                missing.append(f"{where} {action.option_strings[-1]}: no help line")
            elif not action.required and "default" not in text:
                missing.append(f"{where} {action.option_strings[-1]}: no default in {text!r}")
    assert missing == []


def test_help_shows_the_defaults_set_in_code_and_by_the_environment() -> None:
    run_help = kumaco("run", "--help").stdout
    flat = " ".join(run_help.split())
    assert "--write-concurrency N parallel status writes (default: 16)" in flat
    assert "--leader-elect-lease-duration DURATION how long a Lease holds without renewal " in flat
    assert "(default: 15s)" in flat and "--log-level {debug,info,warning,error}" in flat
    assert "KUMACO_<FLAG>" in flat  # the epilog of the commands that read the environment
    env = {**os.environ, "KUMACO_WRITE_CONCURRENCY": "4"}
    assert "parallel status writes (default: 4)" in " ".join(
        kumaco("run", "--help", env=env).stdout.split()
    )


def test_a_flag_has_one_metavar_in_every_command_of_both_programs() -> None:
    seen: dict[str, set[str | None]] = {}
    for _where, p in parsers():
        for action in flags(p):
            if action.choices is None and action.nargs != 0:  # a switch (-w) takes no value
                meta = action.metavar if isinstance(action.metavar, str | None) else "?"
                seen.setdefault(action.option_strings[-1], set()).add(meta)
    disagree = {flag: metas for flag, metas in seen.items() if len(metas) != 1 or None in metas}
    assert disagree == {}
    assert seen["--namespaces"] == {"NS[,NS...]"} and seen["--kubeconfig"] == {"PATH"}


# --- point 8: the window files, either way -------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "windows", "plan", "forecast", "timeline"])
def test_window_files_are_positional_or_windows_for_every_command(
    command: str, files: tuple[Path, Path]
) -> None:
    w, nodes = files
    rest = {
        "validate": [],
        "windows": ["--from", "2027-01-13", "--until", "2027-01-15"],
        "plan": ["--nodes", str(nodes), "--at", "2027-01-13T03:00:00Z"],
        "forecast": [
            *("--nodes", str(nodes), "--from", "2027-01-13", "--until", "2027-01-14"),
            *("--maintenance-duration", "1h", "--max-in-progress", "1"),
            *("--require-condition", REQ),
        ],
        "timeline": ["--from", "2027-01-13", "--until", "2027-01-15", "--at", "2027-01-13"],
    }[command]
    positional = kumaco(command, str(w), *rest)
    flagged = kumaco(command, "--windows", str(w), *rest)
    assert positional.returncode == 0, positional.stderr
    assert (flagged.returncode, flagged.stdout, flagged.stderr) == (
        positional.returncode,
        positional.stdout,
        positional.stderr,
    )
    assert positional.stdout != ""
    after = kumaco(command, *rest, str(w))  # the file after the flags, as kubectl allows
    assert (after.returncode, after.stdout) == (0, positional.stdout)
    none = kumaco(command, *rest)
    assert none.returncode == 2 and none.stdout == ""
    assert none.stderr == (
        f"kumaco {command}: no window file given: name it as FILE or --windows FILE "
        f"('-' reads standard input), e.g. kubectl get cm -n maintenance -o yaml | "
        f"kumaco {command} -\n"
    )


def test_validate_writes_its_output_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    w, _nodes = files
    target = tmp_path / "verdicts.json"
    done = kumaco("validate", str(w), "-o", "json", "--output-file", str(target))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert json.loads(target.read_text()) == [
        {"namespace": "maintenance", "name": "nightly", "valid": True, "errors": [], "warnings": []}
    ]
    bad = kumaco("validate", str(w), "--output-file", str(tmp_path / "no" / "dir"))
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"kumaco validate: --output-file {tmp_path / 'no' / 'dir'}: ")


def test_every_command_that_prints_has_output_file() -> None:
    without = [
        where
        for where, p in parsers()
        if " " in where.removeprefix("kubectl ")
        and where not in ("kumaco run", "kumaco notify")  # notify reports, prints nothing
        and "--output-file" not in {o for a in p._actions for o in a.option_strings}
    ]
    assert without == []


# --- point 8: windows' range defaults and now ------------------------------------------------


def test_windows_defaults_to_seven_days_from_the_hour_of_at(files: tuple[Path, Path]) -> None:
    w, _nodes = files
    done = kumaco("windows", str(w), "--at", "2027-03-20T10:30:00Z")
    assert done.returncode == 0, done.stderr
    # From 10:00 on the 20th (the hour of --at) to 10:00 on the 27th: the nights of the
    # 21st to the 27th (the 20th's 02:00-05:00 is over by 10:00).
    assert done.stdout == "".join(
        f"2027-03-{d}T02:00:00Z  2027-03-{d}T05:00:00Z  maintenance/nightly\n"
        for d in range(21, 28)
    )
    explicit = kumaco(
        "windows", str(w), "--from", "2027-03-20T10:00:00Z", "--until", "2027-03-27T10:00:00Z"
    )
    assert explicit.stdout == done.stdout


def test_now_is_a_time_for_every_time_flag(files: tuple[Path, Path]) -> None:
    w, nodes = files
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = json.loads(
        kumaco("windows", str(w), "--from", "now", "--until", later, "-o", "json").stdout
    )
    assert len(rows) in (3, 4)  # three nights ahead, and tonight's if it is still open
    at = json.loads(
        kumaco("plan", str(w), "--nodes", str(nodes), "--at", "NOW", "-o", "json").stdout
    )
    stamp = dt.datetime.strptime(at["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert abs((dt.datetime.now(dt.UTC) - stamp).total_seconds()) < 60
    bad = kumaco("windows", str(w), "--from", "tomorrow")
    assert (
        bad.returncode == 2
        and "kumaco windows: --from: 'tomorrow' is not an RFC 3339 time" in bad.stderr
    )


# --- point 11: unknown KUMACO_* variables -------------------------------------------------


@pytest.mark.parametrize("command", ["run", "plan", "forecast"])
def test_an_unknown_kumaco_variable_is_an_error_naming_the_closest_flag(
    command: str, files: tuple[Path, Path]
) -> None:
    w, nodes = files
    env = {**os.environ, "KUMACO_REQUIRE_CONDITIONS": REQ}
    args = {
        "run": ["--namespaces", "maintenance", "--kubeconfig", "/nonexistent"],
        "plan": [str(w), "--nodes", str(nodes)],
        "forecast": [
            *(str(w), "--nodes", str(nodes), "--from", "now", "--until", "now"),
            *("--maintenance-duration", "1h"),
        ],
    }[command]
    done = kumaco(command, *args, env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"kumaco {command}: environment variable KUMACO_REQUIRE_CONDITIONS sets no flag: "
        "did you mean KUMACO_REQUIRE_CONDITION (--require-condition)?\n"
    )
    far = kumaco(command, *args, env={**os.environ, "KUMACO_WHATEVER": "1"})
    assert far.returncode == 2
    assert far.stderr == (
        f"kumaco {command}: environment variable KUMACO_WHATEVER sets no flag: each flag of "
        f"kumaco {command} is KUMACO_<FLAG> (kumaco {command} --help)\n"
    )


def test_the_controllers_variables_are_known_to_plan_and_offline_commands_ignore_them(
    files: tuple[Path, Path],
) -> None:
    w, nodes = files
    env = {**os.environ, "KUMACO_LEADER_ELECT": "true", "KUMACO_SETUP_DONE": "1"}
    plan = kumaco("plan", str(w), "--nodes", str(nodes), "--at", "2027-01-13", env=env)
    assert plan.returncode == 0, plan.stderr
    typo = {**os.environ, "KUMACO_REQUIRE_CONDITIONS": REQ}
    assert kumaco("validate", str(w), env=typo).returncode == 0  # reads no variable


def _tool_variables() -> set[str]:
    """The KUMACO_* names hack/, tools/, tests/ and .ci/ read or set (this file aside)."""
    pattern = re.compile(
        r"[\"']KUMACO_[A-Z0-9_]+[\"']|\$\{?KUMACO_[A-Z0-9_]+|export KUMACO_[A-Z0-9_]+"
        r"|^\s*KUMACO_[A-Z0-9_]+=",
        re.M,
    )
    found: set[str] = set()
    for top in ("hack", "tools", "tests", ".ci"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".sh") and path != Path(__file__):
                for m in pattern.findall(path.read_text(errors="replace")):
                    found.add(re.search(r"KUMACO_[A-Z0-9_]+", m).group())  # type: ignore[union-attr]
    return found


def test_the_variables_that_are_not_flags_are_exactly_the_tools_ones() -> None:
    """NOT_FLAGS neither misses a variable the tools read nor keeps one they dropped."""
    flagged = set(env_names(next(p for w, p in parsers() if w == "kumaco run")))
    assert _tool_variables() - flagged == set(NOT_FLAGS)


# --- point 7: calendar updates --------------------------------------------------------------


def _events(text: str) -> dict[str, Any]:
    return {str(e["uid"]): e for e in icalendar.Calendar.from_ical(text).walk("VEVENT")}


def test_a_changed_window_is_an_update_of_the_same_event(tmp_path: Path) -> None:
    """RFC 5545: same UID, higher SEQUENCE, later DTSTAMP; a client that keeps the greater
    (SEQUENCE, DTSTAMP), as RFC 5546 orders revisions, shows the new end."""
    w = tmp_path / "w.yaml"
    span = ["--from", "2027-01-13", "--until", "2027-01-15", "-o", "ics"]
    w.write_text(yaml.safe_dump(window("nightly", NIGHTLY)))
    first = kumaco("windows", str(w), *span, "--at", "2027-01-10T08:00:00Z")
    again = kumaco("windows", str(w), *span, "--at", "2027-01-10T08:00:00Z")
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout  # deterministic for an input and --at
    assert "METHOD:PUBLISH" in first.stdout
    w.write_text(yaml.safe_dump(window("nightly", {**NIGHTLY, "duration": "4h"})))
    second = kumaco("windows", str(w), *span, "--at", "2027-01-11T09:30:15Z")
    old, new = _events(first.stdout), _events(second.stdout)
    assert set(old) == set(new) and len(old) == 2  # the same two occurrences, the same UIDs
    # SEQUENCE: the seconds from 2020-01-01T00:00:00Z to DTSTAMP (hand-computed).
    start_2027 = 1_798_761_600 - 1_577_836_800  # 2027-01-01 - 2020-01-01, in seconds
    assert {int(e["sequence"]) for e in old.values()} == {start_2027 + 9 * 86400 + 8 * 3600}
    assert {int(e["sequence"]) for e in new.values()} == {
        start_2027 + 10 * 86400 + 9 * 3600 + 30 * 60 + 15
    }
    kept: dict[str, Any] = {}
    for feed in (old, new, old):  # a stale copy of the old feed arriving late loses too
        for uid, event in feed.items():
            mine = kept.get(uid)
            rank = (int(event["sequence"]), event.decoded("dtstamp"))
            if mine is None or rank > (int(mine["sequence"]), mine.decoded("dtstamp")):
                kept[uid] = event
    assert sorted(e.decoded("dtend").strftime("%dT%H:%MZ") for e in kept.values()) == [
        "13T06:00Z",
        "14T06:00Z",
    ]
    for event in new.values():
        assert event.decoded("dtstamp") == dt.datetime(2027, 1, 11, 9, 30, 15, tzinfo=dt.UTC)
        assert event.decoded("last-modified") == event.decoded("dtstamp")


# --- point 11: the effective policy, in the start-up log and a metric -------------------------

RUN = [
    *("run", "--kubeconfig", "/nonexistent", "--namespaces", "maintenance"),
    *("--metrics-bind-address", "0", "--health-probe-bind-address", "0"),
    *("--max-in-progress-per", "topology.kubernetes.io/zone=1", "--release-delay", "10m"),
]
EFFECTIVE = {
    "namespaces": "maintenance",
    "configmapSelector": "kured.dev/maintenance-window",
    "nodeSelector": "",
    "maxInProgress": "2",  # from KUMACO_MAX_IN_PROGRESS
    "requireCondition": "kured.dev/RebootRequired,example.com/Drained",
    "blockCondition": "",
    "maxInProgressPer": "topology.kubernetes.io/zone=1",
    "releaseDelay": "10m",
    "inProgressTimeout": "",
    "countUnavailable": "false",
    "countReleasedUnavailable": "",
    "admissionCutoff": "",
    "plannedLead": "",
    "admissionRate": "",
    "oneGroupAtATime": "",
    "nodeMinInterval": "",
    "respectPdbs": "false",
    "underMaintenanceCondition": "kured.dev/UnderMaintenance",
    "inProgressCondition": "MaintenanceInProgress",
    "plannedCondition": "MaintenancePlanned",
    "leaderElectionId": "kumaco",
    "leaderElectionNamespace": "maintenance",
    "fieldManager": "kumaco/kumaco",
}
ENV = {"KUMACO_MAX_IN_PROGRESS": "2", "KUMACO_REQUIRE_CONDITION": f"{REQ},example.com/Drained"}


def test_the_start_up_log_shows_the_effective_policy() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POD_")}
    done = kumaco(*RUN, env={**env, **ENV})
    assert done.returncode == 1  # no credentials: it logged how it was configured first
    starting = json.loads(done.stderr.splitlines()[0])
    assert starting["msg"] == "starting"
    assert starting["policy"] == EFFECTIVE


def test_the_policy_info_metric_has_a_label_per_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from kumaco.cmd.settings import settings_from_args
    from kumaco.controller.metrics import Metrics

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    args = cli.build_parser().parse_args(RUN)
    settings = settings_from_args(args, {**ENV, "POD_NAMESPACE": "maintenance"})
    metrics = Metrics()
    metrics.set_policy(settings.configuration)
    families = text_string_to_metric_families(generate_latest(metrics.registry).decode())
    [sample] = next(f for f in families if f.name == "kumaco_policy_info").samples
    assert (sample.name, sample.value) == ("kumaco_policy_info", 1.0)
    assert sample.labels == {
        re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), key): value
        for key, value in EFFECTIVE.items()
    }
