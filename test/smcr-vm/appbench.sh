# Sourced by init.sh when the VM boots with smcr_scenario=appbench (bench/apps.ts): what real
# programs get from SMC, and what the preload library costs an event loop (#99). Debian's nginx,
# redis-server, redis-benchmark and wrk, unmodified, between pods of this kernel:
#   proxy  (where the preload library is the mechanism) nginx in pod c proxies wrk's requests to an
#          nginx in pod s, keepalive off upstream: every request makes an upstream connect(). Run
#          without the library, under it with port 80 excluded, and under it selected, interleaved
#          over ROUNDS rounds, each against the same SMC-capable upstream.
#   redis  redis-benchmark (-t set,get -d 1024) from pod c to redis-server in pod s: SMC (SMC-R over
#          Soft-RoCE on 6.1; SMC-D over loopback-ism on the newest line) and plain TCP between plain
#          pods in the same boot.
#   nginx  wrk (keep-alive connections) against nginx in pod s, 1 KiB responses: the same two.
# Every result is a "SMCRVM appbench ..." line.
mkdir -p /sys/fs/bpf /var/log/nginx /var/lib/nginx /run/app
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
mechs=$(erdma-smcr mechanisms)
say "mechanisms=$mechs"
mech=$(echo "$mechs" | sed -n 's/^{"mechanism":"\([a-z0-9]*\)".*/\1/p')
. /pods.sh
SECS=$(sed -n 's/.*smcr_appbench_secs=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$SECS" ] || SECS=10
ROUNDS=$(sed -n 's/.*smcr_appbench_rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$ROUNDS" ] || ROUNDS=2
say "appbench_mechanism=$mech secs=$SECS rounds=$ROUNDS"
PRELOAD=LD_PRELOAD=/opt/erdma-smcr/lib/libsmc-preload.so
SEL="nets=10.88.0.0/24;connect=*;listen=*"
SEL_EXC="nets=10.88.0.0/24;connect=!80;listen=*"
settings() { # selection
  m=""
  [ "$mech" = preload ] && m=',"smcr.erdma.io/mechanism":"preload"'
  printf '{"network.alibabacloud.com/erdma-smcr":"true","smcr.erdma.io/settings":"{\\"version\\":1,\\"sysctls\\":{\\"net.smc.tcp2smc\\":\\"1\\"},\\"select\\":\\"%s\\"}"%s}' "$1" "$m"
}
pod_add c "$(settings "$SEL")"
pod_add s "$(settings "$SEL")"
pod_add pc '{}'
pod_add ps '{}'
ENV_SMC=""
[ "$mech" = preload ] && ENV_SMC="$PRELOAD 'ERDMA_SMCR_SELECT=$SEL'"
mkdir -p /srv && head -c 1024 /dev/urandom > /srv/small

nginx_conf() { # name listen-line location-body
  cat > "/run/app/$1.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid /run/app/$1.pid;
error_log /run/app/$1.err;
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/octet-stream;
  server {
    $2
    location / { $3 }
  }
}
EOF
}
nginx_start() { # pod name env
  ip netns exec "$1" sh -c "exec env $3 /usr/sbin/nginx -e /run/app/$2.err -c /run/app/$2.conf" > "/run/app/$2.out" 2>&1 &
}
nginx_stop() { # name
  kill "$(cat "/run/app/$1.pid" 2>/dev/null)" 2>/dev/null
  i=0
  while [ -f "/run/app/$1.pid" ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
}
# wrk's summary as key=value: requests/s, p50 and p99 latency in µs, errors.
wrk_run() { # pod url connections
  out=$(ip netns exec "$1" wrk -t1 -c"$3" -d"${SECS}s" --latency "$2" 2>&1)
  rps=$(echo "$out" | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
  p50=$(echo "$out" | awk '$1 == "50%" { print $2 }')
  p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
  errs=$(echo "$out" | sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p')
  echo "rps=${rps:-0} p50=${p50:-?} p99=${p99:-?} non2xx=${errs:-0} summary=\"$(echo "$out" | grep -E 'requests in|Socket errors' | tr -d '"' | tr '\n' ' ')\""
}

# The proxy: only where the library is the mechanism (its price on an event loop).
if [ "$mech" = preload ]; then
  nginx_conf up "listen 80;" "root /srv;"
  nginx_start s up "$ENV_SMC"
  listening s 80
  eval "up=\$IP_s"
  nginx_conf proxy "listen 127.0.0.1:8080;" "proxy_pass http://$up:80;"
  for r in $(seq 1 "$ROUNDS"); do
    for mode in none excluded selected; do
      case $mode in
        none) e="" ;;
        excluded) e="$PRELOAD 'ERDMA_SMCR_SELECT=$SEL_EXC'" ;;
        selected) e="$PRELOAD 'ERDMA_SMCR_SELECT=$SEL'" ;;
      esac
      nginx_start c proxy "$e"
      listening c 8080
      before=$(stats c)
      # Warm: the first SMC-R connection of a pair sets up its link group (seconds under TCG).
      ip netns exec c wrk -t1 -c1 -d2s http://127.0.0.1:8080/small > /dev/null 2>&1
      res=$(wrk_run c http://127.0.0.1:8080/small 4)
      say "appbench case=proxy mode=$mode round=$r $res"
      say "appbench_stats case=proxy mode=$mode round=$r before=$before after=$(stats c)"
      nginx_stop proxy
    done
  done
  nginx_stop up
fi

# redis and nginx between two SMC pods, and between two plain pods, interleaved.
nginx_conf web "listen 80;" "root /srv;"
for r in $(seq 1 "$ROUNDS"); do
  for mode in tcp smc; do
    if [ $mode = smc ]; then cl=c sv=s e=$ENV_SMC; else cl=pc sv=ps e=""; fi
    eval "dst=\$IP_$sv"
    ip netns exec "$sv" sh -c "exec env $e redis-server --port 6379 --save '' --appendonly no --protected-mode no" > /run/app/redis.out 2>&1 &
    redis_pid=$!
    listening "$sv" 6379
    before=$(stats "$cl")
    ip netns exec "$cl" sh -c "exec env $e redis-benchmark -h $dst -p 6379 -c 4 -n 2 -t ping -q" > /dev/null 2>&1
    out=$(ip netns exec "$cl" sh -c "exec env $e redis-benchmark -h $dst -p 6379 -c 4 -n ${REDIS_N:-20000} -d 1024 -t set,get --csv" 2>&1)
    set_rps=$(echo "$out" | sed -n 's/^"SET","\([0-9.]*\)".*/\1/p')
    get_rps=$(echo "$out" | sed -n 's/^"GET","\([0-9.]*\)".*/\1/p')
    set_p99=$(echo "$out" | sed -n 's/^"SET","[0-9.]*","[0-9.]*","[0-9.]*","[0-9.]*","[0-9.]*","\([0-9.]*\)".*/\1/p')
    get_p99=$(echo "$out" | sed -n 's/^"GET","[0-9.]*","[0-9.]*","[0-9.]*","[0-9.]*","[0-9.]*","\([0-9.]*\)".*/\1/p')
    say "appbench case=redis mode=$mode round=$r set_rps=${set_rps:-0} get_rps=${get_rps:-0} set_p99_ms=${set_p99:-?} get_p99_ms=${get_p99:-?} out=\"$(echo "$out" | tail -n 3 | tr -d '"' | tr '\n' ' ')\""
    say "appbench_stats case=redis mode=$mode round=$r before=$before after=$(stats "$cl")"
    kill "$redis_pid" 2> /dev/null
    i=0
    while kill -0 "$redis_pid" 2> /dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done

    nginx_start "$sv" web "$e"
    listening "$sv" 80
    before=$(stats "$cl")
    ip netns exec "$cl" sh -c "exec env $e wrk -t1 -c1 -d2s http://$dst:80/small" > /dev/null 2>&1
    # wrk itself under the pod's environment: its connections are the pod's.
    out=$(ip netns exec "$cl" sh -c "exec env $e wrk -t1 -c4 -d${SECS}s --latency http://$dst:80/small" 2>&1)
    rps=$(echo "$out" | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
    p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
    say "appbench case=nginx mode=$mode round=$r rps=${rps:-0} p99=${p99:-?} summary=\"$(echo "$out" | grep -E 'requests in|Socket errors' | tr -d '"' | tr '\n' ' ')\" tail=\"$(echo "$out" | tail -n 4 | tr -d '"' | tr '\n' ' ')\" server=\"$(tr -d '"' < /run/app/web.err | tail -n 3 | tr '\n' ' ')\""
    say "appbench_stats case=nginx mode=$mode round=$r before=$before after=$(stats "$cl")"
    nginx_stop web
  done
done
