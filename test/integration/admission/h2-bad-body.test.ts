// A body that is not JSON, over HTTP/2, against `serve` as its own process: the 400 answer, and a
// log that stays JSON lines. fastify marks such a reply `connection: close`, a header HTTP/2 does
// not have; Node printed an UnsupportedWarning into the JSON log for it (#70).
import { connect } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookProc, type WebhookProc } from '../../harness/webhook-proc.js';

let hook: WebhookProc;
beforeAll(async () => {
  hook = await startWebhookProc('127.0.0.1', ['--log-level', 'info']);
}, 60_000);
afterAll(async () => hook?.stop());

function post(
  body: string,
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const session = connect(`https://127.0.0.1:${hook.port}`, {
      ca: hook.caPem,
      servername: 'erdma-smcr-webhook.erdma-smcr.svc',
    });
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': '/mutate',
      'content-type': 'application/json',
    });
    let text = '';
    let status = 0;
    let headers: Record<string, unknown> = {};
    req.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      session.close();
      resolve({ status, headers, text });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('a body that is not JSON, over HTTP/2', () => {
  it('is answered 400 REVIEW_NOT_JSON, with no connection header, and the log stays JSON lines', async () => {
    const r = await post('{not json');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ code: 'REVIEW_NOT_JSON' });
    expect(r.headers.connection).toBeUndefined();
    await new Promise((res) => setTimeout(res, 300));
    const lines = hook
      .logs()
      .split('\n')
      .filter((l) => l.trim() !== '');
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(hook.logs()).not.toMatch(/UnsupportedWarning/);
  });
});
