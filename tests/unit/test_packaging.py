"""The container image's install steps (hack/image-venv.sh) and the Dockerfile that runs them.

The image itself is built and run by the e2e tier (tests/e2e/test_image.py, with
podman). Here, without any container engine:

* ``hack/image-venv.sh`` -- the very script the Dockerfile's builder stage runs -- is run
  for real: it builds the wheel with ``python -m build``, installs it into a clean venv,
  drops the unused asyncio client of ``kubernetes`` and smoke-tests it; the result is
  then inspected (wheel contents, no pip in the venv, precompiled bytecode, no
  ``kubernetes.aio`` and nothing of kumaco importing it, the installed ``kumaco run``
  starting up from the venv alone);
* the Dockerfile is checked to run exactly that script, to take its bases as build
  arguments whose defaults are pinned by digest, and to agree with the manifests in
  kustomize/ (user id, ports, version) and with this interpreter's Python version.

Needs the package index (the script installs ``build``, setuptools and kumaco's
dependencies), about 30-60 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import kumaco

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
EXAMPLES = sorted((REPO / "kustomize" / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Run hack/image-venv.sh once: a venv and the wheel it was installed from."""
    out = tmp_path_factory.mktemp("image")
    venv, dist = out / "opt-kumaco", out / "dist"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUMACO_")}
    env["PYTHON"] = sys.executable
    proc = subprocess.run(
        ["bash", str(REPO / "hack" / "image-venv.sh"), str(venv), str(dist)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"hack/image-venv.sh failed:\n{proc.stdout}\n{proc.stderr}"
    return {"venv": venv, "dist": dist, "stdout": proc.stdout, "stderr": proc.stderr}


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Run away from the source tree, without PYTHONPATH: only installed code is importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMACO_", "PYTHONPATH"))}
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, check=False, cwd="/", env=env
    )


def test_image_script_builds_a_wheel_of_the_package_only(image: dict[str, object]) -> None:
    dist = image["dist"]
    assert isinstance(dist, Path)
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"kumaco-{kumaco.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"kumaco", f"kumaco-{kumaco.__version__}.dist-info"}, top
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    source = {p.relative_to(REPO).as_posix() for p in (REPO / "kumaco").rglob("*.py")}
    assert {n for n in names if n.startswith("kumaco/")} == source
    entry_points = zipfile.ZipFile(wheel).read(
        f"kumaco-{kumaco.__version__}.dist-info/entry_points.txt"
    )
    assert b"kumaco = kumaco.cmd.cli:main" in entry_points


def test_image_script_installs_a_clean_venv_without_pip(image: dict[str, object]) -> None:
    venv = image["venv"]
    assert isinstance(venv, Path)
    assert (venv / "bin" / "kumaco").exists()
    assert not list(venv.glob("bin/pip*")), "the runtime venv must not contain pip"
    no_pip = _run([str(venv / "bin" / "python"), "-c", "import pip"])
    assert no_pip.returncode != 0
    # The package comes from the venv, not from the source tree.
    where = _run([str(venv / "bin" / "python"), "-c", "import kumaco; print(kumaco.__file__)"])
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    # Bytecode is compiled at install time: at run time the root filesystem is read-only
    # and PYTHONDONTWRITEBYTECODE=1, so nothing is compiled (or written) then.
    (site,) = venv.glob("lib/python3.*/site-packages")
    # Only runtime dependencies: croniter is a test oracle, not part of the image.
    assert not list(site.glob("croniter*")), "croniter is a test dependency only"
    for module in (REPO / "kumaco").rglob("*.py"):
        package = site / module.parent.relative_to(REPO)
        assert list((package / "__pycache__").glob(f"{module.stem}.cpython-*.pyc")), module


def test_image_script_drops_the_unused_asyncio_client(image: dict[str, object]) -> None:
    """kubernetes/aio is gone, from disk and from the RECORD, and nothing of kumaco needs it."""
    venv = image["venv"]
    assert isinstance(venv, Path)
    (site,) = venv.glob("lib/python3.*/site-packages")
    assert (site / "kubernetes" / "client").is_dir()
    assert not (site / "kubernetes" / "aio").exists()
    (record,) = site.glob("kubernetes-*.dist-info/RECORD")
    assert "kubernetes/aio/" not in record.read_text()
    # No kumaco module names it, and importing every one of them (the installed copies)
    # loads neither the asyncio client nor aiohttp.
    for module in (REPO / "kumaco").rglob("*.py"):
        text = module.read_text()
        assert not re.search(r"\b(kubernetes\.aio|aiohttp)\b|from kubernetes import aio", text), (
            module
        )
    modules = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for p in (REPO / "kumaco").rglob("*.py")
        if p.name != "__main__.py"
    )
    probe = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "import kumaco.kube.client, kubernetes.client, kubernetes.config\n"
            "print(sorted(m for m in sys.modules if m.startswith(('kubernetes.aio', 'aiohttp'))))",
        ]
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]", probe.stdout


def test_image_script_smoke_tests_the_installed_commands(image: dict[str, object]) -> None:
    stdout = str(image["stdout"])
    assert f"kumaco {kumaco.__version__}" in stdout
    # `kumaco validate` judged every example window valid.
    windows = [
        d["metadata"]["name"]
        for path in EXAMPLES
        for d in yaml.safe_load_all(path.read_text())
        if d and d.get("kind") == "ConfigMap"
    ]
    assert windows
    for name in windows:
        assert re.search(rf"^valid \S+/{re.escape(name)}$", stdout, re.M), stdout


def test_installed_kumaco_run_starts_from_the_venv_alone(
    image: dict[str, object], tmp_path: Path
) -> None:
    """The entry point of the image: imports the whole controller stack, then stops at
    start-up for want of credentials (exit 1), with a JSON log line saying so."""
    venv = image["venv"]
    assert isinstance(venv, Path)
    proc = _run(
        [
            str(venv / "bin" / "kumaco"),
            "run",
            "--kubeconfig",
            str(tmp_path / "absent.kubeconfig"),
            "--namespaces",
            "x",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ]
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "cannot load Kubernetes credentials" in proc.stdout + proc.stderr
    help_text = _run([str(venv / "bin" / "kumaco"), "run", "--help"]).stdout
    for flag in ("--health-probe-bind-address", "--metrics-bind-address", "--namespaces"):
        assert flag in help_text


def test_image_script_refuses_to_install_over_an_existing_path(tmp_path: Path) -> None:
    proc = _run(["bash", str(REPO / "hack" / "image-venv.sh"), str(tmp_path)])
    assert proc.returncode == 2
    assert "already exists" in proc.stderr


# ------------------------------------------------------------------------------ Dockerfile


def _parse() -> tuple[dict[str, str], list[list[tuple[str, str]]]]:
    """The Dockerfile: its global ARG defaults, and its stages as (INSTRUCTION, arguments)."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    global_args: dict[str, str] = {}
    stages: list[list[tuple[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, args = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            stages.append([])
        if not stages:
            assert instruction == "ARG", "only ARGs before the first FROM"
            name, _, default = args.strip().partition("=")
            global_args[name] = default
            continue
        stages[-1].append((instruction, " ".join(args.split())))
    return global_args, stages


def _stages() -> list[list[tuple[str, str]]]:
    return _parse()[1]


def _deployment() -> dict[str, object]:
    return yaml.safe_load((REPO / "kustomize" / "base" / "deployment.yaml").read_text())


def test_dockerfile_builds_with_the_same_script_ci_runs() -> None:
    builder, runtime = _stages()
    runs = [args for ins, args in builder if ins == "RUN"]
    # python3-venv from apt only where the builder base lacks it, then the install script,
    # with the build CA as a secret mount (never in a layer).
    assert len(runs) == 2, runs
    assert "apt-get install" in runs[0] and "python3-venv" in runs[0]
    assert runs[1].startswith("--mount=type=secret,id=buildca ")
    assert runs[1].endswith('PYTHON="${PYTHON}" bash hack/image-venv.sh /opt/kumaco'), runs[1]
    # Everything the script reads is copied in, and nothing else.
    copied = [src for ins, args in builder if ins == "COPY" for src in args.split()[:-1]]
    assert sorted(copied) == sorted(
        [
            "pyproject.toml",
            "README.md",
            "LICENSE",
            "kumaco/",
            "kustomize/examples/",
            "hack/image-venv.sh",
        ]
    )
    allowed = {
        line.strip()[1:]
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip().startswith("!")
    }
    assert set(copied) == allowed, set(copied) ^ allowed
    # The runtime stage copies the venv only, installs nothing and needs no shell: its one
    # RUN is in exec form and runs kumaco with the runtime's own interpreter.
    assert [args for ins, args in runtime if ins == "COPY"] == [
        "--from=builder /opt/kumaco /opt/kumaco"
    ]
    assert [args for ins, args in runtime if ins == "RUN"] == [
        '["/opt/kumaco/bin/kumaco", "--version"]'
    ]
    assert "SHELL" not in dict(runtime)


def test_dockerfile_bases_are_build_arguments_pinned_by_digest() -> None:
    global_args, stages = _parse()
    assert [args for stage in stages for ins, args in stage if ins == "FROM"] == [
        "${BUILDER_IMAGE} AS builder",
        "${RUNTIME_IMAGE}",
    ]
    digest = re.compile(r"[a-z0-9.-]+(/[\w.-]+)+:[\w.-]+@sha256:[0-9a-f]{64}")
    builder, runtime = global_args["BUILDER_IMAGE"], global_args["RUNTIME_IMAGE"]
    assert digest.fullmatch(builder), builder
    assert digest.fullmatch(runtime), runtime
    # Debian 12 both: the builder's python3-venv makes a venv for the runtime's interpreter.
    assert builder.startswith("docker.io/library/debian:12-slim@")
    assert runtime.startswith("gcr.io/distroless/python3-debian12:nonroot@")
    # CI runs hack/image-venv.sh with this interpreter: it must be the image's Python minor.
    match = re.fullmatch(r"/usr/bin/python(\d)\.(\d+)", global_args["PYTHON"])
    assert match, global_args["PYTHON"]
    assert (int(match[1]), int(match[2])) == sys.version_info[:2]
    # The local bases of hack/image.sh provide the same interpreter.
    image_sh = (REPO / "hack" / "image.sh").read_text()
    assert f"python{match[1]}.{match[2]}-minimal" in image_sh
    assert f'ENTRYPOINT ["{global_args["PYTHON"]}"]' in image_sh


def test_dockerfile_runtime_contract_matches_the_manifests() -> None:
    _, runtime = _stages()
    instructions = dict(runtime)  # last of each kind
    assert instructions["ENTRYPOINT"] == '["kumaco", "run"]'  # exec form
    user, _, group = instructions["USER"].partition(":")
    assert user.isdigit() and int(user) != 0 and group.isdigit()
    env = instructions["ENV"]
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "PATH=/opt/kumaco/bin:" in env
    labels = " ".join(args for ins, args in runtime if ins == "LABEL")
    for key in ("title", "description", "version", "revision", "created", "licenses", "source"):
        assert f"org.opencontainers.image.{key}=" in labels, key
    assert re.search(rf"ARG VERSION={re.escape(kumaco.__version__)}\b", DOCKERFILE.read_text())

    pod = _deployment()["spec"]["template"]["spec"]  # type: ignore[index]
    (container,) = pod["containers"]
    assert container["securityContext"]["runAsUser"] == int(user)
    assert container["securityContext"]["runAsGroup"] == int(group)
    exposed = {int(p) for p in instructions["EXPOSE"].split()}
    assert exposed == {p["containerPort"] for p in container["ports"]}
    kustomization = yaml.safe_load((REPO / "kustomize" / "base" / "kustomization.yaml").read_text())
    (image,) = kustomization["images"]
    assert image["newTag"] == kumaco.__version__
