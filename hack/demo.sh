#!/usr/bin/env bash
# The demo command: sets everything up on a fresh machine, then runs hack/demo.py.
#   1. a virtualenv in .venv with the project and its `test` extra (as hack/test.sh);
#   2. the control-plane binaries (kube-apiserver, etcd) and nothing else the tests use
#      (no kwok, helm, kured agents or kubelet), built from pinned Go modules if absent
#      (a cold build takes minutes; later runs find them in ~/.cache/kumaco);
#   3. hack/demo.py with every argument given here (see --help), with .venv/bin on PATH
#      so that `kubectl kumaco ...` works from the same shell environment.
# `--help` skips the set-up and only prints the options.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
PY="${PYTHON:-python3}"

for arg in "$@"; do
  if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
    echo "usage: hack/demo.sh [OPTIONS]   (installs .venv and the control-plane binaries, then runs hack/demo.py)"
    echo
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
    exec "$PY" hack/demo.py --help
  fi
done

say() { printf '[demo.sh] %s\n' "$*" >&2; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
say "installing kumaco and its test extra into .venv"
pip_log="$(mktemp)"
# pip's output (and the build backend's warnings) only when something fails
if ! { .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip &&
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"; } >"$pip_log" 2>&1; then
  cat "$pip_log" >&2
  rm -f "$pip_log"
  say "pip install failed"
  exit 1
fi
rm -f "$pip_log"
# shellcheck disable=SC1091
. .venv/bin/activate

say "ensuring kube-apiserver and etcd"
assets="$(python hack/controlplane.py assets --only-control-plane)"
export KUBEBUILDER_ASSETS="$assets"
say "control-plane assets: $assets"

exec python hack/demo.py "$@"
