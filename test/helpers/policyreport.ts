// A tree of manifests for `check --output policyreport` (a denied pod, an allowed one, one with no
// namespace, a ConfigMap, an unknown kind holding a pod template, an unreadable YAML file) and a
// capable node list, and the report's shape as the tests read it. Shared by the unit suite and the
// real-API-server suite so that both judge the same reports.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli.js';

export const ANNOTATION = 'network.alibabacloud.com/erdma-smcr';

export interface Result {
  policy: string;
  rule: string;
  result: string;
  severity?: string;
  message: string;
  resources: { kind?: string; name: string; namespace?: string }[];
  properties: Record<string, string>;
  timestamp: { seconds: number; nanos: number };
}
export interface Report {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  summary: Record<string, number>;
  results: Result[];
}
export interface List {
  apiVersion: string;
  kind: string;
  items: Report[];
}

export const pod = (
  name: string,
  namespace: string | undefined,
  spec: Record<string, unknown> = {},
): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, ...(namespace ? { namespace } : {}), annotations: { [ANNOTATION]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
});

/** Writes the tree into a new temp dir and returns its path (removeReportTree removes it). */
export function writeReportTree(): string {
  const root = mkdtempSync(join(tmpdir(), 'policyreport-'));
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
  return root;
}

export const removeReportTree = (root: string): void =>
  rmSync(root, { recursive: true, force: true });

/** Runs `check -o policyreport` with the tree's node list: the report as parsed and as printed. */
export async function policyReport(
  root: string,
  args: string[],
  stdin?: string,
): Promise<{ code: number; list: List; text: string }> {
  const r = await runCli(
    ['check', '-o', 'policyreport', '--nodes', join(root, 'nodes.json'), ...args],
    stdin === undefined ? {} : { stdin },
  );
  return { code: r.code, list: JSON.parse(r.stdout) as List, text: r.stdout };
}
