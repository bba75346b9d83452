"""The boot a maintenance was admitted on, and the reboot that ended it, kept on the node.

Contract: pure text functions over kumaco's own ``MaintenanceInProgress``
messages; no I/O, no clock. What the exactly-once rule needs survives a
restart and a change of leader because it lives in the cluster, on the node's
own condition, not in a process:

* a holder's message ends with ``; admitted on boot <boot>`` -- the
  ``status.nodeInfo.bootID`` the node had when it was admitted
  (:func:`with_boot`, :func:`admitted_on`);
* a release by an observed reboot says ``the node rebooted (boot <old> -> <new>)``
  (:func:`rebooted_message`, :func:`reboot_of`) and ends with what each required
  condition looked like when the reboot was observed (``; last reports:
  TYPE=STATUS@TRANSITION@HEARTBEAT ...``, :func:`Report`, :func:`last_reports`): its
  status and its two stamps exactly as its reporter wrote them. The message stays as
  written (kumaco rewrites nothing while nothing changes) until a required condition
  differs from that record -- a new heartbeat, a new transition, another status: a
  report made after the reboot, whatever the reporting node's clock says.

A boot ID, a status and a stamp are kept as they are when they are a plain token
(letters, digits and ``._:+-``, at most 64 characters: a UUID, ``True``, an RFC 3339
time, as kubelets and reporters write them); anything else is kept as ``sha256:`` and
the first 16 hex digits of its SHA-256, so a message stays one short printable line
whatever a node reports, and two values still compare equal exactly when they do (up
to a 64-bit hash). An absent condition is recorded as ``TYPE=-``, a missing stamp as
``-``.

"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Report",
    "admitted_on",
    "boot_token",
    "last_reports",
    "reboot_of",
    "rebooted_message",
    "with_boot",
]

_TOKEN = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_VALUE = re.compile(r"[A-Za-z0-9._:+-]{1,64}")
_ABSENT = "-"
_REPORTS = re.compile(r"; last reports: (\S+(?: \S+)*)$")
_ITEM = re.compile(r"([^=\s]+)=(-|([^@\s]+)@([^@\s]+)@([^@\s]+))")
_ADMITTED = re.compile(r"; admitted on boot ([A-Za-z0-9._:-]{1,64})$")
_REBOOTED = re.compile(
    r"the node rebooted \(boot ([A-Za-z0-9._:-]{1,64}) -> ([A-Za-z0-9._:-]{1,64})\)"
)


def boot_token(boot_id: str) -> str:
    """The boot ID as kept in a message (see the module contract)."""
    if _TOKEN.fullmatch(boot_id):
        return boot_id
    return "sha256:" + hashlib.sha256(boot_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def with_boot(message: str, boot: str | None) -> str:
    """``message`` marked with the boot a holder was admitted on (unchanged for None)."""
    return message if boot is None else f"{message}; admitted on boot {boot}"


def admitted_on(message: str) -> str | None:
    """The boot a holder's message says it was admitted on, or None."""
    m = _ADMITTED.search(message)
    return m.group(1) if m else None


def _kept(value: str | None) -> str:
    """A status or stamp as a record keeps it (``-``: none)."""
    if not value:
        return _ABSENT
    if _VALUE.fullmatch(value) and value != _ABSENT:
        return value
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Report:
    """A required condition as its reporter last wrote it: status and stamps, as kept.

    ``None`` for all three: the node had no such condition. Two reports are the same
    report exactly when they are equal: nothing here is compared with a clock.
    """

    type: str
    status: str | None
    transition: str | None
    heartbeat: str | None

    @classmethod
    def of(
        cls, ctype: str, status: str | None, transition: str | None, heartbeat: str | None
    ) -> Report:
        """The record of a condition (``status`` None: absent), its values as kept."""
        if status is None:
            return cls(ctype, None, None, None)
        return cls(ctype, _kept(status), _kept(transition), _kept(heartbeat))

    def text(self) -> str:
        if self.status is None:
            return f"{self.type}={_ABSENT}"
        return f"{self.type}={self.status}@{self.transition}@{self.heartbeat}"


def rebooted_message(
    old: str, new: str, require: tuple[str, ...], reports: Iterable[Report] = ()
) -> str:
    """The message of a release by an observed reboot, with the reports seen at it."""
    text = f"maintenance finished: the node rebooted (boot {old} -> {new})"
    if not require:
        return text + "; admitted again once this node has left its maintenance window"
    text += f"; admitted again once {', '.join(require)} is reported after the reboot"
    kept = " ".join(r.text() for r in reports)
    return text + (f"; last reports: {kept}" if kept else "")


def last_reports(message: str) -> dict[str, Report] | None:
    """The reports a release by an observed reboot recorded, by type (None: no record).

    A release written before records were kept (or by another writer) has none: the
    caller decides how to read it.
    """
    m = _REPORTS.search(message)
    if m is None:
        return None
    found: dict[str, Report] = {}
    for item in m.group(1).split(" "):
        parsed = _ITEM.fullmatch(item)
        if parsed is None:
            return None
        ctype, _whole, status, transition, heartbeat = parsed.groups()
        found[ctype] = Report(ctype, status, transition, heartbeat)
    return found


def reboot_of(message: str) -> tuple[str, str] | None:
    """``(old, new)`` boots when ``message`` is a release by an observed reboot, else None."""
    m = _REBOOTED.search(message)
    return (m.group(1), m.group(2)) if m else None
