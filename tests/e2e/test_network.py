"""kumaco and ``kubectl kumaco`` behind a real forward proxy (issue: the network).

A real tinyproxy (Debian's package) runs on loopback in front of the test API
server. kumaco decides about proxies as client-go does, and Go never proxies
``localhost`` or a loopback IP literal; so the kubeconfig names the API server
``127.1`` -- a *name* for Go and for kumaco (not an IP literal: Go's ParseIP wants
four parts), which the proxy's resolver (``inet_aton``) maps to 127.0.0.1 -- with
``tls-server-name: kubernetes`` (a name in the serving certificate). That is what a
cluster's API server name is to a client behind a corporate proxy.

* ``HTTPS_PROXY`` set, ``NO_PROXY`` not covering the server: every connection is a
  CONNECT through tinyproxy (its log shows them), and kumaco does its whole job;
  so does ``kubectl kumaco status``;
* ``NO_PROXY`` covering the server (amid the usual cluster entries): the proxy's log
  stays empty, and both still work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.env.controlplane import ControlPlane
from tests.support.env.harness import (
    RUN_LABEL,
    UM,
    Api,
    Kumaco,
    condition_status,
    log_message,
    unique,
    wait_for,
)
from tests.support.env.supervisor import scope_flags
from tests.support.env.tinyproxy import Tinyproxy

ALWAYS = {"startTime": "* * * * *", "duration": "2m", "nodeSelector": ""}
SERVER_NAME = "127.1"
# A corporate NO_PROXY that does not cover the API server's name ...
NO_PROXY = "10.96.0.0/12,.svc,.cluster.local,localhost"
# ... and one that does.
NO_PROXY_COVERING = NO_PROXY + f",{SERVER_NAME}"


@pytest.fixture
def proxy(tmp_path: Path, control_plane: ControlPlane) -> Iterator[Tinyproxy]:
    with Tinyproxy(tmp_path, [control_plane.port]) as p:
        yield p


@pytest.fixture
def named_kubeconfig(control_plane: ControlPlane, tmp_path: Path) -> Path:
    """An admin kubeconfig naming the API server ``127.1`` (verified as ``kubernetes``)."""
    config = control_plane.kubeconfig(server=f"https://{SERVER_NAME}:{control_plane.port}")
    config["clusters"][0]["cluster"]["tls-server-name"] = "kubernetes"
    path = tmp_path / "named.kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def _env(proxy: Tinyproxy, no_proxy: str) -> dict[str, str]:
    return {"HTTPS_PROXY": proxy.url, "NO_PROXY": no_proxy, "https_proxy": "", "no_proxy": ""}


def _kumaco_does_its_job(
    raw: Api, tmp_path: Path, kubeconfig: Path, env: dict[str, str]
) -> tuple[Kumaco, str]:
    run, ns = unique("net"), raw.namespace(unique("net"))
    for i in range(2):
        raw.node(f"{run}-{i}", {RUN_LABEL: run})
    raw.window(ns, "always", ALWAYS)
    k = Kumaco(
        kubeconfig,
        scope_flags(run, ns),
        tmp_path / f"{run}.log",
        env,
        name=run,
    ).start()
    try:
        # Start-up and the first pass through the proxy: 1-4 s measured without it
        # (test_catch_up.py); 30 s each for a loaded machine.
        wait_for(k.ready, 30, what="kumaco ready")
        wait_for(
            lambda: all(
                condition_status(raw.conditions(f"{run}-{i}"), UM) == "True" for i in range(2)
            ),
            30,
            what="both nodes under maintenance",
        )
        wait_for(lambda: raw.events(ns), 20, what="kumaco's Events")  # from the same pass
        assert k.stop() == 0
    finally:
        k.stop()
    return k, ns


def _status(kubeconfig: Path, ns: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``kubectl kumaco status`` (kubectl finds the plugin next to this interpreter)."""
    bin_dir = str(Path(sys.executable).parent)
    clean = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    clean["PATH"] = f"{bin_dir}{os.pathsep}{clean.get('PATH', '')}"
    args = ["status", "--kubeconfig", str(kubeconfig), "-n", ns, "-o", "json"]
    return subprocess.run(
        ["kubectl", "kumaco", *args],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,  # one read of the cluster (not timed): 120 s only catches a hang
        check=False,
    )


def _api_server_line(k: Kumaco) -> dict[str, object]:
    (line,) = [r for r in k.logs() if log_message(r) == "API server"]
    return line


@pytest.mark.parametrize(
    ("no_proxy", "through"),
    [(NO_PROXY, True), (NO_PROXY_COVERING, False)],
    ids=["https-proxy", "no-proxy-covers-the-server"],
)
def test_kumaco_and_the_status_plugin_use_the_proxy_unless_no_proxy_covers_the_server(
    control_plane: ControlPlane,
    proxy: Tinyproxy,
    named_kubeconfig: Path,
    tmp_path: Path,
    no_proxy: str,
    through: bool,
) -> None:
    env = _env(proxy, no_proxy)
    k, ns = _kumaco_does_its_job(Api(control_plane), tmp_path, named_kubeconfig, env)
    line = _api_server_line(k)
    expected = (proxy.url, "environment") if through else ("", "no_proxy")
    assert (line["proxy"], line["proxySource"]) == expected
    by_kumaco = proxy.connects()
    status = _status(named_kubeconfig, ns, env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["windows"][0]["open"] is True
    by_status = proxy.connects()[len(by_kumaco) :]
    target = f"{SERVER_NAME}:{control_plane.port}"
    if through:
        # The requests, the Lease's own connection and the watches: all tunnelled.
        assert len(by_kumaco) >= 3 and set(by_kumaco) == {target}, by_kumaco
        assert by_status == [target]
        print(f"through tinyproxy: kumaco {len(by_kumaco)} CONNECTs, kubectl kumaco status 1")
    else:
        assert by_kumaco == by_status == []
        assert proxy.clients() == 0, "a client connected to the proxy"


def test_the_proxy_is_reachable_and_refuses_what_it_must(
    proxy: Tinyproxy, control_plane: ControlPlane
) -> None:
    """The proxy itself: loopback only, CONNECT only to the API server's port."""
    import socket

    # tinyproxy answers a CONNECT on loopback at once: 5 s only catches a hang.
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(b"CONNECT 127.0.0.1:1 HTTP/1.0\r\n\r\n")
        assert s.recv(100).split(b" ")[1] == b"403"
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        s.sendall(f"CONNECT 127.0.0.1:{control_plane.port} HTTP/1.0\r\n\r\n".encode())
        assert s.recv(100).split(b" ")[1] == b"200"
