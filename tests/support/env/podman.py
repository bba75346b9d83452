"""kumaco's image run by podman as the kubelet would run it, with what the kubelet mounts.

:func:`podman` runs a podman command (fails the test when podman is missing; asserts exit
0 unless ``check=False``); :class:`Container` is a running container (its logs, state,
health endpoint, a ``podman stop``); :func:`mount_service_account` writes what the
kubelet mounts at :data:`SA_MOUNT` for a pod of a ServiceAccount (a TokenRequest token,
the CA, the namespace); :func:`port_in_use` says whether a host port is taken.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.support.env.admin import Cluster

SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


# 120 s by default: a podman command on a local image takes seconds (not timed); room for a
# loaded machine, so that only a hung podman fails the test.
def podman(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("podman")
    if exe is None:  # never skip: the image would go untested
        pytest.fail("podman is required (hack/debian-packages.txt)", pytrace=False)
    proc = subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def mount_service_account(cluster: Cluster, ns: str, sa: str, into: Path) -> Path:
    """What the kubelet mounts for a pod of ``sa``: a TokenRequest token, the CA, the namespace."""
    req = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    status = cluster.core.create_namespaced_service_account_token(sa, ns, req).status
    assert status is not None and status.token is not None, (ns, sa)
    token: str = status.token
    into.mkdir(mode=0o755)
    into.chmod(0o755)
    files = {
        "token": token,
        "ca.crt": Path(cluster.cp.pki.path("ca.crt")).read_text(),
        "namespace": ns,
    }
    for name, text in files.items():
        (into / name).write_text(text)
        (into / name).chmod(0o644)  # the kubelet's default mode (420)
    return into


@dataclass
class Container:
    name: str
    health_port: int

    def logs(self) -> str:
        proc = podman("logs", self.name, check=False)
        return proc.stdout + proc.stderr

    def state(self) -> dict[str, Any]:
        (info,) = json.loads(podman("container", "inspect", self.name).stdout)
        return dict(info["State"])

    def running(self) -> bool:
        return bool(self.state()["Running"])

    def get(self, path: str, port: int | None = None) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port or self.health_port, timeout=2)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        except OSError:
            return 0
        finally:
            conn.close()

    def stop(self, timeout: int = 20) -> int:
        """``podman stop``: SIGTERM (the image's stop signal), SIGKILL after ``timeout`` s."""
        # On SIGTERM kumaco releases its Lease (0.14-0.64 s to a takeover measured, chaos_short)
        # and exits; a SIGKILL after 20 s is exit 137, a failure; podman itself gets 30 s more.
        podman("stop", "-t", str(timeout), self.name, timeout=timeout + 30)
        return int(self.state()["ExitCode"])


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))  # kumaco binds all addresses by default
        except OSError:
            return True
    return False
