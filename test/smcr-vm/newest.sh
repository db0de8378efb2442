#!/usr/bin/env bash
# Prepares the third SMC test VM's kernel: Debian's newest line (trixie-backports, 7.x), built by us.
# Debian builds that line without CONFIG_DIBS, so without CONFIG_SMC, and with it goes the SMC option
# code of the built-in TCP stack (IS_ENABLED(CONFIG_SMC) in include/linux/tcp.h and tcp_output.c):
# no out-of-tree smc.ko can work there, and smc_hs_ctrl (CONFIG_SMC_HS_CTRL_BPF, 6.19+) hooks that
# built-in code too. So the kernel itself is built, from Debian's own linux-source of that line, with
# newest.config (small: what the VM's scenarios use) over allnoconfig, by trixie's compiler in the
# trixie chroot (trixie-chroot.sh). Apt reaches trixie-backports through that chroot's own sources,
# never the system's. Cached in $ERDMA_SMCR_CACHE/smcr-vm/newest by source version and config.
# Usage: newest.sh -> prints the directory holding vmlinuz and modules/*.ko (the ABI is its name).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}/smcr-vm/newest
mirror=${ERDMA_SMCR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { echo "smcr-vm(newest): $*" >&2; }
mkdir -p "$cache"

# What building a kernel with BTF asks of the chroot: bc, bison, flex, libelf, pahole (dwarves).
chroot_dir=$("$here/trixie-chroot.sh" bc bison flex libelf-dev libssl-dev dwarves python3-minimal cpio kmod zstd)
in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# One builder at a time (two VM suites may ask at once).
exec 8>"$cache/.lock"
flock 8

list=/etc/apt/sources.list.d/erdma-smcr-backports.list
if [ ! -f "$chroot_dir$list" ]; then
  echo "deb $mirror trixie-backports main" > "$chroot_dir$list"
  in_chroot apt-get update -qq >&2
fi
# The newest linux-source-X.Y that trixie-backports serves, and its version.
pkg=$(in_chroot apt-cache search --names-only '^linux-source-[0-9]+\.[0-9]+$' | cut -d' ' -f1 | sort -V | tail -n1)
[ -n "$pkg" ] || { in_chroot apt-get update -qq >&2; pkg=$(in_chroot apt-cache search --names-only '^linux-source-[0-9]+\.[0-9]+$' | cut -d' ' -f1 | sort -V | tail -n1); }
[ -n "$pkg" ] || { log "trixie-backports serves no linux-source package"; exit 1; }
version=$(in_chroot apt-cache policy "$pkg" | sed -n 's/^  Candidate: //p')
series=${pkg#linux-source-}
key=$(printf '%s\n' "$version" "$(sha256sum < "$here/newest.config" | cut -c1-16)" | sha256sum | cut -c1-12)
kdir=$cache/$series-$key
if [ -f "$kdir/vmlinuz" ]; then echo "$kdir"; exit 0; fi

src=$cache/src-$version
if [ ! -f "$src/.complete" ]; then
  log "downloading $pkg ($version)"
  rm -rf "$chroot_dir/tmp/ls" && mkdir -p "$chroot_dir/tmp/ls"
  in_chroot sh -c "cd /tmp/ls && apt-get download -qq $pkg=$version" >&2
  rm -rf "$src" && mkdir -p "$src"
  dpkg-deb --fsys-tarfile "$chroot_dir"/tmp/ls/linux-source-*.deb |
    tar -x -O "./usr/src/$pkg.tar.xz" | tar -xJ -C "$src" --strip-components=1
  rm -rf "$chroot_dir/tmp/ls"
  touch "$src/.complete"
fi

started=$SECONDS
log "building $series ($version) with newest.config: cold, about 9 minutes on 2 cores"
b=$chroot_dir/tmp/kbuild
rm -rf "$b" && mkdir -p "$b"
cp "$here/newest.config" "$b/fragment.config"
# The source is read in place through a bind mount; objects go to O=, in the chroot's /tmp.
mkdir -p "$chroot_dir/usr/src/linux"
mountpoint -q "$chroot_dir/usr/src/linux" || mount --bind "$src" "$chroot_dir/usr/src/linux"
# objtool reads its stack limit from /proc.
mountpoint -q "$chroot_dir/proc" || mount -t proc proc "$chroot_dir/proc"
trap 'umount "$chroot_dir/usr/src/linux" "$chroot_dir/proc" 2>/dev/null || true' EXIT
jobs=$(nproc)
in_chroot sh -c "cd /usr/src/linux && make -s O=/tmp/kbuild allnoconfig >/dev/null &&
  scripts/kconfig/merge_config.sh -m -O /tmp/kbuild /tmp/kbuild/.config /tmp/kbuild/fragment.config >/dev/null &&
  make -s O=/tmp/kbuild olddefconfig >/dev/null" >&2
# Every option the fragment asks for must have survived olddefconfig (a renamed or dependent option
# is dropped silently otherwise).
missing=$(grep -E '^CONFIG_[A-Z0-9_]+=[ym]' "$here/newest.config" | while read -r want; do
  grep -qx "$want" "$b/.config" || echo "$want"; done)
[ -z "$missing" ] || { log "options lost by olddefconfig: $(echo $missing)"; exit 1; }
in_chroot sh -c "cd /usr/src/linux && make -s -j$jobs O=/tmp/kbuild bzImage modules" > "$cache/build.log" 2>&1 ||
  { tail -n 40 "$cache/build.log" >&2; exit 1; }
abi=$(cat "$b/include/config/kernel.release")
mkdir -p "$kdir.tmp/modules"
find "$b" -name '*.ko' -exec cp {} "$kdir.tmp/modules/" \;
cp "$b/arch/x86/boot/bzImage" "$kdir.tmp/vmlinuz"
cp "$b/.config" "$kdir.tmp/config"
cp "$b/modules.builtin" "$b/modules.builtin.modinfo" "$kdir.tmp/"
echo "$abi" > "$kdir.tmp/abi"
echo "$((SECONDS - started))" > "$kdir.tmp/build-seconds"
rm -rf "$kdir" && mv "$kdir.tmp" "$kdir"
rm -rf "$b"
log "built $abi in $((SECONDS - started)) s"
echo "$kdir"
