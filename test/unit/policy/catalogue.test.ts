// The rule catalogue `erdma-smcr rules` prints: the same rows as docs/policy.md, each example
// denied by its rule, and the command's answers.
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { plain, RULE_CATALOGUE } from '../../../src/policy/catalogue.js';
import { POD_RULES, RULES } from '../../../src/policy/rules/index.js';
import { runCli } from '../../helpers/cli.js';

describe('one file per rule', () => {
  const files = readdirSync('src/policy/rules')
    .filter((f) => f !== 'index.ts' && f !== 'rule.ts')
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();

  it('every file of src/policy/rules/ is a rule named as its file, listed once', () => {
    expect(RULES.map((r) => r.id).sort()).toEqual(files);
    expect(new Set(RULES.map((r) => r.id)).size).toBe(RULES.length);
  });

  it('every rule has its test beside the others, and every pod check belongs to a rule', () => {
    for (const id of files)
      expect(existsSync(`test/unit/policy/rules/${id}.test.ts`), id).toBe(true);
    const checks = RULES.flatMap((r) => (r.check ? [r.check] : []));
    expect(POD_RULES.every((c) => checks.includes(c.check))).toBe(true);
    expect(POD_RULES.length).toBe(checks.length);
    // Each check runs under its own rule's id: its warnings carry that id.
    for (const c of POD_RULES) expect(RULES.find((r) => r.check === c.check)?.id).toBe(c.id);
  });
});

describe('the rule catalogue', () => {
  it('is docs/policy.md, row for row', () => {
    const rows = readFileSync('docs/policy.md', 'utf8')
      .split('\n')
      .map((l) => /^\| `([a-z-]+)` \| (.+) \| (.+) \|$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ id: m[1], when: m[2], fix: m[3] }));
    expect(rows).toEqual(RULE_CATALOGUE.map(({ id, when, fix }) => ({ id, when, fix })));
  });

  type Result = {
    file: string;
    denials: { rule: string }[];
    warnings: { rule: string; message: string }[];
  };
  const results = async (path: string, example: string): Promise<Result[]> => {
    const r = await runCli(['check', '-o', 'json', path]);
    return (JSON.parse(r.stdout).results as Result[]).filter((x) => x.file.endsWith(example));
  };
  const denying = RULE_CATALOGUE.filter((r) => r.example && !r.when.startsWith('never'));
  const warning = RULE_CATALOGUE.filter((r) => r.example && r.when.startsWith('never'));

  it.each(denying.map((r) => [r.id, r.example!]))(
    '%s: its example %s is denied by it',
    async (id, example) => {
      expect(existsSync(example)).toBe(true);
      // The example's directory, so its ClusterProfile judges it as `check examples/` does.
      const result = await results(example.replace(/\/[^/]+$/, '/..'), example);
      expect(result.length).toBeGreaterThan(0);
      expect(result.flatMap((x) => x.denials.map((d) => d.rule))).toContain(id);
    },
  );

  // The example warns under its directory's profile, with the rule's id, and alone (the nodes of
  // no profile) it does not, so the warnings are the profile's nodes' (#85 item 2). A rule that
  // warns whatever the cluster (a misplaced key, RDMA without IPC_LOCK) warns alone too.
  const anyCluster = new Set(['annotation-placement', 'rdma-ipc-lock']);
  it.each(warning.map((r) => [r.id, r.example!]))(
    '%s: its example %s is warned by it (under its profile, and alone only when no cluster matters)',
    async (id, example) => {
      expect(existsSync(example)).toBe(true);
      const under = await results(example.replace(/\/[^/]+$/, '/..'), example);
      expect(under.length).toBe(1);
      expect(under[0]!.denials).toEqual([]);
      expect(under[0]!.warnings.map((w) => w.rule)).toContain(id);
      const dir = mkdtempSync(join(tmpdir(), 'example-'));
      try {
        copyFileSync(example, join(dir, 'alone.yaml'));
        const alone = await results(dir, 'alone.yaml');
        expect(alone.length).toBe(1);
        if (anyCluster.has(id)) expect(alone[0]!.warnings.map((w) => w.rule)).toEqual([id]);
        else expect(alone[0]!.warnings).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('gives every rule a manifest can trigger its example', () => {
    // object-kind and object-size judge what no example manifest should carry (a foreign kind, a
    // megabyte of annotations): the unit tests make those.
    expect(
      RULE_CATALOGUE.filter((r) => !r.example)
        .map((r) => r.id)
        .sort(),
    ).toEqual(['object-kind', 'object-size']);
    expect(warning.map((r) => r.id).sort()).toEqual([
      'annotation-placement',
      'rdma-ipc-lock',
      'reserved-ports',
    ]);
  });

  it('reads as plain text on a terminal', () => {
    expect(plain('`hostNetwork: true` ([support-matrix.md](support-matrix.md#kernels))')).toBe(
      'hostNetwork: true (docs/support-matrix.md)',
    );
    expect(plain('see [the matrix](support-matrix.md)')).toBe(
      'see the matrix (docs/support-matrix.md)',
    );
  });
});

describe('erdma-smcr rules', () => {
  it('lists every rule with its fix, and explains one as a denial names it', async () => {
    const all = await runCli(['rules']);
    expect(all.code).toBe(0);
    for (const r of RULE_CATALOGUE) expect(all.stdout).toMatch(new RegExp(`^${r.id}\\b`, 'm'));
    const one = await runCli(['explain', '[host-network]']);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^host-network\n {2}denies when: hostNetwork: true/);
    expect(one.stdout).toContain('example:     examples/invalid/host-network.yaml');
    expect(one.stdout).not.toContain('driver-mode');
    const json = await runCli(['rules', 'tuning', '-o', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: 'tuning', scope: 'smcr' });
  });

  it('exits 2 for an unknown rule, naming the rules there are', async () => {
    const r = await runCli(['rules', 'hostnetwork']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    // #80 item 11: the id meant, with or without its dash.
    expect(r.stderr).toMatch(
      /no rule "hostnetwork"; did you mean host-network\? The rules are annotation-value, annotation-placement, host-network/,
    );
    const near = await runCli(['explain', 'ip-famly']);
    expect(near.stderr).toMatch(/did you mean ip-family\?/);
    const far = await runCli(['explain', 'nothing-like-it']);
    expect(far.stderr).not.toMatch(/did you mean/);
  });
});

describe('object-size', () => {
  it('names the bounds it denies past, as the code holds them', async () => {
    const { PLACEMENT_LIMITS } = await import('../../../src/policy/scheduling.js');
    const { MAX_ANNOTATION_BYTES } = await import('../../../src/policy/rules/object-size.js');
    const when = RULE_CATALOGUE.find((r) => r.id === 'object-size')!.when;
    const n = (v: number): string => v.toLocaleString('en-US');
    expect(when).not.toMatch(/see below/);
    for (const v of [
      PLACEMENT_LIMITS.terms,
      PLACEMENT_LIMITS.requirements,
      PLACEMENT_LIMITS.values,
      PLACEMENT_LIMITS.checks,
    ])
      expect(when).toContain(n(v));
    expect(when).toContain(`${MAX_ANNOTATION_BYTES / 1024} KiB`);
  });
});
