#!/usr/bin/env bash
# The install steps of kumaco's container image, in one script that both the Dockerfile
# (builder stage) and CI (tests/unit/test_packaging.py) run, so that the image's steps are
# proven on machines without a Docker engine.
#
#   hack/image.sh VENV [DIST]
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
#   4. smoke-test the installed console script: `kumaco --help`, `kumaco run --help`
#      and `kumaco validate` on the example windows in kustomize/examples/.
#
# VENV must not exist yet; it is used in place (console scripts' shebangs name it), so
# the Dockerfile builds it at its final path, /opt/kumaco. DIST, if given, receives the
# wheel. PYTHON (default: python3) is the interpreter that builds and that the venv uses.
# Needs the package index (PyPI or PIP_INDEX_URL); PIP_CONSTRAINT is honoured.
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
  echo "image.sh: $venv already exists; refusing to install over it" >&2
  exit 2
fi
case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore

step() { printf '[image.sh] %s\n' "$*" >&2; }

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
  echo "image.sh: expected exactly one wheel, found: ${wheels[*]}" >&2
  exit 1
fi
wheel=${wheels[0]}
step "built $(basename "$wheel")"

step "installing into a clean venv at $venv"
"$python" -m venv --without-pip "$venv"
"$scratch/build-env/bin/python" -m pip --python "$venv/bin/python" install --quiet \
  --only-binary=:all: --compile "$wheel"

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
