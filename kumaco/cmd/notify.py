"""``kumaco notify``: one test message to every ``--notify-url``, the deployer's first check.

Contract: :data:`NOTIFY` is the command (``kumaco`` only, no input file; its flags are
:func:`~kumaco.cmd.notifications.add_notify_flags`'s, also read from ``KUMACO_<FLAG>``).
It sends the message to every endpoint once, without retries, and exits 0 when every
endpoint took it, 1 otherwise with each endpoint's error (its URL's credentials masked)
on standard error, 2 on a usage error (no URL, a URL Apprise refuses, an unreadable file).
"""

from __future__ import annotations

import argparse
from typing import TextIO

from kumaco.cmd.common import EXIT_INVALID, EXIT_OK
from kumaco.cmd.flags import UsageError
from kumaco.cmd.notifications import add_notify_flags, notify_urls
from kumaco.cmd.registry import KUMACO, Command, Source


def _notify(args: argparse.Namespace, _source: Source, out: TextIO, err: TextIO) -> int:
    """``kumaco notify``: one test message to every endpoint."""
    from kumaco.notify.sender import NotifyFailed, endpoints  # noqa: PLC0415

    urls = notify_urls(args)
    if not urls:
        raise UsageError("no endpoint: give --notify-url URL or --notify-url-file PATH")
    failed = 0
    for target in endpoints(urls):
        try:
            target.send("kumaco: test notification", args.message)
        except NotifyFailed as exc:
            failed += 1
            err.write(f"kumaco notify: {target.name}: not delivered: {exc}\n")
        else:
            out.write(f"sent to {target.name}\n")
    return EXIT_INVALID if failed else EXIT_OK


NOTIFY = Command(
    "notify",
    _notify,
    {KUMACO: "send a test notification to --notify-url endpoints (exit 1 with their error)"},
    lambda p, _cluster: add_notify_flags(p, run=False),
    env=True,
)
