# Sourced by init.sh when the VM boots with smcr_scenario=transparent: unmodified programs from
# Debian's packages between pods set up by our CNI chain, with no AF_SMC in any of them: iperf3,
# busybox's nc (static), CPython (http.server and urllib), redis-server with redis-benchmark, Node.js
# (node:http), and a Go program built static with the standard library only. The runtimes open their
# sockets with SOCK_NONBLOCK and SOCK_CLOEXEC (Go both, always), some with IPPROTO_TCP (hiredis).
# The node's mechanism is what `erdma-smcr mechanisms` finds: on trixie's 6.12, the IPPROTO_SMC BPF
# program (switched on per pod netns by our plugin); on bookworm's 6.1, the preload library
# (LD_PRELOAD as the webhook injects it, for the annotated pods only).
mkdir -p /sys/fs/bpf
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
mech=$(echo "$mechs" | sed -n 's/^{"mechanism":"\([a-z0-9]*\)".*/\1/p')
say "mechanism=$mech"
PRELOAD=LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so
case "$mech" in
  bpf)
    # No agent has run yet: the kernel has just booted, bpffs is empty, and the runtime calls our
    # plugin, as on a node after a reboot. The plugin loads and pins the program itself.
    ON='{"network.alibabacloud.com/erdma-smcr":"true"}'
    ENV_ON=""
    ;;
  preload)
    ON='{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/mechanism":"preload"}'
    ENV_ON=$PRELOAD
    ;;
  *) fail "no transparent mechanism on this kernel: $mechs" ;;
esac
say "bpf_before_add=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
# smc as a module (Debian's kernels; built in on the newest line's kernel, newest.config says why).
smc_module=$([ -d /sys/module/smc ] && echo yes || echo no)
if [ "$mech" = bpf ] && [ "$smc_module" = yes ]; then
  # As after a reboot, smc is not loaded either until something asks for it: the agent's driver
  # pass loaded it at boot here, so it goes again. The kernel loads it back through its modprobe
  # (net-pf-2-proto-256-type-1) when our plugin opens its first IPPROTO_SMC socket.
  echo /usr/sbin/modprobe > /proc/sys/kernel/modprobe
  rmmod smc_diag smc || fail "rmmod smc"
  say "smc_before_add=$([ -d /sys/module/smc ] && echo loaded || echo absent)"
fi
pod_add a "$ON"
if [ "$mech" = bpf ] && [ "$smc_module" = yes ]; then
  say "smc_after_add=$([ -d /sys/module/smc ] && echo loaded || echo absent)"
  insmod /lib/modules/smc_diag.ko || fail "insmod smc_diag"
  # The host side went with the module (as at boot): the agent sets it again on its first pass.
  erdma-smcr ueid add "$UEID" || fail "ueid add after the reload"
fi
pod_add b "$ON"
pod_add c '{}'
pod_add d '{}'
# Annotated for SMC-R, without the preload library: the IPPROTO_SMC program where the kernel has
# it, and elsewhere no mechanism at all, which the record says with why.
pod_add n '{"network.alibabacloud.com/erdma-smcr":"true"}'
say "bpf_status=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
say "state_a=$(cat /run/erdma-smcr/state/a_eth0.json 2>/dev/null)"
say "state_n=$(cat /run/erdma-smcr/state/n_eth0.json 2>/dev/null)"

# A kernel with IPPROTO_SMC where the program cannot be pinned (here: bpfDir on no bpffs): the ADD
# fails with CNI's "try again later" (11), which the kubelet retries, instead of a pod on TCP.
if [ "$mech" = bpf ]; then
  ip netns add t && ip -n t link set lo up
  prev=$(CNI_COMMAND=ADD CNI_CONTAINERID=t CNI_NETNS=/run/netns/t CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin /opt/cni/bin/bridge < /etc/cni/bridge.json)
  out=$(ours_conf "$prev" "$ON" | sed 's|"type":"erdma-smcr",|"type":"erdma-smcr","bpfDir":"/run/no-bpffs/erdma-smcr",|' |
    CNI_COMMAND=ADD CNI_CONTAINERID=t CNI_NETNS=/run/netns/t CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin \
    CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=t;K8S_POD_UID=uid-t" /opt/cni/bin/erdma-smcr 2>/dev/null)
  say "try_again_rc=$? try_again=$out"
fi

# Every way a program opens a TCP socket (family, SOCK_NONBLOCK/SOCK_CLOEXEC, protocol 0 or
# IPPROTO_TCP) in an SMC-R pod, and in a pod without SMC-R.
say "sockloop_a=$(ip netns exec a env $ENV_ON /bin/sock-loop 3)"
say "sockloop_c=$(ip netns exec c /bin/sock-loop 3)"
# As an Alpine image's program (musl, dynamically linked): the preload library loads there too.
say "sockloop_musl_a=$(ip netns exec a env $ENV_ON /bin/sock-loop-musl 3)"
# The preload library's loopback connections (in a pod without SMC-R, so that only the library
# acts): since #85 a blocking client, a non-blocking one and one already in an epoll set all stay
# SMC sockets, fall back in their handshake (0x03030000: no device serves lo) and carry data. The
# summary, read while they are open, counts them as loopback fallbacks, apart from the reasons.
stats_c() { erdma-smcr smc stats --netns /run/netns/c 2>&1 | tr -d ' \n'; }
say "loopback_stats_0=$(stats_c)"
ip netns exec c env $PRELOAD /bin/loopback 4 > /run/loopback.out 2>&1 &
lpid=$!
sleep 2
say "loopback_summary=$(erdma-smcr smc summary --netns /run/netns/c 2>&1 | tr -d ' \n')"
wait $lpid
say "loopback_preload=\"$(cat /run/loopback.out)\""
say "loopback_stats_1=$(stats_c)"
# The library's own threads/signals/fork test under ThreadSanitizer (native/test/preload_threads.c,
# the library compiled in), in the pod without SMC-R where AF_SMC opens: racing threads' sockets
# are AF_SMC here, and their SO_REUSEPORT swaps them to TCP. Any data race, or a failed check, is a non-zero exit.
# 100 rounds a thread (300 here without SMC): ThreadSanitizer under TCG is slow, and a hang must
# not eat the scenario's watchdog.
threads_out=$(timeout 90 /usr/sbin/ip netns exec c env TSAN_OPTIONS=halt_on_error=1:exitcode=66 PRELOAD_THREADS_ROUNDS=100 /bin/preload-threads 2>&1)
threads_rc=$?
say "preload_threads_rc=$threads_rc"
say "preload_threads=\"$(printf '%s\n' "$threads_out" | tail -1)\""
[ "$threads_rc" = 0 ] || printf '%s\n' "$threads_out" | head -60 | while read -r l; do say "preload_threads_said=\"$(echo "$l" | tr -d '"')\""; done
# The runtimes' own event loops to a server of their own process over 127.0.0.1, each connecting
# three times with non-blocking sockets: Node.js (node:http on libuv, a new connection each) and
# CPython's asyncio. Their connections go through SMC and fall back, and work.
node_gets='import http from "node:http";
const s = http.createServer((q, r) => r.end("x".repeat(1000))).listen(0, "127.0.0.1");
await new Promise((ok) => s.on("listening", ok));
const url = `http://127.0.0.1:${s.address().port}/`;
for (let i = 0; i < 3; i++)
  await new Promise((ok, fail) => http.get(url, { agent: false }, (r) => r.resume().on("end", ok)).on("error", fail));
s.close();
console.log("ok");'
aio_gets='import asyncio
async def main():
    async def answer(r, w):
        await r.readline()
        w.write(b"x" * 1000)
        await w.drain()
        w.close()
    srv = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    for _ in range(3):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"hi\n")
        await r.read()
        w.close()
        await w.wait_closed()
    srv.close()
    await srv.wait_closed()
    print("ok")
asyncio.run(main())'
say "loopback_rt_0=$(stats_c)"
say "loopback_node=$(ip netns exec c env $PRELOAD node --input-type=module -e "$node_gets" 2>&1 | tr -d '\n')"
say "loopback_rt_1=$(stats_c)"
say "loopback_asyncio=$(ip netns exec c env $PRELOAD python3 -c "$aio_gets" 2>&1 | tr -d '\n')"
say "loopback_rt_2=$(stats_c)"

# An upgrade of the agent: the new one loads its program over the pinned one (bpf load), while a
# program in an SMC-R pod opens sockets in a loop. The program's id changes, the pods stay listed,
# and no socket of the loop is left TCP: the new link is attached before the old one goes.
if [ "$mech" = bpf ]; then
  say "upgrade_before=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
  rm -f /run/loop-stop
  ip netns exec a /bin/sock-loop 100000000 /run/loop-stop > /run/loop-a.out 2>&1 &
  lpid=$!
  sleep 1
  for i in 1 2 3; do erdma-smcr bpf load || fail "bpf load (upgrade $i)"; done
  sleep 1
  touch /run/loop-stop
  wait $lpid
  say "upgrade_after=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
  say "upgrade_loop=$(cat /run/loop-a.out)"
fi

. /pods.sh

iperf a b 5201 "$ENV_ON"
iperf c d 5202 ""

runtimes_setup c d
runtimes a b 8000 "$ENV_ON" "$([ "$mech" = preload ] && echo programs)"
runtimes c d 8100 ""

# Under preload, a launcher that clears LD_PRELOAD (as entrypoints that sanitise the environment
# do) leaves its program on TCP: the agent names it, and why.
# Its connection is plain TCP at both ends: the pods get TCP buffers of SMC's size, so that the
# response (12 MiB, read 64 KiB every 60 ms) keeps it open while the agent's code reads it.
if [ "$mech" = preload ]; then
  dd if=/dev/zero of=/srv/blob12 bs=65536 count=192 2>/dev/null
  for ns in a b; do
    ip netns exec $ns sh -c 'echo "4096 65536 65536" > /proc/sys/net/ipv4/tcp_rmem; echo "4096 65536 65536" > /proc/sys/net/ipv4/tcp_wmem'
  done
  runtime pycleared_a a b 8005 1 "$ENV_ON" "python3 -m http.server 8005 --directory /srv" \
    "env -u LD_PRELOAD python3 /runtimes/get.py http://\$dst:8005/blob12" programs
fi

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

# #88: a server stopping its accept loop. In a pod without SMC (plain TCP, the baseline), an SMC-R
# pod of the node's mechanism, and on 6.12 also a pod of the preload library: shutdown() of a
# listener with a thread in accept(), close() from another thread, and shutdown() under epoll.
stop_pods="d:tcp a:$mech"
if [ "$mech" = bpf ]; then
  pod_add sp '{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/mechanism":"preload"}'
  stop_pods="$stop_pods sp:preload"
fi
port=7400
for pm in $stop_pods; do
  p=${pm%%:*}; m=${pm#*:}
  eval "addr=\$IP_$p"
  envp=""; [ "$m" = preload ] && envp=$PRELOAD
  for mode in shutdown close epoll; do
    port=$((port + 1))
    say "stop mech=$m mode=$mode $(ip netns exec "$p" env $envp timeout 20 /bin/listen-stop "$mode" "$addr" "$port" 2>&1 | tr '\n' ' ')"
  done
  # The servers we ship stopping gracefully on that listener: Go's http.Server.Shutdown,
  # CPython's socketserver and asyncio, Node's net.Server.close(), redis's SHUTDOWN.
  for prog in go socketserver asyncio node redis; do
    port=$((port + 1))
    case $prog in
      go) cmd="/runtimes/go-http stop $addr $port" ;;
      socketserver | asyncio) cmd="python3 /runtimes/stop.py $prog $addr $port" ;;
      node) cmd="node /runtimes/stop.mjs $addr $port" ;;
      redis) cmd="sh /runtimes/stop-redis.sh $addr $port" ;;
    esac
    # 90 s: redis's cold start under TCG has its own 60 s readiness deadline (stop-redis.sh).
    say "graceful mech=$m prog=$prog $(ip netns exec "$p" env $envp timeout 90 sh -c "$cmd" 2>&1 | tr '\n' ' ')"
  done
done

out=$(ours CHECK a "$ON" "$(cat /run/prev-a.json)" 2>&1); say "check_a=$? check_a_out=\"$(echo "$out" | tr -d '"\n')\""
out=$(ours DEL a "$ON" "$(cat /run/prev-a.json)" 2>&1); say "del_a=$? $out"
say "bpf_status_after_del=$(erdma-smcr bpf status 2>&1 | tr -d '\n')"
if [ "$mech" = bpf ]; then
  erdma-smcr bpf unload || fail "bpf unload"
  out=$(ours CHECK b "$ON" "$(cat /run/prev-b.json)" 2>&1); say "check_b_after_unload=$? check_b_out=\"$(echo "$out" | tr -d '"\n')\""
  say "bpf_after_unload=$([ -e /sys/fs/bpf/erdma-smcr ] && echo present || echo gone) switched_off=$(erdma-smcr bpf enable --netns /run/netns/b 2>&1 | tr -d '\n' | tr ' ' _)"
fi
