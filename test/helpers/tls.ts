// Real TLS clients for the webhook: HTTP/1.1 (node:https, keep-alive agent) and HTTP/2, each with
// our CA pinned and SNI set to the Service name the API server uses.
import { request as httpsRequest, Agent } from 'node:https';
import { connect, type ClientHttp2Session } from 'node:http2';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startServer, type RunningServer } from '../../src/admission/https-server.js';
import { ensureLocalCerts, type CertPaths } from '../../src/certs/local.js';
import { FileCertificates } from '../../src/certs/source.js';
import { StaticViewSource } from '../../src/cluster/view.js';
import { loadConfig } from '../../src/config/load.js';
import { NodeIndex } from '../../src/policy/nodes.js';

export const SNI = 'erdma-smcr-webhook.erdma-smcr.svc';

export interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * POSTs over HTTP/1.1 (to 127.0.0.1:`target`, or `target`'s host and port). Without an agent a fresh connection is used. With `midway`, the body is
 * sent in two halves and `midway` runs in between: the request is then truly in flight.
 */
export function postH1(
  target: number | { host: string; port: number },
  ca: string,
  path: string,
  body: string,
  agent?: Agent,
  midway?: () => Promise<unknown>,
): Promise<Reply> {
  const { host, port } = typeof target === 'number' ? { host: '127.0.0.1', port: target } : target;
  return new Promise((resolve, reject) => {
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    };
    const req = httpsRequest(
      { host, port, path, method: 'POST', ca, servername: SNI, agent: agent ?? false, headers },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: data, headers: res.headers }),
        );
      },
    );
    req.on('error', reject);
    if (!midway) return void req.end(body);
    const half = Math.floor(body.length / 2);
    req.write(body.slice(0, half));
    void midway().then(() => req.end(body.slice(half)), reject);
  });
}

export function h2Session(port: number, ca: string): ClientHttp2Session {
  return connect(`https://127.0.0.1:${port}`, { ca, servername: SNI });
}

export function postH2(
  session: ClientHttp2Session,
  path: string,
  body: string,
  midway?: () => Promise<unknown>,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/json',
    });
    let status = 0;
    let data = '';
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (data += c));
    stream.on('end', () => resolve({ status, body: data, headers: {} }));
    stream.on('error', reject);
    if (!midway) return void stream.end(body);
    const half = Math.floor(body.length / 2);
    stream.write(body.slice(0, half));
    void midway().then(() => stream.end(body.slice(half)), reject);
  });
}

export interface TestServer {
  server: RunningServer;
  paths: CertPaths;
  ca: () => string;
  dir: string;
  stop(): Promise<void>;
}

export async function startTestServer(flags: Record<string, unknown> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-'));
  const config = loadConfig({
    flags: { 'webhook.port': 0, 'webhook.metricsPort': 0, 'webhook.certDir': dir, ...flags },
  });
  const { paths } = ensureLocalCerts({
    dir,
    service: 'erdma-smcr-webhook',
    namespace: 'erdma-smcr',
  });
  const views = new StaticViewSource({
    driverMode: 'default',
    ipFamilies: ['IPv4'],
    nodesKnown: false,
    nodes: new NodeIndex(),
  });
  const server = await startServer({
    config,
    views,
    logger: pino({ level: 'silent' }),
    certificates: new FileCertificates(paths.key, paths.cert),
  });
  return {
    server,
    paths,
    dir,
    ca: () => readFileSync(paths.caCert, 'utf8'),
    async stop() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
