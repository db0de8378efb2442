#!/usr/bin/env bash
# Builds the cluster suites' binaries from the Go module proxy with `go build`, one wrapper module
# each under modules/ (go.mod + go.sum committed; gen.sh writes the Kubernetes ones):
#   Kubernetes 1.37 (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
#   kubectl), Kubernetes 1.35 (kube-apiserver, kubectl), etcd 3.7.0 (1.37's build/dependencies.yaml),
#   containerd 2.4.2, ctr and the runc shim (containerd's RELEASES.md for 1.37), helm 4 (the current
#   major line; the chart's suites).
# Everything lands in a cache outside the repo, by version; Go's module and build caches live there
# too, so a cold run downloads and compiles each package once and a warm run only checks stamps.
# Usage: build.sh [target...]  targets: k8s-1.37 k8s-1.35 etcd containerd helm (default: all)
# Env: ERDMA_SMCR_CACHE (default /var/cache/erdma-smcr); GO (default /usr/local/go/bin/go, else `go`).
set -euo pipefail

CACHE_ROOT=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}
HERE=$(cd "$(dirname "$0")" && pwd)
MODS=$HERE/modules
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(k8s-1.37 k8s-1.35 etcd containerd helm)

# Go 1.26 is what the modules declare; Debian's golang-go (1.19) may come first on the PATH.
GO=${GO:-}
if [ -z "$GO" ]; then
  if [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; else GO=$(command -v go); fi
fi
export GOMODCACHE=$CACHE_ROOT/go/mod GOCACHE=$CACHE_ROOT/go/build GOPATH=$CACHE_ROOT/go/path
# -buildvcs=false: the modules sit in our checkout, whose git may refuse a checkout owned by
# another user ("dubious ownership"); no binary needs our commit stamped in.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
# Tools that bring their own TLS roots need /etc/ssl/certs: the proxy is reached over HTTPS.
[ -d /etc/ssl/certs ] || { echo "build.sh: /etc/ssl/certs missing (install ca-certificates)" >&2; exit 1; }

log() { printf '[harness-build %s] %s\n' "$(date +%T)" "$*" >&2; }
mkdir -p "$CACHE_ROOT" "$GOMODCACHE" "$GOCACHE"
exec 9>"$CACHE_ROOT/.build.lock"
flock 9 # one build at a time per machine

# The module's pinned version of a dependency, from its go.mod.
pinned() { sed -n "s#^\t*\(require \)\{0,1\}$2 \(v[^ ]*\).*#\2#p" "$MODS/$1/go.mod" | head -n1; }

# build MODULE_DIR OUT_DIR LDFLAGS PKG... : one `go build` for all of a module's binaries, so shared
# packages compile once; skipped when OUT_DIR's stamp matches the module, the flags, the packages
# and Go (not this whole script: a comment changed here must not relink 500 MB of binaries).
build() {
  local mod=$1 out=$2 ldflags=$3; shift 3
  local recipe
  recipe=$({ cat "$MODS/$mod/go.mod" "$MODS/$mod/go.sum" "$MODS/$mod"/*/*.go 2>/dev/null
    echo "$ldflags ${TAGS:-} $*"; } | sha256sum | cut -c1-16)-$("$GO" env GOVERSION)
  local all=1
  for p in "$@"; do [ -x "$out/$(basename "$p")" ] || all=0; done
  if [ "$all" = 1 ] && [ "$(cat "$out/.recipe" 2>/dev/null)" = "$recipe" ]; then
    log "cached: $mod in $out"
    return 0
  fi
  log "building $mod: $(for p in "$@"; do printf '%s ' "$(basename "$p")"; done)(cold: several minutes)"
  mkdir -p "$out.tmp"
  local started=$SECONDS
  (cd "$MODS/$mod" && "$GO" build -trimpath -tags "${TAGS:-}" -ldflags "-s -w $ldflags" -o "$out.tmp/" "$@") \
    >"$CACHE_ROOT/build-$mod.log" 2>&1 || { tail -n 40 "$CACHE_ROOT/build-$mod.log" >&2; exit 1; }
  mkdir -p "$out"
  for p in "$@"; do mv -f "$out.tmp/$(basename "$p")" "$out/"; done
  rmdir "$out.tmp"
  echo "$recipe" >"$out/.recipe"
  log "built $mod in $((SECONDS - started)) s"
}

k8s() {
  local minor=$1; shift
  local v; v=$(pinned "v$minor" k8s.io/kubernetes)
  local pkgs=() b
  for b in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  # kubectl version and the API's /version read these (hack/lib/version.sh sets the same).
  local x="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=${minor#1.} -X $p.gitTreeState=archive"
    x+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  build "v$minor" "$CACHE_ROOT/k8s-$v/bin" "$x" "${pkgs[@]}"
  ln -sfn "k8s-$v" "$CACHE_ROOT/k8s-$minor"
}

for t in "${TARGETS[@]}"; do
  case $t in
    k8s-1.37) k8s 1.37 kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl ;;
    k8s-1.35) k8s 1.35 kube-apiserver kubectl ;;
    etcd)
      v=$(pinned etcd go.etcd.io/etcd/server/v3)
      build etcd "$CACHE_ROOT/etcd-$v/bin" "" ./etcd
      ln -sfn "etcd-$v" "$CACHE_ROOT/etcd"
      ;;
    containerd)
      v=$(pinned containerd github.com/containerd/containerd/v2)
      # btrfs and devmapper snapshotters need cgo; the suites use overlayfs and native.
      TAGS="no_btrfs no_devmapper no_zfs" build containerd "$CACHE_ROOT/containerd-$v/bin" \
        "-X github.com/containerd/containerd/v2/version.Version=$v" \
        github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
        github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
      ln -sfn "containerd-$v" "$CACHE_ROOT/containerd"
      ;;
    helm)
      v=$(pinned helm helm.sh/helm/v4)
      # helm version reads these (helm's Makefile sets the same for a tagged build).
      build helm "$CACHE_ROOT/helm-$v/bin" \
        "-X helm.sh/helm/v4/internal/version.version=$v -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
        helm.sh/helm/v4/cmd/helm
      ln -sfn "helm-$v" "$CACHE_ROOT/helm"
      ;;
    *) echo "build.sh: unknown target $t (k8s-1.37 k8s-1.35 etcd containerd helm)" >&2; exit 2 ;;
  esac
done
log "done"
