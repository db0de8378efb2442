#!/bin/sh
# #88: redis-server's stop on a listener of the pod's mechanism: started, answered once, then
# SHUTDOWN NOSAVE (it closes its listeners and exits). Usage: stop-redis.sh ADDR PORT.
# Prints "stopped=yes ms=N" once the server has exited, or nothing when it has not. The VM has no
# redis-cli: CPython speaks RESP, and times the stop from the command to the server's exit.
addr=$1 port=$2
redis-server --bind "$addr" --port "$port" --save "" --appendonly no --protected-mode no \
  --daemonize no >/dev/null 2>&1 &
pid=$!
python3 - "$addr" "$port" "$pid" <<'PY'
import os, socket, sys, time
addr, port, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for _ in range(200):
    try:
        with socket.create_connection((addr, port)) as c:
            c.sendall(b"PING\r\n")
            if c.recv(16).startswith(b"+PONG"):
                break
    except OSError:
        time.sleep(0.05)
t0 = time.monotonic()
with socket.create_connection((addr, port)) as c:
    c.sendall(b"SHUTDOWN NOSAVE\r\n")
    c.recv(64)  # the server closes the connection as it exits
while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
    if time.monotonic() - t0 > 10:
        sys.exit(1)
    time.sleep(0.005)
print(f"stopped=yes ms={int((time.monotonic() - t0) * 1000)}")
PY
wait "$pid"
