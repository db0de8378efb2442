#!/usr/bin/env bash
# Boots the test VM's kernel N times with a minimal init (busybox prints a marker and powers off)
# and counts the boots that panicked. It reproduces a boot-time race of qemu's multi-threaded TCG:
# a vCPU runs a stale translation of kernel text the other vCPU has just live-patched, and the guest
# dies with `Oops: int3` (sched_clock_cpu, trixie's 6.12: about 1 boot in 280 with `-accel tcg`).
# test/helpers/vm.ts boots with `tcg,thread=single` for that reason.
# Usage: boot-loop.sh N [ACCEL] [SMP]   (ACCEL default tcg,thread=single; SMP default 2)
#   SMCR_VM_KERNEL=trixie|bookworm picks the kernel as build.sh does. Panicked consoles are kept in
#   $BOOT_LOOP_KEEP (default: a temporary directory, printed at the end).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: boot-loop.sh N [ACCEL] [SMP]}
accel=${2:-tcg,thread=single}
smp=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${BOOT_LOOP_KEEP:-$(mktemp -d)}

bash "$here/build.sh" "$work/vm" >/dev/null 2>"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
mkdir -p "$work/root/bin"
cp /bin/busybox "$work/root/bin/busybox"
printf '#!/bin/busybox sh\n/bin/busybox echo BOOT-LOOP-OK\n/bin/busybox poweroff -f\n' >"$work/root/init"
chmod +x "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc 2>/dev/null | gzip >"$work/init.gz")

ok=0 panicked=0 other=0
for i in $(seq 1 "$n"); do
  out=$(timeout 120 qemu-system-x86_64 -accel "$accel" -cpu max -smp "$smp" -m 1024 -nic none \
    -kernel "$work/vm/vmlinuz" -initrd "$work/init.gz" -append 'console=ttyS0 panic=-1 quiet' \
    -nographic -no-reboot 2>&1 || true)
  if grep -q BOOT-LOOP-OK <<<"$out"; then
    ok=$((ok + 1))
  elif grep -q 'Kernel panic' <<<"$out"; then
    panicked=$((panicked + 1))
    printf '%s\n' "$out" >"$keep/panic-$i.log"
  else
    other=$((other + 1))
    printf '%s\n' "$out" >"$keep/other-$i.log"
  fi
done
echo "accel=$accel smp=$smp: $n boots, $ok booted, $panicked panicked, $other other (consoles in $keep)"
[ "$panicked" -eq 0 ] && [ "$other" -eq 0 ]
