"""The real-cluster fixture's pure parts: the leftover check finds what is left, the node image
is a well-formed OCI archive whose digests chain, the assets' release is read as recorded."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tests.support.env import clusterimage
from tests.support.env.cluster import Trace, cluster_pids, leftovers, read_tunables, reap
from tests.support.env.clusterassets import release_of


def test_leftovers_are_none_for_a_cluster_that_left_nothing(tmp_path: Path) -> None:
    trace = Trace(str(tmp_path / "gone"), ["kumaco-cluster-none-x"], [], read_tunables())
    assert leftovers(trace) == []


def test_leftovers_name_a_directory_a_process_and_a_changed_tunable(tmp_path: Path) -> None:
    work = tmp_path / "kumaco-cluster-left"
    work.mkdir()
    tunables = read_tunables()
    tunables["kernel/panic"] = tunables["kernel/panic"] + "0"  # "was" something else
    proc = subprocess.Popen(["sh", "-c", "sleep 60; :", str(work)])  # sh names work
    try:
        # Popen returns once forked: until the child has exec'd sh, /proc shows this
        # interpreter's command line (a CI run read it then). Wait for the exec, not a time.
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        for _ in range(10_000):
            if str(work).encode() in cmdline.read_bytes():
                break
            time.sleep(0.001)
        found = leftovers(Trace(str(work), [], [], tunables))
    finally:
        proc.kill()
        proc.wait()
    assert f"directory {work}" in found
    assert any(f.startswith(f"process {proc.pid} names {work}") for f in found), found
    assert any(f.startswith("kernel tunable kernel/panic is") for f in found), found


def test_leftovers_name_a_process_in_a_traced_namespace(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        inode = Path(f"/proc/{proc.pid}/ns/net").stat().st_ino  # the machine's: shared
        found = leftovers(Trace(str(tmp_path / "gone"), [], [("net", inode)], read_tunables()))
    finally:
        proc.kill()
        proc.wait()
    assert any(f.startswith(f"process {proc.pid} in the cluster's net ns") for f in found), found


def test_leftovers_skip_a_process_that_started_after_the_stop_in_a_reused_namespace(
    tmp_path: Path,
) -> None:
    """The kernel reuses a freed namespace's inode: a later process there is not ours."""
    before = time.time() - 5  # a stop that came before the process started
    proc = subprocess.Popen(["sleep", "60"])
    try:
        inode = Path(f"/proc/{proc.pid}/ns/net").stat().st_ino
        tunables = read_tunables()
        gone = str(tmp_path / "gone")
        later = leftovers(Trace(gone, [], [("net", inode)], tunables, stopping_since=before))
        after = time.time() + 5  # a stop that came after it started: it is a leftover
        kept = leftovers(Trace(gone, [], [("net", inode)], tunables, stopping_since=after))
    finally:
        proc.kill()
        proc.wait()
    assert not any(f.startswith(f"process {proc.pid} ") for f in later), later
    assert any(f.startswith(f"process {proc.pid} in the cluster's net ns") for f in kept), kept


def test_reap_never_kills_a_process_that_started_after_the_stop_began(tmp_path: Path) -> None:
    """A kured agent of another test, in a mount namespace with a freed inode of the cluster,
    was SIGKILLed by hack/cluster.sh down's reap: the inode alone is no proof. (A network
    namespace of the test's own, holding only its process: nothing else can be reaped.)"""
    before = time.time() - 5  # the stop began before the process started
    proc = subprocess.Popen(["unshare", "--net", "--", "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"sleep"):
            assert time.monotonic() < deadline, "unshare did not exec sleep"
            time.sleep(0.01)
        inode = Path(f"/proc/{proc.pid}/ns/net").stat().st_ino
        assert inode != Path("/proc/self/ns/net").stat().st_ino
        gone = str(tmp_path / "gone")
        running = Trace(gone, [], [("net", inode)], read_tunables())
        assert cluster_pids(running) == [proc.pid]  # while it runs, the namespace counts
        stopping = Trace(gone, [], [("net", inode)], read_tunables(), stopping_since=before)
        assert cluster_pids(stopping) == []
        assert reap(stopping, timeout=1) == []
        assert proc.poll() is None, "reap killed a process that is not the cluster's"
    finally:
        proc.kill()
        proc.wait()


def test_trace_round_trips_through_json() -> None:
    trace = Trace("/tmp/kumaco-cluster-x", ["a"], [("pid", 4026531836)], {"kernel/panic": "1"})
    assert Trace.from_json(json.loads(json.dumps(trace.to_json()))) == trace
    trace.stopping_since = 1764806400.25
    assert Trace.from_json(json.loads(json.dumps(trace.to_json()))) == trace


@pytest.mark.skipif(not clusterimage.BUSYBOX.exists(), reason="busybox-static is not installed")
def test_the_node_image_is_an_oci_archive_whose_digests_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUMACO_CACHE_DIR", str(tmp_path))
    ref, archive = clusterimage.ensure_node_image()
    assert clusterimage.ensure_node_image() == (ref, archive)  # cached by its inputs
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def blob(digest: str) -> bytes:
        data = files[f"blobs/sha256/{digest.removeprefix('sha256:')}"]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
        return data

    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == ref
    manifest = json.loads(blob(entry["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    (layer_ref,) = manifest["layers"]
    layer = blob(layer_ref["digest"])
    assert config["rootfs"]["diff_ids"] == [layer_ref["digest"]]
    assert config["config"]["Entrypoint"] == clusterimage.ENTRYPOINT
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        names = set(tar.getnames())
    assert {"bin/busybox", "bin/sh", "bin/sleep", "bin/httpd"} <= names


def test_the_release_of_the_control_plane_assets(tmp_path: Path) -> None:
    d = tmp_path / "kubernetes-v1.36.3-etcd-v3.6.16"
    d.mkdir()
    assert release_of(d) == "v1.36.3"
    (d / "build-info.json").write_text(json.dumps({"kubernetes": "v1.37.2"}))
    assert release_of(d) == "v1.37.2"


def test_reap_kills_the_processes_and_removes_the_directory_of_a_dead_owner_s_cluster(
    tmp_path: Path,
) -> None:
    work = tmp_path / "kumaco-cluster-orphan"
    work.mkdir()
    proc = subprocess.Popen(["sh", "-c", "sleep 60; :", str(work)])
    trace = Trace(str(work), [], [], read_tunables())
    assert leftovers(trace)
    assert reap(trace, timeout=10) == []
    assert proc.wait(5) == -9  # SIGKILL
    assert not work.exists()
