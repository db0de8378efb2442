#!/usr/bin/env bash
# Builds Kubernetes v1.20.2 control-plane binaries and kubelet from Debian's `kubernetes` source
# package (with our patches in patches/), and
# unpacks Debian's etcd, into a cache outside the repo. Idempotent: a second run with the same
# recipe only checks the stamp. Usage: build.sh [component...] (default: the control plane).
# Env: ERDMA_SMCR_CACHE (default /var/cache/erdma-smcr).
set -euo pipefail

CACHE_ROOT=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}
K8S=$CACHE_ROOT/k8s-v1.20.2
BIN=$K8S/bin
HERE=$(cd "$(dirname "$0")" && pwd)
COMPONENTS=("$@")
[ ${#COMPONENTS[@]} -gt 0 ] || COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
# The recipe's identity: this script, the apt helper and the patches. A change rebuilds.
shopt -s nullglob
PATCHES=("$HERE"/patches/*.patch)
APT_SRC=$HERE/../../../native/scripts/apt-src.sh # Debian source packages via a private deb-src setup
RECIPE=$(cat "$0" "$APT_SRC" "${PATCHES[@]}" | sha256sum | cut -c1-16)

log() { printf '[k8s-build %s] %s\n' "$(date +%T)" "$*" >&2; }

need_build() {
  for c in "${COMPONENTS[@]}"; do
    [ -x "$BIN/$c" ] && [ "$(cat "$BIN/$c.recipe" 2>/dev/null)" = "$RECIPE" ] || return 0
  done
  [ -x "$BIN/etcd" ] || return 0
  return 1
}

if ! need_build; then
  log "cached: ${COMPONENTS[*]} etcd in $BIN"
  exit 0
fi

mkdir -p "$K8S" "$BIN"
exec 9>"$K8S/.lock"
flock 9 # one build at a time per machine

export DEBIAN_FRONTEND=noninteractive
missing=()
command -v go >/dev/null || missing+=(golang-go)
command -v rsync >/dev/null || missing+=(rsync)
command -v make >/dev/null || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

aptsrc() { "$APT_SRC" "$K8S/apt" "$@"; }

SRC=$K8S/src
if [ ! -f "$SRC/.unpacked" ]; then
  log "downloading the kubernetes source package"
  rm -rf "$SRC" "$K8S/dl" && mkdir -p "$K8S/dl" "$SRC"
  (cd "$K8S/dl" && aptsrc source --download-only kubernetes >/dev/null)
  tarball=$(ls "$K8S"/dl/kubernetes_*.orig.tar.* | head -n1)
  log "unpacking $(basename "$tarball")"
  tar -xf "$tarball" -C "$SRC" --strip-components=1
  rm -rf "$K8S/dl"

  # Go >= 1.18 breaks the vendored reflect2 v1.0.1 (SIGSEGV when the apiserver records a webhook
  # patch): swap in Debian's reflect2 1.0.2.
  log "replacing vendored modern-go/reflect2 with Debian's 1.0.2"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download golang-github-modern-go-reflect2-dev >/dev/null && dpkg-deb -x ./*.deb x)
  r2=$(find "$tmp/x" -type d -path '*github.com/modern-go/reflect2' | head -n1)
  rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
  mkdir -p "$SRC/vendor/github.com/modern-go/reflect2"
  cp "$r2"/*.go "$SRC/vendor/github.com/modern-go/reflect2/"
  rm -f "$SRC"/vendor/github.com/modern-go/reflect2/*_test.go
  sed -i 's#^\(github.com/modern-go/reflect2\) v1.0.1#\1 v1.0.2#' "$SRC/vendor/modules.txt"
  sed -i 's#\(github.com/modern-go/reflect2\) v1.0.1#\1 v1.0.2#' "$SRC/go.mod"
  sed -i '/github.com\/modern-go\/reflect2 v1.0.1/d' "$SRC/go.sum"
  rm -rf "$tmp"
  touch "$SRC/.unpacked"
fi
# Our patches (each applied once; a stamp per patch, so one added later applies to a cached tree).
for p in "${PATCHES[@]}"; do
  stamp="$SRC/.applied-$(basename "$p")"
  [ -f "$stamp" ] && continue
  log "applying $(basename "$p")"
  patch -s -d "$SRC" -p1 --forward < "$p"
  touch "$stamp"
done

export CGO_ENABLED=0 KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=archive
export GOCACHE=$K8S/gocache GOPATH=$K8S/gopath GOFLAGS=-mod=vendor GOTOOLCHAIN=local
for c in "${COMPONENTS[@]}"; do
  if [ -x "$BIN/$c" ] && [ "$(cat "$BIN/$c.recipe" 2>/dev/null)" = "$RECIPE" ]; then continue; fi
  log "building $c (the first build takes about 10 minutes)"
  make -C "$SRC" WHAT="cmd/$c" >"$K8S/build-$c.log" 2>&1 || { tail -n 40 "$K8S/build-$c.log" >&2; exit 1; }
  out=$(find "$SRC/_output" -type f -name "$c" -path '*/bin/*' | head -n1)
  install -m 0755 "$out" "$BIN/$c.tmp" && mv "$BIN/$c.tmp" "$BIN/$c"
  echo "$RECIPE" > "$BIN/$c.recipe"
done

if [ ! -x "$BIN/etcd" ]; then
  log "unpacking Debian's etcd-server"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download etcd-server >/dev/null && dpkg-deb -x ./*.deb x)
  install -m 0755 "$(find "$tmp/x" -type f -name etcd -path '*bin*' | head -n1)" "$BIN/etcd"
  rm -rf "$tmp"
fi
log "done: $(ls "$BIN" | grep -v recipe | tr '\n' ' ')"
