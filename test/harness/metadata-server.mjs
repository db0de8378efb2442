// A stand-in for the ECS instance metadata service, for tests that run it inside a network
// namespace at 100.100.100.200:80 (nothing real can answer there on this machine). It answers
// exactly the documented items the agent reads (ECS "Instance metadata" reference):
//   GET /latest/meta-data/mac
//   GET /latest/meta-data/network/interfaces/macs/ (every NIC's MAC, one per line, each with "/")
//   GET /latest/meta-data/network/interfaces/macs/<mac>/{primary-ip-address,vswitch-cidr-block,gateway}
//   PUT /latest/api/token (hardened mode; header X-aliyun-ecs-metadata-token-ttl-seconds)
// and 404 for anything else, including unknown MACs. Plain text bodies, as the service sends.
// Prints "ready PORT" once listening.
// Config (argv[2], JSON): { port, host?, primaryMac, enis: { <mac>: {address, cidr, gateway} },
//   requireToken?: boolean, delayMs?: number, log?: path }
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

const cfg = JSON.parse(process.argv[2]);
const TOKEN = 'test-token-0123456789';
const ITEMS = { 'primary-ip-address': 'address', 'vswitch-cidr-block': 'cidr', gateway: 'gateway' };

function answer(req) {
  if (req.method === 'PUT' && req.url === '/latest/api/token') {
    const ttl = Number(req.headers['x-aliyun-ecs-metadata-token-ttl-seconds']);
    return ttl >= 1 && ttl <= 21600 ? [200, TOKEN] : [400, 'bad ttl'];
  }
  if (req.method !== 'GET') return [405, ''];
  if (cfg.requireToken && req.headers['x-aliyun-ecs-metadata-token'] !== TOKEN)
    return [401, 'token required'];
  if (req.url === '/latest/meta-data/mac') return [200, cfg.primaryMac];
  if (req.url === '/latest/meta-data/network/interfaces/macs/')
    return [
      200,
      [...new Set([cfg.primaryMac, ...Object.keys(cfg.enis)])].map((m) => `${m}/`).join('\n'),
    ];
  const m = /^\/latest\/meta-data\/network\/interfaces\/macs\/([0-9a-f:]{17})\/([a-z-]+)$/.exec(
    req.url ?? '',
  );
  const eni = m ? cfg.enis[m[1]] : undefined;
  const key = m ? ITEMS[m[2]] : undefined;
  return eni && key ? [200, eni[key]] : [404, 'Not Found'];
}

createServer((req, res) => {
  const [status, body] = answer(req);
  if (cfg.log) appendFileSync(cfg.log, `${req.method} ${req.url} ${status}\n`);
  setTimeout(() => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(body);
  }, cfg.delayMs ?? 0);
}).listen(cfg.port ?? 80, cfg.host ?? '0.0.0.0', function () {
  process.stdout.write(`ready ${this.address().port}\n`);
});
