"""``kumaco convert``: kured v1's reboot schedule and flags as window ConfigMaps and flags.

Contract: :data:`CONVERT` is the command (:mod:`kumaco.cmd.registry`; ``kumaco`` only,
no input file). It takes kured v1's own flags, with kured's defaults and value syntax
(``--reboot-days`` comma-separated or repeated, ``--blocking-pod-selector`` repeated),
all of them: those kumaco has no equivalent of
(:data:`~kumaco.migration.kuredv1.NO_EQUIVALENT`, ``--period``, ``--ds-name``, ...) are
checked as kured checks their values and become notes; a flag kured does not have is a
usage error naming it. It converts them with :func:`kumaco.migration.kuredv1.convert`
and prints through
:data:`CONVERSIONS` (:mod:`kumaco.views.conversion`): by default a YAML stream of the
window ConfigMaps for ``kubectl apply -f``, the kumaco and kured v2 ``reboot-inhibitors``
flags and the notes in comments before it. What cannot be kept exactly is a warning on
standard error (``warning: ...``) and in the JSON/YAML document. Exit 0 converted, 2 a
value kured itself would refuse (naming kured's flag) or another usage error.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
from collections.abc import Mapping
from dataclasses import replace
from typing import TextIO

from kumaco.cmd.common import EXIT_OK, Output, now_ns
from kumaco.cmd.flags import UsageError, duration_flag, parse_bool
from kumaco.cmd.registry import KUMACO, Command, Source
from kumaco.core.errors import InvalidInput
from kumaco.migration.kuredv1 import NO_EQUIVALENT, Conversion, KuredFlags, convert, regexp_error
from kumaco.migration.shoutrrr import NOTIFY_FLAGS, convert_notify
from kumaco.views import conversion
from kumaco.views.conversion import Converted

CONVERSIONS: Output[Converted] = Output(
    conversion.CONVERSION,
    "text",
    "format: text is the ConfigMaps as YAML with the flags in comments, for kubectl apply "
    "-f; json and yaml the whole document (default: text)",
)
DEFAULTS = KuredFlags()


def _days(values: list[str] | None) -> tuple[str, ...]:
    """``--reboot-days`` as kured's pflag string slice reads it: CSV, repeatable."""
    if values is None:
        return DEFAULTS.reboot_days
    return tuple(day for value in values for row in csv.reader([value]) for day in row)


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def _go_int(text: str) -> int:
    """An int flag's value as pflag takes it (Go's ``ParseInt(text, 0, 64)``: 0x1f, 010)."""
    try:
        return int(text, 0)
    except ValueError:
        return int(text, 8 if text.lstrip("+-").startswith("0") else 10)


def _no_equivalent(args: argparse.Namespace) -> tuple[str, ...]:
    """The flags given that kumaco has no equivalent of, their values checked as kured does."""
    given = []
    for flag, (kind, _note) in NO_EQUIVALENT.items():
        value = getattr(args, _dest(flag))
        if value is None:
            continue
        if kind == "duration":
            duration_flag(flag, value)
        elif kind == "int":
            try:
                _go_int(value)
            except ValueError:
                raise UsageError(f"{flag}: {value!r} is not a number") from None
        given.append(flag)
    return tuple(given)


#: The kinds (as :data:`~kumaco.migration.kuredv1.NO_EQUIVALENT`'s, ``array`` for pflag's
#: string array: repeatable, no comma-splitting) of kured v1's flags that are converted.
CONVERTED: dict[str, str] = {
    "--reboot-days": "list",
    "--start-time": "string",
    "--end-time": "string",
    "--time-zone": "string",
    "--concurrency": "int",
    "--blocking-pod-selector": "array",
    "--prometheus-url": "string",
    "--alert-filter-regexp": "regexp",
    "--alert-firing-only": "bool",
    "--alert-filter-match-only": "bool",
    "--lock-ttl": "duration",
    "--lock-release-delay": "duration",
}


def env_name(flag: str) -> str:
    """The variable kured v1 reads for ``flag`` (its ``flagToEnvVar``): ``KURED_REBOOT_DAYS``."""
    return "KURED_" + flag[2:].upper().replace("-", "_")


#: What Go's ``strconv.ParseBool`` (a pflag bool's ``Set``) accepts.
GO_BOOLS = frozenset(
    ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")
)


def _refused(flag: str, kind: str, text: str) -> str | None:
    """Why kured's flag would refuse ``text`` (its pflag ``Set``), or None."""
    try:
        if kind == "duration":
            duration_flag(flag, text)
        elif kind == "int":
            _go_int(text)
        elif kind == "bool" and text not in GO_BOOLS:
            raise ValueError(text)
        elif kind == "regexp":
            return regexp_error(text)
    except UsageError as exc:
        return str(exc).removeprefix(f"{flag}: ")
    except (ValueError, argparse.ArgumentTypeError):
        return f"{text!r} is not a {'number' if kind == 'int' else 'boolean'}"
    return None


def _read_env(args: argparse.Namespace, env: Mapping[str, str]) -> list[str]:
    """Each kured flag not on the command line from its ``KURED_<FLAG>``, as kured v1 reads it.

    kured (viper) sets a flag not given from its variable when that is not empty, as one
    pflag ``Set`` of the whole text (a list's is comma-separated, an array's one item); it
    does not check that ``Set``'s error: a value the flag refuses is ignored, the flag keeps
    its default. That is a warning here.
    """
    warnings = []
    kinds = {**CONVERTED, **{flag: kind for flag, (kind, _note) in NO_EQUIVALENT.items()}}
    kinds.update(dict.fromkeys(NOTIFY_FLAGS, "string"))
    for flag, kind in kinds.items():
        name, dest = env_name(flag), _dest(flag)
        text = env.get(name, "")
        if getattr(args, dest) is not None or not text:
            continue
        reason = _refused(flag, kind, text)
        if reason is not None:
            warnings.append(
                f"{name}: {reason}; kured v1 ignores a variable its flag refuses (it does not "
                f"check that error): {flag} keeps its default, and so does the conversion"
            )
            continue
        value: object = text
        if kind in ("list", "array"):
            value = [text]
        elif kind == "bool":
            value = parse_bool(text)
        setattr(args, dest, value)
    return warnings


def _flags(args: argparse.Namespace, env: Mapping[str, str]) -> KuredFlags:
    env_warnings = _read_env(args, env)
    try:
        concurrency = int(args.concurrency or "1")
    except ValueError:
        raise UsageError(f"--concurrency: {args.concurrency!r} is not a number") from None
    return KuredFlags(
        reboot_days=_days(args.reboot_days),
        start_time=args.start_time or DEFAULTS.start_time,
        end_time=args.end_time or DEFAULTS.end_time,
        time_zone=args.time_zone or DEFAULTS.time_zone,
        concurrency=concurrency,
        blocking_pod_selectors=tuple(args.blocking_pod_selector or ()),
        prometheus_url=args.prometheus_url or "",
        alert_filter_regexp=args.alert_filter_regexp or "",
        alert_firing_only=bool(args.alert_firing_only),
        alert_filter_match_only=bool(args.alert_filter_match_only),
        lock_ttl=duration_flag("--lock-ttl", args.lock_ttl),
        lock_release_delay=duration_flag("--lock-release-delay", args.lock_release_delay),
        no_equivalent=_no_equivalent(args),
        warnings=tuple(env_warnings),
    )


def _source(flags: KuredFlags) -> str:
    """The kured flags converted, as one command line (the defaults left out)."""
    parts = ["kured v1"]
    if flags.reboot_days != DEFAULTS.reboot_days:
        parts.append("--reboot-days=" + ",".join(flags.reboot_days))
    for flag, value, default in (
        ("--start-time", flags.start_time, DEFAULTS.start_time),
        ("--end-time", flags.end_time, DEFAULTS.end_time),
        ("--time-zone", flags.time_zone, DEFAULTS.time_zone),
    ):
        if value != default:
            parts.append(f"{flag}={value}")
    return " ".join(shlex.quote(p) if p != "kured v1" else p for p in parts)


def _convert(args: argparse.Namespace, _source_: Source, out: TextIO, err: TextIO) -> int:
    flags = _flags(args, os.environ)
    try:
        result = convert(flags, now_ns())
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
    result = _with_notifications(result, args)
    converted = Converted(result, args.name, args.namespace, _source(flags))
    CONVERSIONS.write(converted, args, out)
    out.flush()
    for warning in result.warnings:
        err.write(f"warning: {warning}\n")
    return EXIT_OK


def _with_notifications(result: Conversion, args: argparse.Namespace) -> Conversion:
    """Kured v1's notification flags (shoutrrr) converted (:mod:`kumaco.migration.shoutrrr`)."""
    given = {f: v for f in NOTIFY_FLAGS if (v := getattr(args, _dest(f))) is not None}
    notify = convert_notify(given)
    return replace(
        result,
        kumaco_flags=(*result.kumaco_flags, *notify.flags),
        notes=(*result.notes, *notify.notes),
        warnings=(*result.warnings, *notify.warnings),
    )


def _add_notify_flags(p: argparse.ArgumentParser) -> None:
    """Kured v1's notification flags: converted to ``kumaco run``'s --notify-url and templates."""
    group = p.add_argument_group(
        "kured v1's notification flags (shoutrrr's Slack, Teams, SMTP and generic-webhook URLs "
        "become Apprise's for kumaco run --notify-url)"
    )
    for flag in NOTIFY_FLAGS:
        metavar = "URL" if flag.endswith("-url") else "STRING"  # kumaco run's --notify-url's
        group.add_argument(flag, metavar=metavar, help="kured v1's flag (default: kured's)")


def _convert_flags(p: argparse.ArgumentParser, _cluster: bool) -> None:
    p.usage = (
        "%(prog)s [kured v1's flags ...] [--name NAME] [-n NS] [--output {text,json,yaml}] "
        "[--output-file PATH]"
    )
    kured = p.add_argument_group(
        "kured v1's flags (its defaults, its syntax; or KURED_<FLAG>, as kured reads it)"
    )
    add = kured.add_argument
    add(
        "--reboot-days",
        action="append",
        metavar="DAYS",
        help="reboot days: su, mon, tuesday, ... or 0-6, comma-separated or repeated "
        "(default: every day)",
    )
    add(
        "--start-time",
        metavar="T",
        help="time of day (15:04, 3pm, ...; default: 0:00)",
    )
    add("--end-time", metavar="T", help="time of day, inclusive (default: 23:59:59)")
    add("--time-zone", metavar="ZONE", help="the zone of those times (default: UTC)")
    add("--concurrency", metavar="N", help="nodes rebooting at once (default: 1)")
    add(
        "--blocking-pod-selector",
        action="append",
        metavar="SEL",
        help="pods whose presence on a node blocks its reboot (repeatable; default: none)",
    )
    add(
        "--prometheus-url",
        metavar="URL",
        help="Prometheus whose alerts block reboots (default: none)",
    )
    add(
        "--alert-filter-regexp",
        metavar="RE",
        help="alert names to ignore, a Go regexp (default: none)",
    )
    for flag, text in (
        ("--alert-firing-only", "only firing alerts block (default: false)"),
        ("--alert-filter-match-only", "only alerts the regexp matches block (default: false)"),
    ):
        add(flag, type=parse_bool, nargs="?", const=True, metavar="BOOL", help=text)
    add(
        "--lock-ttl",
        metavar="DURATION",
        help="a lock held longer expires (default: off)",
    )
    add(
        "--lock-release-delay",
        metavar="DURATION",
        help="hold the lock this long after a reboot (default: off)",
    )
    noted = p.add_argument_group(
        "kured v1's flags kumaco has no equivalent of (accepted, their values checked, and noted)"
    )
    for flag, (kind, what) in NO_EQUIVALENT.items():
        note = f"{what} (default: kured's)"
        if kind == "bool":
            noted.add_argument(
                flag, type=parse_bool, nargs="?", const=True, metavar="BOOL", help=note
            )
        elif kind == "list":
            noted.add_argument(flag, action="append", metavar=kind.upper(), help=note)
        else:
            noted.add_argument(flag, metavar=kind.upper(), help=note)
    _add_notify_flags(p)
    p.add_argument(
        "--name",
        default="kured-v1",
        metavar="NAME",
        help="the window ConfigMap's name (with several: NAME-<start>-<days>)",
    )
    p.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="the ConfigMaps' namespace (default: none, kubectl apply's)",
    )
    CONVERSIONS.add_flags(p)


CONVERT = Command(
    "convert",
    _convert,
    {KUMACO: "turn kured v1's schedule and flags into window ConfigMaps and flags (offline)"},
    _convert_flags,
)
