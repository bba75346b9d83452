"""A real Kubernetes cluster on this machine: real kubelets and containerd in namespaces.

Contract. :class:`Cluster` starts, beside the test control plane of
:mod:`tests.support.env.controlplane` (etcd + kube-apiserver on 127.0.0.1, unchanged but
for the flags below), a kube-controller-manager and a kube-scheduler (processes of the
machine, talking to 127.0.0.1) and ``nodes`` real nodes. Every binary is cached by its
inputs: kube-apiserver/etcd as before, kubelet/kube-controller-manager/kube-scheduler by
:mod:`tests.support.env.clusterassets`, the nodes' image by
:mod:`tests.support.env.clusterimage`.

What runs where (addresses exist only inside namespaces this module creates; nothing is
configured on an interface of the machine's own namespace; the machine's loopback is the
only address of the machine used):

* the **hub**: a network namespace held by :mod:`tests.support.env.nsforward`. A bridge
  ``kc0`` at ``HUB_ADDR`` (10.200.0.1/24); the ``kubernetes`` Service's ClusterIP
  (``SERVICE_IP``, 10.0.0.1, on the hub's loopback) where the forwarder listens on 443 and
  relays to the API server on the machine's 127.0.0.1 -- so a pod's in-cluster
  configuration (``KUBERNETES_SERVICE_HOST``/``PORT`` as the kubelet injects them) works
  with no kube-proxy, and the kubelets use the same address; and a Unix socket where the
  API server's egress selector (``cluster``: logs, exec, port-forward) sends its ``CONNECT``
  to reach a kubelet in the hub;
* **node i** (1-based; ``kumaco-real-<i>``): ``unshare --pid --fork --mount-proc --mount
  --net`` runs :mod:`tests.support.env.cluster_node` as PID 1 of the node's own PID, mount and
  network namespaces; it runs containerd (root, state, socket, CNI and cgroups of its own)
  and the kubelet (``cgroupRoot /kumaco-cluster-<id>-<node>``). A veth pair joins the node
  (``eth0``, 10.200.0.<10+i>/24, default route via the hub) to the hub's bridge; its pods
  are on the CNI bridge ``cni0``, 10.244.<i>.0/24 (host-local, ``ipMasq: false``), which the
  hub routes to the node, so pods of different nodes reach each other and the API server.

The facts of a real cluster measured on this machine are applied: containerd's ``cgroupfs`` driver
and ``restrict_oom_score_adj`` (root here cannot lower an OOM score), the local image as
``sandbox_image``; the kubelet's ``failCgroupV1: false``, lowered eviction thresholds, image
GC off; daemons entered with ``nsenter --net``-style namespaces (never ``ip netns exec``,
which remounts /sys). Identities are kubeadm's: each kubelet ``system:node:<name>`` (group
``system:nodes``; ``--authorization-mode=Node,RBAC``), ``system:kube-controller-manager``,
``system:kube-scheduler``, the API server's kubelet client in ``system:masters`` (the control plane's admin certificate).

Each node's PID 1 reboots its node on SIGRTMIN+5 (what kured's ``reboot-daemon
--reboot-method=signal`` sends from a hostPID pod): every process of the node killed, what
a boot loses unmounted, a new boot ID, ``Reboots`` in :mod:`tests.support.env.cluster_node`;
each reboot is logged in :attr:`Cluster.reboot_log` (down ``reboot_seconds``).

:meth:`Cluster.stop` leaves nothing: every process (a node's PID 1 ends, the kernel kills
the rest of its PID namespace), every mount (they live only in the nodes' mount
namespaces), every namespace, every cgroup (removed bottom-up) and the work directory.
:func:`leftovers` lists what remains of a cluster from its :class:`Trace`, for the tests;
:func:`reap` removes it when the cluster's owner died before stopping it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.auditing import audit_args
from tests.support.env.clusterassets import ensure_cluster_assets
from tests.support.env.clusterimage import ensure_node_image
from tests.support.env.controlplane import ControlPlane, ensure_assets, log
from tests.support.env.ports import free_port
from tests.support.env.process import spawn, stop_process, wait_ready

REPO = Path(__file__).resolve().parents[3]
HUB_ADDR = "10.200.0.1"
SERVICE_IP = "10.0.0.1"
CGROUP_FS = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "kumaco-cluster-"
NODE_PREFIX = "kumaco-real-"
_TUNABLES = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops")


def node_addr(i: int) -> str:
    return f"10.200.0.{10 + i}"


def pod_cidr(i: int) -> str:
    return f"10.244.{i}.0/24"


def _run(cmd: Sequence[str], what: str | None = None) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{what or ' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
    return proc.stdout


def _ns_inode(pid: int, kind: str) -> int:
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino


# --------------------------------------------------------------------------- certificates


def issue_cert(
    pki: Path,
    name: str,
    cn: str,
    orgs: Sequence[str] = (),
    *,
    server_ips: Sequence[str] = (),
) -> tuple[Path, Path]:
    """A client certificate (``server_ips``: a serving one) signed by the control plane's CA
    (``pki/ca.key``): ``pki/<name>.crt`` and ``.key``."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server_ips else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if server_ips:
        sans = [x509.IPAddress(ipaddress.ip_address(a)) for a in server_ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    crt, k = pki / f"{name}.crt", pki / f"{name}.key"
    crt.write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    k.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    k.chmod(0o600)
    return crt, k


def write_kubeconfig(path: Path, server: str, ca: Path, crt: Path, key: Path) -> Path:
    """A kubeconfig (JSON) for ``server`` with a client certificate; ``path``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "u", "user": {"client-certificate": str(crt), "client-key": str(key)}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


# --------------------------------------------------------------------------- what is left


@dataclass
class Trace:
    """What a cluster made, to find leftovers of it after it stopped (:func:`leftovers`)."""

    workdir: str
    cgroups: list[str] = field(default_factory=list)  # cgroup directory names (roots)
    namespaces: list[tuple[str, int]] = field(default_factory=list)  # (kind, inode)
    tunables: dict[str, str] = field(default_factory=dict)  # the machine's, before
    #: When the cluster began to stop (epoch seconds): from then on its namespaces are
    #: freed, and the kernel reuses a freed namespace's inode number, so a process that
    #: started after this instant, in a namespace with one of ours, is in a later one (seen:
    #: a kured agent of another test, SIGKILLed by a reap that trusted the inode). None
    #: while it runs, or if its owner died without stopping it.
    stopping_since: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "workdir": self.workdir,
            "cgroups": self.cgroups,
            "namespaces": [list(n) for n in self.namespaces],
            "tunables": self.tunables,
            "stopping_since": self.stopping_since,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        stopped = data.get("stopping_since")
        return cls(
            str(data["workdir"]),
            list(data["cgroups"]),
            [(str(k), int(i)) for k, i in data["namespaces"]],
            dict(data["tunables"]),
            None if stopped is None else float(stopped),
        )


def started_at(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds, to the clock tick); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    btime = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def read_tunables() -> dict[str, str]:
    return {k: Path(f"/proc/sys/{k}").read_text().strip() for k in _TUNABLES}


def _in_cgroups(proc: Path, trace: Trace) -> bool:
    """Whether the process ``proc`` (``/proc/PID``) is in one of the cluster's cgroups."""
    try:
        text = (proc / "cgroup").read_text()
    except OSError:
        return False
    paths = [line.rsplit(":", 1)[-1] + "/" for line in text.splitlines()]
    return any(f"/{name}/" in path for path in paths for name in trace.cgroups)


def cluster_pids(trace: Trace) -> list[int]:
    """The processes of the traced cluster: in one of its namespaces or cgroups, or naming
    its directory."""
    pids = []
    ours = set(trace.namespaces)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            inodes = {(k, os.stat(proc / "ns" / k).st_ino) for k in ("net", "mnt", "pid")}
        except OSError:
            continue
        if (
            trace.workdir in cmdline
            or _in_cgroups(proc, trace)
            or (inodes & ours and not _later(started_at(int(proc.name)), trace))
        ):
            pids.append(int(proc.name))
    return pids


def _later(began: float | None, trace: Trace) -> bool:
    """Whether a process that started at ``began`` (None: gone) is too late to be the
    traced cluster's: it started after the cluster began to stop (:class:`Trace`)."""
    if trace.stopping_since is None:
        return False
    return began is None or began > trace.stopping_since


def usage(trace: Trace, seconds: float = 30.0) -> dict[str, float]:
    """The traced cluster's resident memory (MiB, summed over its processes) and CPU (cores,
    averaged over ``seconds``): every process of :func:`cluster_pids` but the caller."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> dict[int, int]:
        out = {}
        for pid in cluster_pids(trace):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                out[pid] = int(fields[11]) + int(fields[12])  # utime + stime
        return out

    before, t0 = cpu(), time.monotonic()
    time.sleep(seconds)
    after, took = cpu(), time.monotonic() - t0
    used = sum(t - before.get(pid, t) for pid, t in after.items())
    rss = 0
    for pid in after:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
    return {
        "rss_mib": round(rss / 1024, 1),
        "cpu_cores": round(used / tick / took, 3),
        "processes": len(after),
        "seconds": round(took, 1),
    }


def leftovers(trace: Trace) -> list[str]:
    """Everything of the traced cluster still on the machine: processes (in one of its
    namespaces or cgroups -- a container has PID and mount namespaces of its own -- or
    naming its directory), mounts of the machine naming its directory,
    its cgroups in any hierarchy, its work directory, a kernel tunable changed. [] when none."""
    found: list[str] = []
    ours = set(trace.namespaces)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            inodes = {(k, os.stat(proc / "ns" / k).st_ino) for k in ("net", "mnt", "pid")}
        except OSError:
            continue
        if inodes & ours:
            began = started_at(int(proc.name))
            if _later(began, trace):
                continue  # gone, or in a later namespace that reuses the inode (Trace)
            kinds = sorted(k for k, _ in inodes & ours)
            found.append(f"process {proc.name} in the cluster's {'/'.join(kinds)} ns: {cmdline}")
        elif trace.workdir in cmdline:
            found.append(f"process {proc.name} names {trace.workdir}: {cmdline}")
        elif _in_cgroups(proc, trace):  # a container in a PID namespace of its own
            found.append(f"process {proc.name} in the cluster's cgroups: {cmdline}")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if trace.workdir in line:
            found.append(f"mount: {line}")
    for hierarchy in sorted(CGROUP_FS.iterdir()) if CGROUP_FS.exists() else []:
        for name in trace.cgroups:
            if (hierarchy / name).exists():
                found.append(f"cgroup {hierarchy / name}")
    if Path(trace.workdir).exists():
        found.append(f"directory {trace.workdir}")
    now = read_tunables()
    for k, v in trace.tunables.items():
        if now.get(k) != v:
            found.append(f"kernel tunable {k} is {now.get(k)}, was {v}")
    return found


def reap(trace: Trace, timeout: float = 30) -> list[str]:
    """Remove what is left of a cluster whose owner died (a killed supervisor or test run):
    SIGKILL every process of :func:`cluster_pids` (a node's PID 1 takes its namespace's
    processes with it), then its cgroups and directory. Returns :func:`leftovers` after."""
    deadline = time.monotonic() + timeout
    while (pids := [p for p in cluster_pids(trace) if p != os.getpid()]) and (
        time.monotonic() < deadline
    ):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    for name in trace.cgroups:
        for hierarchy in sorted(CGROUP_FS.iterdir()) if CGROUP_FS.exists() else []:
            _remove_cgroup(hierarchy / name)
    shutil.rmtree(trace.workdir, ignore_errors=True)
    return leftovers(trace)


def _make_cgroup(name: str) -> None:
    """``name`` in every cgroup hierarchy (cpuset's CPUs and memory nodes copied from the root)."""
    for hierarchy in sorted(CGROUP_FS.iterdir()):
        d = hierarchy / name
        d.mkdir(exist_ok=True)
        for f in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / f).exists():
                (d / f).write_text((hierarchy / f).read_text())


def _remove_cgroup(path: Path, timeout: float = 20) -> None:
    """rmdir ``path`` and its sub-cgroups, bottom-up, retrying while tasks are leaving."""
    deadline = time.monotonic() + timeout
    while path.exists():
        dirs = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, path]:
            with contextlib.suppress(OSError):
                d.rmdir()
        if not path.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.2)


# --------------------------------------------------------------------------- the cluster


@dataclass
class RealNode:
    """One real node: its name, index, directory and the ``unshare`` that made its namespaces."""

    name: str
    index: int
    dir: Path
    cgroup_root: str
    unshare: subprocess.Popen[bytes] | None = None
    pid1: int = 0

    @property
    def address(self) -> str:
        return node_addr(self.index)

    @property
    def socket(self) -> Path:
        return self.dir / "containerd.sock"

    def netns(self) -> str:
        assert self.unshare is not None
        return f"/proc/{self.unshare.pid}/ns/net"

    def ctr(self, *args: str) -> str:
        """``ctr`` against this node's containerd, namespace ``k8s.io`` (the CRI's)."""
        return _run(["ctr", "--address", str(self.socket), "-n", "k8s.io", *args])

    def import_image(self, archive: Path) -> None:
        """``ctr images import`` of an OCI or docker archive (as kind loads an image)."""
        self.ctr("images", "import", "--digests", "--snapshotter=overlayfs", str(archive))


@dataclass
class Cluster:
    """A control plane, kube-controller-manager, kube-scheduler and ``nodes`` real nodes."""

    nodes: int = 2
    apiserver_args: dict[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    assets: Path | None = None
    node_assets: Path | None = None
    keep_logs: Path | None = None  # where stop() copies the logs before removing everything
    reboot_seconds: float = 1.0  # how long a node rebooted by SIGRTMIN+5 stays down

    def __post_init__(self) -> None:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=CGROUP_PREFIX, dir="/tmp"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.id = self.workdir.name.removeprefix(CGROUP_PREFIX)[-8:]
        self.trace = Trace(str(self.workdir), tunables=read_tunables())
        self.real: list[RealNode] = []
        self.cp: ControlPlane | None = None
        self.hub: subprocess.Popen[bytes] | None = None
        self.kcm: subprocess.Popen[bytes] | None = None
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.image_ref = ""
        self.timings: dict[str, float] = {}

    @property
    def dir(self) -> Path:
        assert self.workdir is not None
        return self.workdir

    @property
    def pki(self) -> Path:
        return self.dir / "cp" / "pki"  # the control plane's (ControlPlane.pki.dir)

    def get_json(self, path: str) -> dict[str, Any]:
        """GET ``path`` from the cluster's API server as its admin; the decoded answer (200)."""
        assert self.cp is not None, "the cluster is not started"
        status, body = self.cp.get(path)
        assert status == 200, (path, body[:300])
        doc: dict[str, Any] = json.loads(body)
        return doc

    def kubeconfig(self) -> Path:
        """The admin kubeconfig (server https://127.0.0.1:PORT)."""
        assert self.cp is not None
        return self.cp.write_kubeconfig(self.dir / "admin.kubeconfig")

    def kubectl(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        proc = subprocess.run(
            ["kubectl", f"--kubeconfig={self.kubeconfig()}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    # -- start

    def start(self, ready_timeout: float = 300) -> None:
        t0 = time.monotonic()
        try:
            self._start(ready_timeout)
        except BaseException:
            self.stop()
            raise
        self.timings["up_seconds"] = round(time.monotonic() - t0, 1)
        log(f"real cluster ready ({self.nodes} nodes) in {self.timings['up_seconds']}s")

    def _start(self, ready_timeout: float) -> None:
        assets = self.assets or ensure_assets()
        node_assets = self.node_assets or ensure_cluster_assets(assets)
        self.image_ref, image_archive = ensure_node_image()
        (self.dir / "logs").mkdir(exist_ok=True)
        egress = self.dir / "egress.sock"
        egress_cfg = self.dir / "egress-selector.yaml"
        egress_cfg.write_text(
            "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n"
            "egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n"
            f"    transport:\n      uds:\n        udsName: {egress}\n"
        )
        pki = self.pki
        args = {
            "authorization-mode": "Node,RBAC",
            "enable-admission-plugins": "NodeRestriction",
            # The API server's client of the kubelets: the admin certificate, in system:masters
            # as kubeadm's apiserver-kubelet-client (ControlPlane.start makes the PKI).
            "kubelet-client-certificate": str(pki / "admin.crt"),
            "kubelet-client-key": str(pki / "admin.key"),
            "egress-selector-config-file": str(egress_cfg),
            # kubeadm's order: a kubelet is dialled at its address, not its (unresolvable) name
            "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
            **self.apiserver_args,
        }
        cp = self.cp = ControlPlane(
            assets, workdir=self.dir / "cp", apiserver_args=args, log_dir=self.dir / "logs"
        )
        cp.start()
        self._start_hub(cp.port, egress)
        self._start_controllers(node_assets)
        for i in range(1, self.nodes + 1):
            self._start_node(i, node_assets)
        for node in self.real:
            self._wire_node(node)
            node.dir.joinpath("go").touch()
        for node in self.real:
            wait_ready(
                functools.partial(_containerd_up, node.socket),
                60,
                f"containerd of {node.name}",
                node.unshare,
                node.dir / "containerd.log",
            )
            node.import_image(image_archive)
        self.wait_nodes_ready(ready_timeout)

    def _start_hub(self, api_port: int, egress: Path) -> None:
        spec = {
            "rules": [
                {
                    "listen": {"tcp": [SERVICE_IP, 443]},
                    "connect": {"machine_tcp": ["127.0.0.1", api_port]},
                },
                {"listen": {"unix": str(egress)}, "connect": "http_connect"},
            ]
        }
        (self.dir / "hub.json").write_text(json.dumps(spec))
        log_path = self.dir / "logs" / "hub.log"
        hub = self.hub = subprocess.Popen(
            [sys.executable, "-m", "tests.support.env.nsforward", str(self.dir / "hub.json")],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log_path.open("ab"),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert hub.stdout is not None
        line = hub.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the hub did not start: {log_path.read_text()[-2000:]}")
        self.trace.namespaces.append(("net", _ns_inode(hub.pid, "net")))
        net = f"--net=/proc/{hub.pid}/ns/net"
        for cmd in (
            ["ip", "link", "set", "lo", "up"],
            ["ip", "addr", "add", f"{SERVICE_IP}/32", "dev", "lo"],
            ["ip", "link", "add", "kc0", "type", "bridge"],
            ["ip", "addr", "add", f"{HUB_ADDR}/24", "dev", "kc0"],
            ["ip", "link", "set", "kc0", "up"],
            ["sysctl", "-qw", "net.ipv4.ip_forward=1"],
        ):
            _run(["nsenter", net, *cmd])

    def _start_controllers(self, node_assets: Path) -> None:
        assert self.cp is not None
        pki, server = self.pki, self.cp.url
        crt, key = issue_cert(pki, "controller-manager", "system:kube-controller-manager")
        kcm_kc = write_kubeconfig(self.dir / "kcm.kubeconfig", server, pki / "ca.crt", crt, key)
        crt, key = issue_cert(pki, "scheduler", "system:kube-scheduler")
        sch_kc = write_kubeconfig(
            self.dir / "scheduler.kubeconfig", server, pki / "ca.crt", crt, key
        )
        kcm = [
            str(node_assets / "kube-controller-manager"),
            f"--kubeconfig={kcm_kc}",
            f"--authentication-kubeconfig={kcm_kc}",
            f"--authorization-kubeconfig={kcm_kc}",
            "--controllers=*",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--cert-dir={self.dir / 'kcm-certs'}",
            "--v=1",
        ]
        sch = [
            str(node_assets / "kube-scheduler"),
            f"--kubeconfig={sch_kc}",
            f"--authentication-kubeconfig={sch_kc}",
            f"--authorization-kubeconfig={sch_kc}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--cert-dir={self.dir / 'scheduler-certs'}",
            "--v=1",
        ]
        self.kcm = spawn(kcm, self.dir / "logs" / "kube-controller-manager.log")
        self.scheduler = spawn(sch, self.dir / "logs" / "kube-scheduler.log")

    def _start_node(self, i: int, node_assets: Path) -> None:
        name = f"{NODE_PREFIX}{i}"
        d = self.dir / "nodes" / name
        (d / "cni").mkdir(parents=True)
        cgroup_root = f"{CGROUP_PREFIX}{self.id}-{name}"
        node = RealNode(name, i, d, cgroup_root)
        self.trace.cgroups.append(cgroup_root)
        _make_cgroup(cgroup_root)  # the kubelet wants its cgroupRoot to exist in every hierarchy
        pki = self.pki
        crt, key = issue_cert(pki, f"kubelet-{name}", f"system:node:{name}", ["system:nodes"])
        kc = write_kubeconfig(
            d / "kubelet.kubeconfig", f"https://{SERVICE_IP}:443", pki / "ca.crt", crt, key
        )
        (d / "cni" / "10-kumaco.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "kumaco",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": "cni0",
                            "isGateway": True,
                            "isDefaultGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr(i)}]]},
                        }
                    ],
                },
                indent=2,
            )
        )
        (d / "containerd.toml").write_text(
            f"""version = 2
root = "{d / "containerd-root"}"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{node.socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{self.image_ref}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d / "cni"}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"
"""
        )
        kubelet_config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{cgroup_root}",
            "containerRuntimeEndpoint": f"unix://{node.socket}",
            "address": node.address,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(pki / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "clusterDomain": "cluster.local",
            "podLogsDir": str(d / "pod-logs"),
            "failSwapOn": False,
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "maxPods": 30,
            "serializeImagePulls": False,
            "registerNode": True,
            "resolvConf": "",
        }
        (d / "kubelet.yaml").write_text(json.dumps(kubelet_config, indent=2))
        spec: dict[str, Any] = {
            "dir": str(d),
            "containerd_socket": str(node.socket),
            "containerd": ["containerd", "--config", str(d / "containerd.toml")],
            "kubelet": [
                str(node_assets / "kubelet"),
                f"--config={d / 'kubelet.yaml'}",
                f"--kubeconfig={kc}",
                f"--hostname-override={name}",
                f"--node-ip={node.address}",
                f"--root-dir={d / 'kubelet'}",
                f"--cert-dir={d / 'kubelet-pki'}",
                "--v=1",
            ],
        }
        spec["reboot"] = self._reboot_spec(name, kc, cgroup_root)
        (d / "spec.json").write_text(json.dumps(spec, indent=2))
        node.unshare = spawn(
            [
                "unshare",
                "--pid",
                "--fork",
                "--mount-proc",
                "--mount",
                "--net",
                "--kill-child=SIGKILL",
                "--",
                sys.executable,
                "-m",
                "tests.support.env.cluster_node",
                str(d / "spec.json"),
            ],
            d / "init.log",
            cwd=REPO,
        )
        node.pid1 = _child_of(node.unshare)
        for kind in ("net", "mnt", "pid"):
            pid = node.pid1 if kind == "pid" else node.unshare.pid
            self.trace.namespaces.append((kind, _ns_inode(pid, kind)))
        self.real.append(node)

    @property
    def reboot_log(self) -> Path:
        """The nodes' reboot log (JSON lines; cluster_node's contract, "Reboots")."""
        return self.dir / "logs" / "reboots.log"  # kept by stop() with the other logs

    def _reboot_spec(self, name: str, kubeconfig: Path, cgroup_root: str) -> dict[str, Any]:
        """What a node's PID 1 needs to reboot the node on SIGRTMIN+5 (cluster_node)."""
        return {
            "node": name,
            "log": str(self.reboot_log),
            "kubeconfig": str(kubeconfig),
            "cgroup_root": cgroup_root,
            "seconds": self.reboot_seconds,
        }

    def _wire_node(self, node: RealNode) -> None:
        assert self.hub is not None and node.unshare is not None
        hub = f"--net=/proc/{self.hub.pid}/ns/net"
        veth = f"veth{node.index}"
        _run(
            [
                "nsenter",
                hub,
                "ip",
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                str(node.unshare.pid),
            ]
        )
        _run(["nsenter", hub, "ip", "link", "set", veth, "master", "kc0", "up"])
        _run(["nsenter", hub, "ip", "route", "add", pod_cidr(node.index), "via", node.address])
        net = f"--net={node.netns()}"
        for cmd in (
            ["ip", "link", "set", "lo", "up"],
            ["ip", "addr", "add", f"{node.address}/24", "dev", "eth0"],
            ["ip", "link", "set", "eth0", "up"],
            ["ip", "route", "add", "default", "via", HUB_ADDR],
            ["sysctl", "-qw", "net.ipv4.ip_forward=1"],
        ):
            _run(["nsenter", net, *cmd])

    def import_podman_image(self, ref: str) -> float:
        """``podman save`` (a docker archive, as ``kind load docker-image`` saves one) of
        ``ref``, imported into every real node's containerd; the seconds it took."""
        t0 = time.monotonic()
        archive = self.dir / "image.tar"
        _run(["podman", "save", "--format", "docker-archive", "-o", str(archive), ref])
        try:
            for node in self.real:
                node.import_image(archive)
        finally:
            archive.unlink(missing_ok=True)
        return time.monotonic() - t0

    def wait_nodes_ready(self, timeout: float) -> float:
        """Wait until every real node reports Ready=True and the default namespace has its
        ServiceAccount and ``kube-root-ca.crt`` (pods can be created); the seconds waited."""
        names = {n.name for n in self.real}

        def ready() -> bool:
            assert self.cp is not None
            status, body = self.cp.get("/api/v1/nodes")
            if status != 200:
                return False
            ok = {
                n["metadata"]["name"]
                for n in json.loads(body)["items"]
                if any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in n.get("status", {}).get("conditions", [])
                )
            }
            return names <= ok

        def controllers_ready() -> bool:
            # What a pod of the default namespace needs from kube-controller-manager.
            assert self.cp is not None
            return all(
                self.cp.get(f"/api/v1/namespaces/default/{what}")[0] == 200
                for what in ("serviceaccounts/default", "configmaps/kube-root-ca.crt")
            )

        assert self.real
        first = self.real[0]
        log_path = self.dir / "logs" / "kube-controller-manager.log"
        t0 = time.monotonic()
        wait_ready(
            controllers_ready, timeout, "the default ServiceAccount", self.kcm, log_path, 0.2
        )
        wait_ready(
            ready, timeout, "the real nodes Ready", first.unshare, first.dir / "kubelet.log", 0.5
        )
        return time.monotonic() - t0

    # -- stop

    def stop(self) -> None:
        """Stop everything and remove every trace (see the module contract)."""
        t0 = time.monotonic()
        self.trace.stopping_since = time.time()
        for node in self.real:
            if node.pid1:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.pid1, signal.SIGTERM)
        for node in self.real:
            if node.unshare is not None:
                try:
                    node.unshare.wait(40)
                except subprocess.TimeoutExpired:
                    node.unshare.kill()  # --kill-child: the node's PID 1 gets SIGKILL
                    node.unshare.wait()
        log(f"real nodes stopped in {time.monotonic() - t0:.1f}s")
        for proc in (self.scheduler, self.kcm):
            stop_process(proc)
        if self.hub is not None:
            stop_process(self.hub)
            if self.hub.stdout is not None:
                self.hub.stdout.close()
        if self.cp is not None:
            self.cp.stop()
        log(f"controllers, hub and control plane stopped at {time.monotonic() - t0:.1f}s")
        for name in self.trace.cgroups:
            if CGROUP_FS.exists():
                for hierarchy in CGROUP_FS.iterdir():
                    _remove_cgroup(hierarchy / name)
        log(f"cgroups removed at {time.monotonic() - t0:.1f}s")
        if self.keep_logs is not None and self.dir.exists():
            # The daemons' logs only: never a walk of containerd's image trees.
            logs = [*self.dir.glob("logs/*.log"), *self.dir.glob("nodes/*/*.log")]
            logs += self.dir.glob("nodes/*/pod-logs/*/*/*.log")  # the containers' output
            for log_file in logs:
                dest = self.keep_logs / log_file.relative_to(self.dir)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(log_file, dest)
        log(f"logs kept at {time.monotonic() - t0:.1f}s")
        shutil.rmtree(self.dir, ignore_errors=True)
        log(f"cluster stopped and removed in {time.monotonic() - t0:.1f}s")
        self.real, self.hub, self.kcm, self.scheduler = [], None, None, None

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _containerd_up(socket: Path) -> bool:
    cmd = ["ctr", "--address", str(socket), "version"]
    return socket.exists() and subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def _child_of(unshare: subprocess.Popen[bytes], timeout: float = 10) -> int:
    """The host PID of the child ``unshare --fork`` made: PID 1 of the node's namespace."""
    path = Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if unshare.poll() is not None:
            raise RuntimeError(f"unshare exited {unshare.returncode} at start")
        with contextlib.suppress(OSError):
            kids = path.read_text().split()
            if kids:
                return int(kids[0])
        time.sleep(0.02)
    raise RuntimeError("unshare made no child")


@contextlib.contextmanager
def audited_cluster(
    logs: Path, apiserver_args: Mapping[str, str] | None = None, nodes: int = 2
) -> Iterator[Cluster]:
    """A started cluster whose API server keeps an audit log (default
    :func:`~tests.support.env.auditing.audit_args`) and whose logs are kept in ``logs``;
    stopped on leaving -- each real-cluster test module's own cluster."""
    args = audit_args(logs / "audit") if apiserver_args is None else apiserver_args
    c = Cluster(nodes=nodes, apiserver_args=dict(args), keep_logs=logs)
    c.start()
    print(f"real cluster up in {c.timings['up_seconds']}s")
    try:
        yield c
    finally:
        c.stop()
