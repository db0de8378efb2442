#!/usr/bin/env bash
# Unpacks kubectl from Debian's kubernetes-client package into the harness cache (no install, so
# the machine's own kubectl is left alone). Usage: fetch-kubectl.sh; env ERDMA_SMCR_CACHE.
set -euo pipefail
BIN=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}/k8s-v1.20.2/bin
[ -x "$BIN/kubectl" ] && exit 0
mkdir -p "$BIN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download kubernetes-client >/dev/null 2>&1 && dpkg-deb -x ./*.deb x)
install -m 0755 "$tmp/x/usr/bin/kubectl" "$BIN/kubectl.tmp"
mv "$BIN/kubectl.tmp" "$BIN/kubectl"
