#!/usr/bin/env bash
# A Debian trixie chroot made once with mmdebstrap, for what bookworm lacks: trixie's compiler and
# headers for the 6.12 rdma_rxe (trixie.sh) and trixie's kustomize v5 for the shipped
# kustomizations (test/harness/kustomize.sh). Apt reaches trixie through the chroot's own sources,
# never the system's. Cached in $ERDMA_SMCR_CACHE/smcr-vm/trixie/chroot; with package names as
# arguments, installs those into it first (once). Prints the chroot's path.
set -euo pipefail
cache=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}/smcr-vm/trixie
mirror=${ERDMA_SMCR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { echo "trixie-chroot: $*" >&2; }
mkdir -p "$cache"

dpkg-query -W -f='${Status}' mmdebstrap 2>/dev/null | grep -q 'install ok installed' ||
  apt-get install -y -o DPkg::Lock::Timeout=300 --no-install-recommends mmdebstrap >/dev/null

chroot_dir=$cache/chroot
# One maker at a time: the VM and manifests suites may ask at once.
exec 9>"$cache/.chroot.lock"
flock 9
if [ ! -f "$chroot_dir/.complete" ]; then
  log "building the trixie chroot (once)"
  rm -rf "$chroot_dir"
  mmdebstrap --variant=apt --mode=root \
    --include=gcc,make,linux-headers-amd64,xz-utils,ca-certificates \
    trixie "$chroot_dir" "deb $mirror trixie main" >&2
  touch "$chroot_dir/.complete"
fi
in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
missing=()
for p in "$@"; do
  in_chroot dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} into the chroot"
  in_chroot sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${missing[*]}" >&2
fi
echo "$chroot_dir"
