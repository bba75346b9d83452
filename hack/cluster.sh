#!/usr/bin/env bash
# kumaco on a real local Kubernetes cluster: two real nodes (kubelet + containerd each, in
# namespaces of their own), kube-controller-manager, kube-scheduler and the test control plane.
#
#   hack/cluster.sh up --kubeconfig PATH [--nodes N]
#                         build or reuse what it needs (the binaries, the image of
#                         hack/image.sh build), start the cluster in the background, write an
#                         admin kubeconfig to PATH, import the image into every real node and
#                         print its reference as the last line of the output
#   hack/cluster.sh image print that reference again
#   hack/cluster.sh down  stop it: nothing is left (processes, mounts, cgroups, namespaces);
#                         exits 1, listing them, if anything is
#   hack/cluster.sh check list the leftovers of the last cluster
#
# KUMACO_CLUSTER_IMAGE=REF imports REF (an image podman has) instead of building one;
# KUMACO_CLUSTER_RUN is the run directory (default /tmp/kumaco-cluster-run). Needs root and
# the Debian packages of hack/debian-packages.txt (hack/test-deps.sh installs them).
# What runs where, and why: CONTRIBUTING.md, "The real-cluster fixture".
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/hack/containers.conf}"
[ "$#" -ge 1 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
[ -x .venv/bin/python ] || bash hack/venv.sh >&2
case "$1" in
  up)
    bash hack/test-deps.sh >&2
    image=${KUMACO_CLUSTER_IMAGE:-}
    if [ -z "$image" ]; then
      image=$(bash hack/image.sh build | tail -n 1)
    fi
    shift
    exec .venv/bin/python hack/cluster.py up --image "$image" "$@"
    ;;
  image | down | check)
    [ "$#" -eq 1 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
    exec .venv/bin/python hack/cluster.py "$1"
    ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
