"""kured v2's agents as pods (tests/support/env/kuredpods.py), their pure parts: the image is an
OCI archive whose digests chain, with the busybox layer the nodes already have and the
agents in a layer of their own; the manifests bind the prototype's own ClusterRoles and put
the daemon in its node's PID namespace and the detector on its node's sentinel; the reboot
log's overlap counts nodes rebooting at once."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.env import clusterimage
from tests.support.env.kured import RebootLog
from tests.support.env.kuredpods import (
    PROGRAMS,
    SENTINEL_DIR,
    agent_manifests,
    ensure_kured_image,
    max_rebooting,
)

RULES = {
    "reboot-daemon": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}],
    "reboot-required-detector": [
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}
    ],
    "reboot-inhibitors": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
}


def fake_build(tmp_path: Path) -> Path:
    """A build's layout: ``bin/`` with the programs, the manifests and build-info beside it."""
    bin_dir = tmp_path / "kured" / "bin"
    bin_dir.mkdir(parents=True)
    for program in PROGRAMS:
        (bin_dir / program).write_bytes(f"#!{program}\n".encode() * 100)
    for sa, rules in RULES.items():
        doc = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "rules": rules}
        (bin_dir.parent / f"{sa}.yaml").write_text(json.dumps(doc))
    (bin_dir.parent / "build-info.json").write_text('{"sha256": "x"}')
    return bin_dir


@pytest.mark.skipif(not clusterimage.BUSYBOX.exists(), reason="busybox-static is not installed")
def test_the_agents_image_is_an_oci_archive_whose_digests_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUMACO_CACHE_DIR", str(tmp_path / "cache"))
    bin_dir = fake_build(tmp_path)
    ref, archive = ensure_kured_image(bin_dir)
    assert ensure_kured_image(bin_dir) == (ref, archive)  # cached by its inputs
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def blob(digest: str) -> bytes:
        data = files[f"blobs/sha256/{digest.removeprefix('sha256:')}"]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
        return data

    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == ref
    manifest = json.loads(blob(entry["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    base, agents = (layer["digest"] for layer in manifest["layers"])
    assert config["rootfs"]["diff_ids"] == [base, agents]
    # The nodes' base layer, byte for byte: containerd stores it once.
    assert blob(base) == clusterimage._layer(clusterimage.BUSYBOX.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(blob(agents))) as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert got == {f"usr/local/bin/{p}": (bin_dir / p).read_bytes() for p in PROGRAMS}
    # Another build is another image.
    (bin_dir.parent / "build-info.json").write_text('{"sha256": "y"}')
    assert ensure_kured_image(bin_dir)[0] != ref


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_the_agents_manifests(tmp_path: Path) -> None:
    docs = agent_manifests(fake_build(tmp_path), "img:1", "kured", daemon_period=2.5)
    assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kured"}}
    roles = by_kind(docs, "ClusterRole")
    assert {n: r["rules"] for n, r in roles.items()} == {
        f"kured:{sa}": r for sa, r in RULES.items()
    }
    for name, binding in by_kind(docs, "ClusterRoleBinding").items():
        assert binding["roleRef"]["name"] == name
        (subject,) = binding["subjects"]
        assert f"kured:{subject['name']}" == name and subject["namespace"] == "kured"
    ds = by_kind(docs, "DaemonSet")
    assert sorted(ds) == ["reboot-daemon", "reboot-required-detector"]
    daemon = ds["reboot-daemon"]["spec"]["template"]["spec"]
    assert daemon["hostPID"] is True  # its signal reaches the node's PID 1
    (c,) = daemon["containers"]
    assert "--reboot-method=signal" in c["args"] and "--period=2500ms" in c["args"]
    assert c["image"] == "img:1" and c["imagePullPolicy"] == "Never"
    assert c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    detector = ds["reboot-required-detector"]["spec"]["template"]["spec"]
    assert "hostPID" not in detector
    assert detector["volumes"][0]["hostPath"]["path"] == SENTINEL_DIR
    (c,) = detector["containers"]
    assert c["volumeMounts"][0]["mountPath"] == "/sentinel"
    assert "--reboot-sentinel-file=/sentinel/reboot-required" in c["args"]
    (deploy,) = by_kind(docs, "Deployment").values()
    assert deploy["spec"]["replicas"] == 1
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "reboot-inhibitors"


def ev(event: str, node: str, t: float, n: int = 1) -> dict[str, Any]:
    return {"event": event, "node": node, "time": t, "n": n}


def test_max_rebooting_counts_overlapping_reboots_only() -> None:
    one_after_other = [
        ev("reboot", "a", 1),
        ev("up", "a", 2),
        ev("reboot", "b", 3),
        ev("up", "b", 4),
    ]
    assert max_rebooting(RebootLog(one_after_other)) == 1
    touching = [ev("reboot", "a", 1), ev("up", "a", 2), ev("reboot", "b", 2), ev("up", "b", 3)]
    assert max_rebooting(RebootLog(touching)) == 1
    overlapping = [ev("reboot", "a", 1), ev("reboot", "b", 1.5), ev("up", "a", 2), ev("up", "b", 3)]
    assert max_rebooting(RebootLog(overlapping)) == 2
    never_back = [ev("reboot", "a", 1), ev("reboot", "b", 9), ev("up", "b", 10)]
    assert max_rebooting(RebootLog(never_back)) == 2
    # The second reboot of a node ends with the up of the same n, not the first one.
    twice = [
        ev("reboot", "a", 1),
        ev("up", "a", 2),
        ev("reboot", "a", 5, 2),
        ev("reboot", "b", 6),
        ev("up", "b", 7),
        ev("up", "a", 8, 2),
    ]
    assert max_rebooting(RebootLog(twice)) == 2
    assert max_rebooting(RebootLog([])) == 0
