# Sourced by init.sh when the VM boots with smcr_scenario=gain (bench/smc-gain.ts): what SMC gives
# two pods of one node, against plain TCP between two plain pods in the same boot. With smc built
# with loopback-ism (SMCR_VM_SMC=lo) the annotated pairs talk SMC-D; with Debian's smc, SMC-R over
# Soft-RoCE. Pairs: a-b annotated with the kernel's default SMC buffers (net.smc.wmem/rmem 64 KiB),
# e-f and g-h annotated with 1 and 4 MiB buffers through the webhook's settings annotation (as the
# smcr.erdma.io/wmem and rmem annotations resolve), c-d without the annotation. Per pair, with
# test/smcr-vm/smc-cost.c: bulk transfers of several sizes on one connection, request/response of
# 1 byte and 16 KiB on one long-lived connection, and short connections (a new one per 100-byte
# exchange). Every result is a "SMCRVM gain ..." line, then the client pod's SMC counters.
mkdir -p /sys/fs/bpf
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
ON='{"network.alibabacloud.com/erdma-smcr":"true"}'
buffers() { echo '{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/settings":"{\"version\":1,\"sysctls\":{\"net.smc.wmem\":\"'"$1"'\",\"net.smc.rmem\":\"'"$1"'\"}}"}'; }
BIG=$(buffers 1048576)
HUGE=$(buffers 4194304)
pod_add a "$ON"
pod_add b "$ON"
pod_add e "$BIG"
pod_add f "$BIG"
pod_add g "$HUGE"
pod_add h "$HUGE"
pod_add c '{}'
pod_add d '{}'
say "wmem_e=$(ip netns exec e cat /proc/sys/net/smc/wmem) rmem_f=$(ip netns exec f cat /proc/sys/net/smc/rmem) wmem_g=$(ip netns exec g cat /proc/sys/net/smc/wmem)"

SIZES=$(sed -n 's/.*smcr_gain_sizes=\([0-9,]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
[ -n "$SIZES" ] || SIZES="16777216 268435456 1073741824"
N=$(sed -n 's/.*smcr_gain_n=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$N" ] || N=3000

gain() { # pair client server port (the server also listens on port+1)
  eval "dst=\$IP_$3"
  ip netns exec "$3" /bin/smc-cost server "$4" > /dev/null 2>&1 &
  spid=$!
  sleep 1
  for size in $SIZES; do
    say "gain pair=$1 $(ip netns exec "$2" /bin/smc-cost client "$dst" "$4" bulk "$size")"
  done
  say "gain pair=$1 $(ip netns exec "$2" env SMC_COST_SIZE=1 /bin/smc-cost client "$dst" "$4" pingpong "$N")"
  say "gain pair=$1 $(ip netns exec "$2" env SMC_COST_SIZE=16384 /bin/smc-cost client "$dst" "$4" pingpong $((N / 3)))"
  say "gain pair=$1 $(ip netns exec "$2" /bin/smc-cost client "$dst" "$4" rr $((N / 10)))"
  say "gain pair=$1 stats=$(erdma-smcr smc stats --netns "/run/netns/$2" 2>&1 | tr -d '\n')"
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
}

# TCP first and last: the spread of the baseline within the boot.
gain tcp c d 9000
gain smc a b 9010
gain smc1m e f 9020
gain smc4m g h 9040
gain tcp2 c d 9030
