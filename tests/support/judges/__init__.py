"""The judges and oracles: what decides whether kumaco (or a test run) did the right thing.

The API server's audit log replayed (``audit``: lease fencing, the ceiling, refused
requests; ``kured``: the disruption of kured v2's fleet), the Go oracles built from the
module proxy (``oracle``) and the Python reference implementations (``reference``),
hypothesis strategies (``strategies``), the malformed-window corpus (``corpus``), a
deliberately broken kumaco for the judges' own tests (``violation``), the figures the
docs quote (``figures``), CI's verdict on the JUnit files (``junit``) and the stand-in
for kured that finishes maintenances (``consumer``). It may import the test environment
(``tests.support.env``) and ``kumaco``, never the programs (``tools``).
"""
