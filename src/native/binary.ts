// The one door to our native binary (native/): every call the TypeScript side makes into it,
// with one time limit, one way of reading its output and one error. The binary is the CNI plugin
// (run by the container runtime, or by the agent for a late apply) and, for the agent, a netlink
// tool: `pnet`, `net`, `smc` and `sysctls`, and the IPPROTO_SMC program's loader (`mechanisms`,
// `bpf`). What each call prints is typed in ./contract.ts.
import { execFile } from 'node:child_process';
import { packagePath } from '../util/package.js';
import { named } from '../errors.js';
import type {
  BpfStatus,
  MechanismProbe,
  NetConfigure,
  NetState,
  SmcSocket,
  SmcSummary,
  SysctlTable,
} from './contract.js';

/** The binary as built in this package (native/build/erdma-smcr); the image puts it there too. */
export const DEFAULT_NATIVE_BINARY = packagePath('native', 'build', 'erdma-smcr');

/** A call that answers later than this has failed (netlink and netns work take milliseconds). */
const TIMEOUT_MS = 10_000;
/** Output read from one call at most: a netns with 100,000 sockets lists about 30 MB. */
const MAX_OUTPUT = 256 << 20;
/** `net configure`'s exit code when the link was configured meanwhile (NET_EXIT_CONFIGURED, native/src/eni.h). */
const NET_ALREADY_CONFIGURED = 3;
/** Network namespaces read per `smc summary` call: one process, one setns and one dump each. */
const SUMMARY_BATCH = 512;

/** A call into the binary that failed: its arguments, exit code (null when killed) and output. */
export class NativeError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stdout: string,
    readonly stderr: string,
    why: string,
  ) {
    super(why);
    this.name = 'NativeError';
  }
}
named(NativeError, 'NativeError');

interface Call {
  readonly timeoutMs?: number;
  readonly input?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** The CNI plugin's answer to one command: its exit code and what it printed. */
export interface CniAnswer {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export class NativeBinary {
  constructor(
    readonly path: string = DEFAULT_NATIVE_BINARY,
    private readonly timeoutMs: number = TIMEOUT_MS,
  ) {}

  /** Runs the binary; resolves with its output whatever its exit code (a spawn failure rejects). */
  private run(args: readonly string[], call: Call = {}): Promise<CniAnswer> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        this.path,
        [...args],
        {
          timeout: call.timeoutMs ?? this.timeoutMs,
          maxBuffer: MAX_OUTPUT,
          ...(call.env ? { env: call.env } : {}),
        },
        (err, stdout, stderr) => {
          // A non-zero exit has a numeric code; a spawn failure (ENOENT) a string, a kill none.
          const e = err as { code?: unknown; killed?: boolean; message: string } | null;
          const code = e?.code;
          if (e && typeof code !== 'number') {
            const why = e.killed
              ? `no answer within ${(call.timeoutMs ?? this.timeoutMs) / 1000} s`
              : e.message;
            return reject(new NativeError(args, null, stdout, stderr, `${this.describe(args)}: ${why}`));
          }
          resolve({ exitCode: typeof code === 'number' ? code : 0, stdout, stderr });
        },
      );
      // A tool that exits without reading its stdin closes the pipe: not an error of the call.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(call.input ?? '');
    });
  }

  private describe(args: readonly string[]): string {
    return args.length === 0 ? 'erdma-smcr (CNI plugin)' : `erdma-smcr ${args.slice(0, 2).join(' ')}`;
  }

  /** Runs a tool subcommand that must succeed; resolves with its standard output. */
  private async tool(args: readonly string[], call: Call = {}): Promise<string> {
    const r = await this.run(args, call);
    if (r.exitCode === 0) return r.stdout;
    throw new NativeError(args, r.exitCode, r.stdout, r.stderr, r.stderr.trim() || `exit code ${r.exitCode}`);
  }

  private async json<T>(args: readonly string[], call: Call = {}): Promise<T> {
    return JSON.parse(await this.tool(args, call)) as T;
  }

  // ---- pnet: the SMC pnet table ----

  /** Maps a PNETID to an RDMA device port (an existing entry is success). */
  async pnetAdd(id: string, device: { readonly ib: string; readonly port: number }): Promise<void> {
    await this.tool(['pnet', 'add', '--id', id, '--ib', device.ib, '--port', String(device.port)]);
  }

  // ---- net: links, addresses, routes (rtnetlink) ----

  async netShow(): Promise<NetState> {
    return this.json<NetState>(['net', 'show']);
  }

  /**
   * Configures one ENI: 'configured', or 'already-configured' when it found the link up with an
   * address meanwhile (it then touches nothing). The binary undoes its own steps when one fails.
   */
  async netConfigure(c: NetConfigure): Promise<'configured' | 'already-configured'> {
    const args = ['net', 'configure', '--dev', c.dev, '--addr', `${c.address}/${c.prefix}`];
    args.push('--cidr', c.cidr, '--gateway', c.gateway);
    args.push('--metric-subnet', String(c.metricSubnet), '--metric-default', String(c.metricDefault));
    if (c.mtu) args.push('--mtu', String(c.mtu));
    const r = await this.run(args);
    if (r.exitCode === 0) return 'configured';
    if (r.exitCode === NET_ALREADY_CONFIGURED) return 'already-configured';
    throw new NativeError(args, r.exitCode, r.stdout, r.stderr, r.stderr.trim() || `exit code ${r.exitCode}`);
  }

  // ---- smc: sockets and counters from smc_diag, inside a netns ----

  /** Bounded counters of a netns's SMC sockets (memory flat in the number of sockets). */
  smcSummary(netns: string): Promise<SmcSummary> {
    return this.json<SmcSummary>(['smc', 'summary', '--netns', netns]);
  }

  /** Every SMC socket of a netns. */
  smcSockets(netns: string): Promise<SmcSocket[]> {
    return this.json<SmcSocket[]>(['smc', 'sockets', '--netns', netns]);
  }

  /**
   * Summaries of many netns, one process per batch of SUMMARY_BATCH: path → summary, or why it
   * could not be read. The binary exits 1 when some netns could not be read (its line says why);
   * any other failure fails every netns of the batch. `selects`: each netns's SMC selection, whose
   * kept connections the summary counts apart (selectionKept).
   */
  async smcSummaries(
    paths: readonly string[],
    timeoutMs = 30_000,
    selects: ReadonlyMap<string, string> = new Map(),
  ): Promise<Map<string, SmcSummary | { error: string }>> {
    const out = new Map<string, SmcSummary | { error: string }>();
    for (let i = 0; i < paths.length; i += SUMMARY_BATCH) {
      const batch = paths.slice(i, i + SUMMARY_BATCH);
      // An empty --select resets it: a netns without a selection counts nothing as kept.
      const args = [
        'smc',
        'summary',
        ...batch.flatMap((p) => ['--select', selects.get(p) ?? '', '--netns', p]),
      ];
      let r: CniAnswer;
      try {
        r = await this.run(args, { timeoutMs });
      } catch (err) {
        for (const p of batch) out.set(p, { error: (err as Error).message });
        continue;
      }
      if (r.exitCode !== 0 && (r.exitCode !== 1 || r.stdout === '')) {
        const why = r.stderr.trim() || `exit code ${r.exitCode}`;
        for (const p of batch) out.set(p, { error: why });
        continue;
      }
      for (const line of r.stdout.split('\n')) {
        if (!line.trim()) continue;
        const one = JSON.parse(line) as { netns: string; summary?: SmcSummary; error?: string };
        out.set(one.netns, one.summary ?? { error: one.error ?? 'no answer' });
      }
    }
    return out;
  }

  // ---- mechanisms and the IPPROTO_SMC program ----

  /**
   * Which ways of turning TCP into SMC work on this node (it loads and drops the BPF program);
   * the tcp2smc knob is looked for below `procRoot`.
   */
  mechanisms(procRoot = '/proc'): Promise<MechanismProbe> {
    return this.json<MechanismProbe>(['mechanisms', '--proc', procRoot]);
  }

  /** Loads the IPPROTO_SMC program and pins it in `dir`, keeping the netns map of a previous load. */
  async bpfLoad(dir: string): Promise<void> {
    await this.tool(['bpf', 'load', '--dir', dir]);
  }

  /** Removes the pins in `dir`: the program detaches. */
  async bpfUnload(dir: string): Promise<void> {
    await this.tool(['bpf', 'unload', '--dir', dir]);
  }

  bpfStatus(dir: string): Promise<BpfStatus> {
    return this.json<BpfStatus>(['bpf', 'status', '--dir', dir]);
  }

  // ---- sysctls: the plugin's allow-list ----

  /** The net.smc knobs the plugin writes and the ranges it accepts (native/src/settings.c). */
  sysctls(): Promise<SysctlTable> {
    return this.json<SysctlTable>(['sysctls']);
  }

  // ---- the CNI plugin itself ----

  /**
   * Runs the plugin as a container runtime does: CNI_* variables in `env`, the network
   * configuration on stdin. Resolves with its answer whatever the exit code.
   */
  cni(env: Readonly<Record<string, string>>, config: unknown): Promise<CniAnswer> {
    return this.run([], { env: { ...env }, input: JSON.stringify(config) });
  }
}
