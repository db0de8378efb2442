// The ECS instance metadata service, as the ENI pass reads it: a small client with bounded time
// per request and bounded retries, over node:http (not fetch: see httpRequest).
//
// Metadata items (ECS "Instance metadata" reference, alibabacloud.com/help/doc-detail/49122.htm,
// version 2016-01-01 and latest): `mac` (the primary NIC's MAC), `network/interfaces/macs/` (the
// MAC of every NIC, one per line, each ending in `/`), and per NIC under
// `network/interfaces/macs/[mac]/`: `primary-ip-address`, `vswitch-cidr-block`, `gateway`. The
// hardened mode's token (`PUT /latest/api/token` with `X-aliyun-ecs-metadata-token-ttl-seconds`,
// then `X-aliyun-ecs-metadata-token` on each GET; ECS "Access mode of instance metadata") is used
// when the service hands one out.
import { request as plainRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { named } from '../../errors.js';

const TOKEN_TTL_SECONDS = 21_600;

export class MetadataError extends Error {}
named(MetadataError, 'MetadataError');

export interface MetadataOptions {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** Further tries after a failed one (network error, time-out, 5xx), with doubling back-off. */
  readonly retries: number;
  readonly backoffMs?: number;
}

export interface EniMeta {
  readonly address: string;
  readonly cidr: string;
  readonly gateway: string;
}

/** One answer of the metadata service (its answers are a few bytes; more than MAX_BODY is refused). */
interface Answer {
  readonly status: number;
  readonly body: string;
}

const MAX_BODY = 64 << 10;

/**
 * One HTTP request with node:http(s), not fetch: fetch's HTTP parser is WebAssembly, which the
 * agent's V8 lite mode (manifests/base/agent.yaml) does not have (#43).
 */
function httpRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const send = url.protocol === 'https:' ? httpsRequest : plainRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy(new Error(`an answer over ${MAX_BODY} bytes`));
        else chunks.push(c);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    // The whole request, answer included, within timeoutMs (the socket's timeout counts idleness).
    const timer = setTimeout(() => req.destroy(new TimeoutError(timeoutMs)), timeoutMs);
    req.on('timeout', () => req.destroy(new TimeoutError(timeoutMs)));
    req.on('error', reject);
    req.on('close', () => clearTimeout(timer));
    req.end();
  });
}

class TimeoutError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/** The system's reason (ECONNREFUSED, EHOSTUNREACH, ...) where there is one. */
function networkReason(err: unknown): string {
  return (err as { code?: string }).code ?? (err as Error).message;
}

const ok = (a: Answer): boolean => a.status >= 200 && a.status < 300;

/** A small client of the ECS metadata service: bounded time per request, bounded retries. */
export class MetadataClient {
  private token: Promise<string | undefined> | undefined;

  constructor(private readonly o: MetadataOptions) {}

  private once(
    method: 'GET' | 'PUT',
    path: string,
    headers: Record<string, string>,
  ): Promise<Answer> {
    return httpRequest(new URL(path, this.o.baseUrl), method, headers, this.o.timeoutMs);
  }

  /** A request with retries: 404 and other 4xx are answers, not failures. */
  private async request(
    method: 'GET' | 'PUT',
    path: string,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    let wait = this.o.backoffMs ?? 200;
    let last = '';
    for (let attempt = 0; attempt <= this.o.retries; attempt++) {
      if (attempt > 0) {
        await new Promise((r) => setTimeout(r, wait));
        wait *= 2;
      }
      try {
        const res = await this.once(method, path, headers);
        if (res.status < 500) return res;
        last = `HTTP ${res.status}`;
      } catch (err) {
        last = err instanceof TimeoutError ? err.message : networkReason(err);
      }
    }
    const tries = this.o.retries === 0 ? 'tried once' : `tried ${this.o.retries + 1} times`;
    throw new MetadataError(`instance metadata ${this.o.baseUrl}${path}: ${last} (${tries})`);
  }

  /** The hardened mode's token, when the service gives one (asked once). */
  private tokenHeader(): Promise<Record<string, string>> {
    this.token ??= this.request('PUT', '/latest/api/token', {
      'X-aliyun-ecs-metadata-token-ttl-seconds': String(TOKEN_TTL_SECONDS),
    }).then(
      (res) => (ok(res) ? res.body.trim() || undefined : undefined),
      (err: unknown) => {
        this.token = undefined; // try again next time
        throw err;
      },
    );
    return this.token.then((t): Record<string, string> =>
      t ? { 'X-aliyun-ecs-metadata-token': t } : {},
    );
  }

  /** One item under /latest/meta-data/; undefined when the service says 404. */
  async item(path: string): Promise<string | undefined> {
    const res = await this.request('GET', `/latest/meta-data/${path}`, await this.tokenHeader());
    if (res.status === 404) return undefined;
    if (!ok(res)) throw new MetadataError(`instance metadata ${path}: HTTP ${res.status}`);
    return res.body.trim();
  }

  async primaryMac(): Promise<string> {
    const mac = await this.item('mac');
    if (!mac) throw new MetadataError('instance metadata has no primary MAC (mac)');
    return mac.toLowerCase();
  }

  /** The ENI's address, vSwitch CIDR and gateway; undefined when the service does not know the MAC. */
  async eni(mac: string): Promise<EniMeta | undefined> {
    const base = `network/interfaces/macs/${mac.toLowerCase()}/`;
    const [address, cidr, gateway] = await Promise.all(
      ['primary-ip-address', 'vswitch-cidr-block', 'gateway'].map((k) => this.item(base + k)),
    );
    if (address === undefined || cidr === undefined || gateway === undefined) return undefined;
    return { address, cidr, gateway };
  }

  /** Every NIC's MAC, lower case (the listing's entries end in `/`); none when the service says 404. */
  async macs(): Promise<string[]> {
    const text = await this.item('network/interfaces/macs/');
    return [...(text ?? '').matchAll(/([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})\/?/g)].map((m) =>
      m[1]!.toLowerCase(),
    );
  }

  /** The vSwitch CIDR of one NIC; undefined when the service does not know the MAC. */
  vswitchCidr(mac: string): Promise<string | undefined> {
    return this.item(`network/interfaces/macs/${mac.toLowerCase()}/vswitch-cidr-block`);
  }
}
