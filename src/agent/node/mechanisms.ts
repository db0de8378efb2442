// Which ways of turning a pod's TCP into SMC work on this node, found by trying them (the native
// binary's `mechanisms`: the tcp2smc knob, an IPPROTO_SMC socket, loading and attaching the BPF
// program, an AF_SMC socket), not by the OS's name. Where the BPF program is the way, it is kept
// loaded and pinned in the host's bpffs for our CNI plugin to switch on per pod netns; a new agent
// loads its own program over the old pins, keeping the pods' entries (docs/support-matrix.md).
import type { Logger } from 'pino';
import { NativeError, type NativeBinary } from '../../native/binary.js';
import type { MechanismProbe } from '../../native/contract.js';

export interface MechanismOptions {
  readonly binary: Pick<NativeBinary, 'mechanisms' | 'bpfLoad' | 'bpfStatus'>;
  /** The host's /proc as the agent sees it (for the per-netns tcp2smc knob). */
  readonly procRoot: string;
  /** The pin directory as the agent sees it (below hostRoot). */
  readonly bpfDir: string;
  readonly logger: Logger;
}

/** Whether the BPF path is the one to keep loaded: it works and nothing better does. */
export function wantsBpf(p: MechanismProbe): boolean {
  return p.ipprotoSmc.ok && p.bpf.ok && !p.tcp2smc.ok;
}

const why = (err: unknown): string =>
  err instanceof NativeError ? err.message : err instanceof Error ? err.message : String(err);

export class Mechanisms {
  private last: MechanismProbe | undefined;
  /** This process's program is the one pinned. */
  private replaced = false;

  constructor(private readonly o: MechanismOptions) {}

  /**
   * What works now. A node that has a mechanism keeps it (the kernel does not lose one while it
   * runs); with the BPF path the pins are checked each time and put back when gone. Undefined when
   * the binary cannot be run at all: capability then considers the tcp2smc knob only.
   */
  async find(): Promise<MechanismProbe | undefined> {
    if (this.last && this.last.mechanism !== 'none') {
      if (wantsBpf(this.last)) await this.ensurePinned(this.last);
      return this.last;
    }
    let p: MechanismProbe;
    try {
      p = await this.o.binary.mechanisms(this.o.procRoot);
    } catch (err) {
      this.o.logger.warn({ reason: why(err) }, 'cannot probe the SMC mechanisms of this node');
      return this.last;
    }
    if (wantsBpf(p)) p = await this.ensurePinned(p);
    if (p.mechanism !== this.last?.mechanism)
      this.o.logger.info({ mechanism: p.mechanism, probe: p }, 'SMC mechanisms probed');
    this.last = p;
    return p;
  }

  /**
   * The first call of this process loads the program over whatever is pinned: an upgraded agent
   * brings a new program, and the binary swaps the link in one rename, keeping the map and so every
   * pod's switch (`bpf load`). Later calls load only when the pins are gone. A failure turns the BPF
   * path off, saying why.
   */
  private async ensurePinned(p: MechanismProbe): Promise<MechanismProbe> {
    try {
      if (this.replaced) {
        const status = await this.o.binary.bpfStatus(this.o.bpfDir);
        if (status.loaded) return p;
      }
      await this.o.binary.bpfLoad(this.o.bpfDir);
      const now = await this.o.binary.bpfStatus(this.o.bpfDir);
      this.o.logger.info(
        { dir: this.o.bpfDir, progId: now.progId, tag: now.tag, netns: now.netns.length },
        this.replaced
          ? 'IPPROTO_SMC program pinned again'
          : 'IPPROTO_SMC program of this agent pinned',
      );
      this.replaced = true;
      return p;
    } catch (err) {
      const off: MechanismProbe = {
        ...p,
        mechanism: p.afSmc.ok ? 'preload' : 'none',
        bpf: { ok: false, why: `cannot pin the program in ${this.o.bpfDir}: ${why(err)}` },
      };
      this.o.logger.warn({ reason: off.bpf.why }, 'IPPROTO_SMC program not pinned');
      this.last = off;
      return off;
    }
  }
}
