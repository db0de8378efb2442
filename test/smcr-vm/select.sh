# Sourced by init.sh when the VM boots with smcr_scenario=select: the SMC selection (#93). A
# connection of an SMC-R pod uses SMC only when its destination is in the cluster's networks (here
# the pod bridge's 10.88.0.0/24) and its port is selected; every other one is plain TCP from its
# first packet. The mechanism is what `erdma-smcr mechanisms` finds: the preload library (6.1,
# ERDMA_SMCR_SELECT as the webhook sets it) or the IPPROTO_SMC program with our smc_hs_ctrl (7.x,
# the selection handed to it by our plugin from the settings document); on 6.12 (no smc_hs_ctrl)
# the record says the selection is not enforced, unless the pods ask for the preload library
# (smcr_select_mech=preload on the kernel's command line).
#
# "Outside the cluster", in netns ext (10.99.0.10, routed through the node), a server replays SMC's
# TCP option in its SYN-ACK with no SMC behind it (replay-option.bpf.c), as Alibaba's SMC FAQ
# describes: an annotated pod without a selection fails against it (the negative control), a plain
# pod and an annotated pod with its selection reach it. tcpdump captures every SYN, to show which
# carried SMC's option (tcpdump prints it "exp-e2d4").
mkdir -p /sys/fs/bpf /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
mech=$(echo "$mechs" | sed -n 's/^{"mechanism":"\([a-z0-9]*\)".*/\1/p')
# smcr_select_mech=preload: the preload library where the node's first mechanism is another (6.12's
# IPPROTO_SMC program), as a pod annotated smcr.erdma.io/mechanism: preload gets it.
forced=$(sed -n 's/.*smcr_select_mech=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
[ -z "$forced" ] || mech=$forced
say "mechanism=$mech"
. /pods.sh

NETS=10.88.0.0/24
# Pod a: SMC on destination ports 7001-7099 but 7050-7059, in the cluster's networks; pod b: listens
# with SMC on 7001-7049 only.
# 10.96.0.0/16: the cluster's Service CIDR (the profile's serviceNetworks).
SEL_A="nets=$NETS,10.96.0.0/16;connect=7001-7099,!7050-7059;listen=*"
SEL_B="nets=$NETS;connect=*;listen=7001-7049"
# pods.sh's observe() counts by them.
SELECT_a=$SEL_A
SELECT_b=$SEL_B
# The annotations the runtime hands our plugin: the settings document as the webhook writes it,
# with the selection when given (an empty one: a webhook before the selection).
annotations() { # select-text
  doc='{"version":1,"sysctls":{"net.smc.tcp2smc":"1"}'
  [ -n "$1" ] && doc="$doc,\"select\":\"$1\""
  doc="$doc}"
  m=""
  [ "$mech" = preload ] && m=',"smcr.erdma.io/mechanism":"preload"'
  printf '{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/settings":"%s"%s}' \
    "$(printf '%s' "$doc" | sed 's/"/\\"/g')" "$m"
}
# What the webhook puts in the containers of a pod on a preload node: the library and the selection
# (quoted: the selection holds ';', and the runtimes' commands go through sh -c).
envs() { # select-text
  [ "$mech" = preload ] || return 0
  printf 'LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so'
  [ -n "$1" ] && printf " 'ERDMA_SMCR_SELECT=%s'" "$1"
  return 0
}

# smcr_tcp2smc_standin=1 (#100): Alibaba's tcp2smc knob stands in while the pods are added, as on
# an Alibaba Cloud Linux 3 node the agent labels preload (its knob converts every TCP socket; AF_SMC
# works too): a directory with this kernel's net.smc values and a tcp2smc of 0, mounted over
# /proc/sys/net/smc. Our plugin must take the library the pods were given and leave the knob alone.
standin=""
if grep -q smcr_tcp2smc_standin=1 /proc/cmdline && [ -d /proc/sys/net/smc ]; then
  standin=/run/standin-smc
  mkdir -p "$standin"
  for f in /proc/sys/net/smc/*; do cat "$f" > "$standin/${f##*/}" 2>/dev/null; done
  echo 0 > "$standin/tcp2smc"
  mount -o bind "$standin" /proc/sys/net/smc || fail "mount the stand-in knob"
  say "standin_knob_before=$(cat /proc/sys/net/smc/tcp2smc)"
fi
pod_add a "$(annotations "$SEL_A")"
pod_add b "$(annotations "$SEL_B")"
pod_add u "$(annotations "")"
pod_add p '{}'
if [ -n "$standin" ]; then
  say "standin_knob=$(cat /proc/sys/net/smc/tcp2smc)"
  umount /proc/sys/net/smc || fail "unmount the stand-in knob"
fi
for x in a b u; do say "state_$x=$(cat /run/erdma-smcr/state/${x}_eth0.json 2>/dev/null)"; done
say "bpf_status=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
ENV_A=$(envs "$SEL_A")
ENV_B=$(envs "$SEL_B")
ENV_U=$(envs "")

# The server outside: its own netns, routed through the node, in a cgroup with the sockops program.
ip netns add ext && ip -n ext link set lo up
ip link add ext0 type veth peer name eth0 netns ext || fail "veth ext"
ip addr add 10.99.0.1/24 dev ext0 && ip link set ext0 up
ip -n ext addr add 10.99.0.10/24 dev eth0 && ip -n ext link set eth0 up
ip -n ext route add default via 10.99.0.1
echo 1 > /proc/sys/net/ipv4/ip_forward
for x in a b u p; do ip -n "$x" route add 10.99.0.0/24 via 10.88.0.1 || fail "route $x"; done
mkdir -p /sys/fs/cgroup/replay
bpftool prog load /replay-option.bpf.o /sys/fs/bpf/replay type sockops || fail "load the replaying program"
bpftool cgroup attach /sys/fs/cgroup/replay sock_ops pinned /sys/fs/bpf/replay || fail "attach it"
runtimes_setup a b u p
# (iproute2's ip by path: busybox sh runs its own applet first, which has no netns.)
sh -c 'echo $$ > /sys/fs/cgroup/replay/cgroup.procs; exec /usr/sbin/ip netns exec ext python3 -m http.server 8080 --directory /srv' \
  > /run/ext-server.out 2>&1 &
listening ext 8080
say "ext_server=\"$(tr -d '"' < /run/ext-server.out | tr '\n' ' ')\""

# Every SYN each side sees, written as tcpdump prints it.
capture() { # ns label
  # -Z root: the VM has no user tcpdump to drop privileges to (and root only from this passwd).
  [ -f /etc/passwd ] || echo 'root:x:0:0:root:/root:/bin/sh' > /etc/passwd
  ip netns exec "$1" tcpdump -Z root -i eth0 -nn -U -w "/run/$2.pcap" 'tcp[tcpflags] & tcp-syn != 0' > "/run/$2.tcpdump" 2>&1 &
  eval "CAP_$2=$!"
}
capture ext ext
capture b b
sleep 1

# To the replaying server: a plain pod, the annotated pod without a selection, the one with it.
outside() { # label pod env
  out=$(ip netns exec "$2" sh -c "exec env $3 timeout 30 python3 /runtimes/get.py http://10.99.0.10:8080/blob" 2>&1)
  rc=$?
  say "outside=$1 pod=$2 rc=$rc out=\"$(printf '%s' "$out" | tail -n 2 | tr -d '"' | tr '\n' ' ')\""
}
outside plain p ""
outside unselected u "$ENV_U"
outside selected a "$ENV_A"

# Between the SMC-R pods: a selected port, one a excludes, one b does not listen with SMC on.
# runtime() hands its env to `env` unquoted, so the pods' environments go in the commands.
python_row() { # label port
  runtime "$1" a b "$2" 1 "" "env $ENV_B python3 -m http.server $2 --directory /srv" \
    "env $ENV_A python3 /runtimes/get.py http://\$dst:$2/blob"
}
python_row sel_py 7001
python_row excl_py 7050
python_row nolisten_py 7060
# A static program (Go): the in-kernel selection reaches it; the preload library never does.
runtime sel_go a b 7002 1 "" "/runtimes/go-http serve 7002" "/runtimes/go-http get http://\$dst:7002/bytes/$B"
runtime excl_go a b 7055 1 "" "/runtimes/go-http serve 7055" "/runtimes/go-http get http://\$dst:7055/bytes/$B"
# A Service: its ClusterIP is in the selection's networks (serviceNetworks). Its rules are a real
# kube-proxy's (nftables mode), written on the host for a Service whose EndpointSlice holds pod b
# (test/harness/k8s/kube-proxy-rules.ts: kube-proxy cannot reach an API server from this VM), and
# loaded on the node as kube-proxy loads them: connect() in pod a sees the ClusterIP, its SYN meets
# kube-proxy's DNAT on the node and goes to b. br_netfilter un-DNATs b's reply, bridged straight to
# a, as on any node whose pods share a bridge. Where the kernel has nftables (6.1's modules, 7.x).
SVC=10.96.0.10
rules=/files/kube-proxy.nft
if [ -f $rules ]; then
  # Modules on 6.1 (build.sh puts them where modprobe looks); built in on 7.x, but br_netfilter.
  # kmod's modprobe by path: busybox's applet ignores softdeps (libcrc32c's on crc32c).
  : > /run/modprobe.err
  for m in nft_ct nft_nat nft_chain_nat nft_masq nft_reject_ipv4 nft_fib_ipv4 br_netfilter; do
    /usr/sbin/modprobe "$m" 2>> /run/modprobe.err || true
  done
  loaded=$(tr '\n' ' ' < /run/modprobe.err)
  [ -f /proc/sys/net/bridge/bridge-nf-call-iptables ] || fail "br_netfilter did not load: $loaded"
  echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables
  to=$(grep -o 'dnat to [0-9.]*' $rules | sort -u | tr '\n' ' ')
  [ "$to" = "dnat to $IP_b " ] || fail "kube-proxy's rules DNAT ($to) to another address than pod b's ($IP_b)"
  nft -f $rules > /run/nft.err 2>&1 || fail "loading kube-proxy's rules: $(tr '\n' ' ' < /run/nft.err) (modprobe: $loaded)"
  ip -n a route add 10.96.0.0/16 via 10.88.0.1 || fail "route to the Service CIDR"
  say "service=$SVC kube_proxy_chains=$(nft list table ip kube-proxy | grep -c '^[[:space:]]*chain ')"
  runtime svc_sel a b 7003 1 "" "env $ENV_B python3 -m http.server 7003 --directory /srv" \
    "env $ENV_A python3 /runtimes/get.py http://$SVC:7003/blob"
  runtime svc_excl a b 7056 1 "" "env $ENV_B python3 -m http.server 7056 --directory /srv" \
    "env $ENV_A python3 /runtimes/get.py http://$SVC:7056/blob"
else
  say "service=none"
fi
say "bpf_status_after=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"

for c in ext b; do
  eval "kill \$CAP_$c"
  sleep 0.5
  say "capture_$c=\"$(tr -d '"' < "/run/$c.tcpdump" | tr '\n' ' ')\""
  tcpdump -Z root -r "/run/$c.pcap" -nn 2>"/run/$c.read" | while read -r l; do say "syn_$c=\"$(echo "$l" | tr -d '"')\""; done
  say "read_$c=\"$(tr -d '"' < "/run/$c.read" | tr '\n' ' ')\""
done

# Real servers and clients under the selection (#99, apps.sh), where the pods' mechanism enforces it.
if [ "$mech" = preload ] || echo "$mechs" | grep -q '"selection":{"ok":true'; then
  started=$(cut -d' ' -f1 /proc/uptime)
  . /apps.sh
  say "apps=ran apps_seconds=$(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $started }")"
else
  say "apps=skipped"
fi

# DEL takes the pod's selection out of the program's map.
out=$(ours DEL a "$(annotations "$SEL_A")" "$(cat /run/prev-a.json)" 2>&1); say "del_a=$? $out"
say "bpf_status_after_del=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
