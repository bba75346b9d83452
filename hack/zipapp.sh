#!/usr/bin/env bash
# The kubectl plugin as one file for people without a Python set-up: a shiv zipapp of
# `kubectl-kumaco`, its krew archive and its krew manifest.
#
#   hack/zipapp.sh [--from-image IMAGE] [OUTDIR]        (default dist/plugin)
#
# writes OUTDIR/kubectl-kumaco (the zipapp, `#!/usr/bin/env python3`),
# OUTDIR/kubectl-kumaco_vVERSION_linux_amd64.tar.gz (it and LICENSE, for krew) and
# OUTDIR/kumaco.yaml (plugins/kumaco.yaml with the archive's address and sha256 filled
# in), and prints the zipapp's path on stdout.
#
#   1. the venv of the container image: with --from-image, copied out of that image
#      (the very bits the cluster runs; `hack/image.sh build` prints the reference);
#      otherwise made by hack/image-venv.sh, the image's install steps (wheel, runtime
#      dependencies only, kubernetes/aio dropped, smoke-tested), with this machine's
#      python3 (3.11: the oldest Python kumaco supports);
#   2. compiled modules are per CPython minor. Most of the compiled dependencies fall back
#      to pure Python on another minor (PyYAML, charset-normalizer) or are never imported
#      (aiohttp and its helpers, for the asyncio client); pydantic-core has no fallback and
#      the kubernetes client imports it. For each package of NATIVE, the same release's
#      manylinux x86_64 wheels for the other minors of ZIPAPP_PYTHONS are downloaded and
#      their extensions added beside this Python's -- the file names carry the ABI
#      (`.cpython-312-x86_64-linux-gnu.so`), so each Python imports its own and the zipapp
#      runs on every listed minor (tests/e2e/test_plugin_zipapp.py runs it on each minor
#      found on the machine);
#   3. shiv (pinned, from its own venv) packs that site-packages with --reproducible:
#      the same inputs give the same bytes.
# At run time the zipapp extracts itself once to ~/.shiv (SHIV_ROOT moves it).
# Cached under ${KUMACO_CACHE_DIR:-~/.cache/kumaco}/plugin/KEY, KEY a hash of the inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

SHIV_VERSION=1.0.8
ZIPAPP_PYTHONS="${ZIPAPP_PYTHONS:-3.11 3.12 3.13 3.14}"
NATIVE=(pydantic-core) # compiled, imported, no pure-Python fallback
PLATFORMS=(manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_28_x86_64)
VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' kumaco/__init__.py)
image=""
if [ "${1:-}" = --from-image ]; then
  [ "$#" -ge 2 ] || { echo "usage: $0 [--from-image IMAGE] [OUTDIR]" >&2; exit 2; }
  image=$2
  shift 2
fi
out=${1:-dist/plugin}
cache="${KUMACO_CACHE_DIR:-$HOME/.cache/kumaco}"
say() { printf '[zipapp] %s\n' "$*" >&2; }
# One build at a time per cache: two checkouts of the same inputs share a cache directory
# (and a build removes the other cached zipapps), so a second one waits for the first.
mkdir -p "$cache/plugin"
exec 9>"$cache/plugin/.lock"
flock 9

key=$(
  {
    for f in LICENSE hack/zipapp.sh plugins/kumaco.yaml; do
      sha256sum "$f"
    done
    if [ -n "$image" ]; then
      # the image's id stands for its venv (hack/image.sh: podman, or docker)
      { podman image inspect --format '{{.Id}}' "$image" 2>/dev/null ||
        docker image inspect --format '{{.Id}}' "$image"; } || exit 1
    else
      sha256sum pyproject.toml README.md hack/image-venv.sh
      find kumaco -type f -name '*.py' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
      python3 -c 'import sys; print(sys.version_info[:2])'
    fi
    echo "$ZIPAPP_PYTHONS"
  } | sha256sum | cut -c1-16
)
dir="$cache/plugin/$key"
archive="kubectl-kumaco_v${VERSION}_linux_amd64.tar.gz"
if [ ! -f "$dir/.complete" ] || [ "${KUMACO_ZIPAPP_REBUILD:-0}" = 1 ]; then
  t0=$SECONDS
  rm -rf "$dir"
  mkdir -p "$dir"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT

  tools="$cache/tools/shiv-$SHIV_VERSION"
  if [ ! -f "$tools/.complete" ]; then
    say "installing shiv==$SHIV_VERSION into $tools"
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "shiv==$SHIV_VERSION"
    touch "$tools/.complete"
  fi

  if [ -n "$image" ]; then
    say "the venv of $image"
    bash hack/image.sh export-venv "$image" "$work/venv"
  else
    say "the venv (hack/image-venv.sh)"
    PYTHON=python3 bash hack/image-venv.sh "$work/venv" >&2
  fi
  site=$(echo "$work"/venv/lib/python3.*/site-packages)
  [ -d "$site" ] || { say "no site-packages in the venv"; exit 1; }
  have=${site%/site-packages}
  have=${have##*/python}

  # 2. the other minors' extensions of the NATIVE packages
  for name in "${NATIVE[@]}"; do
    version=$(python3 - "$name" "$site" <<'PY'
import importlib.metadata as m, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
(d,) = [d for d in m.distributions(path=[sys.argv[2]]) if norm(d.metadata["Name"]) == norm(sys.argv[1])]
print(d.version)
PY
    )
    for minor in $ZIPAPP_PYTHONS; do
      [ "$minor" = "$have" ] && continue
      platform_args=()
      for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done
      if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --implementation cp --python-version "$minor" --abi "cp${minor/./}" \
        "${platform_args[@]}" -d "$work/wheels/$minor" "$name==$version" >&2; then
        say "no cp${minor/./} manylinux x86_64 wheel of $name $version: drop $minor from ZIPAPP_PYTHONS"
        exit 1
      fi
    done
    say "$name $version: extensions for $ZIPAPP_PYTHONS"
  done
  if [ -d "$work/wheels" ]; then
    python3 - "$site" "$work/wheels" <<'PY'
import pathlib, sys, zipfile
site, wheels = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for wheel in sorted(wheels.rglob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(".so") and ".cpython-3" in name:
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
PY
  fi

  say "shiv"
  find "$site" -name __pycache__ -prune -exec rm -rf {} +  # 3.11 bytecode: Python compiles its own
  "$tools/bin/shiv" --site-packages "$site" --python '/usr/bin/env python3' \
    --console-script kubectl-kumaco --reproducible --compressed \
    -o "$dir/kubectl-kumaco" >&2
  chmod 755 "$dir/kubectl-kumaco"
  mkdir -p "$work/archive"
  cp -p "$dir/kubectl-kumaco" "$work/archive/kubectl-kumaco"
  cp LICENSE "$work/archive/LICENSE"
  chmod 644 "$work/archive/LICENSE"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/archive" \
    -cf - kubectl-kumaco LICENSE | gzip -9n >"$dir/$archive"

  # the krew manifest: plugins/kumaco.yaml (krew-release-bot template) filled in
  python3 - plugins/kumaco.yaml "v$VERSION" "$dir/$archive" >"$dir/kumaco.yaml" <<'PY'
import hashlib, pathlib, re, sys
template, tag, archive = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
sha = hashlib.sha256(archive.read_bytes()).hexdigest()
text = pathlib.Path(template).read_text().replace("{{ .TagName }}", tag)
def uri_and_sha(m):
    indent = m.group(1)
    return f"{indent}uri: {m.group(2)}\n{indent}sha256: {sha}"
text, n = re.subn(r'^( *){{ *addURIAndSha "([^"]+)" \.TagName *}}$', uri_and_sha, text, flags=re.M)
assert n == 1, f"expected one addURIAndSha in {template}, found {n}"
assert "{{" not in text, "unrendered template fields"
sys.stdout.write(text)
PY
  touch "$dir/.complete"
  # one cached zipapp at a time (CI machines are reused)
  for old in "$cache"/plugin/*/; do
    [ "${old%/}" = "$dir" ] || rm -rf "$old"
  done
  say "built in $((SECONDS - t0))s: $(du -h "$dir/kubectl-kumaco" | cut -f1) zipapp"
else
  say "cached: $dir"
fi
mkdir -p "$out"
cp -p "$dir/kubectl-kumaco" "$dir/$archive" "$dir/kumaco.yaml" "$out/"
echo "$out/kubectl-kumaco"
