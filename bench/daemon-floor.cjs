// A floor for a node daemon's memory (bench/memory.ts): `node` with the daemon's flags, loading
// the public built-in modules the daemon has loaded once idle and listening as it listens (an
// HTTP server for the kubelet's probes on ERDMA_SMCR_AGENT_METRICS_PORT; with a socket path
// argument, an HTTP/2 server on that unix socket, as the device plugin serves the kubelet's
// gRPC), and running none of our code or our dependencies'. What a daemon holds above it is its
// own. CommonJS, as the bundle is: an ES module would add Node 20's ES module loader (1.8 MB).
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS on purpose (above) */
'use strict';
const [modules = '', socket] = process.argv.slice(2);
for (const id of modules.split(',').filter(Boolean)) require(id);
const http = require('node:http');
http
  .createServer((req, res) => res.end('ok'))
  .listen(Number(process.env.ERDMA_SMCR_AGENT_METRICS_PORT), '0.0.0.0');
if (socket) require('node:http2').createServer().listen(socket);
setInterval(() => {}, 1000);
