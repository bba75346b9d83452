"""The notification flags of ``kumaco run`` and ``kumaco notify``, validated once.

Contract: :func:`add_notify_flags` declares ``--notify-url`` (repeatable; an Apprise URL,
``KUMACO_NOTIFY_URL`` comma- or space-separated), ``--notify-url-file`` (URLs one a line,
a mounted Secret; read at start-up) and, for ``run``, ``--notify-on`` (the events),
``--notify-flush-timeout``, ``--notify-waiting-after`` (how long a node waits before
``waiting-too-long`` tells it; by default the alert ``KumacoNodeWaitingTooLong``'s 8
days) and one ``--message-template-<event>`` per event
(:mod:`kumaco.notify.messages`). :func:`notify_settings` validates them into a frozen
:class:`NotifySettings` (a bad URL, event, template or file is a usage error naming its
flag; the URLs are kept out of its ``repr``: they carry tokens). :data:`NOTIFY` is the
command: it sends one test message to every endpoint, once, and exits 0 when every
endpoint took it, 1 otherwise with each endpoint's error (its URL's credentials masked)
on standard error, 2 on a usage error. Apprise is loaded only when a URL is given.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from kumaco.cmd.flags import UsageError
from kumaco.core.errors import InvalidInput
from kumaco.core.time.durations import SECOND, parse_flag_duration, parse_go_duration
from kumaco.notify.messages import DEFAULT_EVENTS, EVENTS, FIELDS, check_template, parse_events

#: ``--notify-waiting-after``'s default: the alert ``KumacoNodeWaitingTooLong``'s threshold
#: (kustomize/components/monitoring), a weekly window plus a day.
WAITING_AFTER = "192h"
TEST_MESSAGE = "kumaco can reach this endpoint: maintenance notifications will arrive here."


@dataclass(frozen=True)
class NotifySettings:
    """The notifications' settings, validated; no URL: notifications off."""

    urls: tuple[str, ...] = field(default=(), repr=False)
    events: tuple[str, ...] = DEFAULT_EVENTS
    templates: tuple[tuple[str, str], ...] = ()
    flush_timeout: float = 10.0
    #: ``--notify-waiting-after``, in seconds.
    waiting_after: float = 8 * 86400.0

    @property
    def enabled(self) -> bool:
        return bool(self.urls)


def _dest(event: str) -> str:
    return "message_template_" + event.replace("-", "_")


def add_notify_flags(p: argparse.ArgumentParser, run: bool = True) -> None:
    """The notification flags (``run``: also the events, templates and flush timeout)."""
    p.add_argument(
        "--notify-url",
        action="append",
        default=[],
        metavar="URL",
        help="send notifications to this Apprise URL (slack://, msteams://, mailto://, "
        "json://, form://, ntfy://, ...; repeatable); it carries secrets: prefer "
        "--notify-url-file (default: none)",
    )
    p.add_argument(
        "--notify-url-file",
        metavar="PATH",
        help="read Apprise URLs from this file, one a line, # for comments (a mounted "
        "Secret) (default: none)",
    )
    if not run:
        p.add_argument("--message", default=TEST_MESSAGE, metavar="TEXT", help="what to send")
        return
    p.add_argument(
        "--notify-on",
        default=",".join(DEFAULT_EVENTS),
        metavar="EVENTS",
        help=f"comma-separated events to notify ({', '.join(EVENTS)}; all; none)",
    )
    p.add_argument(
        "--notify-flush-timeout",
        default="10s",
        metavar="DURATION",
        help="on SIGTERM, how long the leader may take to send what it has queued before it "
        "releases its Lease",
    )
    p.add_argument(
        "--notify-waiting-after",
        default=WAITING_AFTER,
        metavar="DURATION",
        help="tell a node waiting for maintenance this long (waiting-too-long, once per "
        "wait; the alert KumacoNodeWaitingTooLong's threshold)",
    )
    for event in EVENTS:
        fields = ", ".join(f"{{{f}}}" for f in FIELDS[event])
        p.add_argument(
            f"--message-template-{event}",
            dest=_dest(event),
            metavar="TEXT",
            help=f"the {event} message, with {fields} (default: a sentence saying what "
            "happened and what comes next)",
        )


def notify_urls(args: argparse.Namespace) -> tuple[str, ...]:
    """``--notify-url``'s URLs, then ``--notify-url-file``'s, each accepted by Apprise."""
    from kumaco.notify.sender import endpoints, read_url_file  # noqa: PLC0415

    urls = list(args.notify_url or [])
    try:
        endpoints(urls, "--notify-url")
        if args.notify_url_file:
            from_file = read_url_file(args.notify_url_file)
            if not from_file:
                raise InvalidInput(f"--notify-url-file: {args.notify_url_file} holds no URL")
            endpoints(from_file, "--notify-url-file")
            urls += from_file
    except InvalidInput as exc:
        raise UsageError(exc.reason) from None
    return tuple(urls)


def notify_settings(args: argparse.Namespace) -> NotifySettings:
    """Validate ``run``'s notification flags."""
    given = bool(args.notify_url) or bool(args.notify_url_file)
    try:
        events = parse_events(args.notify_on)
        templates = tuple(
            (event, check_template(event, text))
            for event in EVENTS
            if (text := getattr(args, _dest(event))) is not None
        )
        timeout = parse_go_duration(args.notify_flush_timeout)
    except InvalidInput as exc:
        flag = "--notify-flush-timeout" if "duration" in exc.reason else ""
        raise UsageError(f"{flag}: {exc.reason}" if flag else exc.reason) from None
    if timeout < 0:
        raise UsageError("--notify-flush-timeout: must not be negative")
    try:
        waiting_after = parse_flag_duration(args.notify_waiting_after)
    except InvalidInput as exc:
        raise UsageError(f"--notify-waiting-after: {exc.reason}") from None
    if waiting_after == 0:
        raise UsageError("--notify-waiting-after: must be greater than 0 (e.g. 192h, 24h)")
    return NotifySettings(
        urls=notify_urls(args) if given else (),
        events=events,
        templates=templates,
        flush_timeout=timeout / SECOND,
        waiting_after=waiting_after / SECOND,
    )
