"""What a notification says: the moments, their default templates, one message per moment.

Contract: pure (no I/O, no clock). A :class:`Moment` is one thing that happened, decided
once by the controller (a window opened or closed, a node admitted, a maintenance finished,
a holder timed out, a node waiting too long, a dated window ended for good, a window found
invalid) with the named fields its template may use.
:class:`Templates` holds one ``str.format`` template per event (:data:`DEFAULTS`, each
overridable by ``--message-template-<event>``); :func:`check_template` refuses a template
naming a field its event does not have, with the fields it may use, so a typo is a
start-up error and never a notification that fails to render. :func:`parse_events` reads
``--notify-on``. Every template gets ``{event}`` and ``{instance}`` (the Lease name) too.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kumaco.core.errors import InvalidInput

OPENED, CLOSED, ADMITTED = "window-opened", "window-closed", "admitted"
FINISHED, TIMED_OUT_EVENT, INVALID = "finished", "timed-out", "window-invalid"
#: A dated window with no occurrence left (its ``WindowExpired`` Event).
ENDED_EVENT = "window-ended"
#: A node has waited for maintenance longer than ``--notify-waiting-after``.
WAITING_EVENT = "waiting-too-long"
#: Every event, in the order a maintenance meets them.
EVENTS = (
    OPENED,
    WAITING_EVENT,
    ADMITTED,
    FINISHED,
    TIMED_OUT_EVENT,
    CLOSED,
    ENDED_EVENT,
    INVALID,
)
#: ``--notify-on``'s default: the moments an on-call person acts on or waits for.
DEFAULT_EVENTS = (ADMITTED, FINISHED, TIMED_OUT_EVENT, INVALID)
#: Fields every template may use.
COMMON_FIELDS = ("event", "instance")
#: Each event's own fields (a template names only these and :data:`COMMON_FIELDS`).
FIELDS: Mapping[str, tuple[str, ...]] = {
    OPENED: ("window", "count", "nodes", "opened", "closes"),
    WAITING_EVENT: ("node", "waited", "since", "reason"),
    CLOSED: ("window", "opened", "closed"),
    ADMITTED: ("node", "windows", "boot"),
    FINISHED: ("node", "outcome", "boot_before", "boot_after", "duration"),
    TIMED_OUT_EVENT: ("node", "held", "reason"),
    ENDED_EVENT: ("window", "why"),
    INVALID: ("window", "reason"),
}
DEFAULTS: Mapping[str, str] = {
    OPENED: (
        "Maintenance window {window} opened at {opened} for {count} node(s): {nodes}. "
        "It closes at {closes}; nodes are admitted one by one as the policy allows."
    ),
    CLOSED: (
        "Maintenance window {window} (opened at {opened}) closed at {closed}. "
        "No node is admitted under it until it opens again."
    ),
    WAITING_EVENT: (
        "Node {node} has waited {waited} for maintenance (since {since}, kept out by "
        "{reason}); it is still not admitted. Look at the ceilings and the windows: "
        "kubectl kumaco status shows why."
    ),
    ADMITTED: (
        "Node {node} admitted to maintenance (window {windows}): it may now be drained "
        "and rebooted."
    ),
    FINISHED: (
        "Node {node} finished its maintenance: {outcome}, {duration} after its admission. "
        "Its place is free for the next node."
    ),
    TIMED_OUT_EVENT: (
        "Node {node} held its maintenance for {held}, longer than --in-progress-timeout: "
        "revoked. Look at the node; it is admitted again in a later window."
    ),
    ENDED_EVENT: (
        "Maintenance window {window} has ended: {why}. It will never open again: "
        "delete its ConfigMap."
    ),
    INVALID: (
        "Window ConfigMap {window} is invalid and ignored: {reason}. "
        "Fix it (kumaco validate says why); no maintenance happens under it meanwhile."
    ),
}
#: The most node names an opening lists (the count is always exact).
MAX_LISTED = 20


@dataclass(frozen=True)
class Moment:
    """One thing that happened, told once: its event, what it is about, its fields."""

    event: str
    subject: str
    fields: tuple[tuple[str, str], ...] = ()

    def values(self, instance: str) -> dict[str, str]:
        return {"event": self.event, "instance": instance, **dict(self.fields)}


@dataclass(frozen=True)
class Message:
    """A moment rendered: what the endpoints receive."""

    event: str
    title: str
    body: str


def listed(names: Iterable[str]) -> str:
    """Node names for a message: sorted, at most :data:`MAX_LISTED`, then ``and N more``."""
    ordered = sorted(names)
    if not ordered:
        return "none"
    shown = ", ".join(ordered[:MAX_LISTED])
    more = len(ordered) - MAX_LISTED
    return shown if more <= 0 else f"{shown} and {more} more"


def flag_of(event: str) -> str:
    """The flag that overrides ``event``'s template."""
    return f"--message-template-{event}"


def check_template(event: str, text: str) -> str:
    """``text`` if it renders for ``event``; else :class:`InvalidInput` naming the fields."""
    allowed = (*COMMON_FIELDS, *FIELDS[event])
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise InvalidInput(
            f"{flag_of(event)}: {exc}; write a literal brace as {{{{ or }}}}"
        ) from None
    for _literal, name, _spec, _conv in parsed:
        if name is None:
            continue
        root = name.split(".")[0].split("[")[0]
        if root != name or root not in allowed:
            raise InvalidInput(
                f"{flag_of(event)}: unknown field {{{name}}}; this event's fields are "
                + ", ".join(f"{{{f}}}" for f in allowed)
            )
    return text


@dataclass(frozen=True)
class Templates:
    """One template per event: the defaults, with the ones given instead."""

    given: tuple[tuple[str, str], ...] = ()
    instance: str = "kumaco"
    _all: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        merged = dict(DEFAULTS)
        for event, text in self.given:
            merged[event] = check_template(event, text)
        object.__setattr__(self, "_all", merged)

    def render(self, moment: Moment) -> Message:
        body = self._all[moment.event].format_map(moment.values(self.instance))
        title = f"kumaco ({self.instance}): {moment.event} {moment.subject}"
        return Message(moment.event, title, body)


def parse_events(text: str) -> tuple[str, ...]:
    """``--notify-on``: comma-separated events, ``all``, or ``none``; in :data:`EVENTS` order."""
    words = {w.strip() for w in text.split(",") if w.strip()}
    if words == {"none"}:
        return ()
    if "all" in words:
        words = (words - {"all"}) | set(EVENTS)
    unknown = sorted(words - set(EVENTS))
    if unknown:
        raise InvalidInput(
            f"--notify-on: unknown event {unknown[0]!r}; the events are "
            f"{', '.join(EVENTS)} (or all, none)"
        )
    return tuple(e for e in EVENTS if e in words)
