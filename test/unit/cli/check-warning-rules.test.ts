// A warning carries the id of the rule that raised it, in every machine format of `check` (#95), and
// a pipeline can drop one rule's warnings (--skip-warning) or gate on them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

const EXAMPLE = 'examples/reserved-ports';

describe('check: warnings under their rule', () => {
  it('JSON gives each warning as { rule, message }', async () => {
    const r = await runCli(['check', '-o', 'json', EXAMPLE]);
    expect(r.code).toBe(0);
    const [res] = (
      JSON.parse(r.stdout) as { results: { warnings: { rule: string; message: string }[] }[] }
    ).results;
    expect(res!.warnings.length).toBe(2);
    for (const w of res!.warnings)
      expect(w).toEqual({
        rule: 'reserved-ports',
        message: expect.stringMatching(/is 30610, inside 30608-30623/),
      });
  });

  it("SARIF's ruleId is the rule, listed in the run's rules with its fix", async () => {
    const r = await runCli(['check', '-o', 'sarif', EXAMPLE]);
    const log = JSON.parse(r.stdout) as {
      runs: {
        results: { ruleId: string; level: string }[];
        tool: { driver: { rules: { id: string; help?: { text: string } }[] } };
      }[];
    };
    const run = log.runs[0]!;
    expect(run.results.map((x) => [x.ruleId, x.level])).toEqual([
      ['reserved-ports', 'warning'],
      ['reserved-ports', 'warning'],
    ]);
    expect(run.tool.driver.rules.find((x) => x.id === 'reserved-ports')?.help?.text).toMatch(
      /^Fix: use another port/,
    );
  });

  it('JUnit, GitHub annotations, text and PolicyReport name the rule too', async () => {
    const junit = await runCli(['check', '-o', 'junit', EXAMPLE]);
    expect(junit.stdout).toMatch(/warning: \[reserved-ports\] spec\.containers\[0\]/);
    const github = await runCli(['check', '-o', 'github', EXAMPLE]);
    expect(github.stdout).toMatch(/^::warning file=[^\n]*title=[^\n]*\[reserved-ports\]::/m);
    const text = await runCli(['check', EXAMPLE]);
    expect(text.stdout).toMatch(/! warning: \[reserved-ports\] /);
    const report = await runCli(['check', '-o', 'policyreport', EXAMPLE]);
    const list = JSON.parse(report.stdout) as {
      items: { results: { rule: string; result: string }[] }[];
    };
    const warned = list.items.flatMap((i) => i.results).filter((x) => x.result === 'warn');
    expect(warned.map((x) => x.rule)).toEqual(['reserved-ports', 'reserved-ports']);
  });

  it("--skip-warning drops one rule's warnings from the output and from --fail-on-warn; an unknown id is a usage error", async () => {
    const gated = await runCli(['check', '--fail-on-warn', EXAMPLE]);
    expect(gated.code).toBe(3);
    const skipped = await runCli([
      'check',
      '--fail-on-warn',
      '--skip-warning',
      'reserved-ports',
      '-o',
      'json',
      EXAMPLE,
    ]);
    expect(skipped.code).toBe(0);
    const json = JSON.parse(skipped.stdout) as {
      results: { warnings: unknown[] }[];
      summary: { warnings: number };
    };
    expect(json.results[0]!.warnings).toEqual([]);
    expect(json.summary.warnings).toBe(0);
    // Another rule's id leaves these warnings in place.
    const other = await runCli(['check', '--fail-on-warn', '--skip-warning', 'tuning', EXAMPLE]);
    expect(other.code).toBe(3);
    const bad = await runCli(['check', '--skip-warning', 'reserved-port', EXAMPLE]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--skip-warning reserved-port: no such rule \(.*reserved-ports/);
  });
});

describe('explain: check-note, the id check gives its own notes (#102)', () => {
  it('answers for check-note, which --skip-warning takes, with what it notes and how to hide it', async () => {
    const { CHECK_NOTE } = await import('../../../src/check/check.js');
    const { CHECK_NOTE_ENTRY } = await import('../../../src/cli/commands/rules.js');
    expect(CHECK_NOTE_ENTRY.id).toBe(CHECK_NOTE);
    const r = await runCli(['explain', 'check-note']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^check-note {2}\(what erdma-smcr check notes of an input/);
    expect(r.stdout).toMatch(/--skip-warning check-note/);
    const j = await runCli(['explain', 'check-note', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toMatchObject({ id: 'check-note', scope: 'check' });
  });

  it('an unknown id ends its sentences and names check-note beside the rules', async () => {
    const r = await runCli(['explain', 'no-such-rule']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /no rule "no-such-rule"\. The rules are annotation-value, .*, and check's own check-note\./,
    );
  });
});

describe('SARIF for standard input (#102)', () => {
  it('names it "stdin", in words, not a percent-encoded "<stdin>"', async () => {
    const manifest = readFileSync('examples/invalid/host-network.yaml', 'utf8');
    const r = await runCli(['check', '-o', 'sarif', '-'], { stdin: manifest });
    const log = JSON.parse(r.stdout) as {
      runs: {
        results: {
          locations: {
            physicalLocation: { artifactLocation: { uri: string; description?: { text: string } } };
          }[];
        }[];
      }[];
    };
    const locs = log.runs[0]!.results.flatMap((x) => x.locations);
    expect(locs.length).toBeGreaterThan(0);
    for (const l of locs)
      expect(l.physicalLocation.artifactLocation).toEqual({
        uri: 'stdin',
        description: { text: 'the standard input' },
      });
    expect(r.stdout).not.toContain('%3C');
  });
});

describe("kustomize's commonAnnotations: the annotation on every object (#102)", () => {
  const objects = (kind: string, apiVersion: string): string =>
    [
      `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: x\n  namespace: default\n  annotations: { network.alibabacloud.com/erdma-smcr: "true" }`,
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\n  annotations: { network.alibabacloud.com/erdma-smcr: "true" }\nspec:\n  containers: [{ name: c, image: x }]',
    ].join('\n---\n');

  it.each([
    ['Service', 'v1'],
    ['ConfigMap', 'v1'],
    ['Ingress', 'networking.k8s.io/v1'],
    ['PodDisruptionBudget', 'policy/v1'],
  ])('a %s carrying it is no note: --fail-on-warn passes', async (kind, apiVersion) => {
    const r = await runCli(['check', '--fail-on-warn', '-o', 'json', '-'], {
      stdin: objects(kind, apiVersion),
    });
    const out = JSON.parse(r.stdout) as { results: { warnings: { rule: string }[] }[] };
    expect(out.results.flatMap((x) => x.warnings.map((w) => w.rule))).not.toContain('check-note');
    expect(r.code).toBe(0);
  });

  it('an unknown kind (a CRD that may make pods) still gets the note', async () => {
    const r = await runCli(['check', '--fail-on-warn', '-o', 'json', '-'], {
      stdin: objects('Rollout', 'argoproj.io/v1alpha1'),
    });
    expect(r.stdout).toMatch(/cannot tell whether a pod template sits/);
    expect(r.code).toBe(3);
  });
});
