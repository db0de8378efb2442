#!/bin/busybox sh
# /init of the SMC-R test VM (Debian's 6.1 kernel, patched rdma_rxe standing in for eRDMA).
# Two "pods" get their network from Debian's bridge plugin and then our erdma-smcr plugin (the
# SMC-R annotation in runtimeConfig), the host side is done with our binary as the node agent
# does it, and an AF_SMC connection between them must run as SMC-R, with RDMA counters moving.
# A second pair without the annotation must fall back to TCP. Then CHECK and DEL of our plugin.
# Every result is a "SMCRVM key=value" line on the console; the test on the host reads them.
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/bin:/sbin
# busybox sh prefers its own applets over PATH, and its ip has no netns support: name iproute2's.
ip() { /usr/sbin/ip "$@"; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /run /tmp /var
mount -t tmpfs run /run
mount -t tmpfs tmp /tmp
ln -s /run /var/run
echo 1 > /proc/sys/kernel/sysrq

say() { echo "SMCRVM $*"; }
finish() { say "DONE $1"; sync; echo b > /proc/sysrq-trigger; }
fail() { say "FAIL $*"; finish fail; sleep 60; }

# A failed SMC-R link setup can hang tasks uninterruptibly: the watchdog reboots regardless.
( sleep "$(cat /watchdog)"; say "FAIL watchdog fired"; echo b > /proc/sysrq-trigger ) &

# The modules this kernel needs, in order (build.sh writes the list per kernel).
for m in $(cat /lib/modules/load-order); do
  insmod "/lib/modules/$m.ko" || fail "insmod $m"
done
# smc is loaded by the node agent's own driver code (agent.manageDriver, preferDriver default)
# with the VM's real modprobe; the erdma module it also tries is not in the VM.
node /agent/driver-pass.mjs || fail "the agent's driver pass crashed"
# (A kernel with SMC built in has no /sys/module/smc: its sysctls say it is there.)
[ -d /sys/module/smc ] || [ -d /proc/sys/net/smc ] || fail "smc not loaded by the agent's driver pass"
[ ! -f /lib/modules/smc_diag.ko ] || insmod /lib/modules/smc_diag.ko || fail "insmod smc_diag"
say "kernel=$(uname -r) modules=loaded"
ip link set lo up

# Benchmark mode (bench/smc.ts boots with smcr_bench=N): N network namespaces, each holding an
# open AF_SMC connection (over loopback, so on TCP) and its listener, then the CPU time of reading
# them all as the agent does (one call for all) against one call per namespace.
n=$(sed -n 's/.*smcr_bench=\([0-9]*\).*/\1/p' /proc/cmdline)
if [ -n "$n" ]; then
  args=""
  for i in $(seq 1 "$n"); do
    ip netns add "bench$i" && ip -n "bench$i" link set lo up || fail "netns bench$i"
    ip netns exec "bench$i" /bin/smc-pair server 6000 1 > /dev/null 2>&1 &
    args="$args --netns /run/netns/bench$i"
  done
  sleep 1
  for i in $(seq 1 "$n"); do
    SMCPAIR_HOLD=/run/bench-release ip netns exec "bench$i" /bin/smc-pair client 127.0.0.1 6000 1 > /dev/null 2>&1 &
  done
  for i in $(seq 1 100); do
    [ "$(erdma-smcr smc summary --netns /run/netns/bench$n 2>/dev/null | sed -n 's/.*"sockets":\([0-9]*\).*/\1/p')" = 2 ] && break
    sleep 0.2
  done
  say "bench_check=$(erdma-smcr smc summary $args | grep -c '"sockets":2,')"
  # CPU time in clock ticks from /proc/self/stat of a shell that runs the work (utime+stime of its children).
  ticks() { sh -c "$1 > /dev/null; cat /proc/\$\$/stat" | awk '{print $16 + $17}'; }
  for round in 1 2 3; do
    batch=$(ticks "erdma-smcr smc summary $args")
    each=$(ticks "for i in \$(seq 1 $n); do erdma-smcr smc summary --netns /run/netns/bench\$i; done")
    say "bench_round=$round pods=$n batch_ticks=$batch each_ticks=$each hz=$(getconf CLK_TCK 2>/dev/null || echo 100)"
  done
  touch /run/bench-release
  finish ok
  sleep 60
fi

PNET=ERDMATEST0001
UEID=SMCRTEST-UEID
SMCR='{"network.alibabacloud.com/erdma-smcr":"true"}'
mkdir -p /run/erdma-smcr /run/cni /etc/cni
# What the node agent writes: the PNETID pods get.
echo "$PNET" > /run/erdma-smcr/pnetid
cat > /etc/cni/bridge.json <<EOF
{"cniVersion":"1.0.0","name":"pods","type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"host-local","subnet":"10.88.0.0/24","dataDir":"/run/cni/ipam"}}
EOF

ours_conf() { # prevResult annotations
  echo '{"cniVersion":"1.0.0","name":"pods","type":"erdma-smcr","pnetIdFile":"/run/erdma-smcr/pnetid","stateDir":"/run/erdma-smcr/state","logFile":"/run/erdma-smcr/cni.log","runtimeConfig":{"io.kubernetes.cri.pod-annotations":'"$2"'},"prevResult":'"$1"'}'
}

ours() { # command pod annotations prevResult
  ours_conf "$4" "$3" | CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_NETNS=/run/netns/$2 CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin \
    CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$2;K8S_POD_UID=uid-$2" /opt/cni/bin/erdma-smcr
}

pod_add() { # name annotations [nordma] -> sets IP_<name>
  err=$(ip netns add "$1" 2>&1) || fail "netns $1: $err"
  ip -n "$1" link set lo up
  prev=$(CNI_COMMAND=ADD CNI_CONTAINERID=$1 CNI_NETNS=/run/netns/$1 CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin /opt/cni/bin/bridge < /etc/cni/bridge.json) || fail "bridge ADD $1: $prev"
  echo "$prev" > "/run/prev-$1.json"
  out=$(ours ADD "$1" "$2" "$prev" 2>/run/ours-$1.err) || fail "erdma-smcr ADD $1: $out $(cat /run/ours-$1.err)"
  say "pod=$1 bridge_result=$(echo "$prev" | tr -d '\n') our_result=$(echo "$out" | tr -d '\n')"
  ip=$(echo "$prev" | tr -d ' \n' | sed -n 's/.*"address":"\([0-9.]*\)\/.*/\1/p')
  [ -n "$ip" ] || fail "no IPv4 address in the bridge result for $1: $prev"
  eval "IP_$1=$ip"
  say "pod=$1 ip=$ip annotated=$([ "$2" = '{}' ] && echo no || echo yes) pnet_eth0=\"$(erdma-smcr pnet list --netns /run/netns/$1 | tr '\n' ' ')\""
  # A pod with no RDMA device (third argument nordma): an SMC peer that shares none with us.
  [ "$3" = nordma ] && return 0
  # The node's RDMA device for this pod's interface (eRDMA on real nodes; Soft-RoCE here).
  ip netns exec "$1" rdma link add "rxe_$1" type rxe netdev eth0 || fail "rdma link add rxe_$1"
  # Host side, as the agent does it: the device's PNETID in the initial netns.
  erdma-smcr pnet add --id "$PNET" --ib "rxe_$1" --port 1 || fail "pnet add ib rxe_$1"
}

sent() { rdma statistic show link "rxe_$1/1" | sed -n 's/.* sent_pkts \([0-9]*\).*/\1/p'; }

pair() { # client server port [server address: IPv6 makes both ends IPv6]
  v6=""; case "$4" in *:*) v6=1 ;; esac
  SMCPAIR_V6=$v6 timeout 90 /usr/sbin/ip netns exec "$2" /bin/smc-pair server "$3" 4194304 > "/run/server-$2.out" 2>&1 &
  spid=$!
  sleep 1
  before=$(sent "$1")
  say "agent_counters_before_$1=$(node /agent/counters-read.mjs "rxe_$1")"
  eval "dst=\$IP_$2"
  [ -n "$4" ] && dst=$4
  rm -f "/run/release-$1"
  SMCPAIR_HOLD="/run/release-$1" timeout 60 /usr/sbin/ip netns exec "$1" /bin/smc-pair client "$dst" "$3" 4194304 > "/run/client-$1.out" 2>&1 &
  cpid=$!
  # While the connection is held open after the transfer: what our binary reads from the kernel.
  for i in $(seq 1 400); do grep -q '^SMCPAIR client' "/run/client-$1.out" 2>/dev/null && break; sleep 0.1; done
  after=$(sent "$1")
  say "agent_counters_after_$1=$(node /agent/counters-read.mjs "rxe_$1")"
  for ns in "$1" "$2"; do
    say "smc_sockets_$ns=$(erdma-smcr smc sockets --netns /run/netns/$ns 2>&1 | tr -d '\n')"
    say "smc_summary_$ns=$(erdma-smcr smc summary --netns /run/netns/$ns 2>&1 | tr -d '\n')"
    say "smc_stats_$ns=$(erdma-smcr smc stats --netns /run/netns/$ns 2>&1 | tr -d '\n')"
  done
  say "hw_counters_$1=\"$(cd /sys/class/infiniband/rxe_$1/ports/1/hw_counters 2>/dev/null && for f in *; do printf '%s:%s ' "$f" "$(cat "$f")"; done)\""
  touch "/run/release-$1"
  wait $cpid
  wait $spid
  say "pair=$1-$2 client=\"$(cat /run/client-$1.out | tr '\n' ' ')\" server=\"$(cat /run/server-$2.out | grep -v listening | tr '\n' ' ')\" rdma_sent_pkts=$((after - before))"
}

erdma-smcr ueid add "$UEID" || fail "ueid add"
say "ueid=$(erdma-smcr ueid list | tr '\n' ' ')"

if grep -q 'smcr_scenario=cost' /proc/cmdline; then
  . /cost.sh
  finish ok
  sleep 60
fi

for scenario in smcd gain cpython select appbench; do
  if grep -q "smcr_scenario=$scenario" /proc/cmdline; then
    . "/$scenario.sh"
    finish ok
    sleep 60
  fi
done

if grep -q 'smcr_scenario=transparent' /proc/cmdline; then
  . /transparent.sh
  finish ok
  sleep 60
fi

pod_add a "$SMCR"
pod_add b "$SMCR"
pair a b 5001

pod_add c '{}'
pod_add d '{}'
pair c d 5002

# SMC-R pods that keep IPv6 (smcr.erdma.io/keep-ipv6), talking over IPv6: what our binary reads
# of that connection (family IPv6, its mode, and the reason when it falls back).
KEEP6='{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/keep-ipv6":"true"}'
pod_add e "$KEEP6"
pod_add f "$KEEP6"
ip -n e addr add fd00::e/64 dev eth0 nodad || fail "IPv6 address for e"
ip -n f addr add fd00::f/64 dev eth0 nodad || fail "IPv6 address for f"
pair e f 5003 fd00::f

state=$(cat /run/erdma-smcr/state/a_eth0.json 2>/dev/null)
say "state_a=$state"
out=$(ours CHECK a "$SMCR" "$(cat /run/prev-a.json)" 2>&1); say "check_a=$? $out"
out=$(ours DEL a "$SMCR" "$(cat /run/prev-a.json)" 2>&1); say "del_a=$? $out"
say "pnet_after_del_a=\"$(erdma-smcr pnet list --netns /run/netns/a | tr '\n' ' ')\" state_after_del=$(ls /run/erdma-smcr/state | tr '\n' ' ')"
out=$(ours DEL a "$SMCR" "$(cat /run/prev-a.json)" 2>&1); say "del_again_a=$? $out"
finish ok
sleep 60
