// Boots the SMC-R test VM (test/smcr-vm/build.sh, qemu under TCG) and reads its console: each
// step of init.sh prints a `SMCRVM key=value ...` line, DONE or FAIL at the end.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/**
 * TCG: /dev/kvm here is a nested paravirtual KVM that cannot run an unmodified kernel.
 * One host thread for both vCPUs (`thread=single`): under multi-threaded TCG a vCPU can run code
 * another vCPU has just live-patched (the kernel's text_poke_bp for a static key) from a stale
 * translation, and the guest dies at boot with `Oops: int3` (seen in CI on trixie's 6.12, about 1
 * boot in 280 here; `test/smcr-vm/boot-loop.sh` counts them). The guest still has two CPUs.
 */
const QEMU_ACCEL = ['-accel', 'tcg,thread=single'] as const;

export type VmRecord = Record<string, string>;

/** `SMCRVM k=v k2="v v" ...` lines → records. */
export function records(consoleText: string): VmRecord[] {
  return consoleText
    .split(/\r?\n/)
    .map((l) => l.slice(l.indexOf('SMCRVM ')))
    .filter((l) => l.startsWith('SMCRVM '))
    .map((l) => {
      const rec: VmRecord = {};
      const body = l.slice('SMCRVM '.length);
      const m = /^(DONE|FAIL) ?(.*)$/.exec(body);
      if (m) return { [m[1] as string]: m[2] ?? '' };
      for (const kv of body.matchAll(/(\w+)=("[^"]*"|[[{].*?[\]}](?= \w+=|$)|\S*)/g))
        rec[kv[1] as string] = (kv[2] ?? '').replace(/^"|"$/g, '');
      return rec;
    });
}

export interface VmRun {
  readonly consoleText: string;
  readonly lines: VmRecord[];
  /** The record holding `key`; throws with the console's tail when there is none. */
  find(pred: (r: VmRecord) => boolean): VmRecord;
  /** JSON.parse of the value of the first record holding `key`. */
  json(key: string): unknown;
  /** 'completed' or why not, for the log line. */
  readonly summary: string;
}

export interface VmOptions {
  /**
   * bookworm (Debian 6.1, the default), trixie (6.12), or newest: Debian's newest line
   * (trixie-backports 7.x) built from its linux-source with SMC and smc_hs_ctrl (test/smcr-vm/newest.sh).
   */
  readonly kernel?: 'bookworm' | 'trixie' | 'newest';
  /** Extra kernel command line, e.g. `smcr_scenario=transparent`. */
  readonly append?: string;
  /** Kept console file (SMCR_VM_CONSOLE). */
  readonly consoleFile?: string;
  /** How long the guest may run before its watchdog reboots it (default 240 s; qemu gets 60 s more). */
  readonly watchdogSec?: number;
  /**
   * Which smc module (trixie only): Debian's (`stock`, the default: CONFIG_SMC_LO off) or the one
   * test/smcr-vm/trixie.sh builds from Debian's source with loopback-ism (`lo`: SMC-D between pods).
   */
  readonly smc?: 'stock' | 'lo';
  /** Put CPython's own test suite in the VM (test/smcr-vm/cpython.sh): about 25 MB more. */
  readonly pytest?: boolean;
  /** Files the scenario reads, by name, under /files in the VM. */
  readonly files?: Readonly<Record<string, string>>;
}

/** Builds the VM, boots it once and returns what its console said. */
export async function bootVm(opts: VmOptions = {}): Promise<VmRun> {
  const dir = mkdtempSync(join(tmpdir(), 'smcr-vm-'));
  try {
    const watchdog = opts.watchdogSec ?? 240;
    const files = join(dir, 'files');
    mkdirSync(files);
    for (const [name, text] of Object.entries(opts.files ?? {}))
      writeFileSync(join(files, name), text);
    const env = {
      ...process.env,
      SMCR_VM_KERNEL: opts.kernel ?? 'bookworm',
      SMCR_VM_WATCHDOG: String(watchdog),
      SMCR_VM_SMC: opts.smc ?? 'stock',
      SMCR_VM_PYTEST: opts.pytest ? '1' : '0',
      SMCR_VM_FILES: files,
    };
    const build = await run('bash', ['test/smcr-vm/build.sh', dir], 20 * 60_000, env);
    if (build.code !== 0) throw new Error(`building the VM failed:\n${build.out}`);
    const vm = await run(
      'timeout',
      [
        String(watchdog + 60),
        'qemu-system-x86_64',
        ...QEMU_ACCEL,
        '-cpu',
        'max',
        '-smp',
        '2',
        '-m',
        '1024',
        '-nic',
        'none',
        '-kernel',
        join(dir, 'vmlinuz'),
        '-initrd',
        join(dir, 'initramfs.gz'),
        '-append',
        `console=ttyS0 panic=-1 quiet ${opts.append ?? ''}`.trim(),
        '-nographic',
        '-no-reboot',
      ],
      (watchdog + 80) * 1000,
    );
    if (opts.consoleFile) writeFileSync(opts.consoleFile, vm.out);
    const lines = records(vm.out);
    const find = (pred: (r: VmRecord) => boolean): VmRecord => {
      const r = lines.find(pred);
      if (!r) throw new Error(`missing result in the VM console:\n${vm.out.slice(-3000)}`);
      return r;
    };
    const done = lines.find((r) => 'DONE' in r);
    const failed = lines.filter((r) => 'FAIL' in r).map((r) => r.FAIL);
    return {
      consoleText: vm.out,
      lines,
      find,
      json: (key) => JSON.parse(find((x) => key in x)[key] as string) as unknown,
      summary:
        done?.DONE === 'ok' && failed.length === 0
          ? 'completed'
          : `did not complete (${failed.join('; ') || 'VM hung or crashed'})`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
