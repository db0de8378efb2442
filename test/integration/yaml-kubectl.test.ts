// Our YAML reading resolves plain scalars as kubectl does (sigs.k8s.io/yaml over go-yaml v2,
// YAML 1.1), so `check` judges the object the API server will receive. The comparison with
// kubectl 1.37 (test/harness/k8s/build.sh) runs wherever the Kubernetes build of the e2e suites is present (always in CI).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseYamlDocuments } from '../../src/util/yaml.js';
import { KUBECTL, kubectlMissing } from '../harness/k8s/control-plane.js';
import { requires } from '../helpers/requires.js';

const CORPUS = 'test/fixtures/yaml/scalars.yaml';
const kubectl = KUBECTL;
const why = requires('YAML reading against kubectl 1.37', kubectlMissing);

describe.skipIf(why !== '')('against kubectl 1.37', () => {
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
