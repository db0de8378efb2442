// `check --output policyreport` against the PolicyReport API itself: the report is created on the
// harness's real v1.20.2 API server with the wgpolicyk8s.io v1alpha2 CRDs installed (their schema
// written from the published API, test/fixtures/policyreport/crds.yaml). kubectl validates against the
// schema the server publishes, the server enforces its types and enumerations and prunes any field
// the API does not have, so a report that is created and comes back unchanged is one the API
// accepts field for field.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESULTS_PER_REPORT } from '../../../src/cli/output/policyreport.js';
import { runCli } from '../../helpers/cli.js';

const ANNOTATION = 'network.alibabacloud.com/erdma-smcr';

interface Result {
  policy: string;
  rule: string;
  result: string;
  severity?: string;
  message: string;
  resources: { kind?: string; name: string; namespace?: string }[];
  properties: Record<string, string>;
  timestamp: { seconds: number; nanos: number };
}
interface Report {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  summary: Record<string, number>;
  results: Result[];
}
interface List {
  apiVersion: string;
  kind: string;
  items: Report[];
}

const pod = (
  name: string,
  namespace: string | undefined,
  spec: Record<string, unknown> = {},
): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, ...(namespace ? { namespace } : {}), annotations: { [ANNOTATION]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
});

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'policyreport-'));
  const write = (rel: string, content: unknown): void => {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), typeof content === 'string' ? content : JSON.stringify(content));
  };
  write('a/denied.json', pod('host', 'default', { hostNetwork: true }));
  write('a/allowed.json', pod('ok', 'team-a'));
  write('a/no-namespace.json', pod('floating', undefined));
  write('a/plain.json', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'default' },
    data: {},
  });
  write('a/odd.json', {
    apiVersion: 'example.com/v1',
    kind: 'Odd',
    metadata: { name: 'odd', namespace: 'team-a' },
    spec: { pods: [{ metadata: { annotations: { [ANNOTATION]: 'true' } } }] },
  });
  write('b/bad.yaml', 'kind: Pod\nmetadata: [unclosed\n');
  // A capable node, so that pods carry no "node list unknown" warning (offline, each would).
  writeFileSync(
    join(root, 'nodes.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'NodeList',
      items: [
        {
          metadata: { name: 'n1', labels: { 'smcr.erdma.io/capable': 'true' } },
          status: { nodeInfo: { kernelVersion: '5.10.134-17.al8.x86_64' } },
        },
      ],
    }),
  );
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function policyReport(
  args: string[],
  stdin?: string,
): Promise<{ code: number; list: List; text: string }> {
  const r = await runCli(
    ['check', '-o', 'policyreport', '--nodes', join(root, 'nodes.json'), ...args],
    stdin === undefined ? {} : { stdin },
  );
  return { code: r.code, list: JSON.parse(r.stdout) as List, text: r.stdout };
}

describe('check --output policyreport', () => {
  it('one report per namespace, a ClusterPolicyReport for the unreadable file, the summary counting the results', async () => {
    const { code, list } = await policyReport([root]);
    expect(code).toBe(2);
    expect(list).toMatchObject({ apiVersion: 'v1', kind: 'List' });
    const byKey = new Map(
      list.items.map((i) => [`${i.kind} ${i.metadata.namespace ?? '-'}/${i.metadata.name}`, i]),
    );
    expect([...byKey.keys()].sort()).toEqual([
      'ClusterPolicyReport -/erdma-smcr-check',
      'PolicyReport -/erdma-smcr-check-no-namespace',
      'PolicyReport default/erdma-smcr-check',
      'PolicyReport team-a/erdma-smcr-check',
    ]);
    const dflt = byKey.get('PolicyReport default/erdma-smcr-check')!;
    // The ConfigMap is not the policy's business: only the denied pod is listed.
    expect(dflt.results.map((r) => [r.rule, r.result, r.severity, r.resources[0]?.name])).toEqual([
      ['host-network', 'fail', 'high', 'host'],
    ]);
    expect(dflt.results[0]!.message).toMatch(/^spec\.hostNetwork: /);
    expect(dflt.results[0]!.properties.manifest).toMatch(/a\/denied\.json:1$/);
    expect(dflt.summary).toEqual({ pass: 0, fail: 1, warn: 0, error: 0, skip: 0 });
    const teamA = byKey.get('PolicyReport team-a/erdma-smcr-check')!;
    expect(
      teamA.results
        .map((r) => `${r.result} ${r.resources[0]?.kind}/${r.resources[0]?.name}`)
        .sort(),
    ).toEqual(['pass Pod/ok', 'warn Odd/odd']);
    expect(teamA.results.find((r) => r.resources[0]?.kind === 'Odd')!.message).toMatch(
      /cannot tell whether a pod template sits/,
    );
    expect(teamA.summary).toEqual({ pass: 1, fail: 0, warn: 1, error: 0, skip: 0 });
    expect(
      byKey.get('PolicyReport -/erdma-smcr-check-no-namespace')!.results.map((r) => r.resources[0]),
    ).toEqual([{ apiVersion: 'v1', kind: 'Pod', name: 'floating' }]);
    const errors = byKey.get('ClusterPolicyReport -/erdma-smcr-check')!;
    expect(errors.summary.error).toBe(1);
    expect(errors.results[0]).toMatchObject({
      result: 'error',
      properties: { code: 'INPUT_PARSE', manifest: expect.stringMatching(/b\/bad\.yaml:\d+$/) },
    });
    // One timestamp for the run, in every result.
    expect(new Set(list.items.flatMap((i) => i.results.map((r) => r.timestamp.seconds))).size).toBe(
      1,
    );
  });

  it(`splits a namespace's results every ${MAX_RESULTS_PER_REPORT} into reports a key-value store can hold`, async () => {
    const n = 2 * MAX_RESULTS_PER_REPORT + 8;
    const docs = Array.from({ length: n }, (_, i) => JSON.stringify(pod(`p${i}`, 'bulk'))).join(
      '\n---\n',
    );
    const { code, list } = await policyReport(['-'], docs);
    expect(code).toBe(0);
    const sum = (i: Report): number => Object.values(i.summary).reduce((a, b) => a + b, 0);
    expect(list.items.map((i) => [i.metadata.name, i.results.length, sum(i)])).toEqual([
      ['erdma-smcr-check', MAX_RESULTS_PER_REPORT, MAX_RESULTS_PER_REPORT],
      ['erdma-smcr-check-2', MAX_RESULTS_PER_REPORT, MAX_RESULTS_PER_REPORT],
      ['erdma-smcr-check-3', 8, 8],
    ]);
    expect(list.items.reduce((a, i) => a + (i.summary.pass ?? 0), 0)).toBe(n);
  });

  it('a clean run with nothing to report is an empty List, exit 0', async () => {
    const { code, list, text } = await policyReport(
      ['-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }),
    );
    expect(code).toBe(0);
    expect(list).toEqual({ apiVersion: 'v1', kind: 'List', items: [] });
    expect(text).toBe(`${JSON.stringify(list, null, 2)}\n`);
  });
});
