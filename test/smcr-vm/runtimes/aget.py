# A CPython asyncio client (#99), as asyncio services connect: open_connection, an HTTP/1.0 GET,
# the body read to its end; prints its MD5 and length.
import asyncio
import hashlib
import sys


async def main(host: str, port: int, path: str) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit(f"status: {head.splitlines()[0] if head else b'none'!r}")
    print(hashlib.md5(body).hexdigest(), len(body))


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
