// A floor for a node daemon's memory (bench/memory/daemons.ts): `node` with the daemon's flags, loading
// the public built-in modules the daemon has loaded once idle and listening as it listens (an
// HTTP server for the kubelet's probes on ERDMA_SMCR_AGENT_METRICS_PORT; with a socket path
// argument, an HTTP/2 server on that unix socket, as the device plugin serves the kubelet's
// gRPC), and running none of our code or our dependencies'. With FLOOR_API_URL (and
// FLOOR_API_CA, a file, and FLOOR_API_TOKEN) it also holds one watch of the API server open over
// TLS with Node's own https, as the agent holds its pods' watch: what a TLS client costs on that
// runtime. What a daemon holds above it is its own. CommonJS, as the bundle is: an ES module
// would add Node 20's ES module loader (1.8 MB).
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS on purpose (above) */
'use strict';
const [modules = '', socket] = process.argv.slice(2);
// Node 20's deprecated aliases (`_tls_wrap`, `_http_agent`, ...) last: required before `tls`,
// `_tls_wrap` would load it half-made (tls.createSecureContext undefined).
const ids = modules.split(',').filter(Boolean);
for (const id of [
  ...ids.filter((i) => !i.startsWith('_')),
  ...ids.filter((i) => i.startsWith('_')),
])
  require(id);
const http = require('node:http');
http
  .createServer((req, res) => res.end('ok'))
  .listen(Number(process.env.ERDMA_SMCR_AGENT_METRICS_PORT), '0.0.0.0');
if (socket) require('node:http2').createServer().listen(socket);
const { FLOOR_API_URL: api, FLOOR_API_CA: ca, FLOOR_API_TOKEN: token } = process.env;
if (api) {
  const https = require('node:https');
  const req = https.get(
    new URL('/api/v1/pods?watch=true&allowWatchBookmarks=true', api),
    {
      ca: require('node:fs').readFileSync(ca),
      headers: { authorization: `Bearer ${token}` },
      agent: new https.Agent({ keepAlive: true }),
    },
    (res) => {
      // The watch's events are read and dropped; a refused watch ends the floor, saying why.
      if (res.statusCode !== 200) throw new Error(`the API server answered ${res.statusCode}`);
      res.resume();
    },
  );
  req.on('error', (err) => {
    throw err;
  });
}
setInterval(() => {}, 1000);
