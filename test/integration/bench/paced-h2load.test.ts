// The webhook benchmark's fixed-rate load (bench/paced.ts): the timing script it hands h2load, the
// percentile it reports, and a real h2load run against the real webhook over TLS, whose
// per-request log the bench parses (start in µs, status, response time in µs). Timings here only
// have to be plausible; the figures belong to `npm run bench`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrate, pacedLoad, timingScript } from '../../../bench/paced.js';
import { smcrReview } from '../../helpers/reviews.js';
import { startTestServer, type TestServer } from '../../helpers/tls.js';
import { requires } from '../../helpers/requires.js';

function h2loadMissing(): string {
  try {
    execFileSync('h2load', ['--version'], { stdio: 'ignore' });
    return '';
  } catch {
    return 'h2load missing (apt-get install nghttp2-client)';
  }
}

const why = requires('the fixed-rate bench suite', h2loadMissing);

const dir = mkdtempSync(join(tmpdir(), 'paced-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(why !== '')('pacedLoad: h2load against the real webhook over TLS', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => server?.stop());

  it('reads every response time from the log, in ms, and the rate the script reached', async () => {
    const body = join(dir, 'review.json');
    writeFileSync(body, JSON.stringify(smcrReview('pod-create')));
    const load = await pacedLoad(
      server.server.port,
      body,
      timingScript(dir, 200, 1),
      join(dir, 'ok.log'),
    );
    expect(load.errors).toBe(0);
    expect(load.latencies).toHaveLength(200);
    expect(
      load.latencies.every(
        (x, i) => x > 0 && x < 5_000 && (i === 0 || x >= load.latencies[i - 1]!),
      ),
    ).toBe(true);
    // 200/s asked; h2load's timers are late by a fraction of a ms per request, never early by much.
    expect(load.rate).toBeGreaterThan(120);
    expect(load.rate).toBeLessThan(230);
  });

  it('calibrates the script so that the rate reached is the rate asked', async () => {
    const body = join(dir, 'review.json');
    writeFileSync(body, JSON.stringify(smcrReview('pod-create')));
    const lateness = await calibrate(server.server.port, body, dir, 500, 4, 1);
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(1.5);
    const load = await pacedLoad(
      server.server.port,
      body,
      timingScript(dir, 500, 1, lateness),
      join(dir, 'calibrated.log'),
    );
    expect(load.errors).toBe(0);
    // Within 10%: the other test files share the machine's two vCPUs with this one.
    expect(load.rate).toBeGreaterThan(450);
    expect(load.rate).toBeLessThan(550);
  });

  it('counts answers that are not 200 as errors (a body that is not JSON gets a 400)', async () => {
    const body = join(dir, 'bad.json');
    writeFileSync(body, '{"apiVersion": ');
    const load = await pacedLoad(
      server.server.port,
      body,
      timingScript(dir, 100, 0.2),
      join(dir, 'bad.log'),
    );
    expect(load.latencies).toHaveLength(20);
    expect(load.errors).toBe(20);
  });
});
