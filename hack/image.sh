#!/usr/bin/env bash
# kumaco's container image: local Debian bases, the build (cached by its inputs), its SBOM.
#
#   hack/image.sh base                  make the two local bases from Debian packages
#   hack/image.sh build [--published] [--tag REF]...
#                                       build the image; prints its reference on stdout
#   hack/image.sh sbom IMAGE OUT        CycloneDX SBOM (JSON) of the image's Python venv
#   hack/image.sh export-venv IMAGE DIR copy the image's venv (/opt/kumaco) out to DIR
#   hack/image.sh size IMAGE            sizes of the image and its parts, as JSON
#   hack/image.sh audit IMAGE           pip-audit --strict of the image's venv
#   hack/image.sh prune                 remove cached images and bases of other inputs
#
# Engine: buildah + podman when both are installed (Debian packages, no daemon), otherwise
# `docker build` when a Docker engine answers; KUMACO_IMAGE_ENGINE=podman|docker chooses.
#
# `base` makes, with mmdebstrap, from the Debian packages of this machine's apt sources
# (KUMACO_DEBIAN_SOURCES, default /etc/apt/sources.list.d/debian.sources; they must be
# Debian 12 "bookworm", the release of the published runtime image):
#   localhost/kumaco-builder-base  minbase + python3 + python3-venv (/usr/bin/python3.11)
#   localhost/kumaco-runtime-base  shell-less, like distroless python3-debian12:nonroot:
#                                  python3.11-minimal + libpython3.11-stdlib unpacked with
#                                  --variant=extract (no maintainer scripts, so no /bin/sh
#                                  is ever needed), no dpkg/tar/shell, user nonroot 65532,
#                                  Debian's CA bundle, a /var/lib/dpkg/status.d manifest
# Each is tagged with a hash of its recipe and sources, and its tarball is kept in
# ${KUMACO_CACHE_DIR:-~/.cache/kumaco}/image/bases/, so a lost image store is refilled in
# seconds (podman import) instead of a minute (mmdebstrap).
#
# `build` builds the Dockerfile on those bases (or, with --published, on the Dockerfile's
# digest-pinned defaults, which need registry access) and tags the result
# localhost/kumaco:VERSION-KEY, KEY a hash of every input: the Dockerfile, .dockerignore,
# the files it copies, the bases and the build arguments. An image with that tag is reused
# (a warm run rebuilds nothing); KUMACO_IMAGE_REBUILD=1 forces a build, e.g. to pick up
# newer dependency releases within pyproject.toml's ranges. A new build on the local bases
# removes the cached images and bases of other inputs (`prune`; KUMACO_IMAGE_KEEP=1 keeps
# them), so that the image store of a reused machine stays bounded. Next to the build, in
# ${KUMACO_IMAGE_OUT:-dist/image}/, it writes kumaco-image.json (reference, id, inputs
# key, size, build time) and kumaco-image.cdx.json (the SBOM, cyclonedx-bom).
# Where the network inspects TLS, the CA bundle of PIP_CERT (or the system's) goes to the
# build as a secret (never into a layer).
#
# Exit status: 0 done; 1 a step failed; 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' kumaco/__init__.py)
CACHE="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}/image"
OUT="${KUMACO_IMAGE_OUT:-dist/image}"
CYCLONEDX_BOM_VERSION=7.5.0
PIP_AUDIT_VERSION=2.10.1
SUITE=bookworm
SOURCES_FILE="${KUMACO_DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}"
[ -f "$SOURCES_FILE" ] || SOURCES_FILE=/etc/apt/sources.list

say() { printf '[image] %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() {
  sed -n '2,11p' "$0" >&2
  exit 2
}
sha() { sha256sum | cut -c1-16; }

engine() {
  case "${KUMACO_IMAGE_ENGINE:-}" in
    podman | docker) echo "$KUMACO_IMAGE_ENGINE" ;;
    "")
      if command -v buildah >/dev/null && command -v podman >/dev/null; then
        echo podman
      elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        echo docker
      else
        die "no image engine: install buildah and podman (Debian packages) or run a Docker engine"
      fi
      ;;
    *) die "KUMACO_IMAGE_ENGINE must be podman or docker, not '$KUMACO_IMAGE_ENGINE'" ;;
  esac
}
ENGINE=""
eng() { "$ENGINE" "$@"; }
exists() { eng image inspect "$1" >/dev/null 2>&1; }

# ------------------------------------------------------------------------------ bases
# The recipes. Hook commands run on the host with "$1" = the new root. With
# --variant=extract only setup and extract hooks run (customize hooks are skipped).
BUILDER_RECIPE=(
  --variant=minbase --include=python3,python3-venv,ca-certificates
  '--customize-hook=rm -f "$1"/etc/resolv.conf "$1"/etc/hostname'
  '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
)
BUILDER_CHANGES=(--change 'CMD ["/bin/bash"]'
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
RUNTIME_RECIPE=(
  --variant=extract --include=python3.11-minimal,libpython3.11-stdlib,media-types
  # no package manager, archiver or daemon helper; no docs but copyrights, no tests
  '--extract-hook=cd "$1" && rm -rf usr/bin/dpkg* usr/bin/update-alternatives sbin/start-stop-daemon usr/sbin/dpkg* bin/tar usr/sbin/rmt-tar usr/sbin/tarcat etc/dpkg etc/alternatives etc/cron.daily etc/logrotate.d var/lib/dpkg usr/share/dpkg usr/share/man usr/share/info usr/share/locale usr/share/lintian usr/share/bug usr/lib/python3.11/test'
  '--extract-hook=cd "$1" && find usr/share/doc -type f ! -name copyright -delete && find usr/share/doc -type l -delete && find usr/share/doc -type d -empty -delete'
  # the users of distroless images: root, nobody, nonroot (65532)
  '--extract-hook=cd "$1" && printf "%s\n" "root:x:0:0:root:/root:/sbin/nologin" "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin" "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin" > etc/passwd && printf "%s\n" "root:x:0:" "nobody:x:65534:" "nonroot:x:65532:" > etc/group && mkdir -p home/nonroot root && chown 65532:65532 home/nonroot && chmod 700 root && chmod 1777 tmp'
  # not the host's resolv.conf/hostname (mmdebstrap copies them); the runtime mounts its own
  '--extract-hook=rm -f "$1"/etc/resolv.conf "$1"/etc/hostname && printf "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" > "$1"/etc/hosts'
  # Debian's Mozilla CA bundle (not the host's, which may hold an inspecting CA)
  '--extract-hook=set -e; d=$(mktemp -d); cd "$d"; APT_CONFIG=$MMDEBSTRAP_APT_CONFIG apt-get download -qq -o APT::Sandbox::User=root ca-certificates; dpkg-deb -x ca-certificates_*.deb x; mkdir -p "$1"/etc/ssl/certs; cat x/usr/share/ca-certificates/mozilla/*.crt > "$1"/etc/ssl/certs/ca-certificates.crt; mkdir -p "$1"/usr/share/doc/ca-certificates; cp x/usr/share/doc/ca-certificates/copyright "$1"/usr/share/doc/ca-certificates/; cd /; rm -rf "$d"'
  # a distroless-style package manifest, so that scanners see the Debian packages
  '--extract-hook=set -e; mkdir -p "$1"/var/lib/dpkg/status.d; for deb in "$1"/var/cache/apt/archives/*.deb; do pkg=$(dpkg-deb -f "$deb" Package); case $pkg in dpkg|tar) continue;; esac; { dpkg-deb -f "$deb"; echo "Status: install ok installed"; } > "$1"/var/lib/dpkg/status.d/$pkg; done'
  # python3 -> python3.11; and prove there is no shell nor coreutils
  '--extract-hook=cd "$1" && ln -sf python3.11 usr/bin/python3 && test ! -e bin/sh && test ! -e usr/bin/sh && ! ls bin usr/bin | grep -qxE "(ba|da)?sh|ls|cat|rm"'
)
RUNTIME_CHANGES=(--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'USER 65532:65532'
  --change 'WORKDIR /home/nonroot' --change 'ENTRYPOINT ["/usr/bin/python3.11"]')

base_key() { # RECIPE-NAME CHANGES-NAME
  { declare -p "$1" "$2" SUITE; cat "$SOURCES_FILE"; } | sha
}
BUILDER_BASE="localhost/kumaco-builder-base:$SUITE-$(base_key BUILDER_RECIPE BUILDER_CHANGES)"
RUNTIME_BASE="localhost/kumaco-runtime-base:$SUITE-$(base_key RUNTIME_RECIPE RUNTIME_CHANGES)"

ensure_base() { # REF RECIPE-NAME CHANGES-NAME
  local ref=$1 tar t0
  local -n recipe=$2 changes=$3
  tar="$CACHE/bases/${ref#localhost/}.tar"
  tar=${tar//:/-}
  if exists "$ref"; then
    say "base $ref: cached"
    return
  fi
  if [ ! -s "$tar" ]; then
    command -v mmdebstrap >/dev/null || die "mmdebstrap is needed to make $ref (Debian package mmdebstrap)"
    mkdir -p "$CACHE/bases"
    t0=$SECONDS
    say "base $ref: mmdebstrap $SUITE from $SOURCES_FILE"
    mmdebstrap --quiet "${recipe[@]}" "$SUITE" "${tar%.tar}.partial.tar" "$SOURCES_FILE"
    mv "${tar%.tar}.partial.tar" "$tar"
    say "base $ref: mmdebstrap took $((SECONDS - t0))s ($(du -m "$tar" | cut -f1) MB)"
  fi
  t0=$SECONDS
  if [ "$ENGINE" = podman ]; then
    podman import --quiet "${changes[@]}" "$tar" "$ref" >/dev/null
  else
    docker import "${changes[@]}" "$tar" "$ref" >/dev/null
  fi
  say "base $ref: imported in $((SECONDS - t0))s"
}

cmd_base() {
  ensure_base "$BUILDER_BASE" BUILDER_RECIPE BUILDER_CHANGES
  ensure_base "$RUNTIME_BASE" RUNTIME_RECIPE RUNTIME_CHANGES
}

# ------------------------------------------------------------------------------ tools
tools_venv() { # a pinned venv of cyclonedx-bom (and pip-audit for `audit`), cached
  local want="cyclonedx-bom==$CYCLONEDX_BOM_VERSION" dir
  [ "${1:-}" = audit ] && want="pip-audit==$PIP_AUDIT_VERSION"
  dir="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}/tools/${want/==/-}"
  if [ ! -x "$dir/bin/python" ] || [ ! -f "$dir/.complete" ]; then
    say "installing $want into $dir"
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$want"
    touch "$dir/.complete"
  fi
  echo "$dir"
}

export_venv() { # IMAGE DIR: copy /opt/kumaco out of the image (no container is started)
  local ctr
  ctr=$(eng create --pull=never "$1")
  eng cp "$ctr:/opt/kumaco" "$2/kumaco" >/dev/null
  eng rm "$ctr" >/dev/null
}

venv_python() { # DIR: the exported venv's interpreter, which links to /usr/bin/python3.11
  local py="$1/kumaco/bin/python"
  [ -x "$py" ] || die "cannot run the image's venv here: $(readlink "$py" || echo "$py") is missing on this machine (the image's interpreter, Debian 12's python3.11)"
  echo "$py"
}

cmd_export_venv() ( # IMAGE DIR: the image's /opt/kumaco as DIR (for hack/zipapp.sh)
  [ "$#" -eq 2 ] || usage
  local tmp
  ENGINE=$(engine)
  [ ! -e "$2" ] || die "$2 exists"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  export_venv "$1" "$tmp"
  mv "$tmp/kumaco" "$2"
)

cmd_sbom() ( # IMAGE OUT
  [ "$#" -eq 2 ] || usage
  local tools tmp
  ENGINE=$(engine)
  tools=$(tools_venv)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  export_venv "$1" "$tmp"
  "$tools/bin/cyclonedx-py" environment --output-format JSON --output-reproducible \
    --pyproject pyproject.toml --output-file "$2.tmp" "$(venv_python "$tmp")" >&2
  # The root component is kumaco at this version (pyproject's version is dynamic).
  python3 - "$2.tmp" "$VERSION" "$1" <<'PY'
import json, sys
path, version, image = sys.argv[1:]
bom = json.load(open(path))
root = bom["metadata"]["component"]
root["version"] = version
root.setdefault("properties", []).append({"name": "kumaco:image", "value": image})
json.dump(bom, open(path, "w"), indent=2)
PY
  mv "$2.tmp" "$2"
  say "SBOM of $1: $2 ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["components"]))' "$2") components)"
)

cmd_audit() ( # IMAGE
  [ "$#" -eq 1 ] || usage
  local tools tmp
  ENGINE=$(engine)
  tools=$(tools_venv audit)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  export_venv "$1" "$tmp"
  "$(venv_python "$tmp")" -c 'import importlib.metadata as m
for d in sorted(m.distributions(), key=lambda d: d.metadata["Name"].lower()):
    print(d.metadata["Name"] + "==" + d.version)' | grep -v '^kumaco==' >"$tmp/requirements.txt"
  # --strict: a dependency that cannot be looked up is an error, never a silent pass.
  "$tools/bin/pip-audit" --strict --no-deps --disable-pip -r "$tmp/requirements.txt"
)

cmd_size() ( # IMAGE: bytes, from the engine and from inside the image (no shell needed)
  [ "$#" -eq 1 ] || usage
  local tmp
  ENGINE=$(engine)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  eng save --format oci-archive -o "$tmp/image.tar" "$1" >/dev/null 2>&1 ||
    eng save -o "$tmp/image.tar" "$1" >/dev/null
  eng run --rm --pull=never --network none --read-only --entrypoint /opt/kumaco/bin/python "$1" -c '
import json, os, sys
def du(p):
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(p) for f in fs)
site = next(p for p in sys.path if p.endswith("site-packages"))
print(json.dumps({"venv": du("/opt/kumaco"), "kubernetes": du(os.path.join(site, "kubernetes")),
                  "pyc": sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk("/opt/kumaco")
                             for f in fs if f.endswith(".pyc"))}))' >"$tmp/inside.json"
  local base
  base=$(eng image inspect --format '{{index .Config.Labels "org.opencontainers.image.base.name"}}' "$1")
  python3 - "$1" "$(eng image inspect --format '{{.Size}}' "$1")" "$(stat -c %s "$tmp/image.tar")" \
    "$base" "$(eng image inspect --format '{{.Size}}' "$base" 2>/dev/null || echo 0)" \
    "$tmp/inside.json" <<'PY'
import json, sys
image, size, archive, base, base_size, inside = sys.argv[1:]
print(json.dumps({
    "command": f"hack/image.sh size {image}",
    "image": image, "bytes": int(size),
    # `save --format oci-archive`: the layers as a registry stores them (gzip)
    "oci_archive_bytes": int(archive),
    "base": base, "base_bytes": int(base_size) or None,
    **{f"{k}_bytes": v for k, v in json.load(open(inside)).items()},
}, indent=2))
PY
)

# ------------------------------------------------------------------------------ build
inputs_key() { # the inputs of the image, as one hash: any change rebuilds
  {
    for f in Dockerfile .dockerignore pyproject.toml README.md LICENSE hack/image-venv.sh; do
      printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"
    done
    find kumaco kustomize/examples -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
    printf '%s\n' "$@"
  } | sha
}

# One build or prune at a time per cache: a build prunes the images of other inputs, and
# two checkouts building at once on one machine would remove each other's files.
cache_lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
}

cmd_build() {
  local published=0 tags=() args=() key ref t0 ca id
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --published) published=1 ;;
      --tag)
        [ "$#" -ge 2 ] || usage
        tags+=("$2")
        shift
        ;;
      *) usage ;;
    esac
    shift
  done
  ENGINE=$(engine)
  args=(--build-arg "VERSION=$VERSION")
  if [ "$published" -eq 0 ]; then
    cmd_base
    args+=(--build-arg "BUILDER_IMAGE=$BUILDER_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE")
  fi
  key=$(inputs_key "${args[@]}")
  ref="localhost/kumaco:$VERSION-$key"
  mkdir -p "$CACHE/$key" "$OUT"
  # Cached: the tag names the very image the record describes (another cache -- another
  # HOME or KUMACO_CACHE_DIR on the same image store -- may have built the tag again).
  local recorded="" current=""
  [ -s "$CACHE/$key/kumaco-image.json" ] &&
    recorded=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' \
      "$CACHE/$key/kumaco-image.json" 2>/dev/null || true)
  exists "$ref" && current=$(eng image inspect --format '{{.Id}}' "$ref")
  if [ -n "$recorded" ] && [ "$current" = "$recorded" ] && [ "${KUMACO_IMAGE_REBUILD:-0}" != 1 ]; then
    say "image $ref: cached (inputs unchanged)"
  else
    ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
    [ -s "$ca" ] && args+=(--secret "id=buildca,src=$ca")
    args+=(--build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
      --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t "$ref" -f Dockerfile .)
    say "image $ref: building with $ENGINE"
    local previous=""
    exists "$ref" && previous=$(eng image inspect --format '{{.Id}}' "$ref")
    t0=$SECONDS
    if [ "$ENGINE" = podman ]; then
      buildah bud --network host "${args[@]}" >&2
    else
      DOCKER_BUILDKIT=1 docker build "${args[@]}" >&2
    fi
    local took=$((SECONDS - t0))
    say "image $ref: built in ${took}s"
    cmd_sbom "$ref" "$CACHE/$key/kumaco-image.cdx.json"
    id=$(eng image inspect --format '{{.Id}}' "$ref")
    python3 - "$ref" "$id" "$key" "$took" "$ENGINE" "$published" \
      "$(eng image inspect --format '{{.Size}}' "$ref")" >"$CACHE/$key/kumaco-image.json" <<'PY'
import json, sys
ref, image_id, key, took, engine, published, size = sys.argv[1:]
print(json.dumps({"image": ref, "id": image_id, "inputs_key": key, "engine": engine,
                  "published_bases": published == "1", "bytes": int(size),
                  "build_seconds": int(took)}, indent=2))
PY
    # Keep the image store bounded (CI machines are reused): the image this tag named
    # before a forced rebuild, and the cached images and bases of other inputs, go.
    if [ -n "$previous" ] && [ "$previous" != "$id" ]; then
      eng rmi "$previous" >/dev/null 2>&1 || true
    fi
    [ "$published" -eq 1 ] || [ "${KUMACO_IMAGE_KEEP:-0}" = 1 ] || cmd_prune
  fi
  cp "$CACHE/$key/kumaco-image.json" "$CACHE/$key/kumaco-image.cdx.json" "$OUT/"
  for t in "${tags[@]}"; do
    eng tag "$ref" "$t"
  done
  echo "$ref"
}

# ------------------------------------------------------------------------------ prune
cmd_prune() { # every cached image and base except those of the current inputs
  local keep_base keep_image
  ENGINE=$(engine)
  keep_base="$BUILDER_BASE $RUNTIME_BASE"
  keep_image="localhost/kumaco:$VERSION-$(inputs_key --build-arg "VERSION=$VERSION" \
    --build-arg "BUILDER_IMAGE=$BUILDER_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE")"
  eng images --format '{{.Repository}}:{{.Tag}}' | while read -r ref; do
    case "$ref" in
      localhost/kumaco:*-????????????????) [ "$ref" = "$keep_image" ] && continue ;;
      localhost/kumaco-builder-base:* | localhost/kumaco-runtime-base:*)
        case " $keep_base " in *" $ref "*) continue ;; esac ;;
      *) continue ;;
    esac
    if eng rmi "$ref" >/dev/null 2>&1; then
      say "removed $ref"
    else
      say "kept $ref (in use)"
    fi
  done
  for d in "$CACHE"/????????????????; do
    [ -d "$d" ] && [ "localhost/kumaco:$VERSION-${d##*/}" != "$keep_image" ] && rm -rf "$d"
  done
  for tar in "$CACHE"/bases/*.tar; do
    [ -e "$tar" ] || continue
    case "$tar" in
      *"$(basename "${BUILDER_BASE//:/-}")".tar | *"$(basename "${RUNTIME_BASE//:/-}")".tar) ;;
      *) rm -f "$tar" && say "removed $tar" ;;
    esac
  done
}

[ "$#" -ge 1 ] || usage
command=$1
shift
case "$command" in
  base)
    [ "$#" -eq 0 ] || usage
    ENGINE=$(engine)
    cmd_base
    ;;
  build) cache_lock && cmd_build "$@" ;;
  sbom) cmd_sbom "$@" ;;
  export-venv) cmd_export_venv "$@" ;;
  size) cmd_size "$@" ;;
  audit) cmd_audit "$@" ;;
  prune)
    [ "$#" -eq 0 ] || usage
    cache_lock
    cmd_prune
    ;;
  *) usage ;;
esac
