# #88: a CPython server's graceful stop on a listener of the pod's mechanism. `socketserver ADDR
# PORT`: ThreadingTCPServer.serve_forever() in a thread, one request, then shutdown() and
# server_close(); `asyncio ADDR PORT`: asyncio.start_server, one request, then close() and
# wait_closed(). Prints "stopped=yes ms=N", or "stopped=no" when the stop did not end in 10 s.
import asyncio
import socket
import socketserver
import sys
import threading
import time

kind, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])


def by_socketserver():
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            self.wfile.write(b"ok")

    srv = socketserver.ThreadingTCPServer((addr, port), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    with socket.create_connection((addr, port)) as c:
        c.recv(2)
    t0 = time.monotonic()
    done = threading.Thread(target=lambda: (srv.shutdown(), srv.server_close()), daemon=True)
    done.start()
    done.join(10)
    t.join(1)
    return not done.is_alive() and not t.is_alive(), time.monotonic() - t0


async def by_asyncio():
    async def answer(r, w):
        w.write(b"ok")
        await w.drain()
        w.close()

    srv = await asyncio.start_server(answer, addr, port)
    r, w = await asyncio.open_connection(addr, port)
    await r.read()
    w.close()
    await w.wait_closed()
    t0 = time.monotonic()
    srv.close()
    try:
        await asyncio.wait_for(srv.wait_closed(), 10)
    except asyncio.TimeoutError:
        return False, time.monotonic() - t0
    return True, time.monotonic() - t0


ok, took = by_socketserver() if kind == "socketserver" else asyncio.run(by_asyncio())
print(f"stopped=yes ms={int(took * 1000)}" if ok else "stopped=no")
