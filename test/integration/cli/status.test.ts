// `erdma-smcr status` as a person runs it: the SMC-R pods our plugin recorded under a host root,
// read through the native binary (native/build/erdma-smcr, built before the integration suites),
// and the errors for what cannot be read. The table itself is unit-tested from the VM's output
// (test/unit/agent/observe/smc.test.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

describe('erdma-smcr status', () => {
  const dir = mkdtempSync(join(tmpdir(), 'status-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists the SMC-R pods our plugin recorded; says which it could not read; --pod and --output json', async () => {
    const state = join(dir, 'var/lib/cni/erdma-smcr');
    mkdirSync(state, { recursive: true });
    writeFileSync(
      join(state, 'c1_eth0.json'),
      JSON.stringify({
        podNamespace: 'shop',
        podName: 'cart-0',
        podUid: 'u-1',
        containerId: 'c1',
        netns: '/var/run/netns/gone',
        outcome: 'applied',
        missing: [],
      }),
    );
    const text = await runCli(['status', '--host-root', dir]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      /shop\/cart-0\s+not read: cannot enter the netns: No such file or directory/,
    );
    const json = await runCli([
      'status',
      '--host-root',
      dir,
      '--output',
      'json',
      '--pod',
      'shop/cart-0',
    ]);
    expect(JSON.parse(json.stdout)).toEqual({
      pods: [
        {
          namespace: 'shop',
          name: 'cart-0',
          uid: 'u-1',
          error: expect.stringMatching(/cannot enter the netns/),
        },
      ],
    });
    const unknown = await runCli(['status', '--host-root', dir, '--pod', 'shop/nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no SMC-R pod shop\/nope on this node/);
    expect((await runCli(['status', '--host-root', dir, '--output', 'yaml'])).stderr).toMatch(
      /argument 'yaml' is invalid\. Allowed choices are text, json/,
    );
    mkdirSync(join(dir, 'empty'));
    expect((await runCli(['status', '--host-root', join(dir, 'empty')])).stdout).toBe(
      'no SMC-R pods on this node\n',
    );
    // A host root that is not there is a mistyped flag, not a node without pods (#70).
    const gone = await runCli(['status', '--host-root', join(dir, 'nonexistent')]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/--host-root .*nonexistent does not exist/);
  });

  it('lists pods by namespace, then name, as kubectl does', async () => {
    const state = join(dir, 'order/var/lib/cni/erdma-smcr');
    mkdirSync(state, { recursive: true });
    // As one "ns/name" string, "a-b/c" sorts before "a/z" ('-' < '/'); kubectl puts namespace a first.
    for (const [ns, name] of [
      ['a-b', 'c'],
      ['a', 'z'],
      ['a', 'm-1'],
    ])
      writeFileSync(
        join(state, `${ns}_${name}.json`),
        JSON.stringify({
          podNamespace: ns,
          podName: name,
          podUid: `u-${ns}-${name}`,
          containerId: `${ns}-${name}`,
          netns: '/var/run/netns/gone',
          outcome: 'applied',
          missing: [],
        }),
      );
    const out = await runCli(['status', '--host-root', join(dir, 'order'), '-o', 'json']);
    const pods = (JSON.parse(out.stdout) as { pods: { namespace: string; name: string }[] }).pods;
    expect(pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['a/m-1', 'a/z', 'a-b/c']);
  });
});
