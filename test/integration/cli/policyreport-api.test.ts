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
import { startControlPlane, type ControlPlane } from '../../harness/k8s/control-plane.js';
import { runCli } from '../../helpers/cli.js';
import { k8sBinaries, requires } from '../../helpers/requires.js';

const ANNOTATION = 'network.alibabacloud.com/erdma-smcr';
const why = requires(
  'the PolicyReport API suite',
  k8sBinaries(['etcd', 'kube-apiserver', 'kubectl']),
);

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
      const { list } = await policyReport([root]);
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
      const { list } = await policyReport(['-'], docs);
      const r = await create(list);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stored.map((i) => i.results.length)).toEqual([MAX_RESULTS_PER_REPORT, 2]);
    });

    it('negative controls: the server does refuse an outcome the API lacks, and does prune a field it lacks', async () => {
      const { list } = await policyReport([join(root, 'a', 'denied.json')]);
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
