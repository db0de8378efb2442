import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch, type Operation } from 'fast-json-patch';
import jsyaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeProfiles } from '../../../src/check/profiles.js';
import { main } from '../../../src/cli/main.js';
import { runCli } from '../../helpers/cli.js';
import { errnoReason } from '../../../src/util/errno.js';

const POD = (value: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata:
  name: p-${value || 'empty'}
  namespace: ns
  annotations:
    network.alibabacloud.com/erdma-smcr: "${value}"
spec:
${extra}  containers:
    - name: app
      image: busybox
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'check-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, text);
  return p;
}

describe('erdma-smcr check', () => {
  // A subfolder is judged by the ClusterProfile above it in the repository, as the whole tree is (#70).
  it('judges examples/valid/ and examples/invalid/ alone as within examples/', async () => {
    const valid = await runCli(['check', '--fail-on-warn', 'examples/valid/']);
    expect(valid.code, valid.stdout).toBe(0);
    expect(valid.stderr).not.toMatch(/node list unknown/);
    const invalid = await runCli(['check', 'examples/invalid/']);
    for (const f of ['acl4-and-ofed.yaml', 'old-kernel.yaml', 'rdma-host-network.yaml'])
      expect(invalid.stdout).toMatch(new RegExp(`DENY .*examples/invalid/${f}`));
    const one = await runCli(['check', 'examples/invalid/old-kernel.yaml']);
    expect(one.code, one.stdout).toBe(1);
  });

  it('reads no ClusterProfile above the paths outside a repository, and one inside', async () => {
    const tree = join(dir, 'above');
    file('above/profile.yaml', readFileSync('examples/cluster-profile.yaml', 'utf8'));
    file('above/apps/pod.yaml', POD('true'));
    const outside = await runCli(['check', join(tree, 'apps')]);
    expect(outside.stderr).toMatch(/node list unknown/);
    mkdirSync(join(tree, '.git'));
    const inside = await runCli(['check', join(tree, 'apps')]);
    expect(inside.stderr).not.toMatch(/node list unknown/);
  });

  it('-o yaml writes the admitted objects for kubectl apply -f -, and leaves the denied out', async () => {
    const r = await runCli([
      'check',
      '-o',
      'yaml',
      'examples/valid/',
      'examples/invalid/host-network.yaml',
    ]);
    expect(r.code).toBe(1);
    const docs = jsyaml.loadAll(r.stdout).filter(Boolean) as {
      kind: string;
      metadata: { name: string; annotations?: Record<string, string> };
      spec?: { containers?: { resources?: { limits?: Record<string, string> } }[] };
    }[];
    // The pod as the webhook admits it; the Deployment as written (its pods are mutated one by one).
    const redis = docs.find((d) => d.kind === 'Pod' && d.metadata.name === 'redis')!;
    expect(redis.metadata.annotations).toHaveProperty('smcr.erdma.io/settings');
    expect(redis.spec!.containers![0]!.resources!.limits).toMatchObject({ 'aliyun/erdma': '1' });
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    expect(deployment.metadata.annotations?.['smcr.erdma.io/settings']).toBeUndefined();
    expect(docs.some((d) => d.kind === 'DaemonSet')).toBe(false);
    expect(r.stdout).toMatch(
      /^# denied, left out: DaemonSet monitoring\/node-exporter .*\[host-network\]/m,
    );
    expect(r.stdout).toMatch(/^# \d+ object\(s\) checked: \d+ written, 1 denied and left out$/m);
  });

  it('--exclude skips the files whose path matches, repeatable; a bad pattern is a usage error', async () => {
    const r = await runCli(['check', '--exclude', 'invalid/', '--exclude', 'compat', 'examples/']);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).not.toMatch(/examples\/(invalid|compat-cluster)\//);
    expect(r.stdout).toMatch(/PASS .*examples\/valid\/pod-basic\.yaml/);
    const bad = await runCli(['check', '--exclude', '(', 'examples/']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--exclude \(: not a regular expression/);
    // Everything excluded: nothing to check, exit 2.
    expect((await runCli(['check', '--exclude', '.', 'examples/'])).code).toBe(2);
  });

  it('says when --profile leaves a ClusterProfile of the tree unused', async () => {
    const r = await runCli(['check', '--profile', 'examples/cluster-profile.yaml', 'examples/']);
    expect(r.stderr).toBe(
      'erdma-smcr: --profile examples/cluster-profile.yaml judges every manifest; the ClusterProfiles in examples/compat-cluster/cluster-profile.yaml:4, examples/reserved-ports/cluster-profile.yaml:5 are not used\n',
    );
    const same = await runCli([
      'check',
      '--profile',
      'examples/cluster-profile.yaml',
      'examples/valid/',
    ]);
    expect(same.stderr).toBe('');
  });

  it('exits 1 on the shipped examples and explains every invalid example', async () => {
    const r = await runCli(['check', 'examples/']);
    expect(r.code).toBe(1);
    const denied = r.stdout.split('\n').filter((l) => l.startsWith('DENY'));
    const invalidFiles = new Set(
      denied.map((l) => /examples\/(invalid|compat-cluster)\/[^:]+/.exec(l)?.[0]),
    );
    expect([...invalidFiles].sort()).toEqual([
      'examples/compat-cluster/driver-mode.yaml',
      'examples/invalid/acl4-and-ofed.yaml',
      'examples/invalid/annotation-value.yaml',
      'examples/invalid/container-missing.yaml',
      'examples/invalid/device-claim-missing.yaml',
      'examples/invalid/erdma-mismatch.yaml',
      'examples/invalid/erdma-zero.yaml',
      'examples/invalid/host-network.yaml',
      'examples/invalid/ipv6-dns.yaml',
      'examples/invalid/old-kernel.yaml',
      'examples/invalid/rdma-host-network.yaml',
      'examples/invalid/selection-ports.yaml',
      'examples/invalid/tuning-range.yaml',
    ]);
    // Every rule docs/policy.md lists has its example, denied by that rule; but object-size, whose
    // example would need thousands of node-affinity terms, object-kind, which judges a review and
    // not a manifest, and annotation-placement, reserved-ports and rdma-ipc-lock, which only warn
    // (test/unit/policy/rules/ covers them).
    const rules = new Set([...r.stdout.matchAll(/✘ \[([a-z-]+)\]/g)].map((m) => m[1]));
    const notDenying = new Set([
      'object-size',
      'object-kind',
      'annotation-placement',
      'reserved-ports',
      'rdma-ipc-lock',
    ]);
    const documented = readFileSync('docs/policy.md', 'utf8')
      .split('\n')
      .map((l) => /^\| `([a-z-]+)` \|/.exec(l)?.[1])
      .filter((id): id is string => id !== undefined && !notDenying.has(id));
    expect(documented.length).toBeGreaterThan(8);
    expect([...rules].sort()).toEqual([...new Set(documented)].sort());
    expect(r.stdout).not.toMatch(/DENY.*examples\/valid/);
  });

  it('exits 0 on the valid examples', async () => {
    const r = await runCli(['check', 'examples/valid/']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /7 object\(s\) checked: 7 allowed \(2 skipped: not for SMC-R\), 0 denied/,
    );
    expect(r.stdout).toMatch(/^SKIP {2}/m);
  });

  it('prints the documented JSON shape', async () => {
    const r = await runCli(['check', '-o', 'json', file('one.yaml', POD('yes'))]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.summary).toEqual({
      objects: 1,
      allowed: 0,
      denied: 1,
      warnings: 0,
      skipped: 0,
      errors: 0,
    });
    expect(report.errors).toEqual([]);
    expect(report.results[0]).toMatchObject({
      source: expect.stringMatching(/one\.yaml:1$/),
      kind: 'Pod',
      namespace: 'ns',
      name: 'p-yes',
      allowed: false,
      denials: [
        {
          rule: 'annotation-value',
          message: expect.any(String),
          path: 'metadata.annotations[network.alibabacloud.com/erdma-smcr]',
        },
      ],
      warnings: [],
      patch: [],
    });
  });

  it('prints the patch of an allowed pod in JSON and with --show-patch', async () => {
    const f = file('ok.yaml', POD('true'));
    const json = JSON.parse((await runCli(['check', '-o', 'json', f])).stdout);
    expect(json.results[0].patch.length).toBeGreaterThan(0);
    const text = await runCli(['check', '--show-patch', f]);
    expect(text.stdout).toContain('"path":"/metadata/annotations/smcr.erdma.io~1settings"');
  });

  describe('--show-mutated', () => {
    /** The blocks printed under a header line, unindented: each a YAML or JSON Patch text. */
    function block(stdout: string, header: RegExp): string {
      const lines = stdout.split('\n');
      const start = lines.findIndex((l) => header.test(l));
      expect(start).toBeGreaterThanOrEqual(0);
      const body: string[] = [];
      for (const l of lines.slice(start + 1)) {
        if (!l.startsWith('        ')) break;
        body.push(l.slice(8));
      }
      return body.join('\n');
    }

    it('prints a pod as the webhook admits it: its patch applied, and judged again it needs none', async () => {
      const f = file('show/pod.yaml', POD('true'));
      const r = await runCli(['check', '--show-mutated', '--show-patch', f]);
      expect(r.code).toBe(0);
      const admitted = jsyaml.load(block(r.stdout, /^ {6}admitted as:$/));
      const patch = block(r.stdout, /^ {6}patch:$/)
        .split('\n')
        .map((l) => JSON.parse(l) as Operation);
      const original = jsyaml.load(POD('true'));
      expect(admitted).toEqual(applyPatch(original, patch, true, false).newDocument);
      // The webhook is idempotent (reinvocation): the admitted pod needs no further patch.
      const again = await runCli([
        'check',
        '-o',
        'json',
        file('show/again.yaml', JSON.stringify(admitted)),
      ]);
      expect(JSON.parse(again.stdout).results[0]).toMatchObject({ allowed: true, patch: [] });
    });

    it('prints, for a workload, each pod its controller creates as admitted', async () => {
      const r = await runCli([
        'check',
        '--show-mutated',
        '--show-patch',
        'examples/valid/deployment.yaml',
      ]);
      expect(r.code).toBe(0);
      const pod = jsyaml.load(block(r.stdout, /admitted as \(each pod it creates\):$/)) as {
        metadata: Record<string, unknown>;
        spec: { containers: { resources: unknown }[] };
      };
      expect(pod.metadata).toMatchObject({
        generateName: 'web-',
        namespace: 'demo',
        labels: { app: 'web' },
      });
      expect(pod.spec.containers[0]!.resources).toEqual({
        limits: { 'aliyun/erdma': '1' },
        requests: { 'aliyun/erdma': '1' },
      });
      expect(block(r.stdout, /patch \(each pod it creates\):$/)).toContain('smcr.erdma.io/capable');
      // A denied or untouched object has nothing to show.
      const denied = await runCli([
        'check',
        '--show-mutated',
        'examples/invalid/host-network.yaml',
      ]);
      expect(denied.stdout).not.toContain('admitted as');
    });

    it('is for the text output only', async () => {
      const r = await runCli(['check', '-o', 'json', '--show-mutated', 'examples/valid/']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--show-mutated are for the text output/);
      expect(r.stdout).toBe('');
    });
  });

  it('writes JUnit XML with one failure per denied object', async () => {
    const f = file('mixed.yaml', `${POD('true')}---\n${POD('nope')}`);
    const r = await runCli(['check', '--output', 'junit', f]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>/);
    expect(r.stdout).toMatch(
      /<testsuites name="erdma-smcr check" tests="2" failures="1" errors="0" skipped="0">/,
    );
    expect(r.stdout.match(/<failure /g)).toHaveLength(1);
    expect(r.stdout).toContain('type="annotation-value"');
    expect(r.stdout).toContain('&quot;true&quot; or &quot;false&quot;');
  });

  // #80 item 9: JUnit counted skipped objects as passing test cases (skipped="0") while text and
  // JSON counted them as skipped. Every format carries the same counts.
  it('counts skipped objects as skipped in JUnit, as text and JSON do', async () => {
    const plain = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
`;
    const f = file(
      'skips.yaml',
      `${POD('true')}---
${plain}`,
    );
    const json = JSON.parse((await runCli(['check', '-o', 'json', f])).stdout) as {
      summary: { objects: number; skipped: number };
    };
    expect(json.summary).toMatchObject({ objects: 2, skipped: 1 });
    const junit = (await runCli(['check', '-o', 'junit', f])).stdout;
    expect(junit).toMatch(/<testsuites [^>]*tests="2"[^>]*skipped="1">/);
    expect(junit).toMatch(/<testsuite [^>]*tests="2"[^>]*skipped="1">/);
    expect(junit.match(/<skipped /g)).toHaveLength(1);
    expect(junit).toMatch(/ConfigMap settings[^\n]*">\n\s+<skipped /);
  });

  // #80 item 7: without a node list every annotated object got the warning "node list unknown", so
  // --fail-on-warn failed a clean Deployment (exit 3) and -q printed two lines per object. What the
  // user cannot act on is one note for the run, in JSON and SARIF too.
  it('says once, as a note, that the node checks were skipped without a node list', async () => {
    const many = file(
      'many.yaml',
      Array.from({ length: 50 }, (_, i) => POD('true').replace('p-true', `p-${i}`)).join('---\n'),
    );
    const gate = await runCli(['check', '--fail-on-warn', many]);
    expect(gate.code, gate.stdout).toBe(0);
    expect(gate.stderr.match(/node list unknown/g)).toHaveLength(1);
    expect(gate.stderr).toMatch(/skipped for 50 SMC-R object\(s\); give the cluster's nodes/);
    // -q prints what needs a look: none of the 50 objects (the summary alone).
    const quiet = (await runCli(['check', '-q', many])).stdout;
    expect(quiet.trim()).toBe('50 object(s) checked: 50 allowed, 0 denied');
    const json = JSON.parse((await runCli(['check', '-o', 'json', many])).stdout) as {
      notices: string[];
      summary: { warnings: number };
    };
    expect(json.summary.warnings).toBe(0);
    expect(json.notices).toEqual([expect.stringMatching(/^node list unknown/)]);
    const sarif = JSON.parse((await runCli(['check', '-o', 'sarif', many])).stdout) as {
      runs: { invocations: { toolExecutionNotifications?: { level: string }[] }[] }[];
    };
    expect(sarif.runs[0]!.invocations[0]!.toolExecutionNotifications).toEqual([
      expect.objectContaining({ level: 'note' }),
    ]);
  });

  it('reads stdin for "-", multi-document YAML, and kind: List', async () => {
    const list = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        JSON.parse(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'x', annotations: { 'network.alibabacloud.com/erdma-smcr': 'true' } },
            spec: { hostNetwork: true },
          }),
        ),
      ],
    });
    const r = await runCli(['check', '-o', 'json', '-'], { stdin: `${POD('true')}---\n${list}\n` });
    const report = JSON.parse(r.stdout);
    expect(report.results.map((x: { source: string }) => x.source)).toEqual([
      '<stdin>:1',
      '<stdin>:13#items[0]',
    ]);
    expect(report.results[1].denials[0].rule).toBe('host-network');
    expect(r.code).toBe(1);
  });

  // PASS means the policy applied and allowed; where SMC-R can never apply, it is a SKIP with the
  // hint that says why, and `annotated` says whether the pod carries the annotation (#70).
  const DEPLOY = (meta: string, podMeta: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
${meta}spec:
  selector: { matchLabels: { app: d } }
  template:
    metadata:
      labels: { app: d }
${podMeta}    spec:
      containers: [{ name: app, image: busybox }]
`;
  it.each([
    [
      'a misspelt key',
      POD('true').replace('erdma-smcr:', 'erdma_smcr:'),
      /"network\.alibabacloud\.com\/erdma_smcr" is not an annotation erdma-smcr reads; did you mean/,
    ],
    [
      "the annotation on a Deployment's own metadata",
      DEPLOY('  annotations: { network.alibabacloud.com/erdma-smcr: "true" }\n', ''),
      /on the Deployment's own metadata does nothing; put it on spec\.template\.metadata\.annotations/,
    ],
    [
      'the annotation under labels',
      DEPLOY('', '      annotations: {}\n').replace(
        'labels: { app: d }',
        'labels: { app: d, network.alibabacloud.com/erdma-smcr: "true" }',
      ),
      /is a label on spec\.template\.metadata\.labels, which erdma-smcr does not read/,
    ],
  ])('%s: SKIP with the hint, not annotated', async (_, text, hint) => {
    const json = await runCli(['check', '-o', 'json', '-'], { stdin: text });
    expect(json.code).toBe(0);
    const [r] = (JSON.parse(json.stdout) as { results: Record<string, unknown>[] }).results;
    expect(r).toMatchObject({ annotated: false, judged: false, allowed: true });
    expect((r!.warnings as { message: string }[]).map((w) => w.message).join('\n')).toMatch(hint);
    const out = await runCli(['check', '-'], { stdin: text });
    expect(out.stdout).toMatch(/^SKIP /);
    expect(out.stdout).toMatch(hint);
    expect(out.stdout).toMatch(/1 allowed \(1 skipped: not for SMC-R\)/);
    // --fail-on-warn still catches the hint.
    expect((await runCli(['check', '--fail-on-warn', '-'], { stdin: text })).code).toBe(3);
  });

  it('checks the object an AdmissionReview reviews, saying so', async () => {
    // A real API server's review, its pod given the annotation.
    const review = JSON.parse(
      readFileSync(
        'test/fixtures/apiserver-v1.37.2/admissionreview-pod-create-dryrun.json',
        'utf8',
      ),
    ) as { request: { object: { metadata: { annotations?: Record<string, string> } } } };
    (review.request.object.metadata.annotations ??= {})['network.alibabacloud.com/erdma-smcr'] =
      'true';
    const r = await runCli(['check', '-o', 'json', '-'], { stdin: JSON.stringify(review) });
    const [res] = (JSON.parse(r.stdout) as { results: Record<string, unknown>[] }).results;
    expect(res).toMatchObject({ kind: 'Pod', annotated: true, judged: true });
    expect(res!.warnings).toContainEqual({
      rule: 'check-note',
      message: 'an AdmissionReview: the object it reviews (request.object) was checked',
    });
  });

  it('an RDMA pod without the annotation is judged (PASS or DENY), and not annotated', async () => {
    const r = await runCli(['check', '-o', 'json', 'examples/invalid/rdma-host-network.yaml']);
    const [res] = (JSON.parse(r.stdout) as { results: Record<string, unknown>[] }).results;
    expect(res).toMatchObject({ annotated: false, judged: true, allowed: false });
  });

  it('exits 2 naming the file and line of invalid YAML', async () => {
    const f = file('broken.yaml', `${POD('true')}---\nkind: Pod\nmetadata: {name: [unclosed\n`);
    const r = await runCli(['check', f]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/invalid YAML/); // said once, in the report (#80 item 11)
    // The report still comes, with the error entry, and the verdict on the document before it.
    // The location once: the parser's message starts with it (#70).
    expect(r.stdout).toMatch(/^ERROR [^ ]*broken\.yaml:\d+:\d+: invalid YAML/m);
    expect(r.stdout).not.toMatch(/broken\.yaml:\d+ {2}.*broken\.yaml/);
    expect(r.stdout).toMatch(/PASS {2}Pod ns\/p-true {2}.*broken\.yaml:1/);
    expect(r.stdout).toMatch(
      /1 object\(s\) checked: 1 allowed, 0 denied(, \d+ warning\(s\))?, 1 input error\(s\)/,
    );
  });

  it('exits 2 when a path cannot be read, saying why in words once (#80 item 11)', async () => {
    const missing = join(dir, 'missing.yaml');
    const r = await runCli(['check', missing]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(
      `ERROR cannot read ${missing}: no such file or directory (ENOENT)\n`,
    );
    expect(`${r.stdout}${r.stderr}`.split(missing)).toHaveLength(2);
    // A machine format on stdout: the error also on stderr, where a CI log shows it.
    const json = await runCli(['check', '-o', 'json', missing]);
    expect(json.code).toBe(2);
    expect(json.stderr).toContain(`cannot read ${missing}: no such file or directory (ENOENT)`);
    // Node's own error for a file root could read (the tests run as root), as errnoReason words it.
    const eacces = Object.assign(new Error("EACCES: permission denied, open '/x.yaml'"), {
      code: 'EACCES',
    });
    expect(errnoReason(eacces)).toBe('permission denied (EACCES)');
    expect(errnoReason(new Error('plain'))).toBe('plain');
  });

  it('exits 2 on an unknown output format or flag', async () => {
    expect((await runCli(['check', '-o', 'xml', 'examples/valid'])).code).toBe(2);
    expect((await runCli(['check', '--bogus'])).code).toBe(2);
  });

  it('uses --profile and --nodes for node checks', async () => {
    const profile = file('p/profile.yaml', 'driverMode: default\nipFamilies: [IPv4]\n');
    const nodes = file(
      'p/nodes.yaml',
      `apiVersion: v1
kind: NodeList
items:
  - metadata: {name: n1}
    status: {nodeInfo: {kernelVersion: 5.10.134-16.al8.x86_64, osImage: Alibaba Cloud Linux 3.2104 U8}}
`,
    );
    const f = file('p/pinned.yaml', POD('true', '  nodeName: n1\n'));
    const withNodes = await runCli(['check', '--profile', profile, '--nodes', nodes, f]);
    expect(withNodes.code).toBe(1);
    expect(withNodes.stdout).toMatch(
      /node-eligibility.*n1 \(kernel 5\.10\.134-16\.al8\.x86_64 is older/,
    );
    const without = await runCli(['check', '--profile', profile, f]);
    expect(without.code).toBe(0);
    expect(without.stderr).toMatch(/node list unknown/);
  });

  it('exits 2 with the schema error for a malformed profile', async () => {
    const profile = file('bad-profile.yaml', 'driverMode: turbo\n');
    const r = await runCli(['check', '--profile', profile, 'examples/valid']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad-profile\.yaml: invalid cluster profile/);
    expect(r.stderr).toMatch(/driverMode/);
  });

  it('exits 2 when two ClusterProfiles share a directory', async () => {
    const a = file('two/a.yaml', 'kind: ClusterProfile\ndriverMode: default\n');
    file('two/b.yaml', 'kind: ClusterProfile\ndriverMode: ofed\n');
    const r = await runCli(['check', join(a, '..')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /more than one ClusterProfile in one directory: .*a\.yaml:1, .*b\.yaml:1/,
    );
  });

  it('judges each directory by the nearest ClusterProfile when there are several', async () => {
    const root = join(dir, 'gitops');
    file('gitops/cluster-profile.yaml', 'kind: ClusterProfile\ndriverMode: default\n');
    file('gitops/prod/app.yaml', POD('true'));
    file('gitops/legacy/cluster-profile.yaml', 'kind: ClusterProfile\ndriverMode: ofed\n');
    file('gitops/legacy/deep/app.yaml', POD('true'));
    const r = await runCli(['check', '-o', 'json', root]);
    expect(r.code).toBe(1);
    const verdicts = Object.fromEntries(
      (
        JSON.parse(r.stdout).results as {
          file: string;
          allowed: boolean;
          denials: { rule: string }[];
        }[]
      ).map((x) => [x.file.slice(root.length + 1), x.denials.map((d) => d.rule)]),
    );
    expect(verdicts).toEqual({ 'prod/app.yaml': [], 'legacy/deep/app.yaml': ['driver-mode'] });
  });

  it('refuses a ClusterProfile on stdin among several: which files it judges is unclear', () => {
    const profile = (file: string, driverMode: string) => ({
      file,
      profile: { source: `${file}:1`, object: { kind: 'ClusterProfile', driverMode } },
    });
    const found = [profile('-', 'ofed'), profile(join(dir, 'x/cluster-profile.yaml'), 'default')];
    expect(() => scopeProfiles({}, found, ['-'])).toThrow(/on stdin among 2 profiles.*--profile/);
    // One profile, wherever it came from, judges every input (as --profile does).
    const view = scopeProfiles({}, [found[0]!], ['-', '/elsewhere/app.yaml']);
    expect(view('/elsewhere/app.yaml').driverMode).toBe('ofed');
  });

  it('exits 2, naming them, when manifests lie under none of several profiles', async () => {
    const a = file('split/a/cluster-profile.yaml', 'kind: ClusterProfile\ndriverMode: default\n');
    const b = file('split/b/cluster-profile.yaml', 'kind: ClusterProfile\ndriverMode: ofed\n');
    const loose = file('loose/app.yaml', POD('true'));
    const r = await runCli(['check', join(a, '..'), join(b, '..'), loose]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /loose\/app\.yaml: under none of the directories whose ClusterProfile/,
    );
    expect(r.stderr).toMatch(/--profile/);
    // With --profile naming one, every manifest is judged by it.
    const named = await runCli(['check', '--profile', b, join(a, '..'), loose]);
    expect(named.code).toBe(1);
    expect(named.stdout).toMatch(/\[driver-mode\]/);
  });

  it('colours text only on a TTY and honours NO_COLOR', async () => {
    const f = file('c.yaml', POD('true'));
    expect((await runCli(['check', f], { tty: true })).stdout).toContain('\x1b[32mPASS');
    expect(
      (await runCli(['check', f], { tty: true, env: { NO_COLOR: '1' } })).stdout,
    ).not.toContain('\x1b[');
    expect((await runCli(['check', f])).stdout).not.toContain('\x1b[');
    // #80 item 11: a terminal that cannot show colour, and an empty NO_COLOR (as if unset).
    expect((await runCli(['check', f], { tty: true, env: { TERM: 'dumb' } })).stdout).not.toContain(
      '\x1b[',
    );
    expect((await runCli(['check', f], { tty: true, env: { NO_COLOR: '' } })).stdout).toContain(
      '\x1b[32mPASS',
    );
  });

  it("writes results while it is still reading: a file's results are out before the next input is read", async () => {
    // 400 denied pods (about 150 KiB of JSON results) in one file, then stdin.
    const big = file(
      'big.yaml',
      Array.from({ length: 400 }, (_, i) =>
        POD('true', '  hostNetwork: true\n').replace('p-true', `p-${i}`),
      ).join('---\n'),
    );
    let stdout = '';
    let writtenWhenStdinRead = -1;
    const code = await main(
      [
        'node',
        'erdma-smcr',
        'check',
        '-o',
        'json',
        '--profile',
        'examples/cluster-profile.yaml',
        big,
        '-',
      ],
      {
        out: (t) => void (stdout += t),
        err: () => undefined,
        stdinHasInput: () => true,
        stdin: () => {
          writtenWhenStdinRead = stdout.length;
          return POD('true');
        },
        stdoutIsTTY: false,
        env: {},
      },
    );
    expect(code).toBe(1);
    expect((JSON.parse(stdout) as { results: unknown[] }).results).toHaveLength(401);
    // Written in chunks of at most 64 KiB as results arrive, not all at the end.
    expect(writtenWhenStdinRead).toBeGreaterThan(64 * 1024);
  });
});
