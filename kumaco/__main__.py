"""``python -m kumaco``: the ``kumaco`` command line (see :mod:`kumaco.cmd.cli`)."""

import sys

from kumaco.cmd.cli import main

sys.exit(main())
