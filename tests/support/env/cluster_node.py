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

**Reboots** (only when SPEC has a ``reboot`` section). The node has a boot ID of its own:
at start a fresh UUID is written to ``boot_id`` in its directory and bound over
``/proc/sys/kernel/random/boot_id`` (what the kubelet reports as ``nodeInfo.bootID``).
SIGRTMIN+5 (39, what kured's ``reboot-daemon --reboot-method=signal`` sends to PID 1 of
its PID namespace: a hostPID pod on this node reaches this program, nothing else) reboots
the node: it appends ``reboot`` (node, time, old and new boot ID, the count ``n``) to the
reboot log (JSON lines, one ``O_APPEND`` write each, shared by the nodes), stops the
kubelet, writes ``Ready=False`` to its Node's status with the kubelet's own credentials
(as a kubelet's graceful node shutdown does: without it the node would look Ready until
the node controller's grace period ran out), stops containerd, kills every other process
of the PID namespace (shims, containers: SIGKILL, as power-off), unmounts what a boot loses
(the tmpfs ``/run``, ``/var/lib/cni``, ``/var/log/containers`` with everything under
them, and the kubelet's volume mounts under the node's directory), removes the pods'
cgroups below the node's ``cgroupRoot`` (``down``), writes the new boot ID, waits
``reboot.seconds``, mounts fresh tmpfs again -- so the sentinel under ``/run`` is gone --
and starts containerd and the kubelet (``up``). What is on disk stays (containerd's root,
the kubelet's root directory), as on a machine. A SIGRTMIN+5 that arrives during a reboot
is logged (``signal_while_rebooting``) and ignored.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
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
BOOT_ID = "/proc/sys/kernel/random/boot_id"
REBOOT_SIGNAL = 39  # SIGRTMIN+5, the reboot-daemon's --reboot-signal default


class Node:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.dir = Path(spec["dir"])
        self.procs: dict[str, int] = {}  # daemon -> pid
        self.exited: dict[str, float] = {}  # daemon -> when it exited
        self.stopping = False
        self.popens: list[subprocess.Popen[bytes]] = []
        self.reboot_spec: dict[str, Any] | None = spec.get("reboot")
        self.reboot_requested = False
        self.reboots = 0
        self.boot_id = ""

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
        if self.reboot_spec is not None:
            self.boot_id = str(uuid.uuid4())
            boot = self.dir / "boot_id"
            boot.write_text(self.boot_id + "\n")
            subprocess.run(["mount", "--bind", str(boot), BOOT_ID], check=True)
            self.log_reboot("boot")

    # -- reboots (see the module contract)

    def log_reboot(self, event: str, **fields: Any) -> None:
        assert self.reboot_spec is not None
        line = {
            "event": event,
            "node": self.reboot_spec["node"],
            "time": time.time(),
            "boot_id": self.boot_id,
            **fields,
        }
        data = (json.dumps(line, sort_keys=True) + "\n").encode()
        fd = os.open(self.reboot_spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def patch_not_ready(self) -> None:
        """``Ready=False`` on the Node's status, as the kubelet (its kubeconfig's identity)."""
        assert self.reboot_spec is not None
        kc = json.loads(Path(self.reboot_spec["kubeconfig"]).read_text())
        server = kc["clusters"][0]["cluster"]
        user = kc["users"][0]["user"]
        host, _, port = server["server"].removeprefix("https://").partition(":")
        ctx = ssl.create_default_context(cafile=server["certificate-authority"])
        ctx.load_cert_chain(user["client-certificate"], user["client-key"])
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cond = {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "message": "the node is rebooting",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        body = json.dumps({"status": {"conditions": [cond]}})
        err = ""
        for attempt in range(20):
            conn = http.client.HTTPSConnection(host, int(port or 443), context=ctx, timeout=5)
            try:
                conn.request(
                    "PATCH",
                    f"/api/v1/nodes/{self.reboot_spec['node']}/status",
                    body=body,
                    headers={"Content-Type": "application/strategic-merge-patch+json"},
                )
                resp = conn.getresponse()
                data = resp.read()
                if resp.status < 300:
                    return
                err = f"{resp.status} {data[:300]!r}"
            except OSError as exc:
                err = str(exc)
            finally:
                conn.close()
            time.sleep(min(0.1 * (attempt + 1), 1.0))
        self.event("not_ready_failed", error=err)

    def kill_all(self, timeout: float = 20) -> int:
        """SIGKILL every process of the PID namespace but this one, reaping them; how many."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != 1]
            if not others:
                break
            for pid in others:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            self.reap()
            time.sleep(0.05)
        return len(killed)

    def unmount_volatile(self) -> int:
        """Unmount (lazily, deepest first) what a boot loses; how many mount points."""
        roots = (*TMPFS, str(self.dir))
        points = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if any(point == r or point.startswith(r.rstrip("/") + "/") for r in roots):
                points.append(point)
        for point in sorted(set(points), key=lambda p: -p.count("/")):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        return len(set(points))

    def remove_pod_cgroups(self) -> None:
        """rmdir, bottom-up, every cgroup below the node's cgroupRoot (the root stays)."""
        assert self.reboot_spec is not None
        root = self.reboot_spec["cgroup_root"].strip("/")
        base = Path("/sys/fs/cgroup")
        for hierarchy in sorted(base.iterdir()) if base.exists() else []:
            top = hierarchy / root
            if not top.is_dir() or top.is_symlink():
                continue
            dirs = [Path(d) for d, _subdirs, _files in os.walk(top) if Path(d) != top]
            for d in sorted(dirs, key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    d.rmdir()

    def reboot(self) -> None:
        assert self.reboot_spec is not None
        self.reboots += 1
        n, old, new = self.reboots, self.boot_id, str(uuid.uuid4())
        self.log_reboot("reboot", old_boot_id=old, new_boot_id=new, n=n)
        self.stop("kubelet")
        self.patch_not_ready()
        self.stop("containerd")
        killed = self.kill_all()
        mounts = self.unmount_volatile()
        self.remove_pod_cgroups()
        self.log_reboot("down", n=n, killed=killed, unmounted=mounts)
        (self.dir / "boot_id").write_text(new + "\n")  # the bound file: same inode
        self.boot_id = new
        deadline = time.monotonic() + float(self.reboot_spec.get("seconds", 1))
        while time.monotonic() < deadline and not self.stopping:
            self.reap()
            time.sleep(0.05)
        if self.stopping:
            return
        for path in TMPFS:
            Path(path).mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", path], check=True)
        if self.reboot_requested:
            self.log_reboot("signal_while_rebooting", n=n)
            self.reboot_requested = False
        self.start("containerd")
        self.wait_socket(Path(self.spec["containerd_socket"]))
        self.start("kubelet")
        self.log_reboot("up", n=n, sentinel=Path("/run/kured/reboot-required").exists())

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
            if self.reboot_requested and self.reboot_spec is not None:
                self.reboot_requested = False
                self.reboot()
                continue
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

    def on_reboot(_sig: int, _frame: object) -> None:
        node.reboot_requested = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    if node.reboot_spec is not None:
        signal.signal(REBOOT_SIGNAL, on_reboot)
    return node.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
