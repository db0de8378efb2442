// #88: a Node.js server's graceful stop on a listener of the pod's mechanism: net.Server serving
// one connection, then server.close() (no new connections; its callback once the last is gone).
// Usage: node stop.mjs ADDR PORT. Prints "stopped=yes ms=N", or "stopped=no" after 10 s.
import net from 'node:net';

const [addr, port] = [process.argv[2], Number(process.argv[3])];
const server = net.createServer((c) => c.end('ok'));
await new Promise((ok) => server.listen(port, addr, ok));
await new Promise((ok, fail) => {
  const c = net.connect(port, addr);
  c.on('error', fail)
    .on('data', () => undefined)
    .on('end', ok);
});
const t0 = Date.now();
const stopped = await Promise.race([
  new Promise((ok) => server.close(() => ok(true))),
  new Promise((ok) => setTimeout(() => ok(false), 10_000).unref()),
]);
console.log(stopped ? `stopped=yes ms=${Date.now() - t0}` : 'stopped=no');
process.exit(0);
