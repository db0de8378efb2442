#!/usr/bin/env bash
# Prepares the SMC-R kernel test VM: Debian's current 6.1 kernel image and modules, rdma_rxe rebuilt
# with our patch (rxe-6.1-smcr.patch) against linux-headers of the same ABI, the static smc-pair
# tool, and an initramfs holding busybox, iproute2's ip and rdma, kmod's modprobe, Node.js with the
# agent's driver and counter code (dist/agent/node/{driver,discovery}.js and
# dist/agent/observe/counters.js: run `npm run build` first), Debian's bridge and
# host-local CNI plugins, our native erdma-smcr binary and init.sh.
# Downloads and builds are cached in $ERDMA_SMCR_CACHE/smcr-vm (default /var/cache/erdma-smcr).
# With SMCR_VM_KERNEL=trixie the kernel is Debian trixie's 6.12 instead (trixie.sh prepares it:
# IPPROTO_SMC and the BPF path). Both initramfs carry the programs of the transparent scenario
# (transparent.sh, booted with smcr_scenario=transparent), from Debian's packages and unmodified:
# iperf3, CPython 3.11 with its standard library, redis-server and redis-benchmark, Node.js; a Go
# program of ours built with Debian's golang-go (standard library only, CGO off: static); sock-loop;
# and our preload library. The cost scenario (cost.sh, smcr_scenario=cost: bench/smc-cost.ts) times
# connections with smc-cost.
# Usage: build.sh OUTDIR   -> OUTDIR/vmlinuz, OUTDIR/initramfs.gz; prints the kernel ABI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUTDIR}
cache=${ERDMA_SMCR_CACHE:-/var/cache/erdma-smcr}/smcr-vm
log() { echo "smcr-vm: $*" >&2; }

kernel=${SMCR_VM_KERNEL:-bookworm}
modules=(crc32_generic ib_core smc smc_diag udp_tunnel ip6_udp_tunnel ib_uverbs veth llc stp bridge)
# What init.sh loads with insmod, in order (smc itself comes through the agent's modprobe).
load=(crc32_generic ib_core udp_tunnel ip6_udp_tunnel ib_uverbs rdma_rxe veth llc stp bridge)
for p in qemu-system-x86 kmod cpio busybox-static iperf3 python3.11 redis-server redis-tools golang-go rsync musl-tools tcpdump nftables nginx haproxy postgresql-15 curl wrk; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    apt-get install -y -o DPkg::Lock::Timeout=300 --no-install-recommends "$p" >/dev/null
done
if [ "$kernel" = newest ]; then
  # Debian's newest line (trixie-backports), built by newest.sh with SMC, smc_hs_ctrl and DIBS
  # loopback (SMC-D) on; its rxe is network-namespace aware (7.1+), so stock.
  kdir=$("$here/newest.sh")
  abi=$(cat "$kdir/abi")
  # SMC, DIBS and ib_core are built in there (newest.config says why).
  modules=(udp_tunnel ip6_udp_tunnel ib_uverbs_support ib_uverbs veth llc stp bridge)
  load=(udp_tunnel ip6_udp_tunnel ib_uverbs_support ib_uverbs rdma_rxe veth llc stp bridge)
  rxe=$kdir/modules/rdma_rxe.ko
  mkdir -p "$out"
  log "kernel $abi (newest, built from Debian's linux-source)"
elif [ "$kernel" = trixie ]; then
  parts=$("$here/trixie.sh")
  kdir=$(echo "$parts" | sed -n 1p)
  rxe=$(echo "$parts" | sed -n 2p)
  smc_lo=$(echo "$parts" | sed -n 3p)
  abi=$(basename "$kdir")
  mkdir -p "$out"
  log "kernel $abi (trixie)"
else
  # Security updates move the ABI: read the current one each run.
  abi=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\([0-9].*\)$/\1/p' | head -n1)
  [ -n "$abi" ] || { log "cannot find the kernel ABI of linux-image-amd64"; exit 1; }
  version=$(apt-cache show "linux-image-$abi" | sed -n 's/^Version: //p' | head -n1)
  series=$(echo "$abi" | cut -d. -f1,2)
  kdir=$cache/$abi
  mkdir -p "$kdir" "$out"
  log "kernel $abi ($version)"

  missing=()
  for p in "linux-headers-$abi"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get install -y -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >/dev/null
  fi

  # nftables as kube-proxy's nftables mode uses it, and br_netfilter, with every module they need
  # (depmod over the image's modules): the selection suite loads a real kube-proxy's rules for a Service
  # (select.sh), where modprobe brings them in.
  # crc32c_generic: libcrc32c (conntrack, nf_nat) asks the crypto API for crc32c, a module on 6.1.
  netfilter=(nft_ct nft_nat nft_chain_nat nft_masq nft_reject_ipv4 nft_fib_ipv4 br_netfilter crc32c_generic)
  if [ ! -f "$kdir/vmlinuz" ] || [ "$(cat "$kdir/netfilter/.complete" 2>/dev/null)" != "${netfilter[*]}" ]; then
    log "downloading linux-image-$abi"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download "linux-image-$abi=$version" >/dev/null 2>&1)
    dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/x"
    mkdir -p "$kdir/modules"
    unpack() { # file.ko[.xz] destination
      case "$1" in *.xz) xz -dc "$1" > "$2" ;; *) cp "$1" "$2" ;; esac
    }
    for m in "${modules[@]}"; do
      f=$(find "$tmp/x/lib/modules/$abi" -name "$m.ko*" | head -n1)
      [ -n "$f" ] || { log "module $m not in the image package"; exit 1; }
      unpack "$f" "$kdir/modules/$m.ko"
    done
    rm -rf "$kdir/netfilter" && mkdir -p "$kdir/netfilter"
    # The package has no modules.dep (installing it runs depmod): made here.
    depmod -b "$tmp/x" "$abi"
    dep=$tmp/x/lib/modules/$abi/modules.dep
    for m in "${netfilter[@]}"; do
      line=$(grep -E "(^|/)$m\.ko(\.xz)?:" "$dep") || { log "module $m not in the image's modules.dep"; exit 1; }
      for f in $(echo "$line" | tr -d ':'); do
        unpack "$tmp/x/lib/modules/$abi/$f" "$kdir/netfilter/$(basename "${f%.xz}")"
      done
    done
    echo "${netfilter[*]}" > "$kdir/netfilter/.complete"
    cp "$tmp/x/boot/vmlinuz-$abi" "$kdir/vmlinuz.tmp" && mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
    rm -rf "$tmp"
  fi

  key=$(cat "$here/rxe-6.1-smcr.patch" | sha256sum | cut -c1-16)
  rxe=$kdir/rdma_rxe-$key.ko
  if [ ! -f "$rxe" ]; then
    src=$cache/linux-source-$version/rxe
    if [ ! -f "$src/rxe_net.c" ]; then
      log "downloading linux-source-$series ($version) for drivers/infiniband/sw/rxe"
      tmp=$(mktemp -d)
      (cd "$tmp" && apt-get download "linux-source-$series=$version" >/dev/null 2>&1)
      dpkg-deb --fsys-tarfile "$tmp"/linux-source-*.deb | tar -x -C "$tmp" "./usr/src/linux-source-$series.tar.xz"
      tar -xJf "$tmp/usr/src/linux-source-$series.tar.xz" -C "$tmp" "linux-source-$series/drivers/infiniband/sw/rxe"
      mkdir -p "$src"
      cp -r "$tmp/linux-source-$series/drivers/infiniband/sw/rxe/." "$src/"
      rm -rf "$tmp"
    fi
    log "building the patched rdma_rxe"
    b=$(mktemp -d)
    cp -r "$src/." "$b/"
    (cd "$b" && patch -s -p5 < "$here/rxe-6.1-smcr.patch")
    make -s -C "/lib/modules/$abi/build" M="$b" CONFIG_RDMA_RXE=m modules >/dev/null 2>"$b/build.log" || { cat "$b/build.log" >&2; exit 1; }
    cp "$b/rdma_rxe.ko" "$rxe.tmp" && mv "$rxe.tmp" "$rxe"
    rm -rf "$b"
  fi
fi

# The initramfs is cheap to build and holds our freshly built binary: rebuilt every run.
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# The VM's / (mktemp made it 0700): PostgreSQL's server runs as its own user, and must reach /bin.
chmod 755 "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib/modules,opt/cni/bin,proc,sys,dev,etc}
cp /bin/busybox "$root/bin/busybox"
gcc -static -O2 -Wall -Wextra -Werror -o "$root/bin/smc-pair" "$here/smc-pair.c"
cp "$repo/native/build/erdma-smcr" "$root/opt/cni/bin/erdma-smcr"
# Where the agent installs the preload library on a node (and the webhook mounts it from).
mkdir -p "$root/opt/erdma-smcr/lib"
cp "$repo/native/build/libsmc-preload.so" "$root/opt/erdma-smcr/lib/"
ln -s /opt/cni/bin/erdma-smcr "$root/usr/bin/erdma-smcr"
cp /usr/lib/cni/bridge /usr/lib/cni/host-local "$root/opt/cni/bin/"
# Node.js and kmod: the agent's driver pass (test/smcr-vm/driver-pass.mjs) loads smc with modprobe.
node_bin=$(readlink -f "$(command -v node)")
# Copies each ELF file with the shared libraries it needs (ldd), at the same paths.
with_libs() {
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    [ -e "$root$f" ] || cp -L "$f" "$root$f"
    for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
      mkdir -p "$root$(dirname "$lib")"
      [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
  done
}
with_libs /usr/sbin/ip /usr/bin/rdma /usr/bin/kmod /usr/bin/iperf3 "$node_bin" /usr/bin/redis-benchmark \
  /usr/bin/python3.11 /usr/bin/tcpdump /usr/sbin/bpftool /usr/sbin/nft
[ "$node_bin" = /usr/bin/node ] || ln -s "$node_bin" "$root/usr/bin/node"
# The programs of each runtime (test/smcr-vm/runtimes): Debian's redis-server (a name of
# redis-check-rdb, which it execs as), CPython's standard library with its compiled modules and
# their libraries (no tests, no tkinter, no site-packages), our Go program, static. pydoc_data stays:
# DocXMLRPCServer serves its _pydoc.css (without it test_docxmlrpc's test_get_css fails over TCP too).
with_libs /usr/bin/redis-check-rdb
ln -s redis-check-rdb "$root/usr/bin/redis-server"
ln -s python3.11 "$root/usr/bin/python3"
mkdir -p "$root/usr/lib/python3.11"
rsync -a --exclude test --exclude idlelib --exclude tkinter --exclude turtledemo --exclude ensurepip \
  --exclude lib2to3 --exclude 'config-3.11-*' --exclude site-packages --exclude dist-packages \
  /usr/lib/python3.11/ "$root/usr/lib/python3.11/"
with_libs /usr/lib/python3.11/lib-dynload/*.so
# The selection's apps (apps.sh, #99), as Debian ships them: nginx, HAProxy, redis-cli, curl,
# PostgreSQL's server and psql. PostgreSQL's data directory is made here by its own initdb, as its
# user (the server refuses root), small (1 MB WAL segments); the VM's passwd has that user.
with_libs /usr/sbin/nginx /usr/sbin/haproxy /usr/bin/redis-cli /usr/bin/curl /usr/bin/wrk \
  /usr/lib/postgresql/15/bin/postgres /usr/lib/postgresql/15/bin/psql
mkdir -p "$root/usr/share/postgresql" "$root/usr/share/zoneinfo/Etc" "$root/usr/lib/postgresql/15/lib"
cp -r /usr/share/postgresql/15 "$root/usr/share/postgresql/"
cp /usr/lib/postgresql/15/lib/plpgsql.so "$root/usr/lib/postgresql/15/lib/"
cp -L /usr/share/zoneinfo/UTC "$root/usr/share/zoneinfo/UTC"
cp -L /usr/share/zoneinfo/Etc/UTC "$root/usr/share/zoneinfo/Etc/UTC"
pg_uid=$(id -u postgres) pg_gid=$(id -g postgres)
# In /tmp, not $TMPDIR: the benches' and tests' TMPDIR may be root-only (0700), and initdb runs as
# postgres.
pgtmp=$(mktemp -d -p /tmp erdma-smcr-pgdata.XXXXXX)
trap 'rm -rf "$root" "$pgtmp"' EXIT
chown postgres "$pgtmp"
runuser -u postgres -- /usr/lib/postgresql/15/bin/initdb -D "$pgtmp/pgdata" -U postgres -A trust \
  --locale=C --encoding=UTF8 --wal-segsize=1 -N > "$pgtmp/initdb.log" 2>&1 ||
  { cat "$pgtmp/initdb.log" >&2; exit 1; }
echo "host all all 0.0.0.0/0 trust" >> "$pgtmp/pgdata/pg_hba.conf"
cat >> "$pgtmp/pgdata/postgresql.conf" <<EOF
listen_addresses = '*'
unix_socket_directories = '/tmp'
dynamic_shared_memory_type = mmap
shared_buffers = 16MB
max_connections = 20
timezone = 'UTC'
log_timezone = 'UTC'
fsync = off
EOF
cp -a "$pgtmp/pgdata" "$root/pgdata"
rm -rf "$pgtmp"
printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:%s:%s:postgres:/tmp:/bin/sh\n' "$pg_uid" "$pg_gid" > "$root/etc/passwd"
printf 'root:x:0:\npostgres:x:%s:\n' "$pg_gid" > "$root/etc/group"
mkdir -p "$root/runtimes"
cp "$here/runtimes/aget.py" "$here/runtimes/app-get.mjs" "$root/runtimes/"
cp "$here/runtimes/get.py" "$here/runtimes/http.mjs" "$here/runtimes/stop.py" "$here/runtimes/stop.mjs" "$here/runtimes/stop-redis.sh" "$root/runtimes/"
# Debian's golang-go by path: the machine's own Go (1.26 in /usr/local/go) may come first on PATH,
# and the suite's claims (Go's net tests, their known skips) are about the Go Debian ships.
go=/usr/lib/go/bin/go
[ -x "$go" ] || { log "Debian's golang-go missing ($go)"; exit 1; }
(cd "$here/runtimes" && CGO_ENABLED=0 GOFLAGS=-trimpath GOTOOLCHAIN=local GOCACHE=${GOCACHE:-$cache/go-build} "$go" build -ldflags=-s -o "$root/runtimes/go-http" http.go)
file "$root/runtimes/go-http" | grep -q 'statically linked' || { log "go-http is not static"; exit 1; }
# Dynamically linked: the preload library reaches them.
gcc -O2 -Wall -Wextra -Werror -o "$root/bin/sock-loop" "$here/sock-loop.c"
# The same program against musl, dynamically linked, as in an Alpine image: the preload library
# (built against glibc) must load and act there too. musl's loader is its libc.
musl-gcc -O2 -Wall -Wextra -Werror -o "$root/bin/sock-loop-musl" "$here/sock-loop.c"
cp -L /usr/lib/x86_64-linux-musl/libc.so "$root/lib/ld-musl-x86_64.so.1"
gcc -O2 -Wall -Wextra -Werror -o "$root/bin/smc-cost" "$here/smc-cost.c"
gcc -O2 -Wall -Wextra -Werror -o "$root/bin/loopback" "$here/loopback.c"
gcc -O2 -Wall -Wextra -Werror -o "$root/bin/listen-stop" "$here/listen-stop.c" -lpthread
# The selection scenario's option-replaying server (select.sh): a sockops program bpftool loads.
clang -g -O2 -target bpf -I"/usr/include/$(gcc -dumpmachine)" -Wall -Werror -c "$here/replay-option.bpf.c" \
  -o "$root/replay-option.bpf.o"
# The preload library's threads/signals/fork test (native/test/preload_threads.c) under
# ThreadSanitizer, its runtime linked in: where the kernel has AF_SMC the loopback swap runs in every
# racing thread, which it cannot on a machine without SMC.
gcc -std=c11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -fsanitize=thread -static-libtsan \
  -I"$repo/native/src" -I"$repo/native/preload" -o "$root/bin/preload-threads" "$repo/native/test/preload_threads.c" \
  "$repo/native/preload/record.c" "$repo/native/src/selection.c" -ldl -lpthread
ln -s /usr/bin/kmod "$root/usr/sbin/modprobe"
# The agent's modules as built (ES modules importing only Node's own and each other).
mkdir -p "$root/agent"
echo '{"type":"module"}' > "$root/agent/package.json"
# Each keeps its place under dist/ (the VM's / stands for it), so their relative imports hold:
# /agent/node/driver.js imports ../../devices/discovery.js (/devices/discovery.js) and ../host.js;
# programs.js imports ../../constants.js (/constants.js).
for m in agent/node/driver devices/discovery agent/observe/counters agent/observe/programs agent/host; do
  src="$repo/dist/$m.js"
  [ -f "$src" ] || { log "$src is missing: run npm run build first"; exit 1; }
  mkdir -p "$root/$(dirname "$m")"
  cp "$src" "$root/$m.js"
done
cp "$here/driver-pass.mjs" "$root/agent/driver-pass.mjs"
cp "$here/counters.mjs" "$root/agent/counters-read.mjs"
cp "$here/plain-tcp.mjs" "$root/agent/plain-tcp.mjs"
cp "$repo/dist/constants.js" "$root/constants.js"
echo '{"type":"module"}' > "$root/package.json"
for m in "${modules[@]}"; do cp "$kdir/modules/$m.ko" "$root/lib/modules/"; done
printf '%s\n' "${load[@]}" > "$root/lib/modules/load-order"
# SMCR_VM_SMC=lo (trixie only): smc and smc_diag as trixie.sh built them with loopback-ism, in place
# of Debian's (CONFIG_SMC_LO off), so that pods of the VM can talk SMC-D.
if [ "${SMCR_VM_SMC:-stock}" = lo ]; then
  [ "$kernel" = trixie ] || { log "SMCR_VM_SMC=lo needs SMCR_VM_KERNEL=trixie"; exit 1; }
  for m in smc smc_diag; do strip --strip-debug -o "$root/lib/modules/$m.ko" "$smc_lo/$m.ko"; done
  log "smc with loopback-ism ($smc_lo)"
fi
# smc (and smc_diag) also where modprobe looks, with depmod's index.
mkdir -p "$root/lib/modules/$abi/extra"
if [ "$kernel" = newest ]; then
  # Built in: modprobe finds smc (and nftables) in modules.builtin and has nothing to do.
  cp "$kdir/modules.builtin" "$kdir/modules.builtin.modinfo" "$root/lib/modules/$abi/"
  cp "$kdir/modules/br_netfilter.ko" "$root/lib/modules/$abi/extra/"
else
  cp "$kdir/modules/ib_core.ko" "$root/lib/modules/$abi/extra/"
  for m in smc smc_diag; do cp "$root/lib/modules/$m.ko" "$root/lib/modules/$abi/extra/"; done
fi
# bookworm's nftables and br_netfilter (above), for modprobe.
[ "$kernel" != bookworm ] || cp "$kdir"/netfilter/*.ko "$root/lib/modules/$abi/extra/"
depmod -b "$root" "$abi"
cp "$rxe" "$root/lib/modules/rdma_rxe.ko"
install -m 0755 "$here/init.sh" "$root/init"
install -m 0755 "$here/transparent.sh" "$root/transparent.sh"
install -m 0755 "$here/cost.sh" "$root/cost.sh"
for f in pods.sh smcd.sh gain.sh cpython.sh select.sh apps.sh appbench.sh; do install -m 0755 "$here/$f" "$root/$f"; done
# SMCR_VM_PYTEST=1: CPython's own test suite (Debian's libpython3.11-testsuite), for cpython.sh. Only
# then: it adds some 25 MB to the initramfs.
if [ "${SMCR_VM_PYTEST:-0}" = 1 ]; then
  [ -f /usr/lib/python3.11/test/test_socket.py ] ||
    apt-get install -y -o DPkg::Lock::Timeout=300 --no-install-recommends libpython3.11-testsuite >/dev/null
  rsync -a --exclude __pycache__ --exclude decimaltestdata --exclude test_email --exclude test_importlib \
    /usr/lib/python3.11/test/ "$root/usr/lib/python3.11/test/"
  # What the suite expects of a host: localhost resolving from /etc/hosts, service names.
  printf '127.0.0.1 localhost smcr-vm\n::1 localhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
  printf 'hosts: files\nservices: files\nprotocols: files\n' > "$root/etc/nsswitch.conf"
  cp /etc/services /etc/protocols "$root/etc/"
  # A second runtime's own suite (#79 item 5): Go's net package tests, as Debian's golang-go ships
  # them (the standard library's source), built static (CGO off: Go's own resolver, raw system
  # calls, as Go programs in images are), with their testdata. Run under bpf only: a static program
  # never loads the preload library.
  goroot=$("$go" env GOROOT)
  (cd "$goroot/src/net" && CGO_ENABLED=0 GOFLAGS=-trimpath GOTOOLCHAIN=local GOCACHE=${GOCACHE:-$cache/go-build} \
    "$go" test -c -o "$root/bin/go-net.test" net)
  mkdir -p "$root/gonet" && cp -r "$goroot/src/net/testdata" "$root/gonet/"
fi
# SMCR_VM_FILES: a directory whose files the scenario reads, under /files (the selection suite's
# kube-proxy rules).
if [ -n "${SMCR_VM_FILES:-}" ]; then
  mkdir -p "$root/files" && cp -r "$SMCR_VM_FILES/." "$root/files/"
fi
echo "${SMCR_VM_WATCHDOG:-240}" > "$root/watchdog"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 > "$out/initramfs.gz")
cp "$kdir/vmlinuz" "$out/vmlinuz"
echo "$abi"
