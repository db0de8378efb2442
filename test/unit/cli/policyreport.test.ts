// `check --output policyreport` offline: one report per namespace, the summary, results sorted and
// cut at the API's limits. That the API server accepts these reports field for field is
// test/integration/cli/policyreport-api.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESULTS_PER_REPORT } from '../../../src/cli/output/policyreport.js';
import {
  policyReport,
  pod,
  removeReportTree,
  writeReportTree,
  type Report,
} from '../../helpers/policyreport.js';

let root: string;
beforeAll(() => {
  root = writeReportTree();
});
afterAll(() => removeReportTree(root));

describe('check --output policyreport', () => {
  it('one report per namespace, a ClusterPolicyReport for the unreadable file, the summary counting the results', async () => {
    const { code, list } = await policyReport(root, [root]);
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
    const { code, list } = await policyReport(root, ['-'], docs);
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
      root,
      ['-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }),
    );
    expect(code).toBe(0);
    expect(list).toEqual({ apiVersion: 'v1', kind: 'List', items: [] });
    expect(text).toBe(`${JSON.stringify(list, null, 2)}\n`);
  });
});
