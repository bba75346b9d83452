#!/usr/bin/env bash
# Installs hack/containers.conf as /etc/containers/containers.conf, for those who want
# podman's settings for this kind of machine system-wide. The tests do not need it:
# hack/test.sh gives them the file through CONTAINERS_CONF.
#
# Acts only when run as root with CI set, or when asked with --apply: a developer's own
# container configuration is never overwritten behind their back. Idempotent: a file
# with the same content is left alone; a different file is kept as
# containers.conf.kumaco-backup before it is replaced (once).
set -euo pipefail
cd "$(dirname "$0")/.."
src=hack/containers.conf
dst=${KUMACO_CONTAINERS_CONF_TARGET:-/etc/containers/containers.conf}
apply=0
[ "${1:-}" = --apply ] && apply=1
if [ "$apply" -eq 0 ] && { [ -z "${CI:-}" ] || [ "$(id -u)" != 0 ]; }; then
  if ! cmp -s "$src" "$dst"; then
    echo "containers-setup: not in CI as root: $dst left as it is (on a machine like CI's," \
      "podman needs the settings of $src: run hack/containers-setup.sh --apply as root)" >&2
  fi
  exit 0
fi
if cmp -s "$src" "$dst"; then
  exit 0
fi
mkdir -p "$(dirname "$dst")"
if [ -e "$dst" ] && ! grep -q '^# kumaco-containers-conf' "$dst" && [ ! -e "$dst.kumaco-backup" ]; then
  cp -p "$dst" "$dst.kumaco-backup"
  echo "containers-setup: kept the previous $dst as $dst.kumaco-backup" >&2
fi
cp "$src" "$dst.tmp"
mv "$dst.tmp" "$dst"
echo "containers-setup: installed $src as $dst" >&2
