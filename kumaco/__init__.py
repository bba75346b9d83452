"""kumaco: the KUbernetes MAintenance COntroller.

kumaco turns maintenance windows declared in ConfigMaps into node conditions
(``kured.dev/UnderMaintenance`` and, optionally, ``MaintenanceInProgress``).

Package layout: six layers, each importing only the layers below it
(enforced by import-linter, ``.importlinter``; no import cycles, tested by
``tests/unit/rig/test_layout.py``):

* ``kumaco.cmd`` -- entry points and wiring: settings, the runner, logs,
  metrics and probes, the ``kumaco`` and ``kubectl kumaco`` command lines;
* ``kumaco.controller`` -- the stores, the level-triggered loop, the status
  writer and window announcements;
* ``kumaco.views`` -- pure renderers: the status report, text tables, the
  timeline picture (beside ``controller``; neither imports the other);
* ``kumaco.notify`` -- notifications to people (``--notify-url``): the
  messages and their sender, Apprise behind a bounded queue and one thread;
* ``kumaco.kube`` -- the I/O edge and the only layer that imports
  ``kubernetes``: credentials, the HTTP client, the retry policy,
  reflectors, Lease election, Events;
* ``kumaco.migration`` -- beside ``kube``, pure like the core: other
  tools' configurations read as kumaco's (kured v1's schedule);
* ``kumaco.core`` -- the pure core, no I/O and no clock: in layers,
  ``planning`` > ``windows`` > ``objects`` > ``labels`` | ``time`` >
  ``golang`` > ``errors``.
"""

__version__ = "0.1.0"
