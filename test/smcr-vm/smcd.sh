# Sourced by init.sh when the VM boots with smcr_scenario=smcd, on trixie's 6.12 with smc.ko built
# with loopback-ism (CONFIG_SMC_LO: trixie.sh): pods of one node talk SMC-D through shared memory.
# The annotated pods a and b also have an RDMA device each (Soft-RoCE, PNETID mapped as the agent
# does): the CLC handshake still chooses SMC-D v2 over SMC-R, as on an eRDMA node whose kernel has
# loopback-ism (Alibaba Cloud Linux 4). The same programs as transparent.sh, unmodified, between
# a and b; between c and d (no annotation) they stay TCP; from an annotated pod to an unannotated
# one the connection falls back and delivers its bytes; and inside one pod, a sidecar over
# 127.0.0.1 and over the pod's own address.
mkdir -p /sys/fs/bpf
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
ON='{"network.alibabacloud.com/erdma-smcr":"true"}'
pod_add a "$ON"
pod_add b "$ON"
pod_add c '{}'
pod_add d '{}'
say "state_a=$(cat /run/erdma-smcr/state/a_eth0.json 2>/dev/null)"

. /pods.sh

iperf a b 5201 ""
iperf c d 5202 ""

runtimes_setup c d
runtimes a b 8000 ""
runtimes c d 8100 ""

# An annotated pod's client to a server in a pod without the annotation: SMC falls back (the peer's
# SYN carries no SMC option) and the bytes arrive.
runtime mixed_a a c 8201 1 "" "python3 -m http.server 8201 --directory /srv" \
  "python3 /runtimes/get.py http://\$dst:8201/blob"

# Inside one pod: a sidecar and its app, over 127.0.0.1 and over the pod's own address. The pod's
# netns is switched on, so both ends are SMC sockets; loopback-ism serves lo too.
IP_self=$IP_a
runtime inpod_lo a a 8301 1 "" "node /runtimes/http.mjs serve 8301" \
  "node /runtimes/http.mjs get http://127.0.0.1:8301/bytes/$B"
runtime inpod_ip a a 8302 1 "" "node /runtimes/http.mjs serve 8302" \
  "node /runtimes/http.mjs get http://$IP_self:8302/bytes/$B"

# The preload library's loopback swap, in a pod without the annotation so that only the library
# acts: on a kernel with loopback-ism a loopback connection is SMC-D and gains, so the library
# swaps nothing (before=43 after=43 nonblocking=43) and all three connections are SMC-D in the
# pod's counters.
stats_c() { erdma-smcr smc stats --netns /run/netns/c 2>&1 | tr -d ' \n'; }
say "loopback_stats_0=$(stats_c)"
say "loopback_preload=\"$(ip netns exec c env LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so /bin/loopback)\""
say "loopback_stats_1=$(stats_c)"
