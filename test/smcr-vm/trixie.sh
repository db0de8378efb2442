#!/usr/bin/env bash
# Prepares the kernel parts of the second SMC-R test VM: Debian trixie's 6.12 kernel (IPPROTO_SMC,
# BTF, fmod_ret), its modules, and rdma_rxe rebuilt with rxe-6.12-smcr.patch by trixie's own
# compiler in a trixie chroot (mmdebstrap). Apt reaches trixie through a sources list kept in the
# cache, never in the system's configuration. Everything is cached in
# $ERDMA_SMCR_CACHE/smcr-vm/trixie (default /var/cache/erdma-smcr): the chroot once, the kernel once
# per ABI, rdma_rxe once per patch.
# Usage: trixie.sh -> prints the directory holding vmlinuz, modules/*.ko and rdma_rxe-<key>.ko; the
# patched rdma_rxe; the directory holding smc.ko and smc_diag.ko built with loopback-ism.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}/smcr-vm/trixie
log() { echo "smcr-vm(trixie): $*" >&2; }
mkdir -p "$cache"

chroot_dir=$("$here/trixie-chroot.sh")
in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

abi=$(in_chroot dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/.*linux-headers-\([0-9][^ ,]*\).*/\1/p')
[ -n "$abi" ] || { log "cannot read the kernel ABI from the chroot's linux-headers-amd64"; exit 1; }
version=$(in_chroot dpkg-query -W -f='${Version}' "linux-headers-$abi")
series=$(echo "$abi" | cut -d. -f1,2)
kdir=$cache/$abi
mkdir -p "$kdir"

modules=(crc32_generic ib_core smc smc_diag udp_tunnel ip6_udp_tunnel ib_uverbs veth llc stp bridge)
if [ ! -f "$kdir/vmlinuz" ]; then
  log "downloading linux-image-$abi ($version)"
  rm -rf "$chroot_dir/tmp/k" && mkdir -p "$chroot_dir/tmp/k"
  in_chroot sh -c "apt-get update -qq && cd /tmp/k && apt-get download -qq linux-image-$abi=$version" >&2
  dpkg-deb -x "$chroot_dir"/tmp/k/linux-image-*.deb "$chroot_dir/tmp/k/x"
  mkdir -p "$kdir/modules"
  for m in "${modules[@]}"; do
    # trixie ships modules under /usr/lib/modules (merged /usr).
    f=$(find "$chroot_dir/tmp/k/x/usr/lib/modules/$abi" "$chroot_dir/tmp/k/x/lib/modules/$abi" -name "$m.ko*" 2>/dev/null | head -n1 || true)
    [ -n "$f" ] || { log "module $m not in the image package"; exit 1; }
    case "$f" in
      *.xz) xz -dc "$f" > "$kdir/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" > "$kdir/modules/$m.ko" ;;
      *) cp "$f" "$kdir/modules/$m.ko" ;;
    esac
  done
  cp "$chroot_dir/tmp/k/x/boot/vmlinuz-$abi" "$kdir/vmlinuz.tmp" && mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
  rm -rf "$chroot_dir/tmp/k"
fi

# The parts of Debian's own linux-source this suite builds: rdma_rxe, and net/smc for loopback-ism.
srcs=$cache/linux-source-$version
if [ ! -f "$srcs/rxe/rxe_net.c" ] || [ ! -f "$srcs/smc/smc_loopback.c" ]; then
  log "downloading linux-source-$series ($version) for drivers/infiniband/sw/rxe and net/smc"
  rm -rf "$chroot_dir/tmp/s" && mkdir -p "$chroot_dir/tmp/s"
  in_chroot sh -c "apt-get update -qq && cd /tmp/s && apt-get download -qq linux-source-$series=$version" >&2
  dpkg-deb --fsys-tarfile "$chroot_dir"/tmp/s/linux-source-*.deb | tar -x -C "$chroot_dir/tmp/s" "./usr/src/linux-source-$series.tar.xz"
  tar -xJf "$chroot_dir/tmp/s/usr/src/linux-source-$series.tar.xz" -C "$chroot_dir/tmp/s" \
    "linux-source-$series/drivers/infiniband/sw/rxe" "linux-source-$series/net/smc"
  rm -rf "$srcs/rxe" "$srcs/smc" && mkdir -p "$srcs/rxe" "$srcs/smc"
  cp -r "$chroot_dir/tmp/s/linux-source-$series/drivers/infiniband/sw/rxe/." "$srcs/rxe/"
  cp -r "$chroot_dir/tmp/s/linux-source-$series/net/smc/." "$srcs/smc/"
  rm -rf "$chroot_dir/tmp/s"
fi
src=$srcs/rxe

# smc.ko and smc_diag.ko with loopback-ism (CONFIG_SMC_LO, off in Debian's config), from the same
# source, against the same headers: the module Debian would ship with that option on. The headers'
# autoconf.h lacks CONFIG_SMC_LO, so the C code is told too (IS_ENABLED reads the macro).
lo=$kdir/smc-lo-$(printf '%s\n' "$version" "$(sha256sum < "$0" | cut -c1-16)" | sha256sum | cut -c1-16)
if [ ! -f "$lo/smc.ko" ] || [ ! -f "$lo/smc_diag.ko" ]; then
  log "building smc with loopback-ism (CONFIG_SMC_LO) for $abi"
  rm -rf "$chroot_dir/tmp/smc" && mkdir -p "$chroot_dir/tmp/smc"
  cp -r "$srcs/smc/." "$chroot_dir/tmp/smc/"
  in_chroot make -s -C "/lib/modules/$abi/build" M=/tmp/smc CONFIG_SMC=m CONFIG_SMC_DIAG=m CONFIG_SMC_LO=y \
    KCFLAGS=-DCONFIG_SMC_LO=1 modules > "$cache/smc-lo-build.log" 2>&1 ||
    { cat "$cache/smc-lo-build.log" >&2; exit 1; }
  mkdir -p "$lo.tmp"
  cp "$chroot_dir/tmp/smc/smc.ko" "$chroot_dir/tmp/smc/smc_diag.ko" "$lo.tmp/"
  rm -rf "$lo" && mv "$lo.tmp" "$lo"
  rm -rf "$chroot_dir/tmp/smc"
fi

key=$(sha256sum < "$here/rxe-6.12-smcr.patch" | cut -c1-16)
rxe=$kdir/rdma_rxe-$key.ko
if [ ! -f "$rxe" ]; then
  log "building the patched rdma_rxe for $abi"
  rm -rf "$chroot_dir/tmp/rxe" && mkdir -p "$chroot_dir/tmp/rxe"
  cp -r "$src/." "$chroot_dir/tmp/rxe/"
  (cd "$chroot_dir/tmp/rxe" && patch -s -p5 < "$here/rxe-6.12-smcr.patch")
  in_chroot make -s -C "/lib/modules/$abi/build" M=/tmp/rxe CONFIG_RDMA_RXE=m modules > "$cache/rxe-build.log" 2>&1 ||
    { cat "$cache/rxe-build.log" >&2; exit 1; }
  cp "$chroot_dir/tmp/rxe/rdma_rxe.ko" "$rxe.tmp" && mv "$rxe.tmp" "$rxe"
fi
echo "$kdir"
echo "$rxe"
echo "$lo"
