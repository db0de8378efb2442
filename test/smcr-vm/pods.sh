# Sourced by the pod scenarios (transparent.sh, smcd.sh, gain.sh): what runs between two pods set
# up by init.sh's pod_add, and what each pod's netns holds meanwhile, as SMCRVM lines.
# Connections a pod's netns holds: SMC sockets past LISTEN plus plain TCP beyond them.
conns() {
  n=$(erdma-smcr smc sockets --netns "/run/netns/$1" 2>/dev/null | grep -o '"state":"[A-Z_0-9]*"' | grep -vc LISTEN)
  p=$(erdma-smcr smc summary --netns "/run/netns/$1" 2>/dev/null | sed -n 's/.*"plainTcp":\([0-9]*\).*/\1/p')
  echo $((n + ${p:-0}))
}
# Under TCG, and more so on a loaded CI machine, a connection can take seconds to be set up: wait
# (up to 6 s by default, within the run) until both ends hold the number expected, rather than
# sleeping a fixed time. A runtime's client can take seconds more just to start (CPython's imports).
settle() { # client server count [tries of 0.2 s]
  i=0
  while [ $i -lt "${4:-30}" ]; do
    [ "$(conns "$1")" -ge "$3" ] && [ "$(conns "$2")" -ge "$3" ] && return 0
    sleep 0.2
    i=$((i + 1))
  done
  say "settle=$1-$2 wanted=$3 client=$(conns "$1") server=$(conns "$2")"
}

# A pod's SMC selection, when the scenario gave it one (SELECT_<pod>): the summary counts the
# connections it kept on TCP apart, as the agent's does from the plugin's record.
observe() { # label client server
  for ns in "$2" "$3"; do
    sel=$(eval "echo \"\${SELECT_$ns:-}\"")
    say "${1}_sockets_$ns=$(erdma-smcr smc sockets --netns /run/netns/$ns 2>&1 | tr -d '\n')"
    say "${1}_summary_$ns=$(erdma-smcr smc summary --select "$sel" --netns /run/netns/$ns 2>&1 | tr -d '\n')"
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

# A server listening on PORT in netns NS (its socket in /proc/net/tcp or tcp6, state LISTEN): a
# runtime can take seconds to start under TCG.
listening() { # ns port
  hex=$(printf ':%04X ' "$2")
  i=0
  while [ $i -lt 100 ]; do
    ip netns exec "$1" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep "$hex" | grep -q ' 0A ' && return 0
    sleep 0.2
    i=$((i + 1))
  done
  say "settle=listen-$1-$2"
}

stats() { erdma-smcr smc stats --netns "/run/netns/$1" 2>&1 | tr -d '\n'; }

# One runtime between a client and a server pod: SERVER and CLIENT are shell commands, run with
# ENV in the pods' netns ($dst is the server pod's address). What both pods hold while the client
# runs, SMC's counters in each netns before and after, the client's output and exit code, and the
# RDMA packets the client's device sent.
runtime() { # label client server port conns env server-command client-command [programs]
  eval "dst=\$IP_$3"
  export dst
  ip netns exec "$3" env $6 sh -c "exec $7" > "/run/$1-server.out" 2>&1 &
  spid=$!
  listening "$3" "$4"
  say "${1}_stats_before_$2=$(stats "$2")"
  say "${1}_stats_before_$3=$(stats "$3")"
  before=$(sent "$2")
  ip netns exec "$2" env $6 sh -c "exec $8" > "/run/$1-client.out" 2>&1 &
  cpid=$!
  settle "$2" "$3" "$5" 100
  observe "$1" "$2" "$3"
  # The agent's reading of which programs hold plain TCP connections, and why.
  if [ -n "$9" ]; then
    for ns in "$2" "$3"; do say "${1}_programs_$ns=$(node /agent/plain-tcp.mjs "/run/netns/$ns" 2>&1)"; done
  fi
  wait $cpid
  crc=$?
  after=$(sent "$2")
  say "${1}_stats_after_$2=$(stats "$2")"
  say "${1}_stats_after_$3=$(stats "$3")"
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
  say "runtime=$1 rc=$crc client=\"$(tail -n 3 "/run/$1-client.out" | tr -d '"' | tr '\n' ' ')\" rdma_sent_pkts=$((after - before))"
}


# The files the runtimes serve, and TCP buffers of SMC's size (64 KiB) in the pods given (those
# without SMC): otherwise the kernel's buffers take a 4 MiB response whole, CPython's HTTP/1.0
# server closes at once, and no connection is left established to list while the client reads.
runtimes_setup() { # pod...
  mkdir -p /srv && dd if=/dev/zero of=/srv/blob bs=65536 count=64 2>/dev/null
  for ns in "$@"; do
    ip netns exec "$ns" sh -c 'echo "4096 65536 65536" > /proc/sys/net/ipv4/tcp_rmem; echo "4096 65536 65536" > /proc/sys/net/ipv4/tcp_wmem'
  done
  B=4194304
}

# The four runtimes between two pods (test/vm/transparent.test.ts RUNTIMES), on ports BASE+1 to
# BASE+4, with ENV; PROGRAMS non-empty has the agent's code read which programs hold plain TCP
# in the Go case (the static program).
runtimes() { # client server base env [programs]
  runtime "go_$1" "$1" "$2" $(($3 + 1)) 1 "$4" "/runtimes/go-http serve $(($3 + 1))" \
    "/runtimes/go-http get http://\$dst:$(($3 + 1))/bytes/$B" "$5"
  runtime "python_$1" "$1" "$2" $(($3 + 2)) 1 "$4" "python3 -m http.server $(($3 + 2)) --directory /srv" \
    "python3 /runtimes/get.py http://\$dst:$(($3 + 2))/blob"
  runtime "node_$1" "$1" "$2" $(($3 + 3)) 1 "$4" "node /runtimes/http.mjs serve $(($3 + 3))" \
    "node /runtimes/http.mjs get http://\$dst:$(($3 + 3))/bytes/$B"
  runtime "redis_$1" "$1" "$2" $(($3 + 4)) 4 "$4" \
    "redis-server --port $(($3 + 4)) --save '' --appendonly no --protected-mode no" \
    "redis-benchmark -h \$dst -p $(($3 + 4)) -c 4 -n ${REDIS_N:-20000} -t set,get -q"
}
