// Our YAML reading resolves plain scalars as kubectl does (sigs.k8s.io/yaml over go-yaml v2,
// YAML 1.1), so `check` judges the object the API server will receive. The comparison with
// kubectl 1.37 (test/harness/k8s/build.sh) runs wherever the Kubernetes build of the e2e suites is present (always in CI).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseYamlDocuments } from '../../src/util/yaml.js';
import { runCli } from '../helpers/cli.js';

/** The value of `v:` in a one-line document, as the API server would receive it (JSON). */
function read(scalar: string): unknown {
  const doc = parseYamlDocuments(`v: ${scalar}\n`, 'test.yaml')[0]?.value as { v: unknown };
  return JSON.parse(JSON.stringify(doc)).v;
}

describe('YAML scalars resolve as kubectl resolves them', () => {
  it.each([
    ['yes', true],
    ['On', true],
    ['y', true],
    ['NO', false],
    ['off', false],
    ['"yes"', 'yes'],
    ['oN', 'oN'],
  ])('booleans are YAML 1.1: %s is %j', (scalar, value) => expect(read(scalar)).toBe(value));

  it.each([
    ['0755', 493],
    ['0o17', 15],
    ['0x1F', 31],
    ['-0b11', -3],
    ['1_000', 1000],
    ['_1', '_1'],
    ['0o8', '0o8'],
  ])('integers follow Go: %s is %j', (scalar, value) => expect(read(scalar)).toBe(value));

  it.each([
    ['+.5', 0.5],
    ['-.5e2', -50],
    ['1_000.5', 1000.5],
    ['.9_826e3', 982.6],
    ['._5', '._5'],
    ['1e400', '1e400'],
    ['0.1.2', '0.1.2'],
  ])('floats follow go-yaml: %s is %j', (scalar, value) => expect(read(scalar)).toBe(value));

  it.each(['2026-01-01', '2026-01-01T10:00:00Z', '2026-01-01 10:00:00'])(
    'the timestamp %s stays a string',
    (scalar) => expect(read(scalar)).toBe(scalar),
  );

  it('keys that YAML 1.1 reads as booleans become "true" and "false"; two of them in one map are an error with a line', () => {
    expect(parseYamlDocuments('y: 1\nn: 2\n', 'k.yaml')[0]?.value).toEqual({ true: 1, false: 2 });
    expect(() => parseYamlDocuments('y: 1\non: 2\n', 'k.yaml')).toThrow(
      /k\.yaml:2:\d+: invalid YAML: duplicated mapping key/,
    );
  });
});

describe('check reads manifests as kubectl does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'yaml-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const pod = (annotation: string, spec = ''): string =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    network.alibabacloud.com/erdma-smcr: ${annotation}\nspec:\n${spec}  containers:\n    - name: app\n      image: busybox\n`;

  it('denies `hostNetwork: yes`, which kubectl sends as true', async () => {
    const f = join(dir, 'host.yaml');
    writeFileSync(f, pod('"true"', '  hostNetwork: yes\n'));
    const r = await runCli(['check', '-o', 'json', f]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).results[0].denials).toMatchObject([
      { rule: 'host-network', path: 'spec.hostNetwork' },
    ]);
  });

  it('calls an unquoted `on` on our annotation a YAML boolean, and says to quote "true"', async () => {
    const f = join(dir, 'on.yaml');
    writeFileSync(f, pod('on'));
    const r = await runCli(['check', '-o', 'json', f]);
    expect(r.code).toBe(1);
    const [denial] = JSON.parse(r.stdout).results[0].denials as { rule: string; message: string }[];
    expect(denial?.rule).toBe('annotation-value');
    expect(denial?.message).toContain(
      'is a YAML boolean, but annotation values must be strings: quote it ("true")',
    );
  });
});
