#!/usr/bin/env bash
# Installs the Debian packages of hack/debian-packages.txt that are missing (a fresh machine
# of this kind has none of them). Needs root; prints what it installs and how long it took.
# The services some packages start are not needed (tests start their own processes on
# loopback): the invoke-rc.d policy below keeps them from starting.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
while read -r line; do
  pkg=${line%%#*}
  pkg=${pkg//[[:space:]]/}
  [ -n "$pkg" ] || continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < hack/debian-packages.txt
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "test-deps: missing Debian packages ${missing[*]} (run as root to install them)" >&2
  exit 1
fi
t0=$(date +%s)
echo "test-deps: installing ${missing[*]}" >&2
# No daemon may start from a package's install scripts (policy-rc.d exit 101 = "not allowed").
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
echo "test-deps: installed in $(( $(date +%s) - t0 ))s" >&2
