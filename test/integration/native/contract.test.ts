// The contracts across the languages, held by the real binary: the ranges the webhook validates
// tuning annotations against (src/policy/settings.ts) are the ranges the CNI plugin accepts
// (native/src/settings.c), and the plugin's state record is what src/native/contract.ts reads
// (that one needs a pod netns: test/integration/cni/plugin.test.ts checks it after a real ADD).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NativeBinary } from '../../../src/native/binary.js';
import { MECHANISMS, type Mechanism } from '../../../src/native/contract.js';
import { KNOBS, TCP2SMC_SYSCTL } from '../../../src/policy/settings.js';

describe('the sysctl ranges, in TypeScript and in C', () => {
  it('are the same for every knob a user may tune, and the plugin knows no other but tcp2smc', async () => {
    const table = await new NativeBinary('native/build/erdma-smcr').sysctls();
    const c = new Map(table.knobs.map((k) => [k.sysctl, { min: k.min, max: k.max }]));
    for (const knob of KNOBS) {
      expect(c.get(knob.sysctl), knob.sysctl).toEqual({ min: knob.min, max: knob.max });
    }
    const ours = new Set(KNOBS.map((k) => k.sysctl));
    expect(table.knobs.map((k) => k.sysctl).filter((s) => !ours.has(s))).toEqual([TCP2SMC_SYSCTL]);
    // The webhook always writes tcp2smc=1: inside the plugin's range.
    expect(c.get(TCP2SMC_SYSCTL)).toEqual({ min: 0, max: 1 });
  });
});

describe('the mechanism probe and the BPF pins, as the agent reads them', () => {
  const binary = new NativeBinary('native/build/erdma-smcr');
  const probe = z
    .object({ ok: z.boolean(), why: z.string().min(10).optional() })
    .strict()
    .refine((p) => p.ok === (p.why === undefined), 'why exactly when not ok');

  it('mechanisms prints every probe, a reason for each that fails, and a choice consistent with them', async () => {
    const m = await binary.mechanisms('/nonexistent-proc');
    const schema = z
      .object({
        mechanism: z.enum(MECHANISMS as [Mechanism, ...Mechanism[]]),
        tcp2smc: probe,
        ipprotoSmc: probe,
        bpf: probe,
        afSmc: probe,
        loopbackIsm: probe,
        selection: probe,
      })
      .strict();
    expect(schema.safeParse(m).error?.issues ?? []).toEqual([]);
    // The knob is looked for below the proc root given.
    expect(m.tcp2smc.ok).toBe(false);
    const expected = m.ipprotoSmc.ok && m.bpf.ok ? 'bpf' : m.afSmc.ok ? 'preload' : 'none';
    expect(m.mechanism).toBe(expected);
    // loopback-ism is there only with SMC: without an AF_SMC socket, it cannot be.
    if (!m.afSmc.ok) expect(m.loopbackIsm?.ok).toBe(false);
    // The selection is kept where the mechanism is the library, or bpf where smc_hs_ctrl exists
    // (its knob is looked for below the proc root given too: here, nowhere).
    expect(m.selection?.ok).toBe(m.mechanism === 'preload');
  });

  it('bpf status reads an empty pin directory as not loaded; switching a netns on there says why not', async () => {
    expect(await binary.bpfStatus('/nonexistent-bpffs/erdma-smcr')).toEqual({
      loaded: false,
      netns: [],
      select: { registered: false, netns: [] },
    });
    const r = spawnSync('native/build/erdma-smcr', [
      'bpf',
      'enable',
      '--netns',
      '/proc/self/ns/net',
      '--dir',
      '/nonexistent-bpffs/erdma-smcr',
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr.toString()).toMatch(/not loaded \(no pinned map; run bpf load\)/);
  });
});
