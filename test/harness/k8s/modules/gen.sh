#!/usr/bin/env bash
# Writes the wrapper module for one Kubernetes release: go.mod requiring k8s.io/kubernetes at
# VERSION, every staging module it replaces with ./staging pinned to the matching v0.MINOR.PATCH
# (those ./staging paths only resolve inside the kubernetes repository), its godebug line copied,
# and one `tool` line per binary, so `go build k8s.io/kubernetes/cmd/X` builds inside this module.
# Run by hand to bump a release (needs the Go module proxy); the result is committed with go.sum.
# Usage: gen.sh v1.37.2 kube-apiserver kubelet ...
set -euo pipefail
VERSION=$1; shift
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$HERE/${VERSION%.*} # v1.37
STAGING=v0.${VERSION#v1.}
mkdir -p "$DIR"
published=$(go mod download -json "k8s.io/kubernetes@$VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
{
  echo "// Wrapper module: builds Kubernetes $VERSION's binaries for the test harness (gen.sh wrote it)."
  echo "module erdma-smcr.test/k8s-${VERSION%.*}"
  echo
  grep -m1 '^go ' "$published"
  echo
  grep -m1 '^godebug ' "$published" || true
  echo
  echo "require k8s.io/kubernetes $VERSION"
  echo
  echo "replace ("
  sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$STAGING"'#p' "$published"
  echo ")"
  echo
  echo "tool ("
  for b in "$@"; do echo "	k8s.io/kubernetes/cmd/$b"; done
  echo ")"
} >"$DIR/go.mod"
(cd "$DIR" && GOFLAGS=-mod=mod go mod tidy)
echo "wrote $DIR/go.mod and go.sum"
