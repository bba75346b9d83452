"""Clock skew between a node and kumaco: the exactly-once scenarios, judged from the audit log.

Contract. A node's reporter (kured's ``reboot-required-detector``) stamps its condition
with the node's clock; kumaco's exactly-once rule must not depend on that clock agreeing
with its own. Two scenarios on a real API server, each a function that sets up its own
nodes, namespace and window, starts kumaco through ``start`` (given the flags; the e2e
tests pass their ``spawn`` fixture, ``hack/skew_before.py`` a kumaco of any source tree),
drives kured's stand-ins (:class:`~tests.support.judges.consumer.Detector` on each node,
:class:`~tests.support.judges.consumer.Consumer` rebooting by a new ``bootID``), and
returns what the audit log shows, as plain JSON data. They raise only when the scene
cannot start (kumaco never admits the first request); whatever kumaco does after that is
recorded, not judged: the e2e tests judge (tests/e2e/test_clock_skew.py), the record
keeps it (docs/clock-skew-before.json).

* :func:`double_admission` -- two nodes, a ceiling of 1, one open window,
  ``--require-condition kured.dev/RebootRequired``; the skewed node (clock ``offset``
  seconds off, 10 minutes ahead by default) reports True, is admitted, reboots (its
  ``bootID`` changes) and is released by the observed reboot; no report comes after the
  reboot, while the other node's detector rewrites its ``False`` every second or two for
  ``unrelated_s`` seconds (changes kumaco plans on, unrelated to the skewed node). One
  request: one admission. Then the skewed node's detector rewrites its unchanged True once
  its ``period`` has passed (a fresh report: the reboot did not fix it) and the time to
  the next admission is measured.
* :func:`fresh_report` -- the same scene without the unrelated changes: nothing but the
  skewed node's own reports and kumaco's writes touch the nodes. Skews: ``ahead`` and
  ``behind`` (10 minutes; the fresh report is the detector's heartbeat rewrite) and
  ``jump-back`` (right on at the first report, set back an hour right after the admission:
  kured's rule then skips the rewrite of an unchanged status, its heartbeat being in the
  detector's future, so the fresh report is a transition: ``False``, then ``True`` a
  period later).

:func:`history` replays the audit log (every committed ``nodes/status`` write of the
scene's nodes with the stored Node, in commit order) into admissions and releases of
``MaintenanceInProgress``, reports of the required condition and boots, with the writer's
user agent: kumaco's admissions are those written by a ``kumaco/`` user agent.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.harness import MIP, REQUIRED, RUN_LABEL, Api, cron_at, unique, wait_for
from tests.support.env.supervisor import scope_flags
from tests.support.judges.audit import read_audit_log
from tests.support.judges.consumer import Consumer, Detector, SkewedClock, set_boot

#: The skews of :func:`fresh_report`: the node's clock offset at its first report, and the
#: jump right after its admission (seconds).
SKEWS: dict[str, tuple[float, float]] = {
    "ahead": (600.0, 0.0),
    "behind": (-600.0, 0.0),
    "jump-back": (0.0, -3600.0),
}
KUMACO = "kumaco/"
REBOOTED = "the node rebooted"
#: How long a scenario waits for kumaco's first admission: start-up and the first pass
#: (1-4 s measured, test_catch_up.py), with room for a loaded machine.
FIRST_ADMISSION_S = 30.0
#: How long it waits for a release after the reboot, and for an admission after the
#: fresh report, before it records none (the tests bound the measured delay far lower).
WAIT_S = 15.0


# ----------------------------------------------------------------------------- the audit log


@dataclass(frozen=True)
class Write:
    """One committed status write to a scene's Node, as the server stored it."""

    at: float  # when the server received it (epoch seconds)
    revision: int
    node: str
    by: str  # the user agent
    required: tuple[str, str, str] | None  # (status, lastHeartbeatTime, lastTransitionTime)
    mip: tuple[str, str, str] | None  # (status, reason, message)
    boot: str


@dataclass
class History:
    """The scene's writes in commit order, and what each changed."""

    writes: list[Write] = field(default_factory=list)

    def _pairs(self, node: str) -> Iterator[tuple[Write | None, Write]]:
        before: Write | None = None
        for w in self.writes:
            if w.node == node:
                yield before, w
                before = w

    def admissions(self, node: str) -> list[Write]:
        """The writes that turned ``MaintenanceInProgress`` True on ``node``."""
        return [w for b, w in self._pairs(node) if _held(w) and (b is None or not _held(b))]

    def releases(self, node: str) -> list[Write]:
        """The writes that ended a hold of ``MaintenanceInProgress`` on ``node``."""
        return [w for b, w in self._pairs(node) if b is not None and _held(b) and not _held(w)]

    def reports(self, node: str) -> list[Write]:
        """The writes that changed ``node``'s required condition (status or a time)."""
        return [
            w
            for b, w in self._pairs(node)
            if w.required is not None and (b is None or b.required != w.required)
        ]

    def boots(self, node: str) -> list[Write]:
        """The writes that changed ``node``'s bootID."""
        return [w for b, w in self._pairs(node) if b is not None and b.boot != w.boot]

    def by_others(self, node: str, since: float, until: float) -> list[Write]:
        """Writes to ``node`` received in ``[since, until)`` not made by kumaco."""
        return [
            w
            for w in self.writes
            if w.node == node and since <= w.at < until and not w.by.startswith(KUMACO)
        ]


def _held(w: Write) -> bool:
    return w.mip is not None and w.mip[0] == "True"


def history(audit_log: Path, node_prefix: str, since: float = 0.0) -> History:
    """Every committed ``nodes/status`` write to Nodes named ``node_prefix...``, replayed."""
    found: list[Write] = []
    for ev in read_audit_log(audit_log, since, contains=node_prefix):
        if not (
            ev.complete
            and ev.code < 300
            and ev.resource == "nodes"
            and ev.subresource == "status"
            and ev.name.startswith(node_prefix)
        ):
            continue
        stored = ev.response_object
        rv = (stored.get("metadata") or {}).get("resourceVersion")
        if stored.get("kind") != "Node" or not rv:
            continue
        status = stored.get("status") or {}
        conds = {c.get("type"): c for c in status.get("conditions") or []}
        req, mip = conds.get(REQUIRED), conds.get(MIP)
        found.append(
            Write(
                at=ev.received,
                revision=int(rv),
                node=ev.name,
                by=ev.user_agent,
                required=None
                if req is None
                else (
                    str(req.get("status")),
                    str(req.get("lastHeartbeatTime", "")),
                    str(req.get("lastTransitionTime", "")),
                ),
                mip=None
                if mip is None
                else (
                    str(mip.get("status")),
                    str(mip.get("reason", "")),
                    str(mip.get("message", "")),
                ),
                boot=str((status.get("nodeInfo") or {}).get("bootID", "")),
            )
        )
    found.sort(key=lambda w: (w.revision, w.at))
    return History(found)


# ----------------------------------------------------------------------------- the scene

Start = Callable[[list[str]], object]


@dataclass
class Scene:
    """Two nodes (``skewed`` and ``other``), each with a bootID and kured's detector, and a
    window open for an hour; ``clock`` is the skewed node's."""

    api: Api
    run: str
    ns: str
    clock: SkewedClock
    period: float
    skewed: str = ""
    other: str = ""

    def __post_init__(self) -> None:
        self.skewed, self.other = f"{self.run}-skewed", f"{self.run}-other"
        for n in (self.skewed, self.other):
            self.api.node(n, {RUN_LABEL: self.run})
            set_boot(self.api, n, f"boot-0-{n}")
        start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
        self.api.window(
            self.ns, "open", {"startTime": cron_at(start), "duration": "2h", "nodeSelector": ""}
        )
        self.detector = Detector(self.api, self.skewed, clock=self.clock, period=self.period)
        # The other node's clock is right; it rewrites its False every second.
        self.neighbour = Detector(self.api, self.other, period=1.0)

    @classmethod
    def make(cls, api: Api, prefix: str, offset: float, period: float = 2.0) -> Scene:
        run = unique(prefix)
        return cls(api, run, api.namespace(unique(prefix)), SkewedClock(offset), period)

    def flags(self) -> list[str]:
        return [
            *scope_flags(self.run, self.ns),
            "--max-in-progress",
            "1",
            "--require-condition",
            REQUIRED,
        ]

    @contextlib.contextmanager
    def consumer(self) -> Iterator[Consumer]:
        """kured's reboots: 1 s each, then a new bootID; no report after the reboot."""
        with Consumer(
            self.api, self.run, lambda _n: 1.0, clock=self.clock, new_boot=True, clears=False
        ) as c:
            yield c

    def mip(self) -> dict[str, Any]:
        return self.api.conditions(self.skewed).get(MIP) or {}

    def held(self) -> bool:
        return self.mip().get("status") == "True"

    def wait_held(self, timeout: float) -> float | None:
        """Poll until the skewed node holds MaintenanceInProgress: when (None: not in time)."""
        with contextlib.suppress(AssertionError):
            wait_for(self.held, timeout, what="an admission")
            return time.time()
        return None

    def wait_released(self, timeout: float) -> bool:
        """Poll until the skewed node is released by an observed reboot (False: not in time)."""

        def released() -> bool:
            m = self.mip()
            return m.get("status") == "False" and REBOOTED in str(m.get("message", ""))

        with contextlib.suppress(AssertionError):
            wait_for(released, timeout, what="a release by the reboot")
            return True
        return False

    def report_of(self, h: History, index: int) -> Write | None:
        """The audit log's write of the skewed detector's ``index``-th report."""
        _at, cond = self.detector.written[index]
        want = (cond["status"], cond["lastHeartbeatTime"], cond["lastTransitionTime"])
        return next((w for w in h.reports(self.skewed) if w.required == want), None)

    def history(self, audit_log: Path, since: float) -> History:
        return history(audit_log, f"{self.run}-", since)


def _rel(t: float | None, zero: float) -> float | None:
    return None if t is None else round(t - zero, 2)


def _audit_settles(
    audit_log: Path, scene: Scene, since: float, wanted: Callable[[History], bool]
) -> History:
    """The history once ``wanted`` holds for it (the log is written as answers complete:
    a write seen by polling may reach the log a little later); after 5 s, as it is."""
    deadline = time.monotonic() + 5.0
    while True:
        h = scene.history(audit_log, since)
        if wanted(h) or time.monotonic() > deadline:
            return h
        time.sleep(0.1)


def _first_admission(scene: Scene, start: Start) -> float:
    start(scene.flags())
    at = scene.wait_held(FIRST_ADMISSION_S)
    if at is None:
        raise AssertionError(f"kumaco did not admit {scene.skewed} within {FIRST_ADMISSION_S}s")
    return at


def _admissions_summary(h: History, scene: Scene, zero: float) -> dict[str, Any]:
    return {
        "admissions": {
            n: [_rel(w.at, zero) for w in h.admissions(n) if w.by.startswith(KUMACO)]
            for n in (scene.skewed, scene.other)
        },
        "releases": [
            {
                "at": _rel(w.at, zero),
                "reason": w.mip[1] if w.mip else "",
                "message": w.mip[2] if w.mip else "",
            }
            for w in h.releases(scene.skewed)
        ],
        "boots": len(h.boots(scene.skewed)),
    }


def _readmission(
    scene: Scene, audit_log: Path, since: float, fresh_index: int
) -> tuple[History, float | None, float | None]:
    """After the fresh report (the detector's ``fresh_index``-th write): wait for the
    admission, then the history, the report's receipt and the admission delay."""
    scene.wait_held(WAIT_S)

    def settled(h: History) -> bool:
        w = scene.report_of(h, fresh_index)
        return w is not None and any(a.at >= w.at for a in h.admissions(scene.skewed))

    h = _audit_settles(audit_log, scene, since, settled)
    w = scene.report_of(h, fresh_index)
    after = [a.at for a in h.admissions(scene.skewed) if w is not None and a.at >= w.at]
    delay = None if w is None or not after else after[0] - w.at
    return h, (None if w is None else w.at), delay


def double_admission(
    api: Api,
    start: Start,
    audit_log: Path,
    *,
    offset: float = 600.0,
    unrelated_s: float = 10.0,
    prefix: str = "skewdouble",
) -> dict[str, Any]:
    """The skewed node (``offset`` s) is released by a reboot, with no report after it,
    while the other node changes for ``unrelated_s``; then a fresh report. Returns the
    record (times in seconds from the first release; see the module contract)."""
    since = time.time()
    scene = Scene.make(api, prefix, offset)
    scene.neighbour.report(False)
    scene.detector.report(True)  # the request, stamped by the skewed clock
    with scene.consumer() as consumer:
        _first_admission(scene, start)
        released = scene.wait_released(WAIT_S)
        h = _audit_settles(audit_log, scene, since, lambda x: bool(x.releases(scene.skewed)))
        rel = h.releases(scene.skewed)
        zero = rel[0].at if rel else time.time()
        phase_end = time.time() + unrelated_s
        while time.time() < phase_end:  # the other node's detector, every half second
            scene.neighbour.report(False)
            time.sleep(0.5)
        # A reboot started by a second admission ends (and is released) before the
        # fresh report, so that the report's admission is told apart (not waited for
        # when the hold stays: the record says so).
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not consumer.rebooting() and not scene.held(), WAIT_S)
        unrelated_end = time.time()
        h = scene.history(audit_log, since)
        in_phase = [
            w
            for w in h.admissions(scene.skewed)
            if w.by.startswith(KUMACO) and zero < w.at < unrelated_end
        ]
        other_changes = len(h.by_others(scene.other, zero, unrelated_end))
        scene.detector.report_when_due(True, scene.period + 5)  # the fresh report
        h, fresh_at, delay = _readmission(scene, audit_log, since, len(scene.detector.written) - 1)
        reboots = len(consumer.reboots)
    out = _admissions_summary(h, scene, zero)
    out.update(
        {
            "skewed_node": scene.skewed,
            "other_node": scene.other,
            "offset_s": offset,
            "released_by_reboot": released,
            "unrelated_s": unrelated_s,
            "unrelated_changes": other_changes,
            "admitted_again_on_the_old_report": [_rel(w.at, zero) for w in in_phase],
            "admitted_twice": bool(in_phase),
            "reboots_by_the_stand_in": reboots,
            "fresh_report_at": _rel(fresh_at, zero),
            "readmit_s": None if delay is None else round(delay, 3),
        }
    )
    return out


def fresh_report(
    api: Api, start: Start, audit_log: Path, skew: str, *, quiet_s: float = 3.0
) -> dict[str, Any]:
    """The skewed node (:data:`SKEWS`) released by a reboot, ``quiet_s`` with no write but
    kumaco's, then a fresh report; nothing else changes. Returns the record (times in
    seconds from the first release)."""
    offset, jump = SKEWS[skew]
    since = time.time()
    scene = Scene.make(api, f"skew{skew.replace('-', '')}", offset)
    scene.neighbour.report(False)
    scene.detector.report(True)
    with scene.consumer():
        started = time.time()
        _first_admission(scene, start)
        scene.clock.jump(jump)
        released = scene.wait_released(WAIT_S)
        h = _audit_settles(audit_log, scene, since, lambda x: bool(x.releases(scene.skewed)))
        rel = h.releases(scene.skewed)
        zero = rel[0].at if rel else time.time()
        time.sleep(max(0.0, zero + quiet_s - time.time()))
        skipped = None
        if jump:
            # kured's rule skips an unchanged status whose heartbeat is in its future.
            skipped = not scene.detector.report(True)
            scene.detector.report(False)  # the reboot fixed it ...
            time.sleep(scene.period)
            scene.detector.report_when_due(True, 5)  # ... and it is needed again
        else:
            scene.detector.report_when_due(True, scene.period + 5)
        h, fresh_at, delay = _readmission(scene, audit_log, since, len(scene.detector.written) - 1)
        asked = time.time()
        # kured reboots it again; then nothing changes: no third admission.
        scene.wait_released(WAIT_S)
        time.sleep(2.0)
    h = _audit_settles(audit_log, scene, since, lambda _h: True)
    out = _admissions_summary(h, scene, zero)
    fresh = fresh_at if fresh_at is not None else asked
    out.update(
        {
            "skew": skew,
            "offset_s": offset,
            "jump_s": jump,
            "skewed_node": scene.skewed,
            "other_node": scene.other,
            "released_by_reboot": released,
            "old_report_rewritten_after_jump": None if skipped is None else not skipped,
            "fresh_report_at": _rel(fresh_at, zero),
            "readmit_s": None if delay is None else round(delay, 3),
            "admitted_before_the_fresh_report": [
                _rel(w.at, zero)
                for w in h.admissions(scene.skewed)
                if w.by.startswith(KUMACO) and zero < w.at < fresh
            ],
            "writes_to_the_other_node_by_others": len(
                h.by_others(scene.other, started, time.time())
            ),
        }
    )
    return out
