# A CPython client with the standard library's urllib, as scripts and services use it: fetches URL,
# reading slowly (64 KiB every 60 ms) so that the connection stays open while the test lists it,
# and prints "got N bytes". The server it talks to is `python3 -m http.server`, unmodified.
import sys
import time
import urllib.request

total = 0
with urllib.request.urlopen(sys.argv[1]) as resp:
    while True:
        chunk = resp.read(65536)
        if not chunk:
            break
        total += len(chunk)
        time.sleep(0.06)
print(f"got {total} bytes")
