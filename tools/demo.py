"""kumaco, live: a real control plane, three replicas, one maintenance window, one leader kill.

The demo behind ``hack/demo.py`` (its command line, with the options below;
``hack/demo.sh`` installs everything, then runs it; tests run it directly). The scenario:

1. kube-apiserver + etcd start on loopback (:class:`tests.support.env.controlplane.ControlPlane`),
   every file under one temporary directory ``/tmp/kumaco-demo-*``; N realistic
   Nodes register (:func:`tests.support.env.controlplane.seed_nodes`: ``node-00000``... in zones
   a/b/c, the first three control-plane, the rest workers). Up to five workers and
   ``node-00000`` get ``kured.dev/RebootRequired=True``; the second worker also
   ``kured.dev/RebootInhibited=True``.
2. Namespace ``maintenance`` gets three window ConfigMaps: ``workers-now`` (every
   worker; opens ``--lead`` seconds after the set-up and stays open ``--window``
   seconds: the replicas run on a wall clock shifted by less than a minute
   (:class:`tests.support.env.harness.Shift`) so that a whole minute, which the window's cron
   names, comes then; every time the demo shows is that clock's), ``leap-day`` (valid, closed until 29 February)
   and ``nightly-typo`` (invalid: kumaco ignores it with a Warning Event). An admin
   kubeconfig (context namespace ``maintenance``) is written and its path printed.
3. Three ``kumaco run`` replicas run under :class:`tests.support.env.supervisor.Supervisor`, which
   restarts an exited replica after 0.5 s as the kubelet would, with ``--namespaces
   maintenance --leader-election-namespace maintenance --max-in-progress 2
   --require-condition kured.dev/RebootRequired --block-condition
   kured.dev/RebootInhibited``; their text logs go to ``<tmp>/logs``.
4. The live table is the product's ``kubectl kumaco status --watch --kubeconfig
   <tmp>/kubeconfig -n maintenance`` (:func:`kumaco.cmd.statuswatch.watch`, run in
   this process with the demo as its :class:`~kumaco.cmd.statuswatch.Hooks`, on
   kumaco's clock, looking again every half second): every window with its next
   change, each node under maintenance or in progress with kumaco's reason, and the
   leader. The demo adds only what is its own: on a terminal, under the table, the
   latest events (window opened/closed, leader changed, kill sent, replica restarted,
   kumaco's own Events) and a footer with the scenario's countdowns; when stdout is
   not a terminal (or ``TERM=dumb``), event lines as they happen between the
   snapshots the watch prints whenever the status changes. Colour as ``kubectl kumaco
   status`` decides, and never with ``--no-color``.
5. ``--kill-after`` seconds after the window opens the leader gets SIGTERM (default:
   it releases the Lease and a standby takes over within about one retry period, 2 s)
   or SIGKILL (the Lease has to expire: about 15 s).
6. A stand-in for kured "reboots" a node that has held MaintenanceInProgress for
   ``--reboot-after`` seconds (sets its RebootRequired False), so kumaco hands the
   slot to the next node (0 disables this).

It ends when the scenario is over (a few seconds after the window closed; with
``--keep`` it keeps everything running until interrupted instead), after
``--duration`` seconds (the window is shortened to fit), or on SIGINT, SIGTERM or
SIGHUP. Exit status: 0 after any of these, 1 when the set-up failed, 2 usage. Before
exiting it stops every process it started (replicas, kube-apiserver, etcd, and
anything else whose command line names its temporary directory), removes that
directory and restores the terminal (cursor, echo).

Lines a script may rely on when stdout is not a terminal: ``workdir: PATH``,
``kubeconfig: PATH``, ``pids: NAME=PID...`` for every process started, event lines
``[HH:MM:SSZ] TEXT``, the status snapshots of ``kubectl kumaco status --watch``
(each begins with a ``kumaco status at`` line; docs/status.md), and one final
``summary:`` line.

Only the standard library is imported at module level (the rest when the demo
runs), so that ``hack/demo.sh --help`` works before the virtualenv exists.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TextIO

if TYPE_CHECKING:
    from kumaco.views.status import Snapshot, StatusReport
    from tests.support.env.controlplane import ControlPlane
    from tests.support.env.harness import Api
    from tests.support.env.supervisor import ReplicaFactory, Supervisor

REPO = Path(__file__).resolve().parents[1]  # where `-m tests.support.env.shifted` imports
NS = "maintenance"
LEASE = "kumaco"
CEILING = 2
REPLICAS = 3
REQUIRED = "kured.dev/RebootRequired"
BLOCKING = "kured.dev/RebootInhibited"
UM = "kured.dev/UnderMaintenance"
MIP = "MaintenanceInProgress"
WORKER = "node-role.kubernetes.io/worker"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
OPENING = "workers-now"
REPLICA_FLAGS = (
    "--namespaces",
    NS,
    "--leader-election-namespace",
    NS,
    "--max-in-progress",
    str(CEILING),
    "--require-condition",
    REQUIRED,
    "--block-condition",
    BLOCKING,
    "--log-format",
    "text",
)
#: The watch looks again at least this often (s): the scenario's clock (kill, reboots, end).
TICK = 0.5
#: kumaco's Events are read at most this often (s).
EVENTS_EVERY = 1.0
#: The styles of the event log (kumaco.views.table's).
BOLD, DIM, RED, GREEN, YELLOW, CYAN = "bold", "dim", "red", "green+bold", "yellow+bold", "cyan"


class Interrupted(BaseException):
    """A stop signal during set-up (a BaseException, like KeyboardInterrupt)."""


@dataclass(frozen=True)
class DemoOptions:
    """The options of ``hack/demo.py`` (seconds unless named otherwise)."""

    nodes: int = 12
    duration: float | None = None  # stop after this long, from the start
    kill_signal: str = "TERM"  # TERM, KILL or none
    no_color: bool = False
    keep: bool = False  # after the scenario, keep everything running until interrupted
    window: int = 75
    lead: int = 20
    kill_after: float = 20
    reboot_after: float = 25  # 0: never


# ----------------------------------------------------------------------------- formatting


def hms(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%SZ")


def span(seconds: float) -> str:
    """A countdown: ``0:07``, ``1:02:03``, ``455d 14h``."""
    s = max(0, int(seconds + 0.999))
    if s >= 86400:
        return f"{s // 86400}d {s % 86400 // 3600}h"
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ----------------------------------------------------------------------------- model


@dataclass
class Scenario:
    """When things happen (epoch seconds)."""

    open_at: float
    close_at: float
    kill_at: float | None
    end_at: float | None
    deadline: float | None
    shortened: bool = False


@dataclass
class Tally:
    """What the run showed, for the summary line."""

    opened_seen: float | None = None
    closed_seen: float | None = None
    kill_sent: float | None = None
    killed_holder: str = ""
    takeover: float | None = None
    max_in_progress: int = 0
    restarts: int = 0
    reboots: int = 0


# ----------------------------------------------------------------------------- the demo


class Demo:
    """Set up, run the scenario under ``kubectl kumaco status --watch``, clean up whatever happens.

    It is the watch's :class:`~kumaco.cmd.statuswatch.Hooks`: :meth:`on_report` narrates
    and plays the scenario, :meth:`panel` and :meth:`footer` add its lines on a terminal.
    """

    def __init__(self, opts: DemoOptions, out: TextIO = sys.stdout) -> None:
        from kumaco.cmd.status import use_color
        from kumaco.cmd.statuswatch import in_place

        self.o = opts
        self.out = out
        self.tty = in_place("text", out, os.environ)
        self.color = not opts.no_color and use_color(out, os.environ)
        self.started = time.time()
        #: kumaco's clock minus the machine's (set in :meth:`setup`): every time the demo
        #: shows or compares is kumaco's (:meth:`now`), the Lease's and conditions' included.
        self.offset = 0.0
        self.stop = threading.Event()
        self.stop_reason = ""
        self.phase = "setup"
        self.workdir = Path(tempfile.mkdtemp(prefix="kumaco-demo-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        self.logs = self.workdir / "logs"
        self.cp: ControlPlane | None = None
        self.api: Api | None = None
        self.sup: Supervisor | None = None
        self.replicas: ReplicaFactory | None = None
        self.scenario: Scenario | None = None
        self.tally = Tally()
        self.events: deque[tuple[float, str, str]] = deque(maxlen=200)
        self.pids: dict[str, int] = {}
        self.mip_since: dict[str, float] = {}
        self.mip_status: dict[str, str] = {}
        self.holder: str | None = None  # the Lease holder last seen (None: not yet)
        self.rebooted: set[str] = set()
        self.seen_events: set[str] = set()
        self.events_read = 0.0
        self.scenario_over = False
        self.open_windows: list[str] = []

    # -- output

    def say(self, text: str) -> None:
        """Set-up progress and final words: on the terminal, never inside the table."""
        with contextlib.suppress(OSError):  # a closed terminal or pipe must not stop the clean-up
            print(text, file=self.out, flush=True)

    def now(self) -> float:
        """Kumaco's clock now (a Unix time)."""
        return time.time() + self.offset

    def event(self, text: str, style: str = "", at: float | None = None) -> None:
        at = self.now() if at is None else at
        self.events.append((at, text, style))
        if not self.tty:
            self.say(f"[{hms(at)}] {text}")

    # -- signals

    def _on_signal(self, _signum: signal.Signals) -> None:
        """In the signal relay's thread (kumaco.cmd.signals): setting an Event is safe there."""
        self.stop.set()

    def _in_handler(self, signum: signal.Signals) -> None:
        """In the handler itself, in the main thread: plain assignments and a raise, no lock."""
        self.stop_reason = self.stop_reason or signum.name
        if self.phase == "setup":
            raise Interrupted(signum.name)  # a set-up step is cut short

    # -- lifecycle

    def run(self) -> int:
        rc = 0
        from kumaco.cmd.signals import SignalRelay

        signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        actions = dict.fromkeys(signals, self._on_signal)
        inline = dict.fromkeys(signals, self._in_handler)
        with SignalRelay(actions, inline=inline, name="demo-signals"):
            try:
                self.setup()
                self.phase = "run"
                if not self.stop.is_set():
                    self.watch()
            except Interrupted:
                pass
            except (RuntimeError, OSError, AssertionError) as exc:
                self.phase = "cleanup"
                print(f"demo: set-up or run failed: {exc}", file=sys.stderr, flush=True)
                rc = 1
            finally:
                self.phase = "cleanup"
                self.cleanup()
        return rc

    def setup(self) -> None:
        from tests.support.env.controlplane import ControlPlane, ensure_assets, seed_nodes
        from tests.support.env.harness import Api, shift_before
        from tests.support.env.supervisor import ReplicaFactory, Supervisor

        self.say(f"workdir: {self.workdir}")
        assets = ensure_assets()
        self.say("starting kube-apiserver and etcd on loopback ...")
        self.cp = ControlPlane(assets, workdir=self.workdir / "cp", log_dir=self.logs)
        self.cp.start()
        assert self.cp.etcd is not None
        assert self.cp.apiserver is not None
        self.pids = {"etcd": self.cp.etcd.pid, "kube-apiserver": self.cp.apiserver.pid}
        self.say(f"pids: etcd={self.cp.etcd.pid} kube-apiserver={self.cp.apiserver.pid}")
        self.cp.write_kubeconfig(self.kubeconfig, namespace=NS)
        seed_nodes(self.cp, self.o.nodes)
        self.api = Api(self.cp)
        self.api.namespace(NS)
        self.mark_nodes()
        # kumaco runs on a shifted wall clock that reaches a whole minute (what the window's
        # cron names) --lead seconds from now, instead of the machine's next minute after
        # that: the window opens --lead seconds from here, not up to a minute later.
        shift = shift_before(self.o.lead)
        self.offset = shift.offset
        self.started += shift.offset
        self.scenario = self.plan(self.now(), shift.opens.timestamp())
        self.load_windows()
        self.replicas = ReplicaFactory(
            self.kubeconfig, REPLICA_FLAGS, self.logs, "kumaco", launcher=shift.launcher, cwd=REPO
        )
        self.sup = Supervisor(self.replicas, REPLICAS)
        self.track_replicas(quiet=True)
        self.say(
            "pids: "
            + " ".join(f"kumaco-{n}={self.pids[f'kumaco-{n}']}" for n in self.replica_names)
        )
        self.say(
            f"kumaco's clock runs {self.offset:.1f}s ahead of this machine's, so that the window "
            f"opens {self.o.lead}s from now; every time shown is kumaco's"
        )
        self.say(f"kubeconfig: {self.kubeconfig}")
        self.say(f"  kubectl --kubeconfig {self.kubeconfig} get nodes")
        self.say(f"  kubectl kumaco status --kubeconfig {self.kubeconfig}   (.venv/bin on PATH)")
        sc = self.scenario
        self.say(
            f"window {NS}/{OPENING} opens {hms(sc.open_at)} for {sc.close_at - sc.open_at:.0f}s"
            + (" (shortened to fit --duration)" if sc.shortened else "")
            + (
                "; --duration ends the demo before it closes"
                if sc.deadline is not None and sc.close_at + 1 > sc.deadline
                else ""
            )
            + (
                f"; SIG{self.o.kill_signal} to the leader at {hms(sc.kill_at)}"
                if sc.kill_at is not None
                else ""
            )
        )
        if self.tty:
            time.sleep(1.5)  # let the set-up lines be read before the table takes the screen

    @property
    def replica_names(self) -> list[str]:
        return [f"r{i}" for i in range(REPLICAS)]

    def workers(self) -> list[str]:
        return [f"node-{i:05d}" for i in range(3, self.o.nodes)]

    def mark_nodes(self) -> None:
        """Play kured's part: who needs a reboot, who must not reboot now."""
        workers = self.workers()
        for name in ["node-00000", *workers[:5]]:
            self.set_condition(
                name, REQUIRED, "True", "RebootRequired", "reboot-required file found"
            )
        if len(workers) > 1:
            self.set_condition(
                workers[1], BLOCKING, "True", "AlertFiring", "an inhibiting alert is firing"
            )

    def set_condition(self, node: str, ctype: str, status: str, reason: str, message: str) -> None:
        assert self.api is not None
        self.api.set_condition(node, ctype, status, reason=reason, message=f"demo: {message}")

    def plan(self, now: float, opens: float) -> Scenario:
        """The scenario from ``now`` with the window opening at ``opens`` (kumaco's clock)."""
        o = self.o
        length = float(o.window)
        deadline = self.started + o.duration if o.duration else None
        shortened = False
        if deadline is not None and opens + length + 6 > deadline:
            length = float(max(10, int(deadline - 6 - opens)))
            shortened = True
        kill_at = None
        if o.kill_signal != "none":
            kill_at = opens + min(o.kill_after, length / 2)
        end_at = None if o.keep else opens + length + 5
        return Scenario(float(opens), opens + length, kill_at, end_at, deadline, shortened)

    def window_data(self) -> dict[str, dict[str, str]]:
        assert self.scenario is not None
        t = dt.datetime.fromtimestamp(self.scenario.open_at, dt.UTC)
        length = round(self.scenario.close_at - self.scenario.open_at)
        return {
            OPENING: {
                "startTime": f"{t.minute} {t.hour} {t.day} {t.month} *",
                "duration": f"{length}s",
                "nodeSelector": WORKER,
            },
            "leap-day": {
                "startTime": "0 3 29 2 *",
                "duration": "2h",
                "nodeSelector": CONTROL_PLANE,
            },
            "nightly-typo": {
                "startTime": "0 2 * * *",
                "duration": "90 minutes",
                "nodeSelector": "",
            },
        }

    #: What each window is for: a note, so an annotation (a data key kumaco does not know
    #: makes the window invalid).
    DESCRIPTIONS: ClassVar[dict[str, str]] = {
        OPENING: "Every worker, once, starting at the next minute (the demo's window).",
        "leap-day": "Control-plane nodes, on 29 February 03:00-05:00 UTC.",
        "nightly-typo": "Meant as every night at 02:00 UTC for 90 minutes.",
    }

    def load_windows(self) -> None:
        assert self.api is not None
        for name, data in self.window_data().items():
            self.api.window(NS, name, data, annotations={"description": self.DESCRIPTIONS[name]})

    def track_replicas(self, quiet: bool = False) -> None:
        assert self.sup is not None
        for name, k in list(self.sup.replicas.items()):
            if k.proc is None:
                continue
            key, pid = f"kumaco-{name}", k.proc.pid
            if self.pids.get(key) == pid:
                continue
            restarted = key in self.pids
            self.pids[key] = pid
            if quiet:
                continue
            if not self.tty:
                self.say(f"pids: {key}={pid}")
            if restarted:
                self.tally.restarts += 1
                self.event(f"{name} restarted by the supervisor (pid {pid})", DIM)

    # -- the live table: kubectl kumaco status --watch, with the demo's hooks

    def watch(self) -> None:
        """``kubectl kumaco status --watch`` on the demo's cluster until the scenario ends."""
        from kumaco.cmd.cluster import connect
        from kumaco.cmd.kubectl import build_parser
        from kumaco.cmd.status import status_instance
        from kumaco.cmd.statuswatch import watch

        argv = ["status", "--watch", "--kubeconfig", str(self.kubeconfig), "-n", NS]
        args = build_parser().parse_args(argv)
        cluster = connect(args)
        try:
            watch(
                args,
                cluster,
                status_instance(args, cluster),
                self.out,
                sys.stderr,
                hooks=self,
                stop=self.stop,
                clock=lambda: int(self.now() * 1e9),
                tick=TICK,
                color=self.color,
            )
        finally:
            cluster.close()

    def on_report(self, snapshot: Snapshot, report: StatusReport) -> None:
        """Each look of the watch: narrate what changed, play the scenario, end it in time."""
        now = report.at / 1e9
        self.track_replicas()
        self.narrate_events(now)
        if not snapshot.problems and snapshot.nodes is not None:
            self.observe(snapshot, report, now)
            self.act(snapshot, report, now)
        sc = self.scenario
        assert sc is not None
        if sc.deadline is not None and now >= sc.deadline:
            self.stop_reason = self.stop_reason or f"--duration {self.o.duration:g}"
            self.stop.set()
        if sc.end_at is not None and self.scenario_over:
            self.stop_reason = self.stop_reason or "scenario over"
            self.stop.set()

    def panel(self, report: StatusReport, color: bool) -> tuple[str, Sequence[str]]:
        """The event log, under the table."""
        from kumaco.views.table import paint

        title = paint("-- events " + "-" * 300, DIM, color)
        return title, [
            paint(hms(at), DIM, color) + " " + paint(text, style, color)
            for at, text, style in self.events
        ]

    def footer(self, report: StatusReport, color: bool) -> Sequence[str]:
        """The scenario's countdowns, and the command the table is."""
        from kumaco.views.table import paint

        sc, t, now = self.scenario, self.tally, report.at / 1e9
        assert sc is not None
        line = paint("kumaco demo", BOLD, color) + "  " + paint("Ctrl-C stops", BOLD, color)
        ends = [e for e in (sc.end_at, sc.deadline) if e is not None]
        if self.o.keep and self.scenario_over:
            line += " (scenario over)"
        elif ends:
            line += f" (ends in {span(min(ends) - now)})"
        if sc.kill_at is not None and t.kill_sent is None and now < sc.close_at:
            line += paint(
                f"  SIG{self.o.kill_signal} to the leader in {span(sc.kill_at - now)}", RED, color
            )
        elif t.takeover is not None:
            line += paint(f"  SIG{self.o.kill_signal}: takeover {t.takeover:.1f}s", DIM, color)
        line += paint(f"  ceiling {CEILING}, {REPLICAS} replicas", DIM, color)
        hint = f"the table is: kubectl kumaco status --watch --kubeconfig {self.kubeconfig} -n {NS}"
        return [line, paint(hint, DIM, color)]

    def narrate_events(self, now: float) -> None:
        """kumaco's own Events (window loaded / ignored / started / ended), at most each second."""
        if now - self.events_read < EVENTS_EVERY:
            return
        self.events_read = now
        assert self.api is not None
        try:
            found = self.api.events(NS)
        except (RuntimeError, OSError, ValueError, KeyError):
            return  # the watch shows the API's trouble; the next look reads them again
        for ev in sorted(found, key=lambda e: str(e.get("eventTime") or "")):
            name = str(ev.get("metadata", {}).get("name"))
            if name in self.seen_events:
                continue
            self.seen_events.add(name)
            kind, reason = str(ev.get("type", "")), str(ev.get("reason", ""))
            what = str((ev.get("regarding") or {}).get("name", ""))
            self.event(
                f"{kind} {reason} {what}: {ev.get('note', '')}",
                YELLOW if kind == "Warning" else DIM,
            )

    def observe(self, snapshot: Snapshot, report: StatusReport, now: float) -> None:
        """Windows opening and closing, slots given and taken, the leader: as kumaco wrote them."""
        sc = self.scenario
        assert sc is not None
        views = sorted(snapshot.nodes or (), key=lambda v: v.name)
        um = [v for v in views if v.is_true(UM)]
        t = self.tally
        if um and not self.open_windows:
            keys = {k for n in report.nodes if n.name in {v.name for v in um} for k in n.windows}
            self.open_windows = sorted(k.split("/", 1)[-1] for k in keys) or ["a window"]
            late = ""
            if t.opened_seen is None and (OPENING in self.open_windows or now >= sc.open_at - 2):
                t.opened_seen = now
                late = f", {now - sc.open_at:+.1f}s"
            names = ", ".join(self.open_windows)
            self.event(
                f"{names} opened: UnderMaintenance=True on {plural(len(um), 'node')}{late}", BOLD
            )
        elif not um and self.open_windows:
            late = ""
            if t.opened_seen is not None and t.closed_seen is None:
                t.closed_seen = now
                late = f", {now - sc.close_at:+.1f}s"
            names = ", ".join(self.open_windows)
            self.open_windows = []
            self.event(f"{names} closed: UnderMaintenance=False everywhere{late}", BOLD)
        # MaintenanceInProgress, one line per change
        gained, lost = [], []
        for v in views:
            mip = v.condition(MIP)
            status = mip.status if mip is not None else ""
            before = self.mip_status.get(v.name)
            if status == "True" and before != "True":
                gained.append(v.name)
                self.mip_since[v.name] = now
            elif status != "True" and before == "True":
                lost.append(f"{v.name} ({mip.reason if mip is not None else 'removed'})")
                self.mip_since.pop(v.name, None)
            self.mip_status[v.name] = status
        holding = sum(1 for v in views if v.is_true(MIP))
        t.max_in_progress = max(t.max_in_progress, holding)
        if lost:
            self.event(f"MaintenanceInProgress=False: {', '.join(lost)}", DIM)
        if gained:
            self.event(
                f"MaintenanceInProgress=True: {', '.join(gained)} ({holding}/{CEILING})", GREEN
            )
        # the leader
        holder = report.leader.holder if report.leader is not None else ""
        if self.holder is None or holder != self.holder:
            self.leader_changed(self.holder or "", holder, now)
        self.holder = holder
        if (
            sc.end_at is not None
            and now >= sc.end_at
            and (t.closed_seen is not None or now >= sc.close_at + 30)
        ):
            self.scenario_over = True
        if self.o.keep and not self.scenario_over and now >= sc.close_at + 5:
            self.scenario_over = True
            self.event("scenario over; everything keeps running until Ctrl-C", BOLD)

    def leader_changed(self, old: str, new: str, now: float) -> None:
        if not new:
            if old:
                self.event(f"leader {old} released the Lease", CYAN)
            return
        after = ""
        t = self.tally
        if t.kill_sent is not None and t.takeover is None and new != t.killed_holder:
            t.takeover = now - t.kill_sent
            after = f", {t.takeover:.1f}s after the kill"
        verb = "elected" if not old and t.kill_sent is None else "changed"
        self.event(f"leader {verb}: {new}{after}", CYAN)

    def act(self, snapshot: Snapshot, report: StatusReport, now: float) -> None:
        """The scenario's moves: kill the leader once, play kured's reboots."""
        from kumaco.core.time.instants import parse_timestamp

        sc = self.scenario
        assert sc is not None
        assert self.sup is not None
        t = self.tally
        lead = report.leader
        holder = lead.holder if lead is not None else ""
        renewed = parse_timestamp(lead.renew_time) if lead is not None else None
        fresh = (
            lead is not None and renewed is not None and report.at - renewed < lead.duration * 5e8
        )
        if sc.kill_at is not None and t.kill_sent is None and now >= sc.kill_at and fresh:
            victim = self.sup.by_identity(holder) if holder else None
            if victim is not None and victim.alive and victim.proc is not None:
                sig = signal.SIGTERM if self.o.kill_signal == "TERM" else signal.SIGKILL
                victim.send(sig)
                t.kill_sent, t.killed_holder = self.now(), holder
                self.event(f"sent {sig.name} to leader {holder} (pid {victim.proc.pid})", RED)
        if self.o.reboot_after > 0:
            for v in snapshot.nodes or ():
                since = self.mip_since.get(v.name)
                if (
                    since is not None
                    and now - since >= self.o.reboot_after
                    and v.is_true(REQUIRED)
                    and v.name not in self.rebooted
                ):
                    self.rebooted.add(v.name)
                    with contextlib.suppress(RuntimeError, OSError):
                        self.set_condition(v.name, REQUIRED, "False", "Rebooted", "rebooted")
                        t.reboots += 1
                        self.event(f"kured (simulated) rebooted {v.name}: RebootRequired=False")

    # -- the end

    def cleanup(self) -> None:
        t0 = time.monotonic()
        self.say(f"stopping ({self.stop_reason or 'set-up ended'}) ...")
        stopped = []
        if self.sup is not None:
            with contextlib.suppress(Exception):
                self.sup.stop()
            stopped.append(f"{REPLICAS} kumaco replicas")
        if self.cp is not None:
            stopped += [
                n for n, p in (("kube-apiserver", self.cp.apiserver), ("etcd", self.cp.etcd)) if p
            ]
            with contextlib.suppress(Exception):
                self.cp.stop()
        strays = reap(self.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)
        took = time.monotonic() - t0
        if strays:
            self.say(f"stopped strays: {' '.join(map(str, strays))}")
        self.say(f"stopped {', '.join(stopped) or 'nothing'} in {took:.1f}s")
        self.say(f"removed {self.workdir}")
        if self.scenario is not None:
            self.say(self.summary())

    def summary(self) -> str:
        """What happened, in lines of at most ~75 characters (the first starts ``summary:``)."""
        t, sc = self.tally, self.scenario
        assert sc is not None

        def seen(at: float | None, planned: float) -> str:
            return "not seen" if at is None else f"{at - planned:+.1f}s"

        lines = [
            f"summary: window {OPENING} open {hms(sc.open_at)}-{hms(sc.close_at)}",
            f"UnderMaintenance followed it: opening {seen(t.opened_seen, sc.open_at)}, "
            f"closing {seen(t.closed_seen, sc.close_at)}",
            f"MaintenanceInProgress at most {t.max_in_progress} (ceiling {CEILING}); "
            f"simulated reboots {t.reboots}",
        ]
        if t.kill_sent is not None:
            took = f"{t.takeover:.1f}s" if t.takeover is not None else "not seen"
            lines.append(
                f"SIG{self.o.kill_signal} to the leader: new leader after {took}; "
                f"replica restarts {t.restarts}"
            )
        lines.append(f"ended by {self.stop_reason or 'an error'}")
        return "\n         ".join(lines)


def reap(workdir: Path, grace: float = 5.0) -> list[int]:
    """Stop any process left whose command line names ``workdir``; return their PIDs."""
    needle = str(workdir).encode()

    def find() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
        return found

    strays = find()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in find():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while find() and time.monotonic() < deadline:
            time.sleep(0.1)
    return strays
