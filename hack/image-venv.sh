#!/usr/bin/env bash
# The install steps of kumaco's container image: the Dockerfile's builder stage runs this
# script, and hack/zipapp.sh (without --from-image) makes the plugin's venv with it.
# tests/e2e/test_image.py inspects the venv the image ships; tests/unit/deploy/test_packaging.py
# checks that the Dockerfile runs exactly this.
#
#   hack/image-venv.sh VENV [DIST]
#
#   1. stage the sources the wheel is built from (pyproject.toml, README.md, LICENSE,
#      kumaco/) in a scratch directory: nothing else of the tree can leak into the wheel,
#      and the tree gets no build/ or *.egg-info;
#   2. build the wheel with `python -m build --wheel` (PEP 517; the backend, setuptools,
#      comes from [build-system] in an isolated environment) -- `build` itself, pinned,
#      runs from its own scratch venv, so no interpreter is modified;
#   3. create a clean venv at VENV without pip and install the wheel and its
#      dependencies into it from binary wheels only (nothing is compiled; pip runs from
#      outside the venv through --python, so the runtime venv never contains pip);
#   4. drop kubernetes/aio, the asyncio client that kubernetes ships beside the
#      synchronous one (more than the rest of the package; the step prints its size),
#      which kumaco never imports: tests/unit/deploy/test_packaging.py checks that no kumaco
#      module names it, and the e2e tests import all of kumaco in the image and run it.
#      Its files go from the package's RECORD too, so the metadata stays true to the disk;
#   5. smoke-test the installed console script: `kumaco --help`, `kumaco run --help`
#      and `kumaco validate` on the example windows in kustomize/examples/.
#
# VENV must not exist yet; it is used in place (console scripts' shebangs name it), so
# the Dockerfile builds it at its final path, /opt/kumaco. DIST, if given, receives the
# wheel. PYTHON (default: python3) is the interpreter that builds and that the venv uses
# (in the image: /usr/bin/python3.11, the runtime base's interpreter at the same path).
# Needs the package index (PyPI or PIP_INDEX_URL); PIP_CONSTRAINT and PIP_CERT are honoured.
set -euo pipefail

BUILD_VERSION=1.6.1 # pypa/build, the PEP 517 front end

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then
  echo "usage: $0 VENV [DIST]" >&2
  exit 2
fi
venv=$1
dist=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
if [ -e "$venv" ]; then
  echo "image-venv.sh: $venv already exists; refusing to install over it" >&2
  exit 2
fi
case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore

step() { printf '[image-venv.sh] %s\n' "$*" >&2; }

step "staging sources"
mkdir -p "$scratch/src"
cp "$root/pyproject.toml" "$root/README.md" "$root/LICENSE" "$scratch/src/"
(cd "$root" && tar --exclude='__pycache__' --exclude='*.pyc' -cf - kumaco) | tar -C "$scratch/src" -xf -

step "building the wheel (build==$BUILD_VERSION)"
"$python" -m venv "$scratch/build-env"
"$scratch/build-env/bin/python" -m pip install --quiet "build==$BUILD_VERSION"
"$scratch/build-env/bin/python" -m build --quiet --wheel --outdir "$scratch/dist" "$scratch/src" >&2
wheels=("$scratch"/dist/kumaco-*.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
  echo "image-venv.sh: expected exactly one wheel, found: ${wheels[*]}" >&2
  exit 1
fi
wheel=${wheels[0]}
step "built $(basename "$wheel")"

step "installing into a clean venv at $venv"
"$python" -m venv --without-pip "$venv"
"$scratch/build-env/bin/python" -m pip --python "$venv/bin/python" install --quiet \
  --only-binary=:all: --compile "$wheel"

step "dropping kubernetes/aio (unused asyncio client)"
"$venv/bin/python" - <<'PY'
import pathlib, shutil, sys, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
aio = site / "kubernetes" / "aio"
if aio.is_dir():
    size = sum(f.stat().st_size for f in aio.rglob("*") if f.is_file())
    print(f"[image-venv.sh] kubernetes/aio: {size / 1e6:.1f} MB removed", file=sys.stderr)
    shutil.rmtree(aio)
    (record,) = site.glob("kubernetes-*.dist-info/RECORD")
    lines = record.read_text().splitlines(keepends=True)
    record.write_text("".join(l for l in lines if not l.startswith("kubernetes/aio/")))
PY

step "smoke test"
cd /  # run away from the source tree: only the installed package may be imported
"$venv/bin/kumaco" --version
"$venv/bin/kumaco" --help >/dev/null
"$venv/bin/kumaco" run --help >/dev/null
"$venv/bin/kumaco" validate "$root"/kustomize/examples/*.yaml

if [ -n "$dist" ]; then
  mkdir -p "$dist"
  cp "$wheel" "$dist/"
fi
step "done: $venv"
