// agent.manageDriver: the decisions as a table, the facts read from a sysfs/proc tree, and whole
// passes against a fake modprobe. The erdma module cannot load on this machine, so the boundary is
// faked here: the fake modprobe (a shell script) records its arguments and changes the tree the way
// the kernel would (/sys/module/<name>, erdma's compat_mode parameter). The real smc module load
// through the same code path runs in the SMC-R VM test.
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  decideDriver,
  defaultModprobe,
  deviceHolders,
  driverFacts,
  reconcileDriver,
  wantedMode,
  type DriverFacts,
  type PreferDriver,
} from '../../../../src/agent/node/driver.js';

const base: DriverFacts = {
  erdmaLoaded: true,
  mode: 'default',
  gpus: 0,
  smcLoaded: true,
  peermemLoaded: false,
};
const none = (): string[] => [];
const busy = (): string[] => ['pid 42 (nccl-test) holds /dev/infiniband/uverbs0'];

describe('driver decisions', () => {
  it.each<[string, PreferDriver, Partial<DriverFacts>, () => string[], string, string[]]>([
    ['all as asked', 'default', {}, none, 'ok', []],
    ['auto without GPUs is default', 'auto', {}, none, 'ok', []],
    ['default asked, smc missing', 'default', { smcLoaded: false }, none, 'change', ['smc']],
    [
      'compat running, default asked, idle',
      'default',
      { mode: 'compat' },
      none,
      'change',
      ['-r erdma', 'erdma compat_mode=N'],
    ],
    [
      'compat running, default asked, smc missing too',
      'default',
      { mode: 'compat', smcLoaded: false },
      none,
      'change',
      ['-r erdma', 'erdma compat_mode=N', 'smc'],
    ],
    [
      'default running, compat asked, idle',
      'compat',
      {},
      none,
      'change',
      ['-r erdma', 'erdma compat_mode=Y'],
    ],
    [
      'compat running, default asked, devices in use',
      'default',
      { mode: 'compat' },
      busy,
      'deferred',
      [],
    ],
    [
      'driver not loaded, default asked',
      'default',
      { erdmaLoaded: false, mode: undefined },
      none,
      'change',
      ['erdma compat_mode=N'],
    ],
    [
      'driver not loaded, ofed asked',
      'ofed',
      { erdmaLoaded: false, mode: undefined, smcLoaded: false },
      none,
      'change',
      ['erdma'],
    ],
    [
      'auto with GPUs, ofed running, peermem missing',
      'auto',
      { gpus: 8, mode: 'ofed' },
      none,
      'change',
      ['nvidia_peermem'],
    ],
    [
      'auto with GPUs, ofed running, peermem there',
      'auto',
      { gpus: 8, mode: 'ofed', peermemLoaded: true },
      none,
      'ok',
      [],
    ],
    [
      'auto with GPUs, default running: another build needed',
      'auto',
      { gpus: 8 },
      none,
      'manual',
      [],
    ],
    [
      'ofed running, default asked: another build needed',
      'default',
      { mode: 'ofed' },
      none,
      'manual',
      [],
    ],
  ])('%s', (_, prefer, facts, holders, status, modprobes) => {
    const d = decideDriver(prefer, { ...base, ...facts } as DriverFacts, holders);
    expect(d.status).toBe(status);
    expect(d.actions.map((a) => a.args.join(' '))).toEqual(modprobes);
    if (status === 'deferred')
      expect(d.detail).toMatch(
        /in use \(pid 42 \(nccl-test\) holds \/dev\/infiniband\/uverbs0\).*retried/,
      );
    if (status === 'manual') expect(d.detail).toMatch(/other build of the driver/);
  });

  it('reads who holds a device only when a reload is wanted', () => {
    let asked = 0;
    decideDriver('default', base, () => (asked++, []));
    decideDriver('default', { ...base, smcLoaded: false }, () => (asked++, []));
    expect(asked).toBe(0);
    decideDriver('compat', base, () => (asked++, []));
    expect(asked).toBe(1);
  });

  it('auto: ofed on GPU nodes, default elsewhere; modprobe through the host root', () => {
    expect(wantedMode('auto', { gpus: 1 })).toBe('ofed');
    expect(wantedMode('auto', { gpus: 0 })).toBe('default');
    expect(wantedMode('compat', { gpus: 4 })).toBe('compat');
    expect(defaultModprobe('/host')).toEqual(['chroot', '/host', 'modprobe']);
    expect(defaultModprobe('/')).toEqual(['modprobe']);
  });
});

describe('driver facts and passes on a fake sysfs with a fake modprobe', () => {
  const dir = mkdtempSync(join(tmpdir(), 'driver-'));
  const host = join(dir, 'host');
  const proc = join(dir, 'proc');
  const log = join(dir, 'modprobe.log');
  const modprobe = join(dir, 'modprobe');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A kernel-like effect for each call; `erdma compat_mode=Y` fails when FAIL_COMPAT exists, any load of M when FAIL_M does. */
  writeFileSync(
    modprobe,
    `#!/bin/sh
echo "$*" >> ${log}
m=${host}/sys/module
if [ "$1" = -r ]; then rm -rf "$m/$2"; exit 0; fi
if [ "$1" = erdma ] && [ "$2" = compat_mode=Y ] && [ -e ${dir}/FAIL_COMPAT ]; then echo "modprobe: ERROR: could not insert 'erdma': Invalid argument" >&2; exit 1; fi
if [ -e "${dir}/FAIL_$1" ]; then echo "modprobe: FATAL: Module $1 not found in directory /lib/modules/6.1.0" >&2; exit 1; fi
mkdir -p "$m/$1/parameters"
case "$2" in compat_mode=*) echo "\${2#compat_mode=}" > "$m/$1/parameters/compat_mode" ;; esac
`,
  );
  chmodSync(modprobe, 0o755);

  const calls = (): string[] =>
    existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
  const pass = (prefer: PreferDriver) =>
    reconcileDriver({
      prefer,
      hostRoot: host,
      procRoot: proc,
      modprobe: [modprobe],
      logger: pino({ level: 'silent' }),
    });

  beforeEach(() => {
    rmSync(host, { recursive: true, force: true });
    rmSync(proc, { recursive: true, force: true });
    rmSync(log, { force: true });
    rmSync(join(dir, 'FAIL_COMPAT'), { force: true });
    rmSync(join(dir, 'FAIL_erdma'), { force: true });
    mkdirSync(join(host, 'sys/module/erdma/parameters'), { recursive: true });
    writeFileSync(join(host, 'sys/module/erdma/parameters/compat_mode'), 'Y\n');
    mkdirSync(join(proc, 'sys/net'), { recursive: true });
  });

  it('reads the mode, GPUs and modules from the tree', () => {
    expect(driverFacts(host, proc)).toEqual({
      erdmaLoaded: true,
      mode: 'compat',
      gpus: 0,
      smcLoaded: false,
      peermemLoaded: false,
    });
    for (const [dev, vendor, cls] of [
      ['0000:00:07.0', '0x10de', '0x030200'],
      ['0000:00:08.0', '0x10de', '0x040300'],
      ['0000:00:09.0', '0x1ded', '0x020000'],
    ]) {
      mkdirSync(join(host, 'sys/bus/pci/devices', dev!), { recursive: true });
      writeFileSync(join(host, 'sys/bus/pci/devices', dev!, 'vendor'), `${vendor}\n`);
      writeFileSync(join(host, 'sys/bus/pci/devices', dev!, 'class'), `${cls}\n`);
    }
    mkdirSync(join(host, 'sys/module/mlx_compat'), { recursive: true });
    expect(driverFacts(host, proc)).toMatchObject({ mode: 'ofed', gpus: 1 });
  });

  it('finds the processes that hold a verbs device', () => {
    mkdirSync(join(proc, '4242/fd'), { recursive: true });
    writeFileSync(join(proc, '4242/comm'), 'ib_write_bw\n');
    symlinkSync('/dev/null', join(proc, '4242/fd/0'));
    symlinkSync('/dev/infiniband/uverbs1', join(proc, '4242/fd/7'));
    mkdirSync(join(proc, '4343/fd'), { recursive: true });
    symlinkSync('socket:[123]', join(proc, '4343/fd/3'));
    expect(deviceHolders(proc)).toEqual(['pid 4242 (ib_write_bw) holds /dev/infiniband/uverbs1']);
  });

  it('switches compat to default while idle and loads smc; a second pass does nothing', async () => {
    const r = await pass('default');
    expect(r.decision.status).toBe('change');
    expect(calls()).toEqual(['-r erdma', 'erdma compat_mode=N', 'smc']);
    expect(r.done.every((d) => !d.error)).toBe(true);
    expect(r.facts).toMatchObject({ mode: 'default', smcLoaded: true });
    rmSync(log);
    expect((await pass('default')).decision.status).toBe('ok');
    expect(calls()).toEqual([]);
  });

  it('leaves a driver whose devices are in use alone, and says so', async () => {
    mkdirSync(join(proc, '77/fd'), { recursive: true });
    symlinkSync('/dev/infiniband/uverbs0', join(proc, '77/fd/9'));
    const r = await pass('default');
    expect(r.decision.status).toBe('deferred');
    expect(calls()).toEqual([]);
    expect(r.facts.mode).toBe('compat');
  });

  it('a module that cannot load does not keep the others from loading', async () => {
    // A node without the erdma driver installed (as the SMC-R VM): smc still gets loaded.
    rmSync(join(host, 'sys/module/erdma'), { recursive: true });
    writeFileSync(join(dir, 'FAIL_erdma'), '');
    const r = await pass('default');
    expect(calls()).toEqual(['erdma compat_mode=N', 'smc']);
    expect(r.done.map((d) => [d.action.module, d.error === undefined])).toEqual([
      ['erdma', false],
      ['smc', true],
    ]);
    expect(r.done[0]!.error).toMatch(/Module erdma not found/);
    expect(r.facts).toMatchObject({ erdmaLoaded: false, smcLoaded: true });
  });

  it('a load that fails after the unload puts the driver back as it was', async () => {
    writeFileSync(join(host, 'sys/module/erdma/parameters/compat_mode'), 'N\n');
    writeFileSync(join(dir, 'FAIL_COMPAT'), '');
    const r = await pass('compat');
    expect(calls()).toEqual(['-r erdma', 'erdma compat_mode=Y', 'erdma compat_mode=N']);
    expect(r.done.find((d) => d.error)?.error).toMatch(/could not insert 'erdma'/);
    expect(r.facts).toMatchObject({ erdmaLoaded: true, mode: 'default' });
  });
});
