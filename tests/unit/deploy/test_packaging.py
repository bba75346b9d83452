"""The Dockerfile and the image's install steps (hack/image-venv.sh), without an engine.

The image is built and run by the e2e tier: ``tests/e2e/test_image.py`` builds it
(``hack/image.sh build``, whose builder stage runs ``hack/image-venv.sh``) and inspects
the venv the image really ships -- the package's files only, no pip, precompiled
bytecode, no ``kubernetes.aio``. Running the install script a second time here would
only repeat that (about a minute of CI), so this tier checks, in milliseconds:

* the Dockerfile runs exactly that script, copies exactly what it reads (and the
  ``.dockerignore`` allow-list agrees), takes its bases as build arguments whose
  defaults are pinned by digest, and agrees with the manifests in kustomize/ (user id,
  ports, version) and with this interpreter's Python version;
* the script refuses to install over an existing path, and nothing of kumaco names the
  asyncio client the script drops.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

import kumaco

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"
EXAMPLES = sorted((REPO / "kustomize" / "examples").glob("*.yaml"))


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Run away from the source tree, without PYTHONPATH: only installed code is importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMACO_", "PYTHONPATH"))}
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, check=False, cwd="/", env=env
    )


def test_no_kumaco_module_needs_the_asyncio_client() -> None:
    """hack/image-venv.sh drops kubernetes/aio: nothing of kumaco may name it (or aiohttp)."""
    for module in (REPO / "kumaco").rglob("*.py"):
        text = module.read_text()
        assert not re.search(r"\b(kubernetes\.aio|aiohttp)\b|from kubernetes import aio", text), (
            module
        )


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
