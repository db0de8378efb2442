// `check` as a CI gate that never passes by accident, and never hangs or floods on a hostile
// input: each case was reproduced against the previous release (which exited 0, hung, or ran
// to gigabytes) before it was fixed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inputReader } from '../../../src/check/inputs.js';
import { runCli } from '../../helpers/cli.js';

const POD = (name: string): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  annotations:
    network.alibabacloud.com/erdma-smcr: "true"
spec:
  hostNetwork: true
  containers: [{name: app, image: busybox}]
`;

const dir = mkdtempSync(join(tmpdir(), 'check-gate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const p = join(dir, name);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, text);
  return p;
}

describe('check takes its paths as kubectl does too', () => {
  it('-f/--filename, repeated, with or beside positional paths', async () => {
    const a = file('f/a.yaml', POD('a'));
    const b = file('f/b.yaml', POD('b'));
    const r = await runCli(['check', '-o', 'json', '-f', a, '--filename', b]);
    expect(r.code).toBe(1);
    const names = (JSON.parse(r.stdout) as { results: { name: string }[] }).results.map(
      (x) => x.name,
    );
    expect(names.sort()).toEqual(['a', 'b']);
    const mixed = await runCli(['check', '-o', 'json', a, '-f', b]);
    expect(mixed.stdout).toBe(r.stdout);
    const piped = await runCli(['check', '-f', '-'], { stdin: POD('c') });
    expect(piped.code).toBe(1);
    expect(piped.stdout).toMatch(/DENY .*c/);
  });
});

describe('namespaces the webhook leaves out', () => {
  it('a pod in kube-system is admitted as written, with a warning that says why', async () => {
    const denied = POD('sys').replace('name: sys', 'name: sys\n  namespace: kube-system');
    const r = await runCli(['check', '-o', 'json', '-'], { stdin: denied });
    expect(r.code).toBe(0);
    const [res] = (JSON.parse(r.stdout) as { results: Record<string, unknown>[] }).results;
    expect(res).toMatchObject({ namespace: 'kube-system', allowed: true, denials: [] });
    // Not a rule's warning: what check itself notes of the input, under its own id.
    expect(res?.warnings).toEqual([
      {
        rule: 'check-note',
        message:
          'namespace kube-system is left out of the webhook (its namespaceSelector): this pod is admitted as written, without SMC-R',
      },
    ]);
    // The same pod elsewhere is still refused.
    expect((await runCli(['check', '-'], { stdin: POD('app') })).code).toBe(1);
  });
});

describe('check checks something, or fails', () => {
  it('an empty directory, a tree without YAML and an empty stdin exit 2 with "nothing to check"', async () => {
    mkdirSync(join(dir, 'empty'));
    file('no-yaml/README', 'hello\n');
    for (const [args, stdin] of [
      [[join(dir, 'empty')], undefined],
      [[join(dir, 'no-yaml')], undefined],
      [['-'], ''],
    ] as const) {
      const r = await runCli(['check', ...args], stdin === undefined ? {} : { stdin });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toMatch(/nothing to check: no Kubernetes objects in/);
    }
  });

  it('refuses a --nodes file that holds no Nodes (a Pod, a Deployment), naming what it holds', async () => {
    const r = await runCli([
      'check',
      '--nodes',
      'examples/valid/pod-basic.yaml',
      'examples/valid/',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'erdma-smcr: examples/valid/pod-basic.yaml: holds Pod, not Nodes: --nodes takes what `kubectl get nodes,servicecidrs -o yaml` prints (Nodes, and the ServiceCIDRs whose ranges the SMC selection takes in)\n',
    );
    expect(r.stdout).toBe('');
  });

  // A CI system that reads the report, not the exit code, must see the failure too (#70).
  it('says "nothing to check" in every machine format, not a clean pass', async () => {
    mkdirSync(join(dir, 'empty-formats'));
    const at = join(dir, 'empty-formats');
    const json = await runCli(['check', '-o', 'json', at]);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as {
      errors: { source: string; code: string; message: string }[];
      summary: { errors: number };
    };
    expect(report.errors).toEqual([
      {
        source: at,
        code: 'NOTHING_TO_CHECK',
        message: `nothing to check: no Kubernetes objects in ${at}`,
      },
    ]);
    expect(report.summary.errors).toBe(1);
    const sarif = JSON.parse((await runCli(['check', '-o', 'sarif', at])).stdout) as {
      runs: {
        invocations: { executionSuccessful: boolean }[];
        results: { message: { text: string } }[];
      }[];
    };
    expect(sarif.runs[0]!.invocations[0]!.executionSuccessful).toBe(false);
    expect(sarif.runs[0]!.results[0]!.message.text).toMatch(/nothing to check/);
    expect((await runCli(['check', '-o', 'junit', at])).stdout).toMatch(
      /<testsuites [^>]*errors="1"/,
    );
    expect((await runCli(['check', '-o', 'github', at])).stdout).toMatch(
      /^::error .*nothing to check/m,
    );
    const stdin = await runCli(['check', '-o', 'json', '-'], { stdin: '' });
    expect((JSON.parse(stdin.stdout) as typeof report).errors[0]).toMatchObject({
      source: '<stdin>',
      code: 'NOTHING_TO_CHECK',
    });
  });

  it('scalars, top-level lists and maps without kind are never PASS: skipped with a note (nothing left: exit 2), or errors with --not-objects error', async () => {
    for (const [text, what] of [
      ['hello world\n', 'a string'],
      ['- a\n- b\n', 'a list'],
      ['name: my-app\n', 'a map without kind and apiVersion'],
    ] as const) {
      const skipped = await runCli(['check', '-o', 'json', '-'], { stdin: text });
      expect(skipped.code).toBe(2);
      const noted = JSON.parse(skipped.stdout) as { errors: { code: string }[]; notices: string[] };
      expect(noted.errors.map((e) => e.code)).toEqual(['NOTHING_TO_CHECK']);
      expect(noted.notices).toEqual([
        expect.stringMatching(/^skipped 1 document\(s\) that are not Kubernetes objects/),
      ]);
      const r = await runCli(['check', '-o', 'json', '--not-objects', 'error', '-'], {
        stdin: text,
      });
      expect(r.code).toBe(2);
      const report = JSON.parse(r.stdout) as {
        results: unknown[];
        errors: { code: string; message: string }[];
      };
      expect(report.results).toEqual([]);
      expect(report.errors).toEqual([
        expect.objectContaining({
          code: 'INPUT_NOT_OBJECT',
          message: expect.stringContaining(`not a Kubernetes object (${what})`),
        }),
      ]);
      expect(r.stdout).not.toContain('(no kind)');
    }
  });

  // #80 item 6: `check manifests/` (the help's first example) exited 2 on the project's own tree: a
  // Grafana dashboard, a Prometheus rule file and kustomize JSON patches are no Kubernetes objects.
  // Real kustomize and Helm trees hold such files: skipped, with one note in every format.
  it("checks the project's own manifests/ tree: its dashboard, rule file and JSON patches are skipped with a note", async () => {
    const r = await runCli(['check', '--fail-on-warn', 'manifests/']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /skipped \d+ document\(s\) that are not Kubernetes objects .*manifests\/monitoring\/dashboard\.json.*--not-objects error/,
    );
    expect(r.stdout).toMatch(/\d+ object\(s\) checked: \d+ allowed/);
    for (const [format, note] of [
      ['json', /"notices": \[\n\s+"skipped \d+ document/],
      ['sarif', /"toolExecutionNotifications"[\s\S]*skipped \d+ document/],
      [
        'junit',
        /<testsuite name="erdma-smcr check: notes"[^>]*>\n\s+<system-out>skipped \d+ document/,
      ],
      ['github', /^::notice title=erdma-smcr check::skipped \d+ document/m],
      ['yaml', /^# skipped \d+ document/m],
    ] as const) {
      const out = await runCli(['check', '-o', format, 'manifests/']);
      expect(out.code, `${format}: ${out.stderr}`).toBe(0);
      expect(out.stdout, format).toMatch(note);
    }
    const strict = await runCli(['check', '--not-objects', 'error', 'manifests/']);
    expect(strict.code).toBe(2);
    expect(strict.stdout).toMatch(/dashboard\.json:1: not a Kubernetes object/);
  });

  it('reads piped input when no path is given, as kubectl -f - does', async () => {
    const r = await runCli(['check'], { stdin: POD('piped') });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/DENY {2}Pod piped {2}<stdin>:1/);
  });

  it('reports the verdict on the documents before a syntax error, and the error', async () => {
    const f = file('two-docs.yaml', `${POD('first')}---\nkind: Pod\nmetadata: {name: [unclosed\n`);
    const r = await runCli(['check', f]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/DENY {2}Pod first/);
    expect(r.stdout).toMatch(
      /1 object\(s\) checked: 0 allowed, 1 denied(, \d+ warning\(s\))?, 1 input error/,
    );
  });

  // #85 item 4: a FIFO, a socket or a device inside a directory was skipped without a word.
  it('names the named pipes, sockets and devices of a walk it skipped, in every format', async () => {
    file('walk/pod.yaml', POD('walked'));
    expect(spawnSync('mkfifo', [join(dir, 'walk/pipe.yaml')]).status).toBe(0);
    const bound = spawnSync('python3', [
      '-c',
      'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])',
      join(dir, 'walk/agent.sock'),
    ]);
    expect(bound.status, bound.stderr.toString()).toBe(0);
    symlinkSync('/dev/null', join(dir, 'walk/null.yaml'));
    const walk = join(dir, 'walk');
    const r = await runCli(['check', '-o', 'json', walk]);
    expect(r.code).toBe(1); // the pod is read and judged (denied: hostNetwork)
    const report = JSON.parse(r.stdout) as { notices: string[]; summary: { objects: number } };
    expect(report.summary.objects).toBe(1);
    expect(report.notices).toContain(
      `skipped 3 file(s) in the directories that are not regular files: ${walk}/agent.sock (socket), ${walk}/null.yaml (character device), ${walk}/pipe.yaml (named pipe); to check what one holds, name it as an input (a named pipe is read as stdin is) or pass it on stdin with -`,
    );
    for (const [format, where] of [
      ['text', 'stderr'],
      ['sarif', 'stdout'],
      ['junit', 'stdout'],
      ['github', 'stdout'],
      ['yaml', 'stdout'],
    ] as const) {
      const out = await runCli(['check', '-o', format, walk]);
      expect(out[where], format).toMatch(
        /skipped 3 file\(s\) in the directories that are not regular/,
      );
    }
    const excluded = await runCli(['check', '-o', 'json', '--exclude', 'pipe|sock|null', walk]);
    expect((JSON.parse(excluded.stdout) as typeof report).notices.join('\n')).not.toMatch(
      /not regular files/,
    );
  });

  it('skips node_modules as it skips .git, and names stdin once', async () => {
    file('repo/node_modules/dep/pod.yaml', POD('dependency'));
    file('repo/pod.yaml', POD('ours'));
    const r = await runCli(['check', join(dir, 'repo')]);
    expect(r.stdout).toMatch(/Pod ours/);
    expect(r.stdout).not.toMatch(/dependency/);
    const twice = await runCli(['check', '-', '-'], { stdin: POD('once') });
    expect(twice.code).toBe(2);
    expect(twice.stdout).toMatch(/- is named more than once: stdin is read once/);
    expect(twice.stdout.match(/Pod once/g)).toHaveLength(1);
  });
});

describe('hostile inputs are bounded, refused with the path, and escaped', () => {
  it('a /dev/zero link is refused at once, naming the path', async () => {
    const zero = join(dir, 'zero.yaml');
    symlinkSync('/dev/zero', zero);
    const r = await runCli(['check', zero]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`cannot read ${zero}: not a regular file or a named pipe`);
  });

  // #80 item 8: `check -f <(kustomize build …)` was refused ("not a regular file"); kubectl reads
  // it. A named pipe given as an input is read as stdin is: once (the profile pass reads files
  // twice), to its end, within the same limit.
  it('reads a named pipe given as an input, once, as stdin is read', async () => {
    const fifo = join(dir, 'kustomize-build');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // The writer is another process, as a shell's process substitution is; it needs nothing from
    // this one's event loop, which the synchronous read holds.
    const src = join(dir, 'built.yaml.txt');
    writeFileSync(src, POD('from-a-pipe'));
    const writer = spawn('sh', ['-c', 'cat "$1" > "$2"', 'sh', src, fifo], { stdio: 'ignore' });
    const r = await runCli(['check', fifo]);
    // Read and judged: POD is a hostNetwork pod, which is denied (exit 1), not unreadable (2).
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/Pod from-a-pipe[\s\S]*host-network/);
    await new Promise((ok) => writer.on('close', ok));
  });

  it('refuses a named pipe past the input limit, as stdin', () => {
    const fifo = join(dir, 'big-pipe');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const writer = spawn('sh', ['-c', 'head -c 70000000 /dev/zero > "$1"', 'sh', fifo], {
      stdio: 'ignore',
    });
    const read = inputReader();
    expect(() => read(fifo)).toThrow(/more than 64 MiB on .*big-pipe/);
    writer.kill();
  });

  it('a nested kind: List alias bomb is refused, not expanded', async () => {
    const bomb = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- &a {apiVersion: v1, kind: List, items: [&p {apiVersion: v1, kind: Pod, metadata: {name: x}}, *p, *p, *p, *p, *p, *p, *p, *p, *p]}',
      '- &b {apiVersion: v1, kind: List, items: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}',
      '- &c {apiVersion: v1, kind: List, items: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}',
      '- &d {apiVersion: v1, kind: List, items: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}',
      '- {apiVersion: v1, kind: List, items: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}',
    ].join('\n');
    const r = await runCli(['check', '-o', 'json', '-'], { stdin: bomb });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refused: Lists nested more than 2 deep \(YAML aliases/);
    expect(r.stdout.length).toBeLessThan(10_000);
  });

  it('prints control characters in names as \\xNN, so a line cannot be redrawn', async () => {
    const r = await runCli(['check', '-'], { stdin: POD('"evil\\rPASS\\x1b[2K"') });
    expect(r.stdout.includes('\r') || r.stdout.includes('\u001b')).toBe(false);
    expect(r.stdout).toContain('evil\\x0dPASS\\x1b[2K');
  });

  it('inside a directory, only manifests are its business: a dangling README link is skipped, a dangling .yaml reported', async () => {
    mkdirSync(join(dir, 'links'));
    file('links/pod.yaml', POD('linked'));
    symlinkSync(join(dir, 'nowhere'), join(dir, 'links/README'));
    const ok = await runCli(['check', join(dir, 'links')]);
    expect(ok.stderr).not.toMatch(/README|cannot read/);
    symlinkSync(join(dir, 'nowhere'), join(dir, 'links/gone.yaml'));
    const bad = await runCli(['check', join(dir, 'links')]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toMatch(/cannot read .*gone\.yaml: no such file or directory \(ENOENT\)/);
  });
});

describe('what CI users reach for', () => {
  it('--fail-on-warn makes warnings fail the run (exit 3), and the summary counts them', async () => {
    // A pod with the canonical value but read from "True": allowed, with a warning.
    const warned = POD('warned').replace('"true"', '"True"').replace('  hostNetwork: true\n', '');
    const plain = await runCli(['check', '-'], { stdin: warned });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/1 object\(s\) checked: 1 allowed, 0 denied, \d+ warning\(s\)/);
    const strict = await runCli(['check', '--fail-on-warn', '-'], { stdin: warned });
    expect(strict.code).toBe(3);
  });

  it('-o github prints workflow commands on the file and line, escaped', async () => {
    const f = file('gh/pod.yaml', `${POD('gh-pod')}`);
    const r = await runCli(['check', '-o', 'github', f]);
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n');
    const error = lines.find((l) => l.startsWith('::error '));
    expect(error).toMatch(
      new RegExp(
        `^::error file=${f.replace(/[/.]/g, '\\$&')},line=1,title=Pod gh-pod \\[host-network\\]::SMC-R cannot be enabled`,
      ),
    );
    // ':' and ',' in properties are escaped, as the Actions toolkit does.
    expect(error!.split('::')[1]).not.toMatch(/title=[^,]*,[^,]*:/);
    // No node list is a note of the run (stderr), not a warning on the object (#80 item 7).
    expect(lines.find((l) => l.startsWith('::warning '))).toBeUndefined();
    expect(r.stderr).toMatch(/node list unknown: the node checks .* skipped for 1 SMC-R object/);
    expect(lines).toContain('1 object(s) checked: 0 allowed, 1 denied, 0 warning(s)');
  });
});

describe('check -o json for machines', () => {
  it('carries a schema version, and each result its file, line and List item index', async () => {
    const f = file(
      'loc/multi.yaml',
      `${POD('first')}---\napiVersion: v1\nkind: List\nitems:\n  - ${POD('in-list')
        .trimEnd()
        .split('\n')
        .join('\n    ')}\n`,
    );
    const r = await runCli(['check', '-o', 'json', f]);
    const report = JSON.parse(r.stdout) as {
      schemaVersion: number;
      results: { name: string; source: string; file: string; line: number; index: number[] }[];
    };
    expect(report.schemaVersion).toBe(1);
    expect(
      report.results.map(({ name, file: at, line, index }) => ({ name, at, line, index })),
    ).toEqual([
      { name: 'first', at: f, line: 1, index: [] },
      { name: 'in-list', at: f, line: 11, index: [0] },
    ]);
    expect(report.results[1]?.source).toBe(`${f}:11#items[0]`);
  });
});

describe('check for people: SKIP and --quiet', () => {
  it('says SKIP for objects the policy does not apply to, and --quiet prints only what needs a look', async () => {
    const plain = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n`;
    const warned = POD('warned')
      .replace('hostNetwork: true', 'hostNetwork: false')
      .replace('"true"', '"True"');
    const input = [plain, warned, POD('denied')].join('---\n');
    const all = await runCli(['check', '-'], { stdin: input });
    expect(all.stdout).toMatch(/^SKIP {2}ConfigMap cfg/m);
    expect(all.stdout).toMatch(/^PASS {2}Pod warned/m);
    expect(all.stdout).toMatch(/^DENY {2}Pod denied/m);
    expect(all.stdout).toContain(
      '3 object(s) checked: 2 allowed (1 skipped: not for SMC-R), 1 denied',
    );
    const quiet = await runCli(['check', '-q', '-'], { stdin: input });
    expect(quiet.code).toBe(all.code);
    expect(quiet.stdout).not.toMatch(/SKIP|ConfigMap/);
    expect(quiet.stdout).toMatch(/^PASS {2}Pod warned/m); // it has a warning
    expect(quiet.stdout).toMatch(/^DENY {2}Pod denied/m);
    expect(quiet.stdout).toContain('3 object(s) checked');
  });
});
