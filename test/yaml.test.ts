// Our YAML reading resolves plain scalars as kubectl does (sigs.k8s.io/yaml over go-yaml v2,
// YAML 1.1), so `check` judges the object the API server will receive. The comparison with
// Debian's kubectl runs wherever the Kubernetes build of the e2e suites is present (always in CI).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseYamlDocuments } from '../src/util/yaml.js';
import { KUBECTL, kubectlMissing } from './harness/k8s/control-plane.js';
import { runCli } from './helpers/cli.js';

const CORPUS = 'test/fixtures/yaml/scalars.yaml';
const kubectl = KUBECTL;
const why = kubectlMissing();

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

  describe.skipIf(why !== '')("against Debian's kubectl", () => {
    const dir = mkdtempSync(join(tmpdir(), 'yaml-kubectl-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** A manifest as kubectl sends it: `kubectl annotate --local` decodes and re-encodes without a server. */
    function viaKubectl(file: string): unknown {
      const kubeconfig = join(dir, 'kubeconfig'); // empty: nothing of this machine's is read
      writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
      const r = spawnSync(
        kubectl,
        ['annotate', '--local', '-f', file, '-o', 'json', 'erdma-smcr.test/probe=1'],
        {
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '', HOME: dir, KUBECONFIG: kubeconfig },
        },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const theirs = JSON.parse(r.stdout) as { metadata: { annotations: Record<string, string> } };
      delete theirs.metadata.annotations['erdma-smcr.test/probe'];
      if (Object.keys(theirs.metadata.annotations).length === 0)
        delete (theirs.metadata as { annotations?: unknown }).annotations;
      return theirs;
    }

    const ours = (file: string): unknown =>
      JSON.parse(JSON.stringify(parseYamlDocuments(readFileSync(file, 'utf8'), file)[0]?.value));

    it(`${CORPUS} reads the same as kubectl`, () => {
      expect(ours(CORPUS)).toEqual(viaKubectl(CORPUS));
    });

    it('2,000 generated number- and boolean-like scalars read the same as kubectl', () => {
      // Built from the characters that steer go-yaml's resolution: signs, digits, dots, underscores,
      // base prefixes, exponents, hex digits, and YAML 1.1's boolean words. Short enough to stay
      // exact in a double. Left out: a lone "-" (a sequence), and .inf/.nan (kubectl cannot
      // write them as JSON).
      const piece = fc.constantFrom(
        '0',
        '1',
        '7',
        '8',
        '9',
        '00',
        '-',
        '+',
        '.',
        '_',
        'x',
        'o',
        'b',
        'e',
        'E',
        'a',
        'F',
        'y',
        'n',
        'yes',
        'No',
        'on',
        'OFF',
        'true',
      );
      const jumble = fc.array(piece, { minLength: 1, maxLength: 5 }).map((p) => p.join(''));
      // Number-shaped: sign, base prefix, digits with underscores, fraction, exponent.
      const digits = (chars: string, max: number): fc.Arbitrary<string> =>
        fc.string({ unit: fc.constantFrom(...chars), maxLength: max });
      const numeric = fc
        .tuple(
          fc.constantFrom('', '', '-', '+'),
          fc.constantFrom('', '', '0', '0x', '0o', '0b', '0X', '.'),
          digits('0123456789_abfF', 6),
          fc.constantFrom('', '', '.', '.5', '._5'),
          fc.constantFrom('', '', 'e3', 'E-2', 'e'),
        )
        .map((p) => p.join(''));
      const scalar = fc
        .oneof(jumble, numeric, numeric)
        .filter((v) => v !== '' && v !== '-' && !/^[-+]?\.(inf|nan)$/i.test(v) && v.length <= 12);
      const values = fc.sample(scalar, { numRuns: 2000, seed: 20261122 });
      const file = join(dir, 'generated.yaml');
      const spec = values.map((v, i) => `    k${i}: ${v}`).join('\n');
      writeFileSync(
        file,
        `apiVersion: v1\nkind: Pod\nmetadata:\n  name: generated\nspec:\n  probe:\n${spec}\n`,
      );
      const theirs = viaKubectl(file) as { spec: { probe: Record<string, unknown> } };
      const mine = ours(file) as { spec: { probe: Record<string, unknown> } };
      const differ = values
        .map((v, i) => [v, mine.spec.probe[`k${i}`], theirs.spec.probe[`k${i}`]] as const)
        .filter(([, a, b]) => !Object.is(a, b));
      expect(differ).toEqual([]);
    });
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
