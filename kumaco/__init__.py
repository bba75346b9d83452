"""kumaco: the KUbernetes MAintenance COntroller.

kumaco turns maintenance windows declared in ConfigMaps into node conditions
(``kured.dev/UnderMaintenance`` and, optionally, ``MaintenanceInProgress``).

Package layout (layers, enforced by import-linter, see ``.importlinter``):

* pure core, no I/O, no clock reads, no ``kubernetes`` import:
  ``errors``, ``gotime``, ``schedule``, ``durations``, ``selectors``,
  ``windows``, ``planner``;
* the I/O edge, the only place that imports ``kubernetes``: ``kube``,
  ``election``;
* wiring: ``controller``, ``config``, ``cli``.
"""

__version__ = "0.1.0"
