"""What the controller is told besides its policy, and how it ends.

Contract: plain data, importable without the Kubernetes client (the command
line builds these before anything connects). The exit codes are the
controller's answers to "why did you stop"; ``kumaco run`` exits with them.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
#: The window ConfigMaps changed: a deliberate exit so that a restart rebuilds the state.
EXIT_CONFIG_CHANGED = 3
#: The Lease could not be renewed in time (writing had already stopped).
EXIT_LEADERSHIP_LOST = 4


@dataclass(frozen=True)
class ControllerOptions:
    """What the controller needs to know besides the policy (built from the settings)."""

    namespaces: tuple[str, ...]
    configmap_selector: str
    node_selector: str
    #: The Lease's name (``--leader-election-id``), which also names this instance in its
    #: Events and its ``kumaco_leader`` metric.
    lease_name: str
    identity: str
    field_manager: str
    write_concurrency: int
    event_lookback: float
    retry_period: float
    #: After a change of the window ConfigMaps, how long to wait for more before exiting.
    config_settle: float = 2.0
    #: A watch without a byte (event or bookmark) for this long is dead: resume it.
    watch_silence: float = 130.0
    #: ``--notify-waiting-after``: a node waiting longer is told (``waiting-too-long``), in
    #: seconds; the default is the alert ``KumacoNodeWaitingTooLong``'s 8 days.
    notify_waiting_after: float = 8 * 86400.0
