// A Node.js client (#99): http.get, the body read to its end; prints its MD5 and length.
import { createHash } from 'node:crypto';
import { get } from 'node:http';

get(process.argv[2], (res) => {
  if (res.statusCode !== 200) {
    console.error(`status ${res.statusCode}`);
    process.exit(1);
  }
  const md5 = createHash('md5');
  let n = 0;
  res.on('data', (c) => {
    md5.update(c);
    n += c.length;
  });
  res.on('end', () => console.log(md5.digest('hex'), n));
}).on('error', (e) => {
  console.error(e.message);
  process.exit(1);
});
