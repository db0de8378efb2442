// The agent's mechanism finder: it keeps the IPPROTO_SMC program pinned where that is the way, puts
// the pins back when they are gone, and turns the BPF path off (saying why) when pinning fails.
// The binary is a stand-in with the native binary's answers (the VM test runs the real one).
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Mechanisms, wantsBpf } from '../../../../src/agent/node/mechanisms.js';
import type { BpfStatus, MechanismProbe } from '../../../../src/native/contract.js';

const yes = { ok: true } as const;
const no = (why: string): { ok: false; why: string } => ({ ok: false, why });
const trixie: MechanismProbe = {
  mechanism: 'bpf',
  tcp2smc: no('no net.smc.tcp2smc'),
  ipprotoSmc: yes,
  bpf: yes,
  afSmc: yes,
};

function binary(o: { probe: MechanismProbe; loadFails?: string }) {
  const calls: string[] = [];
  let pinned = false;
  return {
    calls,
    unpin: () => (pinned = false),
    binary: {
      mechanisms: async (proc?: string): Promise<MechanismProbe> => {
        calls.push(`mechanisms ${proc}`);
        return o.probe;
      },
      bpfStatus: async (dir: string): Promise<BpfStatus> => {
        calls.push(`status ${dir}`);
        return { loaded: pinned, netns: [] };
      },
      bpfLoad: async (dir: string): Promise<void> => {
        calls.push(`load ${dir}`);
        if (o.loadFails) throw new Error(o.loadFails);
        pinned = true;
      },
    },
  };
}

const logger = pino({ level: 'silent' });

describe('the mechanism finder', () => {
  it('pins its own program where it is the way, probes once, and puts the pins back when gone', async () => {
    const b = binary({ probe: trixie });
    const m = new Mechanisms({ binary: b.binary, procRoot: '/proc', bpfDir: '/host/bpf', logger });
    expect((await m.find())?.mechanism).toBe('bpf');
    expect(b.calls).toEqual(['mechanisms /proc', 'load /host/bpf', 'status /host/bpf']);
    b.calls.length = 0;
    await m.find();
    expect(b.calls).toEqual(['status /host/bpf']);
    b.unpin();
    b.calls.length = 0;
    await m.find();
    expect(b.calls).toEqual(['status /host/bpf', 'load /host/bpf', 'status /host/bpf']);
  });

  it('a new agent loads its program over one an older agent pinned (the upgrade)', async () => {
    const b = binary({ probe: trixie });
    await b.binary.bpfLoad('/host/bpf'); // the old agent's
    b.calls.length = 0;
    const m = new Mechanisms({ binary: b.binary, procRoot: '/proc', bpfDir: '/host/bpf', logger });
    expect((await m.find())?.mechanism).toBe('bpf');
    // Loaded although a program was pinned: the binary swaps the link, keeping the map.
    expect(b.calls).toEqual(['mechanisms /proc', 'load /host/bpf', 'status /host/bpf']);
  });

  it('a program that cannot be pinned turns the BPF path off, with why, and preload takes over', async () => {
    const b = binary({ probe: trixie, loadFails: 'cannot create /host/bpf (is bpffs mounted?)' });
    const m = new Mechanisms({ binary: b.binary, procRoot: '/proc', bpfDir: '/host/bpf', logger });
    const p = await m.find();
    expect(p?.mechanism).toBe('preload');
    expect(p?.bpf).toEqual({ ok: false, why: expect.stringMatching(/bpffs mounted/) });
  });

  it('needs no program where the tcp2smc knob works, or IPPROTO_SMC does not', () => {
    expect(wantsBpf(trixie)).toBe(true);
    expect(wantsBpf({ ...trixie, tcp2smc: yes })).toBe(false);
    expect(wantsBpf({ ...trixie, ipprotoSmc: no('6.1') })).toBe(false);
  });

  it('a binary that cannot run leaves the decision to the tcp2smc knob', async () => {
    const m = new Mechanisms({
      binary: {
        mechanisms: () => Promise.reject(new Error('spawn ENOENT')),
        bpfStatus: () => Promise.reject(new Error('unused')),
        bpfLoad: () => Promise.reject(new Error('unused')),
      },
      procRoot: '/proc',
      bpfDir: '/b',
      logger,
    });
    expect(await m.find()).toBeUndefined();
  });
});
