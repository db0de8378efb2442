// The contracts across the languages, held by the real binary: the ranges the webhook validates
// tuning annotations against (src/policy/settings.ts) are the ranges the CNI plugin accepts
// (native/src/settings.c), and the plugin's state record is what src/native/contract.ts reads
// (that one needs a pod netns: test/integration/cni/plugin.test.ts checks it after a real ADD).
import { describe, expect, it } from 'vitest';
import { NativeBinary } from '../../../src/native/binary.js';
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
