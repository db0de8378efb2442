// `check --output policyreport` against the PolicyReport API itself: the report is created on the
// harness's real v1.20.2 API server with the wgpolicyk8s.io v1alpha2 CRDs installed (their schema
// written from the published API, test/fixtures/policyreport/crds.yaml). kubectl validates against the
// schema the server publishes, the server enforces its types and enumerations and prunes any field
// the API does not have, so a report that is created and comes back unchanged is one the API
// accepts field for field.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESULTS_PER_REPORT } from '../../../src/cli/output/policyreport.js';
import { startControlPlane, type ControlPlane } from '../../harness/k8s/control-plane.js';
import {
  policyReport,
  pod,
  removeReportTree,
  writeReportTree,
  type List,
  type Report,
} from '../../helpers/policyreport.js';
import { k8sBinaries, requires } from '../../helpers/requires.js';

const why = requires(
  'the PolicyReport API suite',
  k8sBinaries(['etcd', 'kube-apiserver', 'kubectl']),
);

let root: string;
beforeAll(() => {
  root = writeReportTree();
});
afterAll(() => removeReportTree(root));

describe.skipIf(why !== '')(
  'the PolicyReport API accepts the report (real API server, wgpolicyk8s.io CRDs)',
  () => {
    let cp: ControlPlane;
    beforeAll(async () => {
      cp = await startControlPlane();
      const crds = await cp.kubectl(['apply', '-f', 'test/fixtures/policyreport/crds.yaml']);
      expect(crds.status, crds.stderr).toBe(0);
      const est = await cp.kubectl([
        'wait',
        '--for',
        'condition=Established',
        '--timeout',
        '60s',
        'crd/policyreports.wgpolicyk8s.io',
        'crd/clusterpolicyreports.wgpolicyk8s.io',
      ]);
      expect(est.status, est.stderr).toBe(0);
      for (const ns of ['team-a', 'bulk'])
        expect((await cp.kubectl(['create', 'namespace', ns])).status).toBe(0);
    }, 120_000);
    afterAll(async () => {
      await cp?.stop();
    });

    /** Creates the List; returns what the server then holds for each item, in the List's order. */
    async function create(
      list: List,
      flags: string[] = [],
    ): Promise<{ status: number; stderr: string; stored: Report[] }> {
      const r = await cp.kubectl(['create', ...flags, '-f', '-'], JSON.stringify(list));
      if (r.status !== 0) return { status: r.status, stderr: r.stderr, stored: [] };
      const got = await cp.kubectl([
        'get',
        'policyreports,clusterpolicyreports',
        '-A',
        '-o',
        'json',
      ]);
      const all = (JSON.parse(got.stdout) as List).items;
      const stored = list.items.map((i) => {
        const found = all.find(
          (a) =>
            a.kind === i.kind &&
            a.metadata.name === i.metadata.name &&
            (a.metadata.namespace ?? '') ===
              (i.kind === 'ClusterPolicyReport' ? '' : (i.metadata.namespace ?? 'default')),
        );
        if (!found)
          throw new Error(
            `${i.kind} ${i.metadata.namespace ?? ''}/${i.metadata.name} was not stored`,
          );
        return found;
      });
      return { status: 0, stderr: r.stderr, stored };
    }

    const essence = (i: Report) => ({
      kind: i.kind,
      name: i.metadata.name,
      namespace: i.metadata.namespace ?? 'default',
      labels: i.metadata.labels,
      summary: i.summary,
      results: i.results,
    });

    it('stores every report exactly as written: no field refused, none pruned', async () => {
      const { list } = await policyReport(root, [root]);
      const r = await create(list);
      expect(r.status, r.stderr).toBe(0);
      // The report without a namespace lands in the context's (default); the cluster-scoped one has none.
      const stored = r.stored.map((i) => ({
        ...essence(i),
        namespace: i.metadata.namespace ?? '(cluster)',
      }));
      const sent = list.items.map((i) => ({
        ...essence(i),
        namespace:
          i.kind === 'ClusterPolicyReport' ? '(cluster)' : (i.metadata.namespace ?? 'default'),
      }));
      expect(stored).toEqual(sent);
      const got = await cp.kubectl([
        'get',
        'policyreports',
        '-A',
        '-o',
        'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.summary.fail}{"\\n"}{end}',
      ]);
      expect(got.stdout.trim().split('\n').sort()).toEqual([
        'default/erdma-smcr-check 1',
        'default/erdma-smcr-check-no-namespace 0',
        'team-a/erdma-smcr-check 0',
      ]);
    });

    it('stores split reports too (each under the size limit)', async () => {
      const docs = Array.from({ length: MAX_RESULTS_PER_REPORT + 2 }, (_, i) =>
        JSON.stringify(pod(`p${i}`, 'bulk')),
      ).join('\n---\n');
      const { list } = await policyReport(root, ['-'], docs);
      const r = await create(list);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stored.map((i) => i.results.length)).toEqual([MAX_RESULTS_PER_REPORT, 2]);
    });

    it('negative controls: the server does refuse an outcome the API lacks, and does prune a field it lacks', async () => {
      const { list } = await policyReport(root, [join(root, 'a', 'denied.json')]);
      const bad = structuredClone(list);
      bad.items[0]!.metadata.name = 'bogus-result';
      bad.items[0]!.results[0]!.result = 'denied';
      const refused = await create(bad);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/results(\[0\])?\.result: Unsupported value: "denied"/);
      const extra = structuredClone(list);
      extra.items[0]!.metadata.name = 'extra-field';
      (extra.items[0]!.results[0] as unknown as Record<string, unknown>).verdict = 'x';
      // kubectl validates against the API's published schema first: an unknown field is refused...
      const unknown = await create(extra);
      expect(unknown.status).not.toBe(0);
      expect(unknown.stderr).toMatch(/unknown field "verdict"/);
      // ...and past that check, the server prunes it: the comparison above would have seen it missing.
      const pruned = await create(extra, ['--validate=false']);
      expect(pruned.status, pruned.stderr).toBe(0);
      expect(pruned.stored[0]!.results[0]).not.toHaveProperty('verdict');
    });
  },
);
