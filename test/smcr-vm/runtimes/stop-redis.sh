#!/bin/sh
# #88: redis-server's stop on a listener of the pod's mechanism: started, answered once, then
# SHUTDOWN NOSAVE (it closes its listeners and exits). Usage: stop-redis.sh ADDR PORT.
# Prints "stopped=yes ms=N ready_ms=R" once the server has exited (R: from start to its first PONG), "stopped=no why=WORD" otherwise (with
# redis's last log line). The VM has no redis-cli: CPython speaks RESP, and times the stop from
# the command to the server's exit. Under TCG a cold redis-server can take seconds to answer its
# first PING (a CI run met more than 10 s), so readiness has its own, longer deadline.
addr=$1 port=$2
log=$(mktemp)
redis-server --bind "$addr" --port "$port" --save "" --appendonly no --protected-mode no \
  --daemonize no >"$log" 2>&1 &
pid=$!
python3 - "$addr" "$port" "$pid" <<'PY'
import os, socket, sys, time
addr, port, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def running():
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False

def fail(why):
    print(f"stopped=no why={why}")
    sys.exit(1)

started = time.monotonic()
ready_by = started + 60
while True:
    if not running():
        fail("exited-before-ready")
    try:
        with socket.create_connection((addr, port), timeout=5) as c:
            c.sendall(b"PING\r\n")
            if c.recv(16).startswith(b"+PONG"):
                break
    except OSError:
        pass
    if time.monotonic() > ready_by:
        fail("no-pong-in-60s")
    time.sleep(0.05)
t0 = time.monotonic()
ready_ms = int((t0 - started) * 1000)
with socket.create_connection((addr, port), timeout=5) as c:
    c.sendall(b"SHUTDOWN NOSAVE\r\n")
    try:
        c.recv(64)  # the server closes the connection as it exits
    except OSError:
        pass  # a reset is a close too
while running():
    if time.monotonic() - t0 > 10:
        fail("still-running-10s-after-shutdown")
    time.sleep(0.005)
print(f"stopped=yes ms={int((time.monotonic() - t0) * 1000)} ready_ms={ready_ms}")
PY
ok=$?
[ "$ok" -eq 0 ] || { kill "$pid" 2>/dev/null; echo "redis_log=\"$(tail -n 1 "$log" | tr -d '"')\""; }
wait "$pid"
rm -f "$log"
exit "$ok"
