import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { IMAGE } from '../../src/constants.js';

const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = loadConfig();
    expect(c.policy).toMatchObject({
      resourceName: 'aliyun/erdma',
      injectResource: true,
      resourceContainer: 'first',
      disableIPv6: true,
    });
    expect(c.webhook).toMatchObject({ host: '127.0.0.1', port: 8443, certDir: 'webhook-certs' });
    expect(c.webhook.bodyLimit).toBeGreaterThanOrEqual(7 * 1024 * 1024);
  });

  it('takes flags over environment over file over defaults', () => {
    const file = join(dir, 'c.yaml');
    writeFileSync(file, 'webhook:\n  port: 1000\n  host: 0.0.0.0\nlogLevel: debug\n');
    const env = { ERDMA_SMCR_PORT: '2000', ERDMA_SMCR_LOG_LEVEL: 'warn' };
    const c = loadConfig({ file, env, flags: { 'webhook.port': 3000 } });
    expect(c.webhook.port).toBe(3000);
    expect(c.webhook.host).toBe('0.0.0.0');
    expect(c.logLevel).toBe('warn');
    expect(loadConfig({ file, env }).webhook.port).toBe(2000);
    expect(loadConfig({ file }).webhook.port).toBe(1000);
  });

  it('takes the preload init image from ERDMA_SMCR_PRELOAD_IMAGE, as the chart sets it (#102)', () => {
    expect(loadConfig().policy.preloadImage).toMatch(/^ghcr\.io\/erdma-smcr\/erdma-smcr:/);
    const env = { ERDMA_SMCR_PRELOAD_IMAGE: 'reg.example/me/erdma-smcr:v9' };
    expect(loadConfig({ env }).policy.preloadImage).toBe('reg.example/me/erdma-smcr:v9');
  });

  it('is frozen', () => {
    const c = loadConfig();
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.policy.defaultTuning)).toBe(true);
  });

  it.each([
    [{ flags: { 'webhook.port': 70000 } }, /webhook\.port/],
    [{ flags: { 'policy.resourceContainer': 'some' } }, /resourceContainer/],
    [{ flags: { 'policy.typo': true } }, /typo/],
    [{ env: { ERDMA_SMCR_PORT: 'eighty' } }, /ERDMA_SMCR_PORT=eighty is not a number/],
    [{ env: { ERDMA_SMCR_DISABLE_IPV6: 'perhaps' } }, /not a boolean/],
    [{ file: '/nonexistent/config.yaml' }, /cannot read config file/],
  ])('rejects bad configuration with a message naming the field (%#)', (sources, message) => {
    expect(() => loadConfig(sources)).toThrow(message);
  });

  it('names the file and line of each bad setting, and the key a misspelt one meant', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-lines-'));
    try {
      const file = join(dir, 'c.yaml');
      writeFileSync(file, 'webhook:\n  prot: 9443\n  port: abc\nagnet: {}\npolicy:\n  xyzzy: 1\n');
      let message = '';
      try {
        loadConfig({ file });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message.split('\n').slice(1).sort()).toEqual(
        [
          `  ${file}:2: webhook.prot: unknown setting; did you mean webhook.port?`,
          `  ${file}:3: webhook.port: Invalid input: expected number, received string`,
          `  ${file}:4: agnet: unknown setting; did you mean agent?`,
          `  ${file}:6: policy.xyzzy: unknown setting`,
        ].sort(),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a config file that is not a mapping', () => {
    const file = join(dir, 'list.yaml');
    writeFileSync(file, '- a\n- b\n');
    expect(() => loadConfig({ file })).toThrow(/must hold a mapping/);
  });
});

describe('our image', () => {
  it('is named in the code as the manifests name it, at the package version', () => {
    const kust = readFileSync('manifests/base/kustomization.yaml', 'utf8');
    const name = /- name: (\S+)\n\s+newTag: (\S+)/.exec(kust);
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
      .version;
    expect(IMAGE).toBe(`${name?.[1]}:${name?.[2]}`);
    expect(name?.[2]).toBe(version);
  });
});
