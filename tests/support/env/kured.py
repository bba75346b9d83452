"""kured v2's real agents as a test bed: the prototype's binaries, simulated machines, their record.

Contract.

*The binaries* (:func:`ensure_kured`). kured's v2 prototype is not a published Go module
version; its only copy is the shared archive (:data:`ARCHIVE`, ``$KURED_V2_ARCHIVE``
overrides it). Look-up order, as kwok's (``tests/support/env/controlplane.py``):
``TEST_ASSET_KURED_V2`` naming a directory with the four programs (:data:`PROGRAMS`), then
kumaco's cache (``$KUMACO_CACHE_DIR``, default ``~/.cache/kumaco``) under
``assets/kured-v2-prototype-<sha256 of the archive, 12 hex>/bin``; otherwise the archive is
extracted and built there (``GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -o bin/
./cmd/...``, its dependencies from the Go module proxy, about 3-5 minutes cold on two
cores) in a temporary directory renamed into place once complete, with the prototype's
manifests (``*.yaml``: the RBAC the agents need) beside ``bin`` and a ``build-info.json``.
Progress goes to stderr. ``python hack/controlplane.py assets`` ensures it, so ``.ci/run``
builds it before the tests. Nothing of the prototype is copied into the repository.

*Machines* (:class:`Fleet`). Each simulated node is a Node object on the test control
plane (``Ready=True``, a ``status.nodeInfo.bootID``) and a process ``unshare --pid --fork
--mount-proc --mount --kill-child=SIGKILL -- python -m tests.support.env.kured_machine SPEC``
whose PID 1 is that program (its contract: ``tests/support/env/kured_machine.py``): a private
tmpfs ``/run`` holding in-cluster credentials of a ServiceAccount (a TokenRequest token,
the CA, the namespace), the reboot sentinel when the node needs a reboot (written again
later by :meth:`Fleet.require_reboot`: another update), and the real
``reboot-required-detector`` and ``reboot-daemon --reboot-method=signal`` talking to
``127.0.0.1:<port>`` (the serving certificate names 127.0.0.1). The daemon's reboot is
SIGRTMIN+5 to that PID 1, which logs it to the fleet's reboot log (the ground truth),
takes the node down and brings it back with a new bootID. One real ``reboot-inhibitors``
per fleet runs likewise as a ``pod``. Every listener (metrics, probes) is on 127.0.0.1 at
a port the kernel picks. The ServiceAccounts get exactly the ClusterRoles of the
prototype's manifests (``reboot-daemon.yaml``, ``reboot-required-detector.yaml``,
``reboot-inhibitors.yaml``), bound in the fleet's namespace. :meth:`Fleet.close` stops
every process (SIGTERM to each PID 1, then SIGKILL to ``unshare``, which kills the whole
PID namespace) and reaps it, then deletes the fleet's Nodes.

*The machines' record*. :func:`reboot_log` reads the ground truth; :class:`RebootLog`
counts reboots per node and the most nodes down at once. :data:`KURED_AUDIT_POLICY` is
:data:`tests.support.env.auditing.AUDIT_POLICY` plus every write to a Node object itself
(the daemon's cordon and uncordon) with its stored object, for the fleet's judges
(:mod:`tests.support.judges.kured`).

*Runs*. :func:`kumaco_flags` is kumaco with the agents' condition names, a ceiling and
``--count-released-unavailable`` (components/kured-v2's). :func:`observe` waits until every node was rebooted as often as
expected and settled (back, uncordoned, released, the detector's fresh ``False``), then a
quiet spell; it returns early on a node rebooted more often than expected (a reboot loop)
unless told to watch the whole time. A whole run as a record: :mod:`tools.kured_record`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kumaco.migration.kuredv1 import RELEASED_UNAVAILABLE
from tests.support.env.auditing import AUDIT_POLICY, audit_args
from tests.support.env.controlplane import (
    ControlPlane,
    _go_env,
    _run_go,
    build_stamp,
    cache_dir,
    log,
    ready_condition,
)
from tests.support.env.harness import RUN_LABEL, Api, ApiError, wait_for
from tests.support.env.process import stop_process
from tests.support.env.supervisor import scope_flags

REPO = Path(__file__).resolve().parents[3]
#: The shared archive: ``shared/`` lies beside the repository (for developers and in CI).
ARCHIVE = REPO.parent / "shared" / "third_party" / "kured-v2-prototype-c06d381.tar.gz"
PROGRAMS = (
    "maintenance-scheduler",
    "reboot-daemon",
    "reboot-inhibitors",
    "reboot-required-detector",
)
ENV = "TEST_ASSET_KURED_V2"

# The agents' condition types (the prototype's internal/conditions/names.go).
UNDER_MAINTENANCE = "kured.dev/under-maintenance-window"
IN_PROGRESS = "kured.dev/maintenance-in-progress"
REBOOT_REQUIRED = "kured.dev/reboot-required"
INHIBITED = "kured.dev/reboot-inhibited"
UNSCHEDULABLE_ANNOTATION = "kured.dev/node-unschedulable-before-drain"


# --------------------------------------------------------------------------- the binaries


def archive() -> Path:
    return Path(os.environ.get("KURED_V2_ARCHIVE") or ARCHIVE)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _complete(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / p, os.X_OK) for p in PROGRAMS)


def _cached(sha: str) -> Path:
    return cache_dir() / "assets" / f"kured-v2-prototype-{sha[:12]}"


def find_kured() -> Path | None:
    """The directory of the four programs: ``TEST_ASSET_KURED_V2``, then the cache."""
    env = os.environ.get(ENV)
    if env:
        return Path(env) if _complete(Path(env)) else None
    src = archive()
    if not src.is_file():
        return None
    d = _cached(_sha256(src)) / "bin"
    return d if _complete(d) else None


def build_kured() -> Path:
    """Extract :func:`archive` and build its ``./cmd/...`` into the cache; return ``bin``."""
    src = archive()
    if not src.is_file():
        raise RuntimeError(f"the kured v2 prototype archive {src} does not exist")
    if shutil.which("go") is None:
        raise RuntimeError("the Go toolchain (go) is not on PATH; it is needed to build kured")
    sha = _sha256(src)
    out = _cached(sha)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with tarfile.open(src) as tar:
            tar.extractall(tmp / "src", filter="data")
        roots = [p for p in (tmp / "src").iterdir() if (p / "go.mod").is_file()]
        if len(roots) != 1:
            raise RuntimeError(f"{src} does not hold exactly one Go module at its top")
        root = roots[0]
        env = {**_go_env(), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
        (tmp / "bin").mkdir()
        _run_go(["build", "-v", "-o", f"{tmp / 'bin'}/", "./cmd/..."], root, "build kured v2", env)
        for manifest in root.glob("*.yaml"):
            shutil.copy2(manifest, tmp / manifest.name)
        info = {
            "archive": str(src),
            "sha256": sha,
            "build_seconds": round(time.monotonic() - t0, 1),
            **build_stamp(),
        }
        (tmp / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
        shutil.rmtree(tmp / "src")
        try:
            tmp.rename(out)
        except OSError:
            if not _complete(out / "bin"):  # not another build finishing first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"built kured v2 prototype ({sha[:12]}) in {info['build_seconds']}s into {out}")
    return out / "bin"


def ensure_kured() -> Path:
    """The kured v2 programs' directory, built from the shared archive if nowhere found."""
    found = find_kured()
    if found is not None:
        return found
    if os.environ.get(ENV):
        raise RuntimeError(
            f"{ENV}={os.environ[ENV]} does not hold {', '.join(PROGRAMS)}; "
            "point it at a build of the prototype or unset it to use the cache"
        )
    log(f"no kured v2 prototype build found; building it from {archive()} (takes minutes)")
    return build_kured()


def manifests_dir(bin_dir: Path) -> Path:
    """Where the prototype's manifests are: beside ``bin`` (the cache, the source tree)."""
    return bin_dir.resolve().parent


def cluster_rules(bin_dir: Path, manifest: str) -> list[dict[str, Any]]:
    """The rules of the ClusterRoles in the prototype's ``manifest`` (e.g. reboot-daemon.yaml)."""
    path = manifests_dir(bin_dir) / manifest
    if not path.is_file():
        raise RuntimeError(f"the prototype's manifest {path} is missing")
    rules: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "ClusterRole":
            rules.extend(doc.get("rules") or [])
    if not rules:
        raise RuntimeError(f"{path} has no ClusterRole rules")
    return rules


# --------------------------------------------------------------------------- the audit log

# AUDIT_POLICY, plus every create/update/patch of a Node object itself with the stored Node
# (the daemon's cordon and annotations), placed before the ServiceAccounts' Metadata rule.
KURED_AUDIT_POLICY = AUDIT_POLICY.replace(
    "  - level: Metadata\n    userGroups",
    "  - level: RequestResponse\n"
    '    verbs: ["update", "patch"]\n'
    '    resources: [{group: "", resources: ["nodes"]}]\n'
    "  - level: Metadata\n    userGroups",
)
assert KURED_AUDIT_POLICY != AUDIT_POLICY


def kured_audit_args(workdir: Path) -> dict[str, str]:
    """kube-apiserver flags auditing with :data:`KURED_AUDIT_POLICY` into ``workdir``."""
    return audit_args(workdir, KURED_AUDIT_POLICY)


# --------------------------------------------------------------------------- the reboot log


@dataclass
class RebootLog:
    """The machines' record (kured_machine's events), in the order they were written."""

    events: list[dict[str, Any]]

    def of(self, event: str, node: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event and node in (None, e["node"])]

    def reboots(self, nodes: Sequence[str]) -> dict[str, int]:
        """How many times each of ``nodes`` was rebooted (a reboot signal handled)."""
        return {n: len(self.of("reboot", n)) for n in nodes}

    def max_down(self) -> int:
        """The most machines between a reboot signal and their agents' restart at once."""
        edges: list[tuple[float, int]] = []
        for r in self.of("reboot"):
            ends = [
                e["time"]
                for e in self.of("agents", r["node"])
                if e["n"] == r["n"] and e["time"] >= r["time"]
            ]
            edges.append((r["time"], 1))
            edges.append((ends[0] if ends else float("inf"), -1))
        cur = best = 0
        for _t, d in sorted(edges, key=lambda e: (e[0], e[1])):
            cur += d
            best = max(best, cur)
        return best

    def agent_exits(self) -> list[dict[str, Any]]:
        return self.of("agent_exit")


def reboot_log(path: Path) -> RebootLog:
    if not path.exists():
        return RebootLog([])
    return RebootLog([json.loads(line) for line in path.read_text().splitlines() if line.strip()])


# --------------------------------------------------------------------------- timings


@dataclass(frozen=True)
class AgentTimings:
    """The agents' periods and the machines' timings (seconds).

    :meth:`scaled` is kured's defaults (every agent's ``--period`` 1 minute) and a
    realistic machine (a 60 s reboot, pods started 15 s after the node is Ready) times a
    factor.
    """

    detector_period: float = 3.0
    daemon_period: float = 3.0
    inhibitor_period: float = 1.0
    reboot_seconds: float = 3.0
    kubelet_delay: float = 1.5

    @classmethod
    def scaled(cls, factor: float) -> AgentTimings:
        return cls(60 * factor, 60 * factor, 60 * factor, 60 * factor, 15 * factor)

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in dataclasses.asdict(self).items()}


def go_duration(seconds: float) -> str:
    """``seconds`` as a Go duration flag value (whole milliseconds)."""
    return f"{round(seconds * 1000)}ms"


# --------------------------------------------------------------------------- the fleet


@dataclass
class Machine:
    """One simulated node: its Node object and its PID-1 process (see kured_machine)."""

    name: str
    needs_reboot: bool
    reboot_seconds: float
    sentinel_survives: int = 0
    stay_down_after: int | None = None
    boot_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    proc: subprocess.Popen[bytes] | None = None
    pid1: int | None = None  # PID 1 of its namespace, as this (the parent) namespace sees it


def _pid1(unshare: subprocess.Popen[bytes], timeout: float = 10) -> int:
    """The host PID of the child ``unshare --fork`` made: PID 1 of the new namespace."""
    path = Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children")

    def child() -> int | None:
        if unshare.poll() is not None:
            raise AssertionError(f"unshare exited {unshare.returncode} at start")
        with contextlib.suppress(OSError):
            kids = path.read_text().split()
            if kids:
                return int(kids[0])
        return None

    pid = wait_for(child, timeout, interval=0.01, what="the machine's PID 1")
    assert pid is not None
    return pid


class Fleet:
    """Simulated machines with kured v2's agents, for one test (close it: :meth:`close`).

    ``run`` labels the fleet's Nodes (``RUN_LABEL``) and prefixes their names; its
    ServiceAccounts live in the namespace ``{run}-kured``.
    """

    def __init__(
        self,
        cp: ControlPlane,
        bin_dir: Path,
        workdir: Path,
        run: str,
        timings: AgentTimings = AgentTimings(),
    ) -> None:
        self.cp = cp
        self.api = Api(cp)
        self.bin = bin_dir
        self.workdir = workdir
        self.run = run
        self.timings = timings
        self.ns = f"{run}-kured"
        self.machines: dict[str, Machine] = {}
        self.pods: list[tuple[str, subprocess.Popen[bytes], int]] = []
        self.log_path = workdir / "reboots.jsonl"
        workdir.mkdir(parents=True, exist_ok=True)
        self._rbac()

    # -- identities

    def _rbac(self) -> None:
        self.api.namespace(self.ns)
        self.api.request(
            "POST",
            f"/api/v1/namespaces/{self.ns}/serviceaccounts",
            {"metadata": {"name": "default"}},
        )
        for sa in ("reboot-daemon", "reboot-required-detector", "reboot-inhibitors"):
            self.api.request(
                "POST", f"/api/v1/namespaces/{self.ns}/serviceaccounts", {"metadata": {"name": sa}}
            )
            role = f"{self.run}:{sa}"
            rbac = "/apis/rbac.authorization.k8s.io/v1"
            self.api.request(
                "POST",
                f"{rbac}/clusterroles",
                {"metadata": {"name": role}, "rules": cluster_rules(self.bin, f"{sa}.yaml")},
            )
            self.api.request(
                "POST",
                f"{rbac}/clusterrolebindings",
                {
                    "metadata": {"name": role},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                    "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": self.ns}],
                },
            )

    def users(self) -> list[str]:
        """The agents' ServiceAccount user names (for ``audit.forbidden``)."""
        return [
            f"system:serviceaccount:{self.ns}:{sa}"
            for sa in ("reboot-daemon", "reboot-required-detector", "reboot-inhibitors")
        ]

    def _credentials(self, sa: str) -> dict[str, str]:
        """A kubelet's projected token volume for ``sa``, on the host (0600)."""
        d = self.workdir / "credentials" / sa
        if not (d / "token").exists():
            d.mkdir(parents=True, exist_ok=True)
            files = {
                "token": self.api.service_account_token(self.ns, sa),
                "ca.crt": Path(self.cp.pki.path("ca.crt")).read_text(),
                "namespace": self.ns,
            }
            for name, text in files.items():
                (d / name).write_text(text)
                (d / name).chmod(0o600)
        return {name: str(d / name) for name in ("token", "ca.crt", "namespace")}

    # -- processes

    def _spawn(self, name: str, spec: dict[str, Any]) -> tuple[subprocess.Popen[bytes], int]:
        state = self.workdir / name
        state.mkdir(parents=True, exist_ok=True)
        spec_path = state / "spec.json"
        spec_path.write_text(json.dumps(spec, indent=2))
        cmd = [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "--mount",
            "--kill-child=SIGKILL",  # unshare killed: the whole PID namespace dies
            "--",
            sys.executable,
            "-m",
            "tests.support.env.kured_machine",
            str(spec_path),
        ]
        out = (state / "pid1.log").open("ab")
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        finally:
            out.close()
        return proc, _pid1(proc)

    def _common(self, name: str, kind: str, *sas: str) -> dict[str, Any]:
        return {
            "kind": kind,
            "node": name,
            "state_dir": str(self.workdir / name),
            "reboot_log": str(self.log_path),
            "credentials": {sa: self._credentials(sa) for sa in sas},
            "api": {
                "host": "127.0.0.1",
                "port": self.cp.port,
                "ca": self.cp.pki.path("ca.crt"),
                "cert": self.cp.pki.path("admin.crt"),
                "key": self.cp.pki.path("admin.key"),
            },
        }

    def add(
        self,
        name: str,
        *,
        needs_reboot: bool = True,
        reboot_seconds: float | None = None,
        sentinel_survives: int = 0,
        stay_down_after: int | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Machine:
        """Register the Node (Ready, a bootID) and start its machine with both agents."""
        m = Machine(
            name,
            needs_reboot,
            self.timings.reboot_seconds if reboot_seconds is None else reboot_seconds,
            sentinel_survives,
            stay_down_after,
        )
        hb = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.api.request(
            "POST",
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {RUN_LABEL: self.run, **(labels or {})}},
                "status": {
                    "conditions": [ready_condition(hb)],
                    "nodeInfo": {"bootID": m.boot_id},
                },
            },
        )
        t = self.timings
        b = self.bin
        spec = {
            **self._common(name, "machine", "reboot-daemon", "reboot-required-detector"),
            "boot_id": m.boot_id,
            "needs_reboot": needs_reboot,
            "reboot_seconds": m.reboot_seconds,
            "kubelet_delay": t.kubelet_delay,
            "sentinel_survives": sentinel_survives,
            "stay_down_after": stay_down_after,
            "agents": [
                {
                    "name": "reboot-required-detector",
                    "sa": "reboot-required-detector",
                    "argv": [
                        str(b / "reboot-required-detector"),
                        f"--node-id={name}",
                        "--reboot-sentinel-file=/run/kured/reboot-required",
                        f"--period={go_duration(t.detector_period)}",
                        "--metrics-host=127.0.0.1",
                        "--metrics-port=0",
                        "--debug",
                    ],
                },
                {
                    "name": "reboot-daemon",
                    "sa": "reboot-daemon",
                    "argv": [
                        str(b / "reboot-daemon"),
                        f"--node-id={name}",
                        "--reboot-method=signal",
                        f"--period={go_duration(t.daemon_period)}",
                        "--metrics-host=127.0.0.1",
                        "--metrics-port=0",
                        "--health-probe-bind-address=127.0.0.1:0",
                        "--debug",
                    ],
                },
            ],
        }
        m.proc, m.pid1 = self._spawn(name, spec)
        self.machines[name] = m
        return m

    def start_inhibitors(self, *selectors: str) -> None:
        """The cluster's one ``reboot-inhibitors`` (``--blocking-pod-selector`` each)."""
        name = f"{self.run}-inhibitors"
        spec = {
            **self._common(name, "pod", "reboot-inhibitors"),
            "boot_id": "",
            "agents": [
                {
                    "name": "reboot-inhibitors",
                    "sa": "reboot-inhibitors",
                    "argv": [
                        str(self.bin / "reboot-inhibitors"),
                        *[f"--blocking-pod-selector={s}" for s in selectors],
                        f"--period={go_duration(self.timings.inhibitor_period)}",
                        "--metrics-host=127.0.0.1",
                        "--metrics-port=0",
                        "--debug",
                    ],
                }
            ],
        }
        proc, pid1 = self._spawn(name, spec)
        self.pods.append((name, proc, pid1))

    def wait_booted(self, timeout: float = 20) -> None:
        """Every machine and pod has mounted its /run and started its agents."""
        names = set(self.machines) | {p[0] for p in self.pods}
        wait_for(
            lambda: names <= {e["node"] for e in self.log().of("boot")},
            timeout,
            what="every machine booted",
        )

    def require_reboot(self, name: str) -> None:
        """Write machine ``name``'s reboot sentinel again (a new update needs a reboot).

        Written through ``/proc/<PID 1>/root``: the machine's own ``/run``, the tmpfs its
        detector reads (the host's ``/run`` is not it).
        """
        m = self.machines[name]
        assert m.pid1 is not None
        path = Path(f"/proc/{m.pid1}/root/run/kured/reboot-required")
        path.write_text("*** System restart required ***\n")

    # -- questions

    def log(self) -> RebootLog:
        return reboot_log(self.log_path)

    def node(self, name: str) -> dict[str, Any]:
        return dict(self.api.request("GET", f"/api/v1/nodes/{name}"))

    def conditions(self, name: str) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in self.node(name).get("status", {}).get("conditions") or []}

    def settled(self, name: str, since: float) -> bool:
        """Done with its maintenance: back up, uncordoned, not in progress, and the detector
        reported ``reboot-required=False`` after ``since`` (its last boot)."""
        node = self.node(name)
        conds = {c["type"]: c for c in node.get("status", {}).get("conditions") or []}
        req = conds.get(REBOOT_REQUIRED) or {}
        heartbeat = req.get("lastHeartbeatTime")
        return (
            (conds.get("Ready") or {}).get("status") == "True"
            and not (node.get("spec") or {}).get("unschedulable")
            and (conds.get(IN_PROGRESS) or {}).get("status") != "True"
            and req.get("status") == "False"
            and heartbeat is not None
            and _epoch(str(heartbeat)) >= int(since)
        )

    # -- pods

    def blocker_pod(self, ns: str, name: str, node: str, labels: Mapping[str, str]) -> None:
        """A Pod bound to ``node`` (``spec.nodeName``), as the scheduler leaves it."""
        with contextlib.suppress(ApiError):
            self.api.request(
                "POST",
                f"/api/v1/namespaces/{ns}/serviceaccounts",
                {"metadata": {"name": "default"}},
            )
        self.api.request(
            "POST",
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": dict(labels)},
                "spec": {
                    "nodeName": node,
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "c", "image": "registry.invalid/blocker:1"}],
                },
            },
        )

    def delete_pod(self, ns: str, name: str) -> None:
        """Delete at once (no kubelet here to finish a graceful deletion)."""
        self.api.request(
            "DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", {"gracePeriodSeconds": 0}
        )

    # -- the end

    def close(self) -> None:
        procs = [(m.proc, m.pid1) for m in self.machines.values()] + [
            (p, pid) for _n, p, pid in self.pods
        ]
        for proc, pid in procs:
            if proc is not None and proc.poll() is None and pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc, _pid in procs:
            if proc is None:
                continue
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stop_process(proc, signal.SIGKILL, timeout=5)
        for name in self.machines:
            with contextlib.suppress(ApiError):
                self.api.request("DELETE", f"/api/v1/nodes/{name}")

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _epoch(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --------------------------------------------------------------------------- windows


def window_open_for(seconds: float, now: dt.datetime | None = None) -> dict[str, str]:
    """kumaco window data open now (it began this minute) and closing ``seconds`` from now."""
    now = now or dt.datetime.now(dt.UTC)
    start = now.replace(second=0, microsecond=0)
    length = (now - start).total_seconds() + seconds
    return {
        "startTime": f"{start.minute} {start.hour} * * *",
        "duration": f"{length:.3f}s",
        "nodeSelector": "",
    }


@contextlib.contextmanager
def fleet(
    cp: ControlPlane, bin_dir: Path, workdir: Path, run: str, timings: AgentTimings
) -> Iterator[Fleet]:
    f = Fleet(cp, bin_dir, workdir, run, timings)
    try:
        yield f
    finally:
        f.close()


# --------------------------------------------------------------------------- kumaco


#: How components/kured-v2 counts unavailable nodes; :data:`OLDER_COUNT` for a kumaco
#: tree from before ``--count-released-unavailable`` (``KUMACO_KURED_V2_TREE``, the records).
COUNT = ("--count-released-unavailable", RELEASED_UNAVAILABLE)
OLDER_COUNT = ("--count-unavailable",)


def kumaco_flags(
    run: str, ns: str, ceiling: int = 2, *extra: str, count: Sequence[str] = COUNT
) -> list[str]:
    """``kumaco run`` flags with the agents' condition names, scoped to ``run``/``ns``.

    ``--count-released-unavailable`` (components/kured-v2's value): a node kumaco released
    that is still cordoned (the daemon uncordons it only once its pods are back, after the
    kubelet delay) or not Ready counts toward the ceiling, so that at most ``ceiling``
    nodes are ever disrupted, not only in progress; a node unavailable for another reason
    takes no place.
    """
    return [
        *scope_flags(run, ns),
        "--under-maintenance-condition",
        UNDER_MAINTENANCE,
        "--in-progress-condition",
        IN_PROGRESS,
        "--require-condition",
        REBOOT_REQUIRED,
        "--block-condition",
        INHIBITED,
        "--max-in-progress",
        str(ceiling),
        *count,
        *extra,
    ]


# --------------------------------------------------------------------------- observing


@dataclass
class Outcome:
    """What :func:`observe` saw: reboots per node, whether all settled, how long it took."""

    reboots: dict[str, int]
    done: bool
    seconds: float
    excess: list[str]  # nodes rebooted more often than expected (a reboot loop)
    settled_at: float | None = None  # when the last node settled (epoch)


def observe(
    f: Fleet,
    expected: Mapping[str, int],
    *,
    timeout: float,
    quiet: float,
    settle: Sequence[str] | None = None,
    stop_on_excess: bool = True,
    start: float | None = None,
) -> Outcome:
    """Watch the fleet until every node of ``expected`` was rebooted that many times and
    every node of ``settle`` (default: those expected to reboot) is :meth:`Fleet.settled`
    since its last boot, then ``quiet`` seconds more with no further reboot; or until
    ``timeout``; or, with ``stop_on_excess``, as soon as a node reboots more often than
    expected."""
    t0 = time.time() if start is None else start
    deadline = time.monotonic() + timeout
    must_settle = [n for n, k in expected.items() if k > 0] if settle is None else list(settle)
    calm_since: float | None = None
    settled_at: float | None = None
    while True:
        rl = f.log()
        counts = rl.reboots(list(expected))
        excess = [n for n in expected if counts[n] > expected[n]]
        if excess and stop_on_excess:
            return Outcome(counts, False, time.time() - t0, excess)
        reached = all(counts[n] >= expected[n] for n in expected)
        if reached:
            ups = {n: [e["time"] for e in rl.of("up", n)] for n in must_settle}
            ok = all(f.settled(n, max(ups[n], default=t0)) for n in must_settle)
        else:
            ok = False
        now = time.time()
        if ok:
            if calm_since is None:
                calm_since, settled_at = now, now
            elif settled_at is not None and now - calm_since >= quiet:
                return Outcome(counts, not excess, settled_at - t0, excess, settled_at)
        else:
            calm_since = None
        if time.monotonic() > deadline:
            return Outcome(counts, False, now - t0, excess)
        time.sleep(0.25)
