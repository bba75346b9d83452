"""The programs: whole runs that ``hack/`` scripts start, built on the test library.

The demo (``demo``), the benchmarks (``bench``, its report ``benchreport``, the living
cluster's ``churn``, the levers ``levers``, the opening's profile ``profile``, the transport
``transport_bench``, kured v2's latency ``kured_latency`` and record ``kured_record``), the
soak (``soak``) and the chaos run (``chaos``). Each has a command line in ``hack/`` and a
short form that the tests run. They may import the test library (``tests.support.env``,
``tests.support.judges``) and ``kumaco``; nothing there imports them. Under mypy --strict
like ``kumaco/``. Nothing here ships in the package.
"""
