"""The kubectl plugin as one file (``hack/zipapp.sh``), run as people without Python set-ups run it.

The zipapp is made from the container image's venv (the image tests build it first).

The zipapp is run from an empty directory with no virtualenv and a bare environment
(``env -i``: a temporary HOME and SHIV_ROOT, PATH of the system only), as
``kubectl kumaco status`` -- kubectl finds ``kubectl-kumaco`` on PATH and execs it, its
``#!/usr/bin/env python3`` picks the system's Python (Debian 12: 3.11) -- and then with
every other CPython >= 3.11 found on this machine, against the test control plane with a
window ConfigMap and a node under maintenance. The krew archive and the manifest rendered
from ``plugins/kumaco.yaml`` are checked against each other, and krew itself (built from
the Go module proxy, :mod:`tests.support.env.krew`) installs the plugin from them -- and
refuses a manifest whose sha256 does not match the archive.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
import yaml

import kumaco
from tests.support.env.harness import UM, Api, unique
from tests.support.env.image import build_image, run_hack
from tests.support.env.krew import ensure_krew

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3.11")


def interpreters() -> list[Path]:
    """The system's python3.11 and every other CPython 3.11-3.14 on this machine (pyenv too)."""
    found = {SYSTEM_PYTHON}
    for pattern in ("/usr/bin/python3.1[1-4]", "/usr/local/bin/python3.1[1-4]"):
        found |= set(Path("/").glob(pattern.lstrip("/")))
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")  # pyenv's own rule
    found |= set((pyenv / "versions").glob("3.1[1-4].*/bin/python3"))
    return sorted(found)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hack/zipapp.sh --from-image IMAGE OUT``: the zipapp, its krew archive and manifest.

    Made from the venv of the container image (``hack/image.sh build``, cached: the
    image tests built it), so the plugin ships the very bits the cluster runs.
    """
    out = tmp_path_factory.mktemp("plugin")
    t0 = time.monotonic()
    image, _, _ = build_image()
    proc = run_hack("zipapp.sh", "--from-image", image, str(out))
    assert Path(proc.stdout.strip()) == out / "kubectl-kumaco"
    size = (out / "kubectl-kumaco").stat().st_size
    print(f"zipapp: hack/zipapp.sh {time.monotonic() - t0:.1f}s, {size / 1e6:.1f} MB")
    return out


def bare_run(
    cmd: list[str], tmp: Path, path: str = "/usr/bin:/bin", shiv_root: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``cmd`` in an empty directory with a bare environment: nothing of this venv leaks in."""
    work, home = tmp / "cwd", tmp / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    shiv = shiv_root or tmp / "shiv"
    env = {"HOME": str(home), "SHIV_ROOT": str(shiv), "PATH": path, "LANG": "C.UTF-8"}
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=180,  # a first run extracts and compiles the zipapp (not recorded); for a hang
        check=False,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def scene(raw: Api) -> tuple[str, str]:
    """A window ConfigMap and a node kumaco has put under maintenance."""
    ns = raw.namespace(unique("kplug"))
    raw.window(ns, "tonight", {"startTime": "0 2 * * *", "duration": "3h", "nodeSelector": ""})
    node = unique("kplug")
    raw.node(node, {"kumaco.test/plugin": node})
    raw.set_condition(node, UM, "True", reason="WindowOpen")
    return ns, node


def status_json(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return dict(json.loads(proc.stdout))


def test_the_zipapp_runs_as_a_kubectl_plugin_with_the_system_python(
    plugin: Path, scene: tuple[str, str], kubeconfig_path: Path, tmp_path: Path
) -> None:
    assert SYSTEM_PYTHON.exists(), "Debian's python3.11 (the zipapp's shebang finds python3)"
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is required"
    ns, node = scene
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(plugin / "kubectl-kumaco", bin_dir / "kubectl-kumaco")
    shutil.copy2(kubectl, bin_dir / "kubectl")
    path = f"{bin_dir}:/usr/bin:/bin"
    listed = bare_run([str(bin_dir / "kubectl"), "plugin", "list"], tmp_path, path)
    assert str(bin_dir / "kubectl-kumaco") in listed.stdout, listed.stdout + listed.stderr

    def kubectl_kumaco(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(bin_dir / "kubectl"), "kumaco", "--kubeconfig", str(kubeconfig_path)]
        return bare_run([*cmd, "-n", ns, "status", *args], tmp_path, path)

    t0 = time.monotonic()
    first = kubectl_kumaco("-o", "json", "--node-selector", f"kumaco.test/plugin={node}")
    took = time.monotonic() - t0
    text = json.dumps(status_json(first))
    assert f"{ns}" in text and "tonight" in text and node in text, text
    # It really ran on the system's interpreter, extracted under SHIV_ROOT, not HOME.
    assert list((tmp_path / "shiv").glob("kubectl-kumaco_*")), "extracted under SHIV_ROOT"
    assert not list((tmp_path / "home").iterdir()), "nothing written to HOME"
    version = bare_run(["/usr/bin/env", "python3", "--version"], tmp_path, path)
    assert version.stdout.startswith("Python 3.11"), version.stdout
    t0 = time.monotonic()
    table = kubectl_kumaco()
    again = time.monotonic() - t0
    assert table.returncode == 0, table.stderr
    assert re.search(rf"^{re.escape(ns)}/tonight\s+valid\b", table.stdout, re.M), table.stdout
    print(f"zipapp: kubectl kumaco status {took:.2f}s (first run, extracts), then {again:.2f}s")


@pytest.fixture(scope="module")
def shared_shiv_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One extraction for the interpreters' runs (each compiles its own bytecode there)."""
    return tmp_path_factory.mktemp("shiv")


@pytest.mark.parametrize("python", interpreters(), ids=str)
def test_the_zipapp_runs_status_on_every_python_from_3_11(
    plugin: Path,
    scene: tuple[str, str],
    kubeconfig_path: Path,
    tmp_path: Path,
    python: Path,
    shared_shiv_root: Path,
) -> None:
    ns, node = scene
    proc = bare_run(
        [
            str(python),
            str(plugin / "kubectl-kumaco"),
            "--kubeconfig",
            str(kubeconfig_path),
            "-n",
            ns,
            "status",
            "-o",
            "json",
        ],
        tmp_path,
        shiv_root=shared_shiv_root,
    )
    text = json.dumps(status_json(proc))
    assert "tonight" in text and node in text, text
    minor = bare_run([str(python), "-c", "import sys; print(sys.version)"], tmp_path).stdout
    print(f"zipapp: status on {python} ({minor.split()[0]}): ok")


@pytest.mark.artifact("the zipapp and its krew archive")
def test_the_krew_archive_and_manifest_match(plugin: Path) -> None:
    manifest = yaml.safe_load((plugin / "kumaco.yaml").read_text())
    template_text = (REPO / "plugins" / "kumaco.yaml").read_text()
    # The template's addURIAndSha line becomes the uri and sha256 keys; the rest is as is.
    template = yaml.safe_load(
        re.sub(r"{{ *addURIAndSha [^\n]*}}", "uri: x", template_text).replace("{{ .TagName }}", "x")
    )
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "kumaco"
    assert manifest["spec"]["version"] == f"v{kumaco.__version__}"
    for key in ("shortDescription", "description", "caveats", "homepage"):
        assert manifest["spec"][key] == template["spec"][key], key
    (platform,) = manifest["spec"]["platforms"]
    assert platform["selector"] == {"matchLabels": {"os": "linux", "arch": "amd64"}}
    archive = plugin / f"kubectl-kumaco_v{kumaco.__version__}_linux_amd64.tar.gz"
    assert platform["uri"].endswith("/" + archive.name)
    assert platform["uri"].startswith("https://github.com/kubereboot/kumaco/releases/download/")
    assert platform["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert set(members) == {"kubectl-kumaco", "LICENSE"}
        assert members["kubectl-kumaco"].mode & 0o111 == 0o111
        extracted = tar.extractfile("kubectl-kumaco")
        assert extracted is not None
        assert extracted.read() == (plugin / "kubectl-kumaco").read_bytes()
    assert platform["bin"] == "kubectl-kumaco"
    assert {f["from"] for f in platform["files"]} == set(members)
    # A zipapp: a shebang line, then a zip archive with shiv's bootstrap and kumaco.
    data = (plugin / "kubectl-kumaco").read_bytes()
    assert data.startswith(b"#!/usr/bin/env python3\n")

    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "environment.json" in names and "site-packages/kumaco/cmd/kubectl.py" in names
    assert sys.version_info >= (3, 11)


def test_krew_installs_the_plugin_from_its_manifest_and_archive(
    plugin: Path, scene: tuple[str, str], kubeconfig_path: Path, tmp_path: Path
) -> None:
    """krew itself (built from the Go module proxy) accepts the manifest, checks the sha256."""
    try:
        krew = ensure_krew()
    except RuntimeError as exc:
        pytest.fail(f"krew is unavailable: {exc}", pytrace=False)
    ns, node = scene
    archive = plugin / f"kubectl-kumaco_v{kumaco.__version__}_linux_amd64.tar.gz"
    root = tmp_path / "krew"

    def install(manifest: Path) -> subprocess.CompletedProcess[str]:
        return bare_run(
            [
                "env",
                f"KREW_ROOT={root}",
                str(krew),
                "install",
                f"--manifest={manifest}",
                f"--archive={archive}",
            ],
            tmp_path,
        )

    tampered = tmp_path / "tampered.yaml"
    text = (plugin / "kumaco.yaml").read_text()
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    tampered.write_text(text.replace(sha, "f" * 64))
    refused = install(tampered)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "checksum" in (refused.stdout + refused.stderr).lower(), refused.stderr
    assert not (root / "bin" / "kubectl-kumaco").exists()

    installed = install(plugin / "kumaco.yaml")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (root / "bin" / "kubectl-kumaco").resolve().read_bytes() == (
        plugin / "kubectl-kumaco"
    ).read_bytes()
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is required"
    path = f"{root / 'bin'}:{Path(kubectl).parent}:/usr/bin:/bin"
    proc = bare_run(
        [kubectl, "kumaco", "--kubeconfig", str(kubeconfig_path), "-n", ns, "status", "-o", "json"],
        tmp_path,
        path,
    )
    text = json.dumps(status_json(proc))
    assert "tonight" in text and node in text, text
