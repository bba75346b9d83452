"""kumaco replicas as the kubelet runs them: restarted when they exit, scoped, with lease timings.

A :class:`Supervisor` keeps ``n`` replicas running; it makes each one (and each
restart) with a factory, usually a :class:`ReplicaFactory`. :func:`leader_of`
reads the holder from the Lease, whose identity starts with the replica's
``POD_NAME`` (:meth:`Supervisor.by_identity`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.env.harness import REQUIRED, RUN_LABEL, Api, Kumaco


@dataclass(frozen=True)
class Timings:
    """Lease timings given to the replicas (seconds); the defaults are kumaco's."""

    lease: float = 15.0
    renew: float = 10.0
    retry: float = 2.0

    def flags(self) -> list[str]:
        return [
            "--leader-elect-lease-duration",
            f"{self.lease}s",
            "--leader-elect-renew-deadline",
            f"{self.renew}s",
            "--leader-elect-retry-period",
            f"{self.retry}s",
        ]


#: Short Lease timings, for tests that wait for takeovers (seconds).
FAST = Timings(lease=4.0, renew=3.0, retry=1.0)


def scope_flags(run: str, ns: str) -> list[str]:
    """``kumaco run`` flags that scope a test's replicas: its namespace, Lease and nodes."""
    return [
        "--namespaces",
        ns,
        "--leader-election-namespace",
        ns,
        "--leader-election-id",
        run,
        "--node-selector",
        f"{RUN_LABEL}={run}",
    ]


def replica_flags(run: str, ns: str, ceiling: int, timings: Timings) -> list[str]:
    """:func:`scope_flags`, a ceiling on MaintenanceInProgress and the Lease timings."""
    return [
        *scope_flags(run, ns),
        "--max-in-progress",
        str(ceiling),
        "--require-condition",
        REQUIRED,
        *timings.flags(),
    ]


@dataclass
class ReplicaFactory:
    """Makes replica ``name`` (not started): ``POD_NAME`` ``{prefix}-{name}``, its own log.

    The log of the n-th process of a replica is ``logs/{prefix}-{name}.{n}.log``;
    every process made is kept in :attr:`made`.
    """

    kubeconfig: Path
    flags: Sequence[str]
    logs: Path
    prefix: str
    made: list[Kumaco] = field(default_factory=list)
    cwd: Path | None = None  # where each process runs (see :class:`Kumaco`)
    launcher: Sequence[str] = ("-m", "kumaco")  # e.g. a shifted clock's (harness.Shift)

    def __call__(self, name: str) -> Kumaco:
        pod = f"{self.prefix}-{name}"
        n = 1 + sum(1 for k in self.made if k.name == name)
        k = Kumaco(
            self.kubeconfig,
            list(self.flags),
            self.logs / f"{pod}.{n}.log",
            {"POD_NAME": pod},
            name,
            launcher=self.launcher,
            cwd=self.cwd,
        )
        self.made.append(k)
        return k

    def exit_codes(self) -> list[int]:
        """The exit statuses of the processes that have ended, in the order they were made."""
        return [
            k.proc.returncode for k in self.made if k.proc is not None and k.proc.poll() is not None
        ]


class Supervisor:
    """Keeps ``n`` replicas running; restarts an exited one after ``delay`` (as the kubelet)."""

    def __init__(self, make: Callable[[str], Kumaco], n: int, delay: float = 0.5) -> None:
        self.make = make
        self.delay = delay
        self.replicas: dict[str, Kumaco] = {}
        self.restarts = 0
        self._stop = threading.Event()
        for i in range(n):
            name = f"r{i}"
            self.replicas[name] = make(name).start()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            for name, k in list(self.replicas.items()):
                if not k.alive:
                    time.sleep(self.delay)
                    if self._stop.is_set():
                        return
                    self.replicas[name] = self.make(name).start()
                    self.restarts += 1

    def by_identity(self, identity: str) -> Kumaco | None:
        """The running replica whose Lease identity this is (``POD_NAME_<suffix>``)."""
        for k in self.replicas.values():
            if identity.startswith(k.env.get("POD_NAME", "\0") + "_"):
                return k
        return None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        # All at once, as a Deployment's pods are: the replicas shut down side by side
        # (each within 20 s, else SIGKILL), not one after the other.
        running = [k for k in self.replicas.values() if k.alive]
        for k in running:
            k.send(signal.SIGTERM)
        for k in running:
            with contextlib.suppress(AssertionError):
                k.stop(signal.SIGTERM, timeout=20)


def leader_of(api: Api, ns: str, name: str) -> str:
    """The Lease's holder identity, "" when there is none (or no Lease)."""
    lease = api.lease(ns, name)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def wait_leader(api: Api, ns: str, name: str, timeout: float, not_: str | None = None) -> str:
    """Wait for a holder (other than ``not_``); an AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = leader_of(api, ns, name)
        if holder and holder != not_:
            return holder
        time.sleep(0.02)
    raise AssertionError(f"no new leader within {timeout}s (previous: {not_})")
