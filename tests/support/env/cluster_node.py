"""A real node's PID 1: the init of the node's own PID, mount and network namespaces.

Contract. ``python -m tests.support.env.cluster_node SPEC.json`` is started by
:mod:`tests.support.env.cluster` under ``unshare --pid --fork --mount-proc --mount --net``,
so that this program is PID 1 of a PID namespace of its own (a hostPID pod on the node sees
it as ``/proc/1``, never the machine's init), in a mount and a network namespace of its
own. The standard library only; it reads nothing of the repository.

At start it makes ``/`` a shared mount of its namespace (the kubelet's volumes reach the
containers; nothing propagates to the machine: ``unshare`` made every mount private
first), mounts fresh tmpfs on ``/run``, ``/var/lib/cni`` and ``/var/log/containers`` (the
paths containerd, CNI and the kubelet use whatever their configuration says), and binds
files over the kernel tunables the kubelet would otherwise rewrite for the whole machine
(``vm/overcommit_memory``, ``vm/panic_on_oom``, ``kernel/panic``, ``kernel/panic_on_oops``:
each reads the value the kubelet wants, so it never writes). Then it waits for the file
``go`` in its directory (the fixture writes it once the node's network is configured),
starts containerd, waits for its socket, and starts the kubelet: both with the
commands of SPEC, their output appended to ``containerd.log`` / ``kubelet.log``. A daemon
that exits is logged to ``events.log`` and started again after 2 s (as systemd's
``Restart=always`` on a node). It reaps every orphan (the containerd shims come to it).

SIGTERM or SIGINT stops the kubelet, then containerd (SIGTERM, SIGKILL after 10 s), and
ends the program: the kernel then kills whatever is left in the node's PID namespace
(shims, containers), and the mount and network namespaces go with their last process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: What the kubelet's setupKernelTunables wants (it writes any that differ, machine-wide).
KUBELET_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
}
TMPFS = ("/run", "/var/lib/cni", "/var/log/containers")


class Node:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.dir = Path(spec["dir"])
        self.procs: dict[str, int] = {}  # daemon -> pid
        self.exited: dict[str, float] = {}  # daemon -> when it exited
        self.stopping = False
        self.popens: list[subprocess.Popen[bytes]] = []

    def event(self, what: str, **fields: Any) -> None:
        line = json.dumps({"time": time.time(), "event": what, **fields}) + "\n"
        with (self.dir / "events.log").open("a") as f:
            f.write(line)

    def prepare(self) -> None:
        subprocess.run(["mount", "--make-rshared", "/"], check=True)
        for path in TMPFS:
            Path(path).mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", path], check=True)
        tun = self.dir / "tunables"
        tun.mkdir(exist_ok=True)
        for key, value in KUBELET_TUNABLES.items():
            f = tun / key.replace("/", ".")
            f.write_text(value + "\n")
            subprocess.run(["mount", "--bind", str(f), f"/proc/sys/{key}"], check=True)

    def start(self, name: str) -> None:
        with (self.dir / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                self.spec[name],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.spec.get("env") or None,
            )
        self.procs[name] = proc.pid
        self.popens.append(proc)  # kept: a collected Popen would reap behind reap()'s back
        self.exited.pop(name, None)
        self.event("start", daemon=name, pid=proc.pid)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for name, p in list(self.procs.items()):
                if p == pid:
                    del self.procs[name]
                    self.exited[name] = time.monotonic()
                    self.event("exit", daemon=name, status=os.waitstatus_to_exitcode(status))

    def wait_socket(self, path: Path, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists() and time.monotonic() < deadline and not self.stopping:
            self.reap()
            time.sleep(0.1)

    def stop(self, name: str, timeout: float = 10) -> None:
        pid = self.procs.get(name)
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while name in self.procs and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.05)
        if name in self.procs:
            os.kill(pid, signal.SIGKILL)
            while name in self.procs:
                self.reap()
                time.sleep(0.05)

    def run(self) -> int:
        self.prepare()
        while not (self.dir / "go").exists() and not self.stopping:
            time.sleep(0.05)
        order = ("containerd", "kubelet")
        for name in order:
            if self.stopping:
                break
            self.start(name)
            if name == "containerd":
                self.wait_socket(Path(self.spec["containerd_socket"]))
        while not self.stopping:
            self.reap()
            for name in order:
                at = self.exited.get(name)
                if at is not None and time.monotonic() - at >= 2:
                    self.start(name)
            time.sleep(0.1)
        for name in reversed(order):
            self.stop(name)
        self.event("stop")
        return 0


def main(argv: list[str]) -> int:
    if os.getpid() != 1:
        print("cluster_node: not PID 1 of its own PID namespace", file=sys.stderr)
        return 2
    node = Node(json.loads(Path(argv[1]).read_text()))

    def on_signal(_sig: int, _frame: object) -> None:
        node.stopping = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    return node.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
