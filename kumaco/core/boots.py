"""The boot a maintenance was admitted on, and the reboot that ended it, kept on the node.

Contract: pure text functions over kumaco's own ``MaintenanceInProgress``
messages; no I/O, no clock. What the exactly-once rule needs survives a
restart and a change of leader because it lives in the cluster, on the node's
own condition, not in a process:

* a holder's message ends with ``; admitted on boot <boot>`` -- the
  ``status.nodeInfo.bootID`` the node had when it was admitted
  (:func:`with_boot`, :func:`admitted_on`);
* a release by an observed reboot says ``the node rebooted (boot <old> -> <new>)``
  (:func:`rebooted_message`, :func:`reboot_of`); that condition's
  ``lastTransitionTime`` is the instant the reboot was observed, and it stays
  as written (kumaco rewrites nothing while nothing changes) until the node's
  required conditions have been reported afresh.

A boot ID is kept as it is when it is a plain token (letters, digits and
``._:-``, at most 64 characters: a UUID, as kubelets report it); anything else
is kept as ``sha256:`` and the first 16 hex digits of its SHA-256, so a message
stays one short printable line whatever a node reports, and two boots still
compare equal exactly when their IDs do (up to a 64-bit hash).
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["admitted_on", "boot_token", "reboot_of", "rebooted_message", "with_boot"]

_TOKEN = re.compile(r"[A-Za-z0-9._:-]{1,64}")
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


def rebooted_message(old: str, new: str, require: tuple[str, ...]) -> str:
    """The message of a release by an observed reboot."""
    text = f"maintenance finished: the node rebooted (boot {old} -> {new})"
    if require:
        return text + f"; admitted again once {', '.join(require)} is reported after the reboot"
    return text + "; admitted again once this node has left its maintenance window"


def reboot_of(message: str) -> tuple[str, str] | None:
    """``(old, new)`` boots when ``message`` is a release by an observed reboot, else None."""
    m = _REBOOTED.search(message)
    return (m.group(1), m.group(2)) if m else None
