"""Which kumaco instance this is: the names it writes under and the Lease it leads with.

Contract: pure data. An :class:`Instance` is derived once from the command line
(:func:`kumaco.cmd.flags.instance_from_args`) and handed to everything that needs
to know who "we" are: ``kumaco run`` (its policy, its writes, its election),
``kubectl kumaco status`` (whose conditions and which Lease it shows) and
``kumaco plan``/``forecast`` (the condition names; they write nothing, so they
have no field manager). :func:`default_field_manager` is the one rule that names
an instance's field manager after its Lease; who *owns* a condition is
:func:`kumaco.core.planning.changes.written_by_another`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kumaco.core.planning.changes import KUMACO_MANAGER_PREFIX
from kumaco.core.planning.policy import IN_PROGRESS, MAINTENANCE_PLANNED, UNDER_MAINTENANCE

#: ``--leader-election-id``'s default: the Lease, and the instance's name.
DEFAULT_LEASE = "kumaco"


def default_field_manager(lease_name: str) -> str:
    """``--field-manager``'s default: ``kumaco/<leader-election-id>``."""
    return KUMACO_MANAGER_PREFIX + lease_name


@dataclass(frozen=True)
class Instance:
    """A kumaco instance: its condition types, its field manager and its Lease."""

    under_maintenance: str = UNDER_MAINTENANCE
    in_progress: str = IN_PROGRESS
    lease_name: str = DEFAULT_LEASE
    #: The Lease's namespace; empty when nothing reads the Lease (plan, forecast).
    lease_namespace: str = ""
    #: The field manager of its condition writes; empty for a look that writes nothing
    #: (plan, forecast), which then takes no condition for another instance's.
    field_manager: str = ""
    #: ``--planned-condition``: the advance notice's type (written with ``--planned-lead``).
    planned: str = MAINTENANCE_PLANNED

    @property
    def lease_key(self) -> str:
        """``namespace/name`` of the Lease."""
        return f"{self.lease_namespace}/{self.lease_name}"
