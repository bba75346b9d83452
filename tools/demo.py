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
4. A live table, redrawn twice a second with ANSI escapes (no curses), shows each
   window with a countdown to its next transition, the Lease holder, every node's
   ``kured.dev/UnderMaintenance`` and ``MaintenanceInProgress`` (status, reason) as
   kumaco wrote them, and the latest events (window opened/closed, leader changed,
   kill sent, replica restarted, kumaco's own Events). When stdout is not a terminal
   (or ``TERM=dumb``) it prints event lines as they happen and a plain frame whenever
   a node or the leader changes. Colour unless ``--no-color`` or ``NO_COLOR``.
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
``[HH:MM:SSZ] TEXT``, frames introduced by ``---- frame HH:MM:SSZ``, in which node
rows read ``NAME FLAGS UM-STATUS UM-REASON MIP-STATUS MIP-REASON`` (FLAGS ``R``
RebootRequired, ``I`` RebootInhibited, ``-`` neither), and one final ``summary:`` line.

Only the standard library is imported at module level (the rest when the demo
runs), so that ``hack/demo.sh --help`` works before the virtualenv exists.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

if TYPE_CHECKING:
    from kumaco.core.windows import InvalidWindow, Window
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
TICK = 0.5
PLAIN_HEARTBEAT = 15.0
UM_REASON_WIDTH = 23  # NoMaintenanceWindowOpen
MIP_REASON_WIDTH = 25  # ConcurrencyCeilingReached
WIDE = 110


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


def when(t: float, now: float) -> str:
    """A UTC instant, with the date when it is not within a day of ``now``."""
    fmt = "%H:%M:%SZ" if abs(t - now) < 86400 else "%Y-%m-%d %H:%MZ"
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime(fmt)


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


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    with contextlib.suppress(ValueError):
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    return None


Seg = tuple[str, str]  # (text, SGR parameters or "")

BOLD, DIM, RED, GREEN, YELLOW, MAGENTA, CYAN = "1", "2", "31", "1;32", "1;33", "35", "1;36"


def paint(segs: Sequence[Seg], width: int, color: bool) -> str:
    """Join segments, cut to ``width`` visible characters, coloured when asked."""
    out: list[str] = []
    room = width
    for text, sgr in segs:
        if room <= 0:
            break
        piece = text[:room]
        room -= len(piece)
        out.append(f"\x1b[{sgr}m{piece}\x1b[0m" if color and sgr and piece.strip() else piece)
    return "".join(out).rstrip() if not color else "".join(out)


# ----------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Cond:
    """A node condition as the table shows it."""

    status: str
    reason: str
    since: float | None
    message: str = ""


@dataclass(frozen=True)
class NodeRow:
    """One node: where it is, kured's conditions, kumaco's conditions."""

    name: str
    labels: dict[str, str]
    required: bool
    inhibited: bool
    um: Cond | None
    mip: Cond | None

    @property
    def flags(self) -> str:
        return ("R" if self.required else "") + ("I" if self.inhibited else "") or "-"

    @property
    def zone(self) -> str:
        return self.labels.get("topology.kubernetes.io/zone", "")

    @property
    def role(self) -> str:
        return "control-plane" if CONTROL_PLANE in self.labels else "worker"


def node_row(obj: dict[str, Any]) -> NodeRow:
    conds = {c.get("type"): c for c in obj.get("status", {}).get("conditions") or []}

    def cond(ctype: str) -> Cond | None:
        c = conds.get(ctype)
        if c is None:
            return None
        return Cond(
            str(c.get("status", "")),
            str(c.get("reason", "")),
            parse_time(c.get("lastTransitionTime")),
            str(c.get("message", "")),
        )

    def true(ctype: str) -> bool:
        c = conds.get(ctype)
        return c is not None and c.get("status") == "True"

    return NodeRow(
        obj["metadata"]["name"],
        dict(obj["metadata"].get("labels") or {}),
        true(REQUIRED),
        true(BLOCKING),
        cond(UM),
        cond(MIP),
    )


_WINDOWS_IN_MESSAGE = re.compile(r"^maintenance windows? (.+?) open (?:until|with) ")


def window_names(row: NodeRow) -> list[str]:
    """The open windows named by a node's UnderMaintenance message (kumaco.core.planner's wording)."""
    m = _WINDOWS_IN_MESSAGE.match(row.um.message if row.um is not None else "")
    return [k.split("/", 1)[-1] for k in m.group(1).split(", ")] if m else []


@dataclass
class Snapshot:
    """What one poll of the API server saw."""

    at: float
    nodes: list[NodeRow] = field(default_factory=list)
    holder: str = ""
    renewed: float | None = None
    lease_seconds: float = 15.0
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


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


# ----------------------------------------------------------------------------- terminal


class Screen:
    """Full-frame ANSI redraws on a terminal, plain prints elsewhere."""

    def __init__(self, out: TextIO, tty: bool, color: bool) -> None:
        self.out = out
        self.tty = tty
        self.color = color
        self.active = False
        self.resized = False
        self._termios: list[Any] | None = None

    def open(self) -> None:
        if not self.tty:
            return
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError, OSError):
                import termios

                fd = sys.stdin.fileno()
                self._termios = termios.tcgetattr(fd)
                quiet = termios.tcgetattr(fd)
                quiet[3] &= ~termios.ECHO  # typed keys (and ^C) do not garble the table
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
        self.out.write("\x1b[?25l\x1b[2J\x1b[H")
        self.out.flush()
        self.active = True

    def size(self) -> tuple[int, int]:
        cols, rows = shutil.get_terminal_size((80, 24))
        return max(cols, 40), max(rows, 12)

    def draw(self, lines: Sequence[str]) -> None:
        clear = "\x1b[2J" if self.resized else ""
        self.resized = False
        self.out.write(clear + "\x1b[H" + "\x1b[K\n".join(lines) + "\x1b[K\x1b[J")
        self.out.flush()

    def close(self) -> None:
        if not self.active:
            return
        self.active = False
        with contextlib.suppress(OSError):
            self.out.write("\x1b[0m\x1b[?25h\n")
            self.out.flush()
        if self._termios is not None:
            with contextlib.suppress(ImportError, OSError):
                import termios

                fd = sys.stdin.fileno()
                termios.tcflush(fd, termios.TCIFLUSH)
                termios.tcsetattr(fd, termios.TCSANOW, self._termios)


# ----------------------------------------------------------------------------- the demo


class Demo:
    """Set up, run the scenario while drawing the table, and clean up whatever happens."""

    def __init__(self, opts: DemoOptions, out: TextIO = sys.stdout) -> None:
        self.o = opts
        self.out = out
        tty = out.isatty() and os.environ.get("TERM") != "dumb"
        color = tty and not opts.no_color and not os.environ.get("NO_COLOR")
        self.screen = Screen(out, tty, color)
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
        self.windows: list[Window | InvalidWindow] = []
        self._parsed: dict[tuple[str, str], Window | InvalidWindow] = {}
        self.tally = Tally()
        self.events: deque[tuple[float, str, str]] = deque(maxlen=200)
        self.pids: dict[str, int] = {}
        self.mip_since: dict[str, float] = {}
        self.rebooted: set[str] = set()
        self.seen_events: set[str] = set()
        self.last: Snapshot | None = None
        self.scenario_over = False
        self.open_windows: list[str] = []
        self.polls = 0
        self._last_plain = ("", 0.0)

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
        if not self.screen.tty:
            self.say(f"[{hms(at)}] {text}")

    # -- signals

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if not self.stop.is_set():
            self.stop_reason = signal.Signals(signum).name
        self.stop.set()
        if self.phase == "setup":
            raise Interrupted(signal.Signals(signum).name)

    def _on_winch(self, _signum: int, _frame: FrameType | None) -> None:
        self.screen.resized = True

    # -- lifecycle

    def run(self) -> int:
        rc = 0
        old = {
            s: signal.signal(s, self._on_signal)
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        }
        old[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, self._on_winch)
        try:
            self.setup()
            self.phase = "run"
            if not self.stop.is_set():
                self.screen.open()
                self.loop()
        except Interrupted:
            pass
        except (RuntimeError, OSError, AssertionError) as exc:
            self.phase = "cleanup"
            self.screen.close()
            print(f"demo: set-up or run failed: {exc}", file=sys.stderr, flush=True)
            rc = 1
        finally:
            self.phase = "cleanup"
            self.screen.close()
            self.cleanup()
            for s, h in old.items():
                signal.signal(s, h)
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
        if self.screen.tty:
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
        self.read_windows()

    def read_windows(self) -> None:
        """The window ConfigMaps as they are now (with --keep, someone may add or edit one)."""
        from kumaco.core.windowdata import parse_window

        assert self.api is not None
        doc = self.api.request(
            "GET",
            f"/api/v1/namespaces/{NS}/configmaps?labelSelector=kured.dev%2Fmaintenance-window",
        )
        found: list[Window | InvalidWindow] = []
        items = doc.get("items") or []
        for cm in sorted(
            items, key=lambda c: (c["metadata"]["name"] != OPENING, c["metadata"]["name"])
        ):
            meta = cm["metadata"]
            key = (str(meta["name"]), str(meta.get("resourceVersion", "")))
            if key not in self._parsed:
                self._parsed[key] = parse_window(
                    NS, key[0], cm.get("data"), has_binary_data=bool(cm.get("binaryData"))
                )
            found.append(self._parsed[key])
        self.windows = found

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
            if not self.screen.tty:
                self.say(f"pids: {key}={pid}")
            if restarted:
                self.tally.restarts += 1
                self.event(f"{name} restarted by the supervisor (pid {pid})", DIM)

    # -- the loop

    def loop(self) -> None:
        while not self.stop.is_set():
            now = self.now()
            snap = self.poll(now)
            self.observe(snap)
            self.act(snap)
            self.render(snap)
            self.last = snap
            sc = self.scenario
            assert sc is not None
            if sc.deadline is not None and now >= sc.deadline:
                self.stop_reason = self.stop_reason or f"--duration {self.o.duration:g}"
                break
            if sc.end_at is not None and self.scenario_over:
                self.stop_reason = self.stop_reason or "scenario over"
                break
            self.stop.wait(max(0.05, TICK - (self.now() - now)))
        if self.last is not None and not self.screen.tty:
            self.print_plain(self.last, force=True)
        elif self.last is not None:
            self.render(self.last)

    def poll(self, now: float) -> Snapshot:
        assert self.api is not None
        snap = Snapshot(at=now)
        prev = self.last
        try:
            doc = self.api.request("GET", "/api/v1/nodes")
            snap.nodes = sorted((node_row(n) for n in doc["items"]), key=lambda r: r.name)
            lease = self.api.lease(NS, LEASE) or {}
            spec = lease.get("spec") or {}
            snap.holder = str(spec.get("holderIdentity") or "")
            snap.renewed = parse_time(spec.get("renewTime"))
            snap.lease_seconds = float(spec.get("leaseDurationSeconds") or 15)
            if self.polls % 2 == 0:
                snap.events = self.api.events(NS)
                self.read_windows()
        except (RuntimeError, OSError, ValueError, KeyError) as exc:
            snap.error = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            if prev is not None:
                snap.nodes, snap.holder, snap.renewed = prev.nodes, prev.holder, prev.renewed
        self.polls += 1
        return snap

    def observe(self, snap: Snapshot) -> None:
        prev = self.last
        sc = self.scenario
        assert sc is not None
        now = snap.at
        self.track_replicas()
        # kumaco's own Events (window loaded / ignored / started / ended)
        for ev in sorted(snap.events, key=lambda e: str(e.get("eventTime") or "")):
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
        if snap.error:
            return
        # windows opening and closing, as kumaco's conditions show them
        um = [r for r in snap.nodes if r.um is not None and r.um.status == "True"]
        t = self.tally
        if um and not self.open_windows:
            self.open_windows = sorted({k for r in um for k in window_names(r)}) or ["a window"]
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
        before = {
            r.name: r.mip.status if r.mip else "" for r in (prev.nodes if prev is not None else [])
        }
        gained, lost = [], []
        for r in snap.nodes:
            status = r.mip.status if r.mip else ""
            if status == "True" and before.get(r.name) != "True":
                gained.append(r.name)
                self.mip_since[r.name] = now
            elif status != "True" and before.get(r.name) == "True":
                lost.append(f"{r.name} ({r.mip.reason if r.mip else 'removed'})")
                self.mip_since.pop(r.name, None)
        holding = sum(1 for r in snap.nodes if r.mip is not None and r.mip.status == "True")
        self.tally.max_in_progress = max(self.tally.max_in_progress, holding)
        if lost:
            self.event(f"MaintenanceInProgress=False: {', '.join(lost)}", DIM)
        if gained:
            self.event(
                f"MaintenanceInProgress=True: {', '.join(gained)} ({holding}/{CEILING})",
                GREEN,
            )
        # the leader
        if prev is None or snap.holder != prev.holder:
            self.leader_changed(prev.holder if prev is not None else "", snap.holder, now)
        if (
            sc.end_at is not None
            and now >= sc.end_at
            and (self.tally.closed_seen is not None or now >= sc.close_at + 30)
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

    def act(self, snap: Snapshot) -> None:
        sc = self.scenario
        assert sc is not None
        assert self.sup is not None
        now = snap.at
        t = self.tally
        fresh = snap.renewed is not None and now - snap.renewed < snap.lease_seconds / 2
        if sc.kill_at is not None and t.kill_sent is None and now >= sc.kill_at and fresh:
            victim = self.sup.by_identity(snap.holder) if snap.holder else None
            if victim is not None and victim.alive and victim.proc is not None:
                sig = signal.SIGTERM if self.o.kill_signal == "TERM" else signal.SIGKILL
                victim.send(sig)
                t.kill_sent, t.killed_holder = self.now(), snap.holder
                self.event(
                    f"sent {sig.name} to leader {snap.holder} (pid {victim.proc.pid})", MAGENTA
                )
        if self.o.reboot_after > 0 and not snap.error:
            for r in snap.nodes:
                since = self.mip_since.get(r.name)
                if (
                    since is not None
                    and now - since >= self.o.reboot_after
                    and r.required
                    and r.name not in self.rebooted
                ):
                    self.rebooted.add(r.name)
                    with contextlib.suppress(RuntimeError, OSError):
                        self.set_condition(r.name, REQUIRED, "False", "Rebooted", "rebooted")
                        t.reboots += 1
                        self.event(f"kured (simulated) rebooted {r.name}: RebootRequired=False")

    # -- drawing

    def render(self, snap: Snapshot) -> None:
        if self.screen.tty:
            cols, rows = self.screen.size()
            self.screen.draw(self.frame(snap, cols, rows))
        else:
            self.print_plain(snap)

    def print_plain(self, snap: Snapshot, force: bool = False) -> None:
        body = [
            paint(s, 1000, False) for s in self.table(snap, wide=False, max_nodes=10**6, ages=False)
        ]
        # a new frame when a node or the leader changes (clock and countdowns tick every time)
        key = "\n".join([snap.holder, *body[1 + len(self.windows) :]])
        last_key, last_at = self._last_plain
        if not force and key == last_key and snap.at - last_at < PLAIN_HEARTBEAT:
            return
        if not force and key != last_key and snap.at - last_at < 1.0:
            return
        self._last_plain = (key, snap.at)
        self.say(f"---- frame {hms(snap.at)}\n" + "\n".join(body))

    def frame(self, snap: Snapshot, cols: int, rows: int) -> list[str]:
        width = cols - 1
        wide = cols >= WIDE
        color = self.screen.color
        fixed = 1 + len(self.windows) + 1 + 2  # title, windows, node header, footer
        max_nodes = max(3, rows - 1 - fixed - 1)
        table = self.table(snap, wide, max_nodes)
        room = max(1, rows - 1 - len(table) - 2)
        lines = [paint(s, width, color) for s in table]
        if room >= 6:  # a rule between the table and the event log, when there is room
            lines.append(paint([("-- events " + "-" * width, DIM)], width, color))
            room -= 1
        for at, text, style in list(self.events)[-room:]:
            lines.append(paint([(hms(at) + " ", DIM), (text, style)], width, color))
        lines.extend([""] * (rows - 1 - 2 - len(lines)))
        lines.append(paint(self.footer(snap, wide), width, color))
        hint = f"kubectl kumaco status --kubeconfig {self.kubeconfig}"
        lines.append(paint([(hint, DIM)], width, color))
        return lines[: rows - 1]

    def footer(self, snap: Snapshot, wide: bool) -> list[Seg]:
        sc = self.scenario
        assert sc is not None
        segs: list[Seg] = [("Ctrl-C stops", BOLD)]
        ends = [t for t in (sc.end_at, sc.deadline) if t is not None]
        if self.o.keep and self.scenario_over:
            segs.append((" (scenario over)", ""))
        elif ends:
            segs.append((f" (ends in {span(min(ends) - snap.at)})", ""))
        segs.append(("  R RebootRequired, I RebootInhibited", DIM))
        if wide:
            segs.append((f"  ceiling {CEILING}, {REPLICAS} replicas, Lease {NS}/{LEASE}", DIM))
        if snap.error:
            segs = [(f"API: {snap.error}", RED)]
        return segs

    def title(self, snap: Snapshot, wide: bool) -> list[Seg]:
        sc = self.scenario
        assert sc is not None
        segs: list[Seg] = [("kumaco demo", BOLD), (f"  {hms(snap.at)}  leader ", "")]
        if snap.holder:
            segs.append((snap.holder, CYAN))
            if snap.renewed is not None:
                age = snap.at - snap.renewed
                if age > 3:
                    left = snap.renewed + snap.lease_seconds - snap.at
                    note = f"expires in {span(left)}" if left > 0 else "expired"
                    segs.append((f" (no renewal for {age:.0f}s, {note})", YELLOW))
        else:
            segs.append(("(none)", RED))
        t = self.tally
        if sc.kill_at is not None and t.kill_sent is None and snap.at < sc.close_at:
            kill = f"  SIG{self.o.kill_signal} to leader in {span(sc.kill_at - snap.at)}"
            segs.append((kill, MAGENTA))
        elif t.takeover is not None:
            segs.append((f"  (SIG{self.o.kill_signal}: takeover {t.takeover:.1f}s)", DIM))
        return segs

    def table(
        self, snap: Snapshot, wide: bool, max_nodes: int, ages: bool = True
    ) -> list[list[Seg]]:
        out = [self.title(snap, wide)]
        for w in self.windows:
            out.append(self.window_line(w, snap, wide))
        hdr = f"{'NODE':<10} "
        if wide:
            hdr += f"{'ZONE':<6} {'ROLE':<13} "
        hdr += f"{'RI':<2} {UM:<{UM_REASON_WIDTH + 6}} {MIP}"
        out.append([(hdr, BOLD)])
        rows = snap.nodes
        if len(rows) > max_nodes:
            hidden = rows[max_nodes - 1 :]
            rows = rows[: max_nodes - 1]
        else:
            hidden = []
        for r in rows:
            out.append(self.node_line(r, snap.at, wide, ages))
        if hidden:
            um = sum(1 for r in hidden if r.um is not None and r.um.status == "True")
            mip = sum(1 for r in hidden if r.mip is not None and r.mip.status == "True")
            out.append(
                [(f"... {len(hidden)} more nodes: {um} under maintenance, {mip} in progress", DIM)]
            )
        return out

    def window_line(self, w: Window | InvalidWindow, snap: Snapshot, wide: bool) -> list[Seg]:
        from kumaco.core.windows import Window

        segs: list[Seg] = [(f"{w.name:<13}", BOLD)]
        if not isinstance(w, Window):
            return [*segs, ("INVALID ", RED), (w.reason, DIM)]
        st = w.state_at(int(snap.at * 1e9))
        nodes = sum(1 for r in snap.nodes if w.selector.matches(r.labels))
        nxt = st.next_change / 1e9 if st.next_change is not None else None
        if st.open:
            segs.append(("OPEN    ", YELLOW))
            if nxt is not None:
                segs.append((f"closes in {span(nxt - snap.at)} at {when(nxt, snap.at)}", ""))
        else:
            segs.append(("closed  ", DIM))
            if nxt is not None:
                segs.append((f"opens in {span(nxt - snap.at)} at {when(nxt, snap.at)}", ""))
            else:
                segs.append(("never opens", ""))
        segs.append((f", {plural(nodes, 'node')}", DIM))
        if wide:
            segs.append((f"  {w.selector_text}", DIM))
        return segs

    def node_line(self, r: NodeRow, now: float, wide: bool, ages: bool) -> list[Seg]:
        holds = r.mip is not None and r.mip.status == "True"
        segs: list[Seg] = [(f"{r.name:<10} ", BOLD if holds else "")]
        if wide:
            segs.append((f"{r.zone:<6} {r.role:<13} ", DIM))
        segs.append((f"{r.flags:<2} ", YELLOW if r.inhibited else ("" if r.required else DIM)))
        segs.extend(self.cond_cell(r.um, UM_REASON_WIDTH, UM))
        segs.append((" ", ""))
        if ages and holds and r.mip is not None and r.mip.since is not None:
            # every holder's reason is MaintenanceAllowed: the ages line up
            segs.extend(self.cond_cell(r.mip, 0, MIP))
            segs.append((f" for {span(now - r.mip.since)}", GREEN))
        else:
            segs.extend(self.cond_cell(r.mip, MIP_REASON_WIDTH, MIP))
        return segs

    @staticmethod
    def cond_cell(c: Cond | None, width: int, ctype: str) -> list[Seg]:
        if c is None:
            return [(f"{'-':<5} {'':<{width}}", DIM)]
        if c.status == "True":
            style = YELLOW if ctype == UM else GREEN
        elif c.reason == "ConcurrencyCeilingReached":
            style = MAGENTA
        elif c.reason == "BlockedByCondition":
            style = RED
        else:
            style = DIM
        return [(f"{c.status:<5} ", style), (f"{c.reason:<{width}}", style)]

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
