#!/usr/bin/env bash
# The project's virtualenv, .venv, with the project (editable) and its `test` extra, for
# .ci/run and hack/test.sh. Every wheel comes from a wheelhouse under
# ${KUMACO_CACHE_DIR:-~/.cache/kumaco}/wheels/KEY, KEY a hash of pyproject.toml and the
# Python version: the first run on a machine downloads (and where needed builds) the
# wheels with `pip wheel`; every later run with the same inputs installs offline from it
# (no index, no resolution). A changed pyproject.toml is a new key, so a new wheelhouse;
# old ones stay until removed (rm -rf the wheels folder: nothing else depends on them).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
cache="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}"
key=$({ "$PY" -c 'import sys; print(sys.version)'; cat pyproject.toml; } | sha256sum | cut -c1-16)
wheels="$cache/wheels/$key"
quiet=(--quiet --disable-pip-version-check)

[ -x .venv/bin/python ] || "$PY" -m venv .venv
if [ ! -f "$wheels/.complete" ]; then
  echo "[venv] building the wheelhouse $wheels (first run with this pyproject.toml)"
  mkdir -p "$cache/wheels"
  tmp=$(mktemp -d "$wheels.XXXXXX")
  .venv/bin/python -m pip wheel "${quiet[@]}" -w "$tmp" pip setuptools wheel ".[test]"
  rm -f "$tmp"/kumaco-*.whl  # the project itself is installed from the work tree
  touch "$tmp/.complete"
  if ! mv -T "$tmp" "$wheels" 2>/dev/null; then rm -rf "$tmp"; fi  # a concurrent run won
fi
offline=("${quiet[@]}" --no-index --find-links "$wheels")
.venv/bin/python -m pip install "${offline[@]}" --upgrade pip
.venv/bin/python -m pip install "${offline[@]}" -e ".[test]"
echo "[venv] .venv ready from $wheels"
