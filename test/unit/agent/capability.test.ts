// Node capability from host facts and discovered devices, and the labels it becomes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  capability,
  capabilityLabels,
  hostFacts,
  isLabelValue,
  type HostFacts,
} from '../../../src/agent/node/capability.js';
import { discover } from '../../../src/agent/node/discovery.js';

const good: HostFacts = {
  kernelRelease: '5.10.134-17.3.al8.x86_64',
  osImage: 'Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)',
  smcModule: true,
};
const devices = discover({ hostRoot: 'test/fixtures/sysfs/node-a' });
const erdma = devices.filter((d) => d.driverMode === 'default');

describe('node capability', () => {
  const dir = mkdtempSync(join(tmpdir(), 'facts-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads kernel release, OS and the smc module from proc and host roots', () => {
    mkdirSync(join(dir, 'proc', 'sys', 'kernel'), { recursive: true });
    mkdirSync(join(dir, 'proc', 'sys', 'net', 'smc'), { recursive: true });
    mkdirSync(join(dir, 'host', 'etc'), { recursive: true });
    writeFileSync(join(dir, 'proc', 'sys', 'kernel', 'osrelease'), '5.10.134-17.3.al8.x86_64\n');
    writeFileSync(join(dir, 'proc', 'sys', 'net', 'smc', 'tcp2smc'), '0\n');
    writeFileSync(
      join(dir, 'host', 'etc', 'os-release'),
      'NAME="Alibaba Cloud Linux"\nPRETTY_NAME="Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)"\n',
    );
    expect(hostFacts(join(dir, 'proc'), join(dir, 'host'))).toEqual(good);
    expect(hostFacts(join(dir, 'nothing'), join(dir, 'nothing'))).toEqual({
      kernelRelease: '',
      osImage: '',
      smcModule: false,
    });
  });

  it('is capable with the right kernel, the smc module and a healthy default-mode device', () => {
    const c = capability(good, devices);
    expect(c).toMatchObject({ capable: true, driverMode: 'default', reason: '' });
    expect(capabilityLabels(c)).toEqual({
      'smcr.erdma.io/capable': 'true',
      'smcr.erdma.io/driver-mode': 'default',
      'smcr.erdma.io/reason': null,
    });
  });

  it.each([
    [{ ...good, kernelRelease: '5.10.134-16.3.al8.x86_64' }, devices, 'kernel-too-old'],
    [
      { ...good, kernelRelease: '6.6.88-5.1.alnx4.x86_64', osImage: 'Alibaba Cloud Linux 4' },
      devices,
      'unsupported-os-or-kernel',
    ],
    [{ ...good, osImage: 'Ubuntu 22.04.4 LTS' }, devices, 'unsupported-os-or-kernel'],
    [{ ...good, smcModule: false }, devices, 'no-smc-module'],
    [good, [], 'no-erdma-device'],
    [good, devices.filter((d) => d.driverMode === 'compat'), 'driver-mode-compat'],
    [good, erdma.map((d) => ({ ...d, healthy: false })), 'no-healthy-device'],
  ])('says why not, as a valid label value (%#)', (facts, devs, reason) => {
    const c = capability(facts, devs);
    expect(c.capable).toBe(false);
    expect(c.reason).toBe(reason);
    expect(isLabelValue(c.reason)).toBe(true);
    expect(c.detail.length).toBeGreaterThan(10);
    expect(capabilityLabels(c)['smcr.erdma.io/reason']).toBe(reason);
    expect(capabilityLabels(c)['smcr.erdma.io/capable']).toBe('false');
  });
});
