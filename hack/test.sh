#!/usr/bin/env bash
# The test command (README): sets everything up on a fresh machine and runs the whole suite.
#   1. a virtualenv in .venv with the project and its `test` extra;
#   2. the control-plane binaries (kube-apiserver, etcd, and kwok for the benchmark tests), built
#      from pinned Go modules if absent;
#   3. the Debian packages of hack/debian-packages.txt (when root and missing), and in CI
#      podman's configuration (hack/containers-setup.sh);
#   4. static checks: ruff, ruff format, mypy --strict, import-linter, hadolint and checkov;
#   5. pytest: unit, oracle and e2e tiers (the e2e tier against the real kube-apiserver);
#      hypothesis uses the profile HYPOTHESIS_PROFILE names (.ci/run: ci; default dev, see
#      tests/conftest.py); the measured figures go to artifacts/figures.json.
# Extra arguments go to pytest, e.g. `hack/test.sh tests/unit -k schedule`.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
# shellcheck disable=SC1091
. .venv/bin/activate

assets="$(python hack/controlplane.py assets)"
export KUBEBUILDER_ASSETS="$assets"
echo "control-plane assets: $assets ($("$assets/kube-apiserver" --version), $("$assets/etcd" --version | head -1))"

bash hack/test-deps.sh  # Debian packages of hack/debian-packages.txt (chromium, ...)
bash hack/containers-setup.sh  # podman's settings for this kind of machine (in CI, as root)

ruff check kumaco tests hack
ruff format --check kumaco tests hack
mypy
lint-imports
bash hack/static-checks.sh

mkdir -p artifacts
export KUMACO_E2E_PROOF="$PWD/artifacts/e2e-proof.json"
export KUMACO_FIGURES="$PWD/artifacts/figures.json"  # what the tests measured (tests/support/figures.py)
rm -f "$KUMACO_E2E_PROOF" "$KUMACO_FIGURES"
exec pytest --junitxml=artifacts/junit.xml "$@"
