# Sourced by select.sh where the pods' mechanism enforces the selection (#99): real servers and
# clients, as Debian ships them, under the SMC selection. Two pairs of pods: sc -> ss with the
# selection as the webhook writes it by default (the cluster's networks, every port), xc -> xs with
# one that excludes the apps' ports (80, 5432, 6379). Each app's output is checked against what was
# sent (an MD5), and SMC's counters in the client's netns say which connections ran SMC; captures in
# ss and xs say which SYNs carried SMC's option (test/vm/select.test.ts).
#   nginx 1.22: the official image's default server (listen 80; listen [::]:80), and as a reverse
#     proxy in the client pod (an upstream per request, a keepalive pool, proxy_bind);
#   HAProxy 2.6 in the client pod in front of the same server;
#   redis 7.0: the server with its default bind (* -::*), redis-cli, a replica (bound to IPv4) in the
#     client pod following it;
#   PostgreSQL 15: the server (listen_addresses '*', IPv4 and IPv6) and psql;
#   curl, a CPython asyncio client and a Node.js client.
APP_NETS="$NETS,10.96.0.0/16"
SEL_DEF="nets=$APP_NETS;connect=*;listen=*"
SEL_EXC="nets=$APP_NETS;connect=!80,!5432,!6379;listen=!80,!5432,!6379"
SELECT_sc=$SEL_DEF
SELECT_ss=$SEL_DEF
SELECT_xc=$SEL_EXC
SELECT_xs=$SEL_EXC
for x in sc ss; do pod_add "$x" "$(annotations "$SEL_DEF")"; done
for x in xc xs; do pod_add "$x" "$(annotations "$SEL_EXC")"; done
ENV_sc=$(envs "$SEL_DEF")
ENV_ss=$ENV_sc
ENV_xc=$(envs "$SEL_EXC")
ENV_xs=$ENV_xc
runtimes_setup sc ss xc xs
# 1 MiB that is not zeros: every byte checked.
dd if=/dev/urandom of=/srv/blob-r bs=65536 count=16 2>/dev/null
say "blob_md5=$(md5sum < /srv/blob-r | cut -d' ' -f1)"
say "blob3_md5=$(cat /srv/blob-r /srv/blob-r /srv/blob-r | md5sum | cut -d' ' -f1)"
mkdir -p /var/log/nginx /var/lib/nginx /run/app
capture ss ss
capture xs xs
sleep 1

# In pod $1, with its environment (LD_PRELOAD and ERDMA_SMCR_SELECT under preload), in the background.
in_pod() { # pod log command...
  p=$1 log=$2
  shift 2
  eval "e=\$ENV_$p"
  ip netns exec "$p" sh -c "exec env $e $*" > "$log" 2>&1 &
  APP_PID=$!
}
# In pod $1, in the foreground: prints the command's output.
run_pod() { # pod command...
  p=$1
  shift
  eval "e=\$ENV_$p"
  ip netns exec "$p" sh -c "exec env $e timeout 60 $*" 2>&1
}
# One app's result: its first word (an MD5) and exit code, and SMC's counters around it.
app() { # tag name client command...
  t=$1 n=$2 c=$3
  shift 3
  [ -n "$BEFORE_SAID" ] || say "${t}_${n}_stats_before_$c=$(stats "$c")"
  BEFORE_SAID=""
  out=$(run_pod "$c" "$@")
  rc=$?
  say "${t}_${n}_stats_after_$c=$(stats "$c")"
  say "app=${t}_$n rc=$rc md5=$(echo "$out" | head -n1 | cut -d' ' -f1) out=\"$(echo "$out" | tail -n 3 | tr -d '"' | tr '\n' ' ')\""
}
md5_of() { echo "| md5sum"; }
# Stops the processes we started (by PID: ip netns exec, sh and env exec into the program) and waits
# (up to 20 s) until they are gone: the next pair's server takes the same port.
stop() { # signal pid...
  sig=$1
  shift
  kill "-$sig" "$@" 2> /dev/null
  for p in "$@"; do
    i=0
    while kill -0 "$p" 2> /dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
  done
}

# What every nginx here runs with: in the foreground, one worker, its pid and log under /run/app.
nginx_head() { # name
  printf 'user root;\nworker_processes 1;\ndaemon off;\npid /run/app/%s.pid;\n' "$1"
  printf 'error_log /run/app/%s.err;\nevents { worker_connections 256; }\n' "$1"
}

# The official nginx image's default server, as Debian's nginx runs it.
nginx_server() { # pod
  nginx_head "nginx-$1" > "/run/app/nginx-$1.conf"
  cat >> "/run/app/nginx-$1.conf" <<EOF
http {
  access_log off;
  default_type application/octet-stream;
  server {
    listen 80;
    listen [::]:80;
    server_name localhost;
    location / { root /srv; }
  }
}
EOF
  in_pod "$1" "/run/app/nginx-$1.out" /usr/sbin/nginx -e "/run/app/nginx-$1.err" -c "/run/app/nginx-$1.conf"
}

# nginx as a reverse proxy in the client pod: an upstream connection per request (keepalive off),
# a keepalive pool, and proxy_bind to the pod's own address. Upstreams registered in epoll before
# connect() (ngx_event_connect_peer): the case that answered 504 before #99.
nginx_proxy() { # pod upstream-address own-address
  nginx_head "proxy-$1" > "/run/app/proxy-$1.conf"
  cat >> "/run/app/proxy-$1.conf" <<EOF
http {
  access_log off;
  upstream pool { server $2:80; keepalive 4; }
  server {
    listen 127.0.0.1:8080;
    proxy_connect_timeout 5s;
    location /plain/ { proxy_pass http://$2:80/; }
    location /pool/ { proxy_pass http://pool/; proxy_http_version 1.1; proxy_set_header Connection ""; }
    location /bind/ { proxy_pass http://$2:80/; proxy_bind $3; }
  }
}
EOF
  in_pod "$1" "/run/app/proxy-$1.out" /usr/sbin/nginx -e "/run/app/proxy-$1.err" -c "/run/app/proxy-$1.conf"
}

haproxy_proxy() { # pod upstream-address
  cat > "/run/app/haproxy-$1.cfg" <<EOF
global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:8081
  default_backend be
backend be
  server s1 $2:80
EOF
  in_pod "$1" "/run/app/haproxy-$1.out" /usr/sbin/haproxy -db -f "/run/app/haproxy-$1.cfg"
}

# PostgreSQL's data directory was made by initdb on the host (build.sh): the server runs as its
# user, with what the pod's containers get in their environment.
postgres_server() { # pod
  eval "e=\$ENV_$1"
  printf '#!/bin/sh\nexec env %s /usr/lib/postgresql/15/bin/postgres -D /pgdata\n' "$e" > "/run/app/pg-$1.sh"
  chmod 755 "/run/app/pg-$1.sh"
  rm -f /pgdata/postmaster.pid
  ip netns exec "$1" su postgres -s /bin/sh -c "/run/app/pg-$1.sh" > "/run/app/pg-$1.out" 2>&1 &
  PG_PID=$!
}

# psql's query: 20,000 MD5s, 640 kB back (the test computes the same).
PSQL_QUERY="select string_agg(md5(i::text), '' order by i) from generate_series(1, 20000) i"

apps() { # tag client server
  t=$1 c=$2 s=$3
  eval "dst=\$IP_$s; own=\$IP_$c"
  nginx_server "$s"
  listening "$s" 80
  say "${t}_nginx_server=\"$(tr -d '"' < "/run/app/nginx-$s.err" | tail -n 3 | tr '\n' ' ')\""
  app "$t" curl "$c" curl -sS "http://$dst/blob-r" "$(md5_of)"
  app "$t" asyncio "$c" python3 /runtimes/aget.py "$dst" 80 /blob-r
  app "$t" node "$c" node /runtimes/app-get.mjs "http://$dst/blob-r"
  nginx_proxy "$c" "$dst" "$own"
  listening "$c" 8080
  for loc in plain pool bind; do
    # Three requests each: the pool's connection is reused after the first.
    cat > "/run/app/req-$loc.sh" <<EOF
for i in 1 2 3; do curl -sS -m 20 -o /run/app/p-\$i http://127.0.0.1:8080/$loc/blob-r; done
cat /run/app/p-1 /run/app/p-2 /run/app/p-3 | md5sum
EOF
    app "$t" "proxy_$loc" "$c" sh "/run/app/req-$loc.sh"
  done
  say "${t}_proxy_err=\"$(tr -d '"' < "/run/app/proxy-$c.err" | tail -n 3 | tr '\n' ' ')\""
  haproxy_proxy "$c" "$dst"
  haproxy_pid=$APP_PID
  listening "$c" 8081
  app "$t" haproxy "$c" curl -sS -m 20 "http://127.0.0.1:8081/blob-r" "$(md5_of)"
  stop TERM "$(cat "/run/app/nginx-$s.pid")" "$(cat "/run/app/proxy-$c.pid")" "$haproxy_pid"

  # redis with its default bind (* -::*), then a replica in the client pod.
  in_pod "$s" "/run/app/redis-$s.out" redis-server --port 6379 --save "''" --appendonly no --protected-mode no
  redis_pid=$APP_PID
  listening "$s" 6379
  say "${t}_redis_server=\"$(tr -d '"' < "/run/app/redis-$s.out" | tail -n 3 | tr '\n' ' ')\""
  value=$(head -c 300000 /srv/blob-r | md5sum | cut -d' ' -f1)
  printf 'redis-cli -h %s set k %s > /dev/null && redis-cli -h %s get k\n' "$dst" "$value" "$dst" > /run/app/redis-cli.sh
  app "$t" redis_cli "$c" sh /run/app/redis-cli.sh
  # The replica connects as it starts: SMC's counters before it.
  say "${t}_redis_replica_stats_before_$c=$(stats "$c")"
  BEFORE_SAID=1
  in_pod "$c" "/run/app/replica-$c.out" redis-server --port 6380 --bind 127.0.0.1 --replicaof "$dst" 6379 --save "''" --appendonly no
  replica_pid=$APP_PID
  listening "$c" 6380
  cat > /run/app/replica.sh <<'EOF'
for i in $(seq 1 150); do redis-cli -p 6380 info replication | grep -q master_link_status:up && break; sleep 0.2; done
redis-cli -p 6380 get k
EOF
  app "$t" redis_replica "$c" sh /run/app/replica.sh
  say "${t}_redis_value=$value"
  stop TERM "$redis_pid" "$replica_pid"

  postgres_server "$s"
  listening "$s" 5432
  say "${t}_postgres_server=\"$(tr -d '"' < "/run/app/pg-$s.out" | tail -n 3 | tr '\n' ' ')\""
  printf '/usr/lib/postgresql/15/bin/psql -h %s -U postgres -At -c "%s" | md5sum\n' "$dst" "$PSQL_QUERY" > /run/app/psql.sh
  app "$t" psql "$c" sh /run/app/psql.sh
  # SIGINT to the postmaster, by the PID in its own postmaster.pid (su and the shells between may
  # fork): its fast shutdown, backends included; the file goes as it ends.
  stop INT "$(head -n 1 /pgdata/postmaster.pid 2> /dev/null)" "$PG_PID"
  i=0
  while [ -f /pgdata/postmaster.pid ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
}

apps sel sc ss
apps exc xc xs
for c in ss xs; do
  kill "$(eval "echo \$CAP_$c")"
  sleep 0.5
  tcpdump -Z root -r "/run/$c.pcap" -nn 2>/dev/null | while read -r l; do say "syn_$c=\"$(echo "$l" | tr -d '"')\""; done
done
