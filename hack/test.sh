#!/usr/bin/env bash
# The test command (README): sets everything up on a fresh machine and runs the whole suite.
#   1. a virtualenv in .venv with the project and its `test` extra, from a wheelhouse keyed
#      by pyproject.toml (hack/venv.sh; skipped when .ci/run has just made it:
#      KUMACO_SETUP_DONE=1);
#   2. the control-plane binaries (kube-apiserver, etcd, kwok, kured v2's agents), built
#      from pinned Go modules (and the shared archive) if absent;
#   3. the Debian packages of hack/debian-packages.txt (when root and missing); podman and
#      buildah get the project's settings for this kind of machine through CONTAINERS_CONF
#      (hack/containers.conf) for the test processes only: nothing in /etc is rewritten;
#   4. the tiers, timed: the static checks (ruff, ruff format, mypy --strict,
#      import-linter, hadolint, checkov) beside the unit and oracle tier (pytest-xdist,
#      KUMACO_UNIT_WORKERS, default 2), then the e2e tier against the real kube-apiserver
#      (KUMACO_E2E_WORKERS, default 4: each worker starts its own control plane and runs
#      whole modules, the CPU-heavy ones in two lanes; tests/e2e/conftest.py);
#   5. the tier durations and each tier's ten slowest tests are printed at the end.
#      hypothesis uses the profile HYPOTHESIS_PROFILE names (.ci/run: ci; default dev, see
#      tests/conftest.py); the measured figures go to artifacts/figures.json.
# Extra arguments run one pytest with them instead, e.g. `hack/test.sh tests/unit -k schedule`.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
started=$(date +%s)
if [ "${KUMACO_SETUP_DONE:-}" != 1 ]; then
  bash hack/venv.sh  # the wheelhouse under ~/.cache/kumaco/wheels, keyed by pyproject.toml
fi
# shellcheck disable=SC1091
. .venv/bin/activate

assets="$(python hack/controlplane.py assets)"
export KUBEBUILDER_ASSETS="$assets"
echo "control-plane assets: $assets ($("$assets/kube-apiserver" --version), $("$assets/etcd" --version | head -1))"

bash hack/test-deps.sh  # Debian packages of hack/debian-packages.txt (chromium, podman, ...)
# podman's and buildah's settings for the test processes (they read this file instead of
# /etc/containers/containers.conf); a caller's own CONTAINERS_CONF wins.
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/hack/containers.conf}"

mkdir -p artifacts
export KUMACO_E2E_PROOF="$PWD/artifacts/e2e-proof.json"
export KUMACO_FIGURES="$PWD/artifacts/figures.json"  # what the tests measure (tests/support/judges/figures.py)
# the command the figures name: a record (hack/record_figures.py) says which run it is
export KUMACO_FIGURES_COMMAND="${KUMACO_FIGURES_COMMAND:-hack/test.sh${*:+ $*}}"
rm -f "$KUMACO_E2E_PROOF" "$KUMACO_FIGURES" artifacts/junit*.xml artifacts/tiers.txt
echo "setup: $(($(date +%s) - started))s" >> artifacts/tiers.txt
if [ "$#" -gt 0 ]; then
  exec pytest --junitxml=artifacts/junit.xml "$@"
fi

# mypy's incremental cache outlives the clone: keyed by the Python version and
# pyproject.toml (mypy's settings and the dependencies' versions), it is checked by each
# file's hash, so a fresh clone re-checks only what changed.
mypy_key=$({ python -c 'import sys; print(sys.version)'; cat pyproject.toml; } | sha256sum | cut -c1-16)
export MYPY_CACHE_DIR="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}/mypy/$mypy_key"
static_checks() {
  ruff check kumaco tests tools hack &&
    ruff format --check kumaco tests tools hack &&
    mypy &&
    lint-imports &&
    bash hack/static-checks.sh
}

worst=0
note() {  # note TIER START RC: one line of artifacts/tiers.txt; keep the worst exit code
  echo "$1: $(($(date +%s) - $2))s (exit $3)" >> artifacts/tiers.txt
  if [ "$3" -ne 0 ] && { [ "$worst" -eq 0 ] || [ "$worst" -eq 5 ]; }; then worst=$3; fi
}

t0=$(date +%s)
( static_checks > artifacts/static-checks.log 2>&1; echo $? > artifacts/static-checks.rc ) &
static_pid=$!
t1=$(date +%s)
set +e
pytest tests/unit -n "${KUMACO_UNIT_WORKERS:-2}" --junitxml=artifacts/junit-unit.xml \
  --durations=10 --durations-min=1
note "unit tier" "$t1" $?
wait "$static_pid"
static_rc=$(cat artifacts/static-checks.rc 2>/dev/null || echo 1)
cat artifacts/static-checks.log
note "static checks" "$t0" "$static_rc"
t2=$(date +%s)
pytest tests/e2e -n "${KUMACO_E2E_WORKERS:-4}" --dist loadscope \
  --junitxml=artifacts/junit-e2e.xml --durations=10 --durations-min=1
note "e2e tier" "$t2" $?
# The real-cluster tier (tests/e2e/test_cluster*.py, in two lanes of the e2e tier): its
# modules' test time, from the e2e JUnit report.
python - artifacts/junit-e2e.xml >> artifacts/tiers.txt <<'PY' || true
import collections, sys, xml.etree.ElementTree as ET
seconds = collections.Counter()
for case in ET.parse(sys.argv[1]).iter("testcase"):
    module = case.get("classname", "").rsplit(".", 1)[-1]
    if module.startswith("test_cluster"):
        seconds[module] += float(case.get("time") or 0)
parts = ", ".join(f"{m} {s:.0f}s" for m, s in sorted(seconds.items()))
print(f"real-cluster tier (within the e2e tier): {sum(seconds.values()):.0f}s of tests ({parts})")
PY
set -e
echo "total: $(($(date +%s) - started))s" >> artifacts/tiers.txt
echo "== tier durations (artifacts/tiers.txt)"
cat artifacts/tiers.txt
exit "$worst"
