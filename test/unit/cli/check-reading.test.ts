// What `check` reads (test/helpers/check-trees.ts): symlinks and a symlink cycle, dot-directories,
// typed Lists, kinds we do not know that carry a pod template, and a bad file among good ones in
// every output format; each case must be denied. That kubectl reads the same objects is
// test/integration/cli/check-reading-kubectl.test.ts.
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Ajv04 from 'ajv-draft-04';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  check,
  removeCheckTrees,
  write,
  writeCheckTrees,
  type CheckTrees,
  type JsonReport,
} from '../../helpers/check-trees.js';
import { runCli } from '../../helpers/cli.js';
import { sarifWriter } from '../../../src/cli/output/sarif.js';

let trees: CheckTrees;
let root: string;
let tree: string;
let hostile: string;
beforeAll(() => {
  trees = writeCheckTrees();
  ({ root, tree, hostile } = trees);
});
afterAll(() => removeCheckTrees(trees));

describe('check reads what kubectl reads', () => {
  it('follows symlinked files, reads dot-files and dot-directories, types List items, skips .git', async () => {
    const r = await check(tree);
    const report = JSON.parse(r.stdout) as JsonReport;
    expect(report.results.map((x) => `${x.kind}/${x.name}`).sort()).toEqual([
      'DaemonSet/dot-file',
      'DaemonSet/from-list',
      'DaemonSet/in-dot-dir',
      'DaemonSet/linked',
    ]);
    expect(
      report.results.every((x) => !x.allowed && x.denials.some((d) => d.rule === 'host-network')),
    ).toBe(true);
    expect(r.code).toBe(1);
  });
});

describe('check on a tree kubectl cannot fully read', () => {
  it('ends a symlink cycle, reports the bad file with its line and still checks everything else (exit 2)', async () => {
    const r = await check(hostile);
    expect(r.code).toBe(2);
    const report = JSON.parse(r.stdout) as JsonReport;
    expect(report.results.map((x) => `${x.kind}/${x.name}`).sort()).toEqual([
      'DaemonSet/in-a',
      'Odd/odd',
      'Rollout/rollout',
    ]);
    expect(report.errors).toEqual([
      {
        source: expect.stringMatching(/b\/bad\.yaml:\d+$/),
        code: 'INPUT_PARSE',
        message: expect.stringMatching(/invalid YAML/),
      },
    ]);
    expect(report.summary).toMatchObject({ objects: 3, errors: 1 });
  });

  it('checks a kind it does not know as a template when it carries one at spec.template, and warns where it cannot tell', async () => {
    const report = JSON.parse((await check(hostile)).stdout) as JsonReport;
    const rollout = report.results.find((x) => x.kind === 'Rollout')!;
    expect(rollout.allowed).toBe(false);
    expect(rollout.denials.map((d) => d.rule)).toContain('host-network');
    const odd = report.results.find((x) => x.kind === 'Odd')!;
    expect(odd.warnings.map((w) => w.message).join()).toMatch(
      /set at spec\.pods\[0\]\.metadata\.annotations.*not checked/,
    );
  });

  it.each([
    [
      'text',
      // The stray annotation on an object of an unknown kind is a SKIP with its hint: never checked.
      /ERROR [^ ]*bad\.yaml:\d+:\d+: invalid YAML[\s\S]*3 object\(s\) checked: 1 allowed \(1 skipped: not for SMC-R\), 2 denied(, \d+ warning\(s\))?, 1 input error\(s\)/,
    ],
    [
      'junit',
      /<testsuite name="[^"]*bad\.yaml" tests="1" failures="0" errors="1"[\s\S]*<error type="INPUT_PARSE"/,
    ],
    [
      'policyreport',
      /"kind": "ClusterPolicyReport"[\s\S]*"result": "error"[\s\S]*"manifest": "[^"]*bad\.yaml:\d+"/,
    ],
  ])('reports the bad file in the %s output too', async (format, pattern) => {
    const r = await check(hostile, format);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(pattern);
  });

  it.each(['json', 'sarif', 'policyreport'])(
    'writes %s result by result, as one well-formed document',
    async (format) => {
      const r = await check(hostile, format);
      expect(r.stdout).toBe(`${JSON.stringify(JSON.parse(r.stdout), null, 2)}\n`);
    },
  );

  it.each(['json', 'sarif', 'junit', 'policyreport'])(
    'writes no half %s document when the run fails before its first result',
    async (format) => {
      const r = await runCli([
        'check',
        '-o',
        format,
        '--profile',
        join(root, 'no-such-profile.yaml'),
        hostile,
      ]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/no-such-profile\.yaml/);
    },
  );

  it('reads a repeated key as kubectl does: the last value wins', async () => {
    const dir = join(root, 'dup');
    write(
      join(dir, 'pod.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: dup\n  annotations:\n    network.alibabacloud.com/erdma-smcr: "true"\nspec:\n  hostNetwork: false\n  hostNetwork: true\n  containers: [{name: a, image: b}]\n',
    );
    const r = await check(dir);
    const report = JSON.parse(r.stdout) as JsonReport;
    expect(report.errors).toEqual([]);
    expect(report.results[0]?.denials.map((d) => d.rule)).toContain('host-network');
  });
});

describe('SARIF output', () => {
  /** The published SARIF 2.1.0 schema (rtm.5, JSON Schema draft-04), as Microsoft ships it with its SARIF test matchers. */
  const schema = JSON.parse(
    readFileSync(
      join(
        dirname(createRequire(import.meta.url).resolve('@microsoft/jest-sarif/package.json')),
        'lib/schemas/sarif-2.1.0-rtm.5.json',
      ),
      'utf8',
    ),
  ) as object;
  // unicodeRegExp off: the schema's language pattern is valid only without the u flag. CommonJS default, as ajv-formats below.
  const ajv = new Ajv04.default({ allErrors: true, strict: false, unicodeRegExp: false });
  formats.default(ajv);
  const validate = ajv.compile(schema);

  it('is a valid SARIF 2.1.0 log with each denial, warning and bad file on its manifest line', async () => {
    const r = await check(hostile, 'sarif');
    expect(r.code).toBe(2);
    const log = JSON.parse(r.stdout) as {
      runs: {
        results: {
          ruleId: string;
          level: string;
          locations: {
            physicalLocation: { artifactLocation: { uri: string }; region?: { startLine: number } };
          }[];
        }[];
        invocations: { executionSuccessful: boolean }[];
        tool: { driver: { rules: { id: string; help?: { text: string } }[] } };
      }[];
    };
    expect(validate(log), JSON.stringify(validate.errors)).toBe(true);
    const run = log.runs[0]!;
    // Code scanning shows each admission rule's fix beside its alerts (from the rule catalogue).
    expect(run.tool.driver.rules.find((x) => x.id === 'host-network')?.help?.text).toBe(
      'Fix: drop hostNetwork or the annotation.',
    );
    const byRule = (id: string) => run.results.filter((x) => x.ruleId === id);
    expect(
      byRule('host-network')
        .map((x) => x.locations[0]!.physicalLocation.artifactLocation.uri)
        .sort(),
      // Absolute inputs are file:// URIs (#70).
    ).toEqual(
      [join(hostile, 'a/ds.yaml'), join(hostile, 'c/rollout.yaml')]
        .map((f) => pathToFileURL(f).href)
        .sort(),
    );
    expect(
      byRule('host-network').every(
        (x) =>
          x.level === 'error' && (x.locations[0]!.physicalLocation.region?.startLine ?? 0) >= 1,
      ),
    ).toBe(true);
    expect(byRule('input-error')).toHaveLength(1);
    expect(
      byRule('input-error')[0]!.locations[0]!.physicalLocation.region?.startLine,
    ).toBeGreaterThan(1);
    // The odd kind's stray annotation: check's own note, under its own id.
    expect(byRule('check-note')[0]!.level).toBe('warning');
    expect(run.invocations[0]!.executionSuccessful).toBe(false);
    expect(run.tool.driver.rules.map((x) => x.id)).toEqual(
      expect.arrayContaining(['host-network', 'input-error', 'check-note']),
    );
  });

  it('a clean tree gives a valid log with no results', async () => {
    const clean = join(root, 'clean');
    write(join(clean, 'cm.yaml'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
      data: { a: 'b' },
    });
    const r = await check(clean, 'sarif');
    expect(r.code).toBe(0);
    const log = JSON.parse(r.stdout) as { runs: { results: unknown[] }[] };
    expect(validate(log), JSON.stringify(validate.errors)).toBe(true);
    expect(log.runs[0]!.results).toEqual([]);
    // The validator does refuse what the schema refuses (a level SARIF does not define).
    expect(
      validate({
        ...log,
        runs: [{ ...log.runs[0], results: [{ message: { text: 'x' }, level: 'fatal' }] }],
      }),
    ).toBe(false);
  });

  it('encodes each path segment of a file name as a URI reference, and says object, field and rule in each message', () => {
    let text = '';
    const w = sarifWriter((t) => (text += t), '9.9.9');
    w.result({
      source: 'my dir/pods #1/100%.yaml:7#items[2]',
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: 'shop',
      name: 'cart',
      annotated: true,
      judged: true,
      allowed: false,
      denials: [
        { rule: 'host-network', path: 'spec.hostNetwork', message: 'SMC-R cannot be enabled.' },
      ],
      warnings: [{ rule: 'ip-family', message: 'dual-stack cluster' }],
      patch: [],
    });
    w.end({
      errors: [],
      summary: { objects: 1, allowed: 0, denied: 1, warnings: 1, skipped: 0, errors: 0 },
    });
    const log = JSON.parse(text) as {
      runs: {
        results: {
          ruleId: string;
          message: { text: string };
          locations: {
            physicalLocation: { artifactLocation: { uri: string }; region: { startLine: number } };
          }[];
        }[];
      }[];
    };
    const [denial, warning] = log.runs[0]!.results;
    expect(denial!.locations[0]!.physicalLocation).toEqual({
      artifactLocation: { uri: 'my%20dir/pods%20%231/100%25.yaml' },
      region: { startLine: 7 },
    });
    expect(denial!.message.text).toBe('Pod shop/cart: spec.hostNetwork: SMC-R cannot be enabled.');
    // A warning goes under the rule that raised it, as a denial does.
    expect(warning).toMatchObject({
      ruleId: 'ip-family',
      level: 'warning',
      message: { text: 'Pod shop/cart: dual-stack cluster' },
    });
  });
});

describe('check on an unrendered Helm chart (#102)', () => {
  it('names the chart and the command that renders it, for each template it cannot read', async () => {
    // The chart of this repository, as a user would point check at theirs.
    const chart = join(dirname(new URL(import.meta.url).pathname), '../../../charts/erdma-smcr');
    const r = await check(chart);
    const report = JSON.parse(r.stdout) as JsonReport;
    expect(report.errors.length).toBeGreaterThan(5);
    for (const e of report.errors)
      expect(e.message).toMatch(
        /invalid YAML.*is part of the Helm chart .*charts\/erdma-smcr: check what it renders \(helm template RELEASE .*charts\/erdma-smcr \| erdma-smcr check -\)/,
      );
  });

  it('tells a template on stdin by its {{ }}, and says nothing of Helm for plain bad YAML', async () => {
    const template =
      '{{- if .Values.enabled }}\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n';
    const r = await runCli(['check', '-o', 'json', '-'], { stdin: template });
    expect((JSON.parse(r.stdout) as JsonReport).errors[0]!.message).toMatch(
      /this looks like a Helm template \(\{\{ … \}\}\): check what it renders/,
    );
    const bad = await runCli(['check', '-o', 'json', '-'], { stdin: 'a: [1,\n' });
    const msg = (JSON.parse(bad.stdout) as JsonReport).errors[0]!.message;
    expect(msg).toMatch(/invalid YAML/);
    expect(msg).not.toMatch(/Helm/);
  });
});
