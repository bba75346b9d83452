"""A real Kubernetes control plane (kube-apiserver + etcd) on loopback, for tests and demos.

This is kumaco's envtest: the binaries are real, built from pinned Go modules,
and run as local processes. Nothing in kumaco's test-suite talks to a fake.
Its command line is ``hack/controlplane.py`` (``assets``, ``up``), a thin
wrapper over :func:`ensure_assets` and :func:`serve`.

Asset look-up order (as envtest): ``TEST_ASSET_KUBE_APISERVER`` and
``TEST_ASSET_ETCD``; then ``$KUBEBUILDER_ASSETS``; then kumaco's cache
(``$KUMACO_CACHE_DIR``, default ``~/.cache/kumaco``); otherwise they are
built with this machine's Go toolchain (``GOTOOLCHAIN=local``) from the Go
module proxy into that cache:

* kube-apiserver from ``k8s.io/kubernetes`` through a wrapper module that
  requires the release and replaces each ``k8s.io/<staging>`` module (the
  release's own ``go.mod`` lists them as ``./staging/src`` replaces) with its
  published ``v0.Y.Z``; version ``-X`` ldflags make ``/version`` right.
* etcd from ``go.etcd.io/etcd/server/v3`` through a wrapper module likewise.

kwok (``sigs.k8s.io/kwok``, the kubelet simulator of Kubernetes' own scale
tests) is a third asset with the same look-up order -- ``TEST_ASSET_KWOK``,
``$KUBEBUILDER_ASSETS/kwok``, the cache -- built with ``go install
sigs.k8s.io/kwok/cmd/kwok@KWOK_VERSION`` into its own versioned cache
directory when missing (:func:`ensure_kwok`). Only the tests and benchmarks
that simulate kubelets need it; :func:`ensure_assets` does not build it.

:class:`ControlPlane` is the start/stop code that ``tests/e2e/conftest.py``
uses as a session fixture and that ``hack/controlplane.py up`` runs. It needs
only the standard library and ``cryptography``.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import datetime as dt
import hashlib
import http.client
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.env.ports import free_port
from tests.support.env.process import exchange, log_tail, spawn, stop_process, wait_ready

# Newest first: the first that builds is kept, so the newest that builds wins
# with a single build. Measured here: v1.36.3 and v1.37.2 both build with Go 1.26.
K8S_CANDIDATES = ("v1.37.2", "v1.36.3", "v1.35.4", "v1.34.4")
ETCD_VERSION = "v3.6.16"
# The kubelet simulator (tests/support/env/kwok.py): v0.8.0 builds with Go 1.26 in ~3 minutes.
KWOK_VERSION = "v0.8.0"


def log(msg: str) -> None:
    """Progress goes to stderr; stdout is reserved for the command's answer."""
    print(f"[controlplane] {msg}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    return Path(os.environ.get("KUMACO_CACHE_DIR") or Path.home() / ".cache" / "kumaco")


# --------------------------------------------------------------------------- assets


def _complete(d: Path) -> bool:
    return all(os.access(d / b, os.X_OK) for b in ("kube-apiserver", "etcd"))


def find_assets() -> Path | None:
    """Return a directory holding both binaries, from env or cache, or None."""
    apiserver, etcd = os.environ.get("TEST_ASSET_KUBE_APISERVER"), os.environ.get("TEST_ASSET_ETCD")
    if apiserver and etcd:
        a, e = Path(apiserver).resolve(), Path(etcd).resolve()
        if a.parent == e.parent and a.name == "kube-apiserver" and e.name == "etcd":
            return a.parent
        # Different places: gather them under one directory of symlinks.
        key = hashlib.sha256(f"{a}\0{e}".encode()).hexdigest()[:12]
        d = cache_dir() / "assets" / f"env-{key}"
        d.mkdir(parents=True, exist_ok=True)
        for name, target in (("kube-apiserver", a), ("etcd", e)):
            link = d / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target)
        return d
    kb = os.environ.get("KUBEBUILDER_ASSETS")
    if kb and _complete(Path(kb)):
        return Path(kb)
    root = cache_dir() / "assets"
    for version in K8S_CANDIDATES:
        d = root / f"kubernetes-{version}-etcd-{ETCD_VERSION}"
        if _complete(d):
            return d
    return None


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = "local"
    env["GOFLAGS"] = "-mod=mod -buildvcs=false"
    env.setdefault("CGO_ENABLED", "0")
    return env


def _run_go(
    args: Sequence[str], cwd: Path, what: str, env: Mapping[str, str] | None = None
) -> None:
    """Run a go command, streaming a compact progress line per compiled package."""
    cmd = ["go", *args]
    log(f"{what}: {' '.join(cmd)}")
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=dict(env or _go_env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for count, raw in enumerate(proc.stdout, 1):
        line = raw.rstrip()
        tail = [*tail[-40:], line]
        if count % 100 == 0:
            log(
                f"{what}: {count} packages/lines, {time.monotonic() - started:.0f}s, at {line[:90]}"
            )
    rc = proc.wait()
    if rc != 0:
        sys.stderr.write("\n".join(tail) + "\n")
        raise RuntimeError(f"{what} failed (exit {rc}): {' '.join(cmd)}")


def _release_gomod(version: str, workdir: Path) -> str:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        cwd=workdir,
        env=_go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"go mod download k8s.io/kubernetes@{version}: {out.stdout}{out.stderr}")
    return Path(json.loads(out.stdout)["GoMod"]).read_text()


def _build_apiserver(version: str, out: Path) -> None:
    build_k8s_command(version, "kube-apiserver", out, fresh=True)


def build_k8s_command(version: str, command: str, out: Path, *, fresh: bool = False) -> None:
    """Build ``k8s.io/kubernetes/cmd/<command>`` at ``version`` to ``out``, through the wrapper
    module (``build/kube-apiserver-<version>``: one module for every binary of the release).

    ``fresh`` rewrites the wrapper's ``go.mod`` from the release's staging replaces (as the
    first build does); otherwise an existing one is kept and only ``command``'s packages are
    resolved into it (the node binaries, :mod:`tests.support.env.clusterassets`).
    """
    major, minor, patch = version.lstrip("v").split(".")
    work = cache_dir() / "build" / f"kube-apiserver-{version}"
    work.mkdir(parents=True, exist_ok=True)
    if fresh or not (work / "go.mod").exists():
        staging = re.findall(
            r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", _release_gomod(version, work), re.M
        )
        if not staging:
            raise RuntimeError(f"no ./staging replaces found in k8s.io/kubernetes@{version}/go.mod")
        lines = [
            "module kumaco.test/kube-apiserver-build",
            "",
            "go 1.26.0",
            "",
            f"require k8s.io/kubernetes {version}",
            "",
            "replace (",
        ]
        lines += [f"\t{m} => {m} v0.{minor}.{patch}" for m in staging]
        lines.append(")")
        (work / "go.mod").write_text("\n".join(lines) + "\n")
        (work / "go.sum").unlink(missing_ok=True)
    _run_go(
        ["get", f"k8s.io/kubernetes/cmd/{command}@{version}"],
        work,
        f"resolve {command} {version}",
    )
    build_date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    xs = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": build_date,
    }
    ld = ["-s", "-w"] + [
        f"-X k8s.io/{pkg}.{k}={v}"
        for pkg in ("component-base/version", "client-go/pkg/version")
        for k, v in xs.items()
    ]
    _run_go(
        [
            "build",
            "-v",
            "-trimpath",
            "-ldflags",
            " ".join(ld),
            "-o",
            str(out),
            f"k8s.io/kubernetes/cmd/{command}",
        ],
        work,
        f"build {command} {version}",
    )


def _build_etcd(out: Path) -> None:
    work = cache_dir() / "build" / f"etcd-{ETCD_VERSION}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "go.mod").write_text(
        "module kumaco.test/etcd-build\n\ngo 1.26.0\n\n"
        f"require go.etcd.io/etcd/server/v3 {ETCD_VERSION}\n"
    )
    (work / "go.sum").unlink(missing_ok=True)
    _run_go(
        ["get", f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}"], work, f"resolve etcd {ETCD_VERSION}"
    )
    _run_go(
        [
            "build",
            "-v",
            "-trimpath",
            "-ldflags",
            "-s -w",
            "-o",
            str(out),
            "go.etcd.io/etcd/server/v3",
        ],
        work,
        f"build etcd {ETCD_VERSION}",
    )


def build_assets() -> Path:
    """Build both binaries into the cache; return their directory."""
    if shutil.which("go") is None:
        raise RuntimeError(
            "the Go toolchain (go) is not on PATH; it is needed to build kube-apiserver and etcd"
        )
    root = cache_dir() / "assets"
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    etcd_tmp = root / f".etcd-{ETCD_VERSION}.tmp"
    _build_etcd(etcd_tmp)
    etcd_secs = time.monotonic() - started
    failures: list[str] = []
    for version in K8S_CANDIDATES:
        t0 = time.monotonic()
        tmp = root / f".kube-apiserver-{version}.tmp"
        try:
            _build_apiserver(version, tmp)
        except RuntimeError as exc:
            failures.append(f"{version}: {exc}")
            log(f"kube-apiserver {version} did not build; trying the next pinned release")
            continue
        d = root / f"kubernetes-{version}-etcd-{ETCD_VERSION}"
        d.mkdir(exist_ok=True)
        shutil.copy2(etcd_tmp, d / "etcd")
        tmp.replace(d / "kube-apiserver")
        etcd_tmp.unlink()
        info = {
            "kubernetes": version,
            "etcd": ETCD_VERSION,
            "etcd_build_seconds": round(etcd_secs, 1),
            "kube_apiserver_build_seconds": round(time.monotonic() - t0, 1),
            "total_seconds": round(time.monotonic() - started, 1),
            **build_stamp(),
        }
        (d / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
        log(f"built kube-apiserver {version} and etcd {ETCD_VERSION} in {info['total_seconds']}s")
        return d
    raise RuntimeError("no pinned kube-apiserver release builds:\n" + "\n".join(failures))


def build_stamp() -> dict[str, str]:
    """What a build-info.json says of the build itself: the Go toolchain and when."""
    go = subprocess.run(["go", "version"], capture_output=True, text=True, check=False)
    return {
        "go": go.stdout.strip(),
        "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def ensure_assets() -> Path:
    found = find_assets()
    if found is not None:
        return found
    log(
        "no kube-apiserver/etcd found; building them from the Go module proxy "
        "(a cold build takes minutes)"
    )
    return build_assets()


def _kwok_cache() -> Path:
    return cache_dir() / "assets" / f"kwok-{KWOK_VERSION}" / "kwok"


def find_tool(name: str, cached: Path) -> Path | None:
    """A Go tool's binary, as envtest looks up its assets.

    ``TEST_ASSET_<NAME>``, then ``$KUBEBUILDER_ASSETS/<name>``, then ``cached``.
    """
    env = os.environ.get(f"TEST_ASSET_{name.upper()}")
    if env:
        return Path(env) if os.access(env, os.X_OK) else None
    kb = os.environ.get("KUBEBUILDER_ASSETS")
    if kb and os.access(Path(kb) / name, os.X_OK):
        return Path(kb) / name
    return cached if os.access(cached, os.X_OK) else None


def find_kwok() -> Path | None:
    """The kwok binary: ``TEST_ASSET_KWOK``, then ``$KUBEBUILDER_ASSETS/kwok``, then the cache."""
    return find_tool("kwok", _kwok_cache())


def go_install_tool(
    name: str, package: str, version: str, out: Path, ldflags: Sequence[str] = ()
) -> Path:
    """``go install PACKAGE@VERSION`` (from the Go module proxy) to ``out``, with its build-info.json.

    One recipe for the Go tools the tests use beside the control plane (kwok, helm):
    ``-trimpath``, stripped (plus ``ldflags``, e.g. the ``-X`` a release build sets),
    this machine's toolchain (``GOTOOLCHAIN=local``); the build's time and toolchain go
    to ``build-info.json`` next to the binary.
    """
    if shutil.which("go") is None:
        raise RuntimeError(f"the Go toolchain (go) is not on PATH; it is needed to build {name}")
    work = cache_dir() / "build" / f"{name}-{version}"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    # go install pkg@version builds outside any module (GOFLAGS=-mod=mod is not allowed there).
    env = {**_go_env(), "GOBIN": str(work), "GOFLAGS": "-buildvcs=false"}
    flags = " ".join(["-s", "-w", *ldflags])
    args = ["install", "-v", "-trimpath", f"-ldflags={flags}", f"{package}@{version}"]
    _run_go(args, work, f"build {name} {version}", env)
    out.parent.mkdir(parents=True, exist_ok=True)
    (work / Path(package).name).replace(out)
    info = {name: version, "build_seconds": round(time.monotonic() - t0, 1), **build_stamp()}
    (out.parent / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    log(f"built {name} {version} in {info['build_seconds']}s")
    return out


def build_kwok() -> Path:
    """``go install sigs.k8s.io/kwok/cmd/kwok@KWOK_VERSION`` into the cache; return the binary."""
    return go_install_tool("kwok", "sigs.k8s.io/kwok/cmd/kwok", KWOK_VERSION, _kwok_cache())


def ensure_tool(name: str, cached: Path, build: Callable[[], Path]) -> Path:
    """A Go tool found by :func:`find_tool`, else built (``build``) from the Go module proxy."""
    found = find_tool(name, cached)
    if found is not None:
        return found
    variable = f"TEST_ASSET_{name.upper()}"
    if os.environ.get(variable):
        raise RuntimeError(
            f"{variable}={os.environ[variable]} is not an executable file; "
            f"point it at a {name} binary or unset it to use the cache"
        )
    log(f"no {name} found; building it from the Go module proxy (takes minutes)")
    return build()


def ensure_kwok() -> Path:
    """The kwok binary, built from the Go module proxy if it is nowhere to be found."""
    return ensure_tool("kwok", _kwok_cache(), build_kwok)


# --------------------------------------------------------------------------- PKI


@dataclass
class PKI:
    """A throw-away CA, serving and client certificates, and the SA key pair."""

    dir: Path

    def generate(self, user: str = "kumaco-admin") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        later = now + dt.timedelta(days=7)

        def key() -> ec.EllipticCurvePrivateKey:
            return ec.generate_private_key(ec.SECP256R1())

        def pem_key(k: ec.EllipticCurvePrivateKey) -> bytes:
            return k.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )

        def name(cn: str, org: str | None = None) -> x509.Name:
            attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
            if org:
                attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
            return x509.Name(attrs)

        ca_key = key()
        ca = (
            x509.CertificateBuilder()
            .subject_name(name("kumaco-test-ca"))
            .issuer_name(name("kumaco-test-ca"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(later)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )

        def leaf(
            subject: x509.Name,
            usage: x509.ObjectIdentifier,
            sans: list[x509.GeneralName] | None = None,
        ) -> tuple[bytes, bytes]:
            k = key()
            b = (
                x509.CertificateBuilder()
                .subject_name(subject)
                .issuer_name(ca.subject)
                .public_key(k.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now)
                .not_valid_after(later)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                # RFC 5280 identifiers: Python 3.13's default X.509 checks require them.
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                    critical=False,
                )
                .add_extension(
                    x509.SubjectKeyIdentifier.from_public_key(k.public_key()), critical=False
                )
            )
            if sans:
                b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
            return b.sign(ca_key, hashes.SHA256()).public_bytes(
                serialization.Encoding.PEM
            ), pem_key(k)

        sans: list[x509.GeneralName] = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
            x509.DNSName("kubernetes.default.svc.cluster.local"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
        ]
        serving, serving_key = leaf(name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
        client, client_key = leaf(name(user, "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH)
        sa_key = key()
        self.dir.mkdir(parents=True, exist_ok=True)
        files = {
            "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
            "ca.key": pem_key(ca_key),  # the real cluster's component certificates (cluster.py)
            "serving.crt": serving,
            "serving.key": serving_key,
            "admin.crt": client,
            "admin.key": client_key,
            "sa.key": pem_key(sa_key),
            "sa.pub": sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        }
        for fname, data in files.items():
            p = self.dir / fname
            p.write_bytes(data)
            p.chmod(0o600)

    def path(self, fname: str) -> str:
        return str(self.dir / fname)


# --------------------------------------------------------------------------- processes


@dataclass
class ControlPlane:
    """etcd + kube-apiserver on loopback. ``start()``/``stop()``; fault hooks for tests.

    ``apiserver_args`` adds or overrides kube-apiserver flags, e.g. an audit
    policy. The API server keeps its port and certificates across
    :meth:`stop_apiserver`/:meth:`start_apiserver`, so clients reconnect.
    """

    assets: Path
    workdir: Path | None = None
    apiserver_args: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    etcd: subprocess.Popen[bytes] | None = None
    apiserver: subprocess.Popen[bytes] | None = None
    _owns_workdir: bool = False

    def __post_init__(self) -> None:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="kumaco-cp-"))
            self._owns_workdir = True
        self.pki = PKI(self.workdir / "pki")
        self.etcd_port, self.etcd_peer_port, self.port = free_port(), free_port(), free_port()
        self.logs = self.log_dir or self.workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log (``apiserver_args["audit-log-path"]``, see
        :func:`tests.support.judges.audit.audit_args`); a RuntimeError when auditing is off."""
        path = self.apiserver_args.get("audit-log-path")
        if path is None:
            raise RuntimeError("this control plane does not audit (no audit-log-path)")
        return Path(path)

    # -- lifecycle

    def start(self, timeout: float = 120.0) -> None:
        """Start etcd then kube-apiserver; on any failure stop what was started and re-raise."""
        t0 = time.monotonic()
        try:
            self.pki.generate()
            self.start_etcd()
            self.start_apiserver(timeout=timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        log(f"control plane ready at {self.url} in {self.startup_seconds:.1f}s")

    def start_etcd(self) -> None:
        assert self.workdir is not None
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        cmd = [
            str(self.assets / "etcd"),
            "--name=kumaco-test",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=kumaco-test={peer}",
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ]
        self.etcd = spawn(cmd, self.log_path("etcd"))
        wait_ready(self._etcd_healthy, 30, "etcd /health", self.etcd, self.log_path("etcd"))

    def apiserver_command(self) -> list[str]:
        p = self.pki.path
        flags = {
            "etcd-servers": self.etcd_url,
            "secure-port": str(self.port),
            "bind-address": "127.0.0.1",
            "advertise-address": "127.0.0.1",
            # 1.37 refuses a loopback advertise address with the default endpoint reconciler;
            # nothing here consumes the in-cluster `kubernetes` Service endpoints.
            "endpoint-reconciler-type": "none",
            "tls-cert-file": p("serving.crt"),
            "tls-private-key-file": p("serving.key"),
            "client-ca-file": p("ca.crt"),
            "authorization-mode": "RBAC",
            "service-account-issuer": "https://kubernetes.default.svc.cluster.local",
            "service-account-key-file": p("sa.pub"),
            "service-account-signing-key-file": p("sa.key"),
            "service-cluster-ip-range": "10.0.0.0/24",
            "allow-privileged": "true",
            "profiling": "false",
            "cert-dir": str(self.pki.dir),
            "v": "0",
        }
        flags.update(self.apiserver_args)
        return [str(self.assets / "kube-apiserver")] + [f"--{k}={v}" for k, v in flags.items()]

    def start_apiserver(self, timeout: float = 120.0) -> None:
        log = self.log_path("kube-apiserver")
        self.apiserver = spawn(self.apiserver_command(), log)
        ready, what = self.get, "kube-apiserver /readyz"
        wait_ready(lambda: ready("/readyz")[0] == 200, timeout, what, self.apiserver, log)
        # The bootstrap controller creates these just after /readyz.
        wait_ready(
            lambda: all(
                ready(f"/api/v1/namespaces/{ns}")[0] == 200 for ns in ("default", "kube-system")
            ),
            30,
            "namespaces default, kube-system",
            self.apiserver,
            log,
        )

    def stop_apiserver(self, sig: int = signal.SIGTERM) -> None:
        self._stop(self.apiserver, sig)
        self.apiserver = None

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every 5 min).

        Returns the revision. Watches resumed below it are answered with 410 once the
        API server's watch cache no longer holds them (e.g. after :meth:`start_apiserver`).
        """
        conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            conn.request("POST", "/v3/kv/range", body=json.dumps({"key": "AA=="}))
            rev = int(json.loads(conn.getresponse().read())["header"]["revision"])
            conn.request(
                "POST",
                "/v3/kv/compaction",
                body=json.dumps({"revision": str(rev), "physical": True}),
            )
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"etcd compaction failed: {resp.status} {body[:200]!r}")
            return rev
        finally:
            conn.close()

    def bump_etcd_revision(self, writes: int = 3) -> int:
        """Write ``writes`` times to a key outside the API server's prefix, straight to etcd.

        Moves etcd's revision past every resourceVersion a client of the API server has
        seen, without an event any watch could deliver (even with the API server down);
        returns the revision. Then :meth:`compact_etcd` expires them all.
        """
        conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            rev = 0
            for i in range(writes):
                body = {"key": base64.b64encode(b"/kumaco-test/bump").decode()}
                body["value"] = base64.b64encode(str(i).encode()).decode()
                conn.request("POST", "/v3/kv/put", body=json.dumps(body))
                resp = conn.getresponse()
                answer = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"etcd put failed: {resp.status} {answer[:200]!r}")
                rev = int(json.loads(answer)["header"]["revision"])
            return rev
        finally:
            conn.close()

    def restart_apiserver(self, sig: int = signal.SIGTERM) -> None:
        self.stop_apiserver(sig)
        self.start_apiserver()

    def pause_etcd(self) -> None:
        assert self.etcd is not None
        self.etcd.send_signal(signal.SIGSTOP)

    def resume_etcd(self) -> None:
        assert self.etcd is not None
        self.etcd.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self._stop(self.apiserver, signal.SIGTERM)
        self._stop(self.etcd, signal.SIGTERM)
        self.apiserver = self.etcd = None
        if self._owns_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers

    def log_path(self, name: str) -> Path:
        """The log of the process ``name`` (``etcd``, ``kube-apiserver``)."""
        return self.logs / f"{name}.log"

    def log_tail(self, name: str, lines: int = 40) -> str:
        return log_tail(self.log_path(name), lines)

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes] | None, sig: int) -> None:
        stop_process(proc, sig)

    def _etcd_healthy(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=2)
        return exchange(conn, "GET", "/health")[0] == 200

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.pki.path("ca.crt"))
        ctx.load_cert_chain(self.pki.path("admin.crt"), self.pki.path("admin.key"))
        return ctx

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.ssl_context(), timeout=30
        )

    def get(self, path: str) -> tuple[int, bytes]:
        return exchange(self.connection(), "GET", path)

    def kubeconfig(
        self, user: str = "kumaco-admin", *, namespace: str | None = None, server: str | None = None
    ) -> dict[str, Any]:
        """An admin kubeconfig (decoded JSON); ``namespace`` for its context, ``server`` for
        another address of this API server (a proxy in front of it)."""

        def b64(fname: str) -> str:
            return base64.b64encode((self.pki.dir / fname).read_bytes()).decode()

        context = {"cluster": "kumaco-test", "user": user}
        if namespace is not None:
            context["namespace"] = namespace
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "kumaco-test",
            "clusters": [
                {
                    "name": "kumaco-test",
                    "cluster": {
                        "server": server or self.url,
                        "certificate-authority-data": b64("ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64("admin.crt"),
                        "client-key-data": b64("admin.key"),
                    },
                }
            ],
            "contexts": [{"name": "kumaco-test", "context": context}],
        }

    def write_kubeconfig(
        self, path: Path, *, namespace: str | None = None, server: str | None = None
    ) -> Path:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600, atomically); return ``path``."""
        return _write_config(path, self.kubeconfig(namespace=namespace, server=server))

    def write_token_kubeconfig(
        self, path: Path, token: str, *, user: str = "sa", namespace: str | None = None
    ) -> Path:
        """:meth:`write_kubeconfig` authenticating with a bearer ``token`` (a ServiceAccount's)."""
        config = self.kubeconfig(user, namespace=namespace)
        config["users"] = [{"name": user, "user": {"token": token}}]
        return _write_config(path, config)


def _write_config(path: Path, config: dict[str, Any]) -> Path:
    """``config`` as JSON at ``path`` (mode 0600, atomically); ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- nodes

ZONES = ("zone-a", "zone-b", "zone-c")
INSTANCE_TYPES = ("m6i.xlarge", "m6i.2xlarge", "c6i.4xlarge", "r6i.2xlarge")
_IMAGES = (
    "registry.k8s.io/kube-proxy",
    "registry.k8s.io/pause",
    "registry.k8s.io/coredns/coredns",
    "docker.io/calico/node",
    "docker.io/calico/cni",
    "quay.io/prometheus/node-exporter",
    "ghcr.io/kubereboot/kured",
    "docker.io/library/nginx",
    "docker.io/library/redis",
    "quay.io/jetstack/cert-manager-controller",
    "docker.io/grafana/grafana",
    "registry.k8s.io/ingress-nginx/controller",
    "docker.io/fluent/fluent-bit",
)


def kubelet_condition(
    ctype: str, status: str, reason: str, message: str, at: str
) -> dict[str, str]:
    """A node condition as a kubelet reports it, heartbeat and transition at ``at``."""
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": at,
        "lastTransitionTime": at,
    }


def ready_condition(at: str) -> dict[str, str]:
    """``Ready=True``, as every registered kubelet reports it."""
    return kubelet_condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", at)


#: node-problem-detector's usual conditions (its kernel and systemd monitors), all healthy.
NPD_CONDITIONS = (
    ("KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"),
    ("ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"),
    ("FrequentKubeletRestart", "NoFrequentKubeletRestart", "kubelet is functioning properly"),
    (
        "FrequentContainerdRestart",
        "NoFrequentContainerdRestart",
        "containerd is functioning properly",
    ),
)


def node_object(
    i: int,
    rng: random.Random,
    *,
    heartbeat: str = "2026-01-01T00:00:00Z",
    npd: bool = False,
    name: str | None = None,
) -> dict[str, Any]:
    """Return a Node as a kubelet would register it: a dozen labels, conditions, ~50 images.

    ``heartbeat`` is the conditions' lastHeartbeatTime (and lastTransitionTime);
    ``npd`` adds node-problem-detector's conditions, as on a node that runs it.
    """
    name = name or f"node-{i:05d}"
    role = "control-plane" if i < 3 else "worker"
    zone = ZONES[i % len(ZONES)]
    hb = heartbeat
    images = []
    for j in range(50):
        repo = f"{_IMAGES[j % len(_IMAGES)]}-{j // len(_IMAGES)}"
        digest = hashlib.sha256(f"{i}-{j}".encode()).hexdigest()
        images.append(
            {
                "names": [f"{repo}@sha256:{digest}", f"{repo}:v1.{j}.{rng.randrange(10)}"],
                "sizeBytes": rng.randrange(5_000_000, 900_000_000),
            }
        )
    cond = [
        kubelet_condition(t, "False", r, m, hb)
        for t, r, m in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    cond.append(ready_condition(hb))
    if npd:
        cond += [kubelet_condition(t, "False", r, m, hb) for t, r, m in NPD_CONDITIONS]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": INSTANCE_TYPES[i % len(INSTANCE_TYPES)],
                f"node-role.kubernetes.io/{role}": "",
                "kumaco.test/pool": f"pool-{i % 4}",
                "kumaco.test/rack": f"rack-{i % 40:02d}",
                "karpenter.sh/capacity-type": "spot" if i % 5 == 0 else "on-demand",
            },
        },
        "spec": {"podCIDR": f"10.{(i >> 8) & 255}.{i & 255}.0/24", "providerID": f"test://{name}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {
                "cpu": "7800m",
                "memory": "31Gi",
                "pods": "110",
                "ephemeral-storage": "95Gi",
            },
            "conditions": cond,
            "addresses": [
                {"type": "InternalIP", "address": f"10.250.{(i >> 8) & 255}.{i & 255}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": hashlib.md5(name.encode()).hexdigest(),
                "systemUUID": hashlib.md5(name.encode()).hexdigest(),
                "bootID": hashlib.sha1(name.encode()).hexdigest(),
                "kernelVersion": "6.1.0-28-amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }


def seed_nodes(
    cp: ControlPlane,
    count: int,
    workers: int = 8,
    start: int = 0,
    *,
    heartbeat_spread: float = 0.0,
    npd: bool = False,
    taints: Sequence[Mapping[str, str]] = (),
) -> float:
    """Register ``count`` realistic Nodes, as kubelets registering themselves would; the
    seconds it took.

    With ``heartbeat_spread`` each Node's last heartbeat is a random instant of
    the past that many seconds (instead of a fixed old date), so simulated
    kubelets reporting one period after it start evenly spread, as in a cluster
    that has been running; ``npd`` adds node-problem-detector's conditions; ``taints``
    go on every Node.
    """
    t0 = time.monotonic()
    local = threading.local()
    now = time.time()

    def create(i: int) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = cp.connection()
        rng = random.Random(i)
        hb = "2026-01-01T00:00:00Z"
        if heartbeat_spread:
            at = dt.datetime.fromtimestamp(now - rng.uniform(0, heartbeat_spread), dt.UTC)
            hb = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        node = node_object(i, rng, heartbeat=hb, npd=npd)
        if taints:
            node["spec"]["taints"] = [dict(t) for t in taints]
        # A Node keeps the status it is created with (as a kubelet registering itself).
        conn.request(
            "POST",
            "/api/v1/nodes",
            body=json.dumps(node).encode(),
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        data = resp.read()
        if resp.status == 409:
            return
        if resp.status >= 300 or not json.loads(data).get("status", {}).get("images"):
            raise RuntimeError(
                f"create node {node['metadata']['name']}: {resp.status} {data[:300]!r}"
            )

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for n, _ in enumerate(pool.map(create, range(start, start + count)), 1):
            if n % 500 == 0:
                log(f"seeded {n}/{count} nodes")
    took = time.monotonic() - t0
    log(f"seeded {count} nodes in {took:.1f}s")
    return took


# --------------------------------------------------------------------------- serving


@contextlib.contextmanager
def _signals_to_event() -> Iterator[threading.Event]:
    from kumaco.cmd.signals import SignalRelay

    stop = threading.Event()
    # relayed to a thread: a handler setting ``stop`` while the main thread waits on it
    # could wait for itself (kumaco.cmd.signals)
    with SignalRelay(dict.fromkeys((signal.SIGTERM, signal.SIGINT), lambda _s: stop.set())):
        yield stop


def serve(
    assets: Path, kubeconfig: Path, nodes: int = 0, apiserver_args: Mapping[str, str] | None = None
) -> int:
    """Run a control plane until SIGTERM/SIGINT: the ``up`` command of ``hack/controlplane.py``.

    Writes an admin kubeconfig to ``kubeconfig``, registers ``nodes`` realistic
    Nodes, prints ``ready`` and waits; then stops both processes and removes all
    temporary data. Returns the exit status (1 when a process died or start failed).
    """
    with _signals_to_event() as stop:
        cp = ControlPlane(assets, apiserver_args=dict(apiserver_args or {}))
        try:
            cp.start()
            cp.write_kubeconfig(kubeconfig)
            if nodes:
                seed_nodes(cp, nodes)
            print("ready", flush=True)
            while not stop.wait(0.5):
                for proc, name in ((cp.etcd, "etcd"), (cp.apiserver, "kube-apiserver")):
                    if proc is not None and proc.poll() is not None:
                        log(f"{name} exited with {proc.returncode}:\n{cp.log_tail(name)}")
                        return 1
        except RuntimeError as exc:
            log(str(exc))
            return 1
        finally:
            cp.stop()
            log("stopped; temporary data removed")
    return 0
