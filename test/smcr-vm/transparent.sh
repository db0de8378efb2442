# Sourced by init.sh when the VM boots with smcr_scenario=transparent: unmodified programs from
# Debian's packages (iperf3, dynamically linked; busybox, static) between pods set up by our CNI
# chain, with no AF_SMC in any of them. The node's mechanism is what `erdma-smcr mechanisms` finds:
# on trixie's 6.12, the IPPROTO_SMC BPF program (loaded and pinned as the agent does, switched on
# per pod netns by our plugin); on bookworm's 6.1, the preload library (LD_PRELOAD as the webhook
# injects it, for the annotated pods only).
mkdir -p /sys/fs/bpf
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
mech=$(echo "$mechs" | sed -n 's/^{"mechanism":"\([a-z0-9]*\)".*/\1/p')
say "mechanism=$mech"
PRELOAD=LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so
case "$mech" in
  bpf)
    erdma-smcr bpf load || fail "bpf load"
    ON='{"network.alibabacloud.com/erdma-smcr":"true"}'
    ENV_ON=""
    ;;
  preload)
    ON='{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/mechanism":"preload"}'
    ENV_ON=$PRELOAD
    ;;
  *) fail "no transparent mechanism on this kernel: $mechs" ;;
esac

pod_add a "$ON"
pod_add b "$ON"
pod_add c '{}'
pod_add d '{}'
say "bpf_status=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
say "state_a=$(cat /run/erdma-smcr/state/a_eth0.json 2>/dev/null)"

# Connections a pod's netns holds: SMC sockets past LISTEN plus plain TCP beyond them.
conns() {
  n=$(erdma-smcr smc sockets --netns "/run/netns/$1" 2>/dev/null | grep -o '"state":"[A-Z_0-9]*"' | grep -vc LISTEN)
  p=$(erdma-smcr smc summary --netns "/run/netns/$1" 2>/dev/null | sed -n 's/.*"plainTcp":\([0-9]*\).*/\1/p')
  echo $((n + ${p:-0}))
}
# Under TCG, and more so on a loaded CI machine, a connection can take seconds to be set up: wait
# (up to 6 s, within the run) until both ends hold the number expected, rather than sleeping a fixed time.
settle() { # client server count
  i=0
  while [ $i -lt 30 ]; do
    [ "$(conns "$1")" -ge "$3" ] && [ "$(conns "$2")" -ge "$3" ] && return 0
    sleep 0.2
    i=$((i + 1))
  done
  say "settle=$1-$2 wanted=$3 client=$(conns "$1") server=$(conns "$2")"
}

observe() { # label client server
  for ns in "$2" "$3"; do
    say "${1}_sockets_$ns=$(erdma-smcr smc sockets --netns /run/netns/$ns 2>&1 | tr -d '\n')"
    say "${1}_summary_$ns=$(erdma-smcr smc summary --netns /run/netns/$ns 2>&1 | tr -d '\n')"
  done
}

iperf() { # client server port env
  eval "dst=\$IP_$2"
  ip netns exec "$2" env $4 iperf3 -s -1 -p "$3" > "/run/iperf-s-$2.out" 2>&1 &
  spid=$!
  sleep 1
  before=$(sent "$1")
  ip netns exec "$1" env $4 iperf3 -c "$dst" -p "$3" -t 8 > "/run/iperf-c-$1.out" 2>&1 &
  cpid=$!
  # iperf3's control connection and its data stream.
  settle "$1" "$2" 2
  observe "iperf" "$1" "$2"
  wait $cpid
  crc=$?
  wait $spid
  after=$(sent "$1")
  say "iperf=$1-$2 rc=$crc client=\"$(grep -E 'sender|receiver|error' "/run/iperf-c-$1.out" | tr -s ' ' | tr '\n' ' ')\" rdma_sent_pkts=$((after - before))"
}

iperf a b 5201 "$ENV_ON"
iperf c d 5202 ""

# A statically linked program in an SMC-R pod: busybox's nc ignores LD_PRELOAD (there is no dynamic
# loader to read it), so under the preload mechanism its connection stays on TCP and the summary
# counts it as plain TCP; under the BPF program it becomes SMC like any other.
eval "dst=\$IP_b"
# busybox nc ends when its stdin does: the server's is held open as long as the client's.
sleep 10 | ip netns exec b env $ENV_ON /bin/busybox nc -l -p 5300 > /dev/null 2>&1 &
spid=$!
sleep 1
( dd if=/dev/zero bs=65536 count=16 2>/dev/null; sleep 8 ) | ip netns exec a env $ENV_ON /bin/busybox nc "$dst" 5300 &
cpid=$!
settle a b 1
observe "static" a b
kill $cpid $spid 2>/dev/null
wait $cpid $spid 2>/dev/null

out=$(ours CHECK a "$ON" "$(cat /run/prev-a.json)" 2>&1); say "check_a=$? check_a_out=\"$(echo "$out" | tr -d '"\n')\""
out=$(ours DEL a "$ON" "$(cat /run/prev-a.json)" 2>&1); say "del_a=$? $out"
say "bpf_status_after_del=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
if [ "$mech" = bpf ]; then
  erdma-smcr bpf unload || fail "bpf unload"
  out=$(ours CHECK b "$ON" "$(cat /run/prev-b.json)" 2>&1); say "check_b_after_unload=$? check_b_out=\"$(echo "$out" | tr -d '"\n')\""
  say "bpf_after_unload=$([ -e /sys/fs/bpf/erdma-smcr ] && echo present || echo gone) switched_off=$(erdma-smcr bpf enable --netns /run/netns/b 2>&1 | tr -d '\n' | tr ' ' _)"
fi
