// A Node.js program with node:http (libuv opens its sockets with SOCK_NONBLOCK|SOCK_CLOEXEC):
// `serve PORT` answers GET /bytes/N with N bytes; `get URL` fetches it reading slowly (pausing 60 ms
// after each chunk), so that the connection stays open while the test lists it, and prints
// "got N bytes".
import http from 'node:http';

const [cmd, arg] = process.argv.slice(2);
if (cmd === 'serve') {
  http
    .createServer((req, res) => {
      const n = Number((req.url ?? '').replace(/^\/bytes\//, ''));
      if (!Number.isInteger(n) || n < 0) {
        res.writeHead(400).end('bad size');
        return;
      }
      res.writeHead(200, { 'content-length': n });
      const chunk = Buffer.alloc(65536);
      let left = n;
      const more = () => {
        while (left > 0) {
          const k = Math.min(left, chunk.length);
          left -= k;
          if (!res.write(k === chunk.length ? chunk : chunk.subarray(0, k)))
            return void res.once('drain', more);
        }
        res.end();
      };
      more();
    })
    .listen(Number(arg));
} else if (cmd === 'get') {
  http
    .get(arg, (res) => {
      let total = 0;
      res.on('data', (d) => {
        total += d.length;
        res.pause();
        setTimeout(() => res.resume(), 60);
      });
      res.on('end', () => console.log(`got ${total} bytes`));
    })
    .on('error', (err) => {
      console.error(err.message);
      process.exitCode = 1;
    });
} else {
  console.error('usage: http.mjs serve PORT | get URL');
  process.exitCode = 2;
}
