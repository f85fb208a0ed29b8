#!/usr/bin/env bash
# Proves docker/Dockerfile.cpu on a machine that cannot pull base images: makes
# the debian:12 base locally with mmdebstrap, imports it into podman under the
# name the Dockerfile asks for, and builds the image from it (never pulling).
# Opt-in (not CI): it downloads Debian packages and pip packages and takes long.
#   bash docker/build_cpu_image.sh [WORK_DIR]      # default WORK_DIR: /tmp/tilegraph-image
# Env: MIRROR (default http://deb.debian.org/debian), TAG (default tilegraph:cpu),
#      PODMAN_FLAGS (extra podman global flags, e.g. "--storage-driver vfs"),
#      BUILD_FLAGS (extra podman build flags; "--isolation=chroot" where the OCI runtime
#      cannot create containers, e.g. "cgroups in hybrid mode not supported" inside a container),
#      EXTRA_CA_CERTS (a directory of *.crt files the base image trusts; default: the host's
#      /usr/local/share/ca-certificates when it has any. Behind a TLS-intercepting proxy, pip
#      and apt inside the build fail certificate checks without the proxy's CA; "none" adds none).
# Needs root (apt-get, mmdebstrap, podman); installs mmdebstrap and podman when missing.
# Prints "step N/4: ..." before each step and, on failure, which step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
WORK=${1:-/tmp/tilegraph-image}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
TAG=${TAG:-tilegraph:cpu}
read -r -a PODMAN <<<"podman ${PODMAN_FLAGS:-}"
read -r -a BUILD <<<"${BUILD_FLAGS:-}"
EXTRA_CA_CERTS=${EXTRA_CA_CERTS:-/usr/local/share/ca-certificates}
STEP=""
step() { STEP=$1; echo "step $1: $2 ($(date -u +%H:%M:%S))"; }
fail() { echo "build_cpu_image: failed at step $STEP: $1" >&2; exit 1; }
mkdir -p "$WORK"

step 1/4 "mmdebstrap and podman"
missing=()
for tool in mmdebstrap podman; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } \
    >"$WORK/apt.log" 2>&1 || fail "apt-get install ${missing[*]} (log: $WORK/apt.log)"
fi

step 2/4 "Debian 12 (bookworm) base with mmdebstrap from $MIRROR"
# The certificates copied into the base are the host's choice, so the tar is
# remade when that choice changes (its name records the directory's contents).
ca_hooks=()
ca_tag=none
if [ "$EXTRA_CA_CERTS" != none ] && compgen -G "$EXTRA_CA_CERTS/*.crt" >/dev/null; then
  ca_files=("$EXTRA_CA_CERTS"/*.crt)  # copy-in splits its arguments at spaces: paths without spaces
  ca_hooks=(--customize-hook="copy-in ${ca_files[*]} /usr/local/share/ca-certificates"
            --customize-hook='chroot "$1" update-ca-certificates')
  ca_tag=$(cat "$EXTRA_CA_CERTS"/*.crt | sha256sum | cut -c1-12)
  echo "  the base trusts the certificates in $EXTRA_CA_CERTS ($ca_tag)"
fi
BASE_TAR="$WORK/debian12-ca-$ca_tag.tar"
if [ ! -f "$BASE_TAR" ]; then
  rm -f "$BASE_TAR.part"  # a killed run's leftovers (a file: --format=tar)
  # --format=tar: the output's name (.part) would otherwise make it a directory
  mmdebstrap --variant=minbase --format=tar --include=ca-certificates "${ca_hooks[@]}" bookworm "$BASE_TAR.part" "$MIRROR" \
    >"$WORK/mmdebstrap.log" 2>&1 || fail "mmdebstrap (log: $WORK/mmdebstrap.log)"
  mv "$BASE_TAR.part" "$BASE_TAR"
fi

step 3/4 "import it into podman as docker.io/library/debian:12 (what FROM debian:12 resolves to)"
"${PODMAN[@]}" import "$BASE_TAR" docker.io/library/debian:12 >"$WORK/import.log" 2>&1 \
  || fail "podman import (log: $WORK/import.log)"

step 4/4 "podman build -f docker/Dockerfile.cpu -t $TAG (never pulls; runs install_deps, build, quickstart)"
"${PODMAN[@]}" build --pull=never --network=host "${BUILD[@]}" -f docker/Dockerfile.cpu -t "$TAG" . >"$WORK/build.log" 2>&1 \
  || fail "podman build (log: $WORK/build.log; its last lines: $(tail -n 3 "$WORK/build.log" | tr '\n' ' '))"
echo "built $TAG from a local Debian 12 base; run it: podman run --rm -it $TAG bash artifacts/run_all.sh --quick"
