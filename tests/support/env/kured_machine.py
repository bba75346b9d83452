"""A simulated machine (or pod) for kured v2's real agents: the program that runs as its PID 1.

Contract. ``python -m tests.support.env.kured_machine SPEC.json`` is started by
:mod:`tests.support.env.kured` under ``unshare --pid --fork --mount-proc --mount``, so that this
program is PID 1 of a PID namespace of its own, in a mount namespace of its own. SPEC.json
(:class:`tests.support.env.kured.MachineSpec` writes it) says what to run. It uses only the
standard library and reads nothing else from the repository.

At start it mounts a fresh tmpfs on ``/run`` (``/var/run`` is a symlink to it), writes
there the in-cluster credentials of each ServiceAccount of the spec (``token``, ``ca.crt``,
``namespace``, copied from the host files the spec names) and, for a machine that needs a
reboot, the reboot sentinel (``/run/kured/reboot-required``: the detector's
``--reboot-sentinel-file``). Then it runs the agents of the spec, each as a container
would run: in a mount namespace of its own (``unshare --mount``, still in the machine's
PID namespace) where its own ServiceAccount's files are bound on
``/var/run/secrets/kubernetes.io/serviceaccount``, with a clean environment
(``KUBERNETES_SERVICE_HOST``/``PORT``, no kubeconfig), its output in the machine's state
directory. An agent that exits while the machine is up is restarted
after a second, as a kubelet would, and the exit is logged (``agent_exit``).

Kinds:

``machine``
    A node. ``reboot-daemon --reboot-method=signal`` sends SIGRTMIN+5 (39) to PID 1 of its
    PID namespace: this program. On that signal it appends ``reboot`` to the reboot log
    (node, time, old and new bootID, the count), stops its agents (SIGTERM, SIGKILL after
    1 s), writes ``Ready=False`` to the Node's status as the node goes down (``down``),
    waits ``reboot_seconds``, remounts ``/run`` (the sentinel is gone, as a tmpfs loses
    it, unless ``sentinel_survives`` says this reboot does not fix the machine: then it is
    written again), rewrites the credentials, writes ``Ready=True`` with the NEW
    ``status.nodeInfo.bootID`` (``up``), waits ``kubelet_delay`` and starts the agents
    again (``agents``). A signal while it is down is logged (``signal_while_down``) and
    otherwise ignored. The reboot numbered ``stay_down_after`` (1 = the first) never comes
    back: the node stays ``Ready=False``, the agents stopped (``stays_down``).
``pod``
    One pod-like process (``reboot-inhibitors``): credentials as above, its agent run and
    restarted likewise; no reboot handling.

The Node writes are the kubelet's: a strategic-merge PATCH of ``nodes/status`` with the
admin client certificate (user agent ``kured-machine/<node>``). SIGTERM or SIGINT stops
the agents and ends the program (``stop``). The reboot log is JSON lines, one per event,
each with ``event``, ``node``, ``time`` (epoch seconds) and ``boot_id``; every line is
one ``write`` on an ``O_APPEND`` file, so the machines of a test share one log.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SA_DIR = Path("/run/secrets/kubernetes.io/serviceaccount")  # /var/run -> /run
SENTINEL = Path("/run/kured/reboot-required")
PODS = Path("/run/pods")  # each ServiceAccount's files, bound on SA_DIR for its agents
# Each agent runs in a mount namespace of its own (as a container), where its own
# ServiceAccount's directory is bound on SA_DIR; it stays in the machine's PID namespace.
WITH_SA = 'mount --bind "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"'
REBOOT_SIGNAL = 39  # SIGRTMIN+5, the reboot-daemon's --reboot-signal default


@dataclass
class Agent:
    """One agent process of the machine, restarted when it exits while the machine is up."""

    name: str
    argv: list[str]
    sa: str  # its ServiceAccount: the key of its files in the spec's credentials
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    exited_at: float | None = None


@dataclass
class Machine:
    spec: dict[str, Any]
    boot_id: str
    agents: list[Agent] = field(default_factory=list)
    reboots: int = 0
    pending: list[int] = field(default_factory=list)  # signals received, in order

    @property
    def node(self) -> str:
        return str(self.spec["node"])

    @property
    def state(self) -> Path:
        return Path(self.spec["state_dir"])

    # -- the log

    def log(self, event: str, **fields: Any) -> None:
        line = {"event": event, "node": self.node, "time": time.time(), "boot_id": self.boot_id}
        line.update(fields)
        data = (json.dumps(line, sort_keys=True) + "\n").encode()
        fd = os.open(self.spec["reboot_log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    # -- /run, as a boot leaves it

    def mount_run(self, first: bool) -> None:
        if not first:
            subprocess.run(["umount", "-l", "/run"], check=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", "/run"], check=True
        )
        SA_DIR.mkdir(parents=True)  # each agent's mount point (see start_agents)
        for sa, files in self.spec["credentials"].items():
            d = PODS / sa
            d.mkdir(parents=True)
            for name in ("token", "ca.crt", "namespace"):
                (d / name).write_text(Path(files[name]).read_text())
                (d / name).chmod(0o644)
        SENTINEL.parent.mkdir(parents=True, exist_ok=True)

    def write_sentinel(self) -> None:
        SENTINEL.write_text("*** System restart required ***\n")

    # -- the kubelet's writes

    def patch_status(self, ready: bool) -> None:
        api = self.spec["api"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                        "message": "kubelet is posting ready status"
                        if ready
                        else "the machine is rebooting",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "nodeInfo": {"bootID": self.boot_id},
            }
        }
        ctx = ssl.create_default_context(cafile=api["ca"])
        ctx.load_cert_chain(api["cert"], api["key"])
        for attempt in range(50):  # the API server may be briefly unreachable
            conn = http.client.HTTPSConnection(
                api["host"], int(api["port"]), context=ctx, timeout=10
            )
            try:
                conn.request(
                    "PATCH",
                    f"/api/v1/nodes/{self.node}/status",
                    body=json.dumps(body),
                    headers={
                        "Content-Type": "application/strategic-merge-patch+json",
                        "User-Agent": f"kured-machine/{self.node}",
                    },
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
        raise RuntimeError(f"PATCH nodes/{self.node}/status failed: {err}")

    # -- agents

    def start_agents(self, only: list[Agent] | None = None) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": "/run",
            "KUBERNETES_SERVICE_HOST": str(self.spec["api"]["host"]),
            "KUBERNETES_SERVICE_PORT": str(self.spec["api"]["port"]),
        }
        for a in self.agents if only is None else only:
            a.starts += 1
            out = (self.state / f"{a.name}.log").open("ab")
            out.write(f"--- start {a.starts} at {time.time():.3f} boot {self.boot_id}\n".encode())
            out.flush()
            argv = ["unshare", "--mount", "--", "sh", "-c", WITH_SA, str(PODS / a.sa), *a.argv]
            a.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
            out.close()
            a.exited_at = None

    def stop_agents(self) -> None:
        for a in self.agents:
            if a.proc is not None and a.proc.poll() is None:
                a.proc.terminate()
        deadline = time.monotonic() + 1  # a reboot's shutdown does not wait long
        for a in self.agents:
            if a.proc is None:
                continue
            try:
                a.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                a.proc.kill()
                a.proc.wait()
            a.proc = None

    def watch_agents(self) -> None:
        """Restart an agent that exited (after 1 s, as the kubelet's first back-off)."""
        for a in self.agents:
            if a.proc is None:
                continue
            rc = a.proc.poll()
            if rc is None:
                continue
            if a.exited_at is None:
                a.exited_at = time.monotonic()
                self.log("agent_exit", agent=a.name, rc=rc)
            elif time.monotonic() - a.exited_at >= 1.0:
                self.start_agents([a])

    # -- the main loop

    def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``; False as soon as a stop signal came."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.stopping():
                return False
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        return not self.stopping()

    def stopping(self) -> bool:
        return any(s in (signal.SIGTERM, signal.SIGINT) for s in self.pending)

    def reboot(self) -> bool:
        """One reboot; False when the machine must stop (a stop signal, or it stays down)."""
        self.reboots += 1
        old, new = self.boot_id, str(uuid.uuid4())
        self.log("reboot", old_boot_id=old, new_boot_id=new, n=self.reboots)
        self.stop_agents()
        self.patch_status(ready=False)
        self.log("down", n=self.reboots)
        if self.spec.get("stay_down_after") == self.reboots:
            self.log("stays_down", n=self.reboots)
            while self.sleep(3600):
                pass
            return False
        if not self.sleep(float(self.spec["reboot_seconds"])):
            return False
        self.mount_run(first=False)  # the tmpfs is lost: the sentinel with it
        survives = int(self.spec.get("sentinel_survives", 0))
        if self.reboots <= survives:
            self.write_sentinel()  # this reboot did not fix the machine
        self.boot_id = new
        self.patch_status(ready=True)
        self.log("up", n=self.reboots, sentinel=SENTINEL.exists())
        if not self.sleep(float(self.spec["kubelet_delay"])):
            return False
        for sig in [s for s in self.pending if s == REBOOT_SIGNAL]:
            self.pending.remove(sig)  # sent before the agents were stopped, or while down
            self.log("signal_while_down", n=self.reboots)
        self.start_agents()
        self.log("agents", n=self.reboots)
        return True

    def run(self) -> int:
        kind = self.spec["kind"]
        self.mount_run(first=True)
        if kind == "machine" and self.spec.get("needs_reboot"):
            self.write_sentinel()
        self.log("boot", kind=kind, sentinel=SENTINEL.exists())
        self.start_agents()
        while True:
            while self.pending:
                sig = self.pending.pop(0)
                if sig in (signal.SIGTERM, signal.SIGINT):
                    self.pending.append(sig)
                    break
                if sig == REBOOT_SIGNAL and kind == "machine" and not self.reboot():
                    break
            if self.stopping() or (
                self.reboots and self.spec.get("stay_down_after") == self.reboots
            ):
                break
            self.watch_agents()
            time.sleep(0.05)
        self.stop_agents()
        self.log("stop", reboots=self.reboots)
        return 0


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    m = Machine(spec, boot_id=str(spec["boot_id"]))
    m.agents = [Agent(a["name"], list(a["argv"]), a["sa"]) for a in spec["agents"]]
    if os.getpid() != 1:
        print("kured_machine: not PID 1 of its own PID namespace", file=sys.stderr)
        return 2

    def on_signal(sig: int, _frame: object) -> None:
        m.pending.append(sig)

    for sig in (signal.SIGTERM, signal.SIGINT, REBOOT_SIGNAL):
        signal.signal(sig, on_signal)
    return m.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
