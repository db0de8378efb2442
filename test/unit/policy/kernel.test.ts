import { describe, expect, it } from 'vitest';
import { compareParts, kernelEligibility, parseKernelVersion } from '../../../src/policy/kernel.js';

const ACL3 = 'Alibaba Cloud Linux 3.2104 U10 (OpenAnolis Edition)';
const ACL3_LTS = 'Alibaba Cloud Linux (Aliyun Linux) 3.2104 LTS 64 bit';

describe('parseKernelVersion', () => {
  it('splits base, release numbers and distribution tag', () => {
    expect(parseKernelVersion('5.10.134-17.3.al8.x86_64')).toEqual({
      base: [5, 10, 134],
      release: [17, 3],
      dist: 'al8',
    });
    expect(parseKernelVersion('6.6.88-5.1.alnx4.x86_64')).toEqual({
      base: [6, 6, 88],
      release: [5, 1],
      dist: 'alnx4',
    });
    expect(parseKernelVersion('6.1.0-26-amd64')).toEqual({
      base: [6, 1, 0],
      release: [26],
      dist: '',
    });
    expect(parseKernelVersion('5.10')).toEqual({ base: [5, 10, 0], release: [], dist: '' });
  });

  it.each(['', 'linux', 'v5.10.134', '5', '5.10.134 extra'])('returns undefined for %j', (text) => {
    expect(parseKernelVersion(text)).toBeUndefined();
  });

  it('compares number lists with missing parts as zero', () => {
    expect(compareParts([17], [17, 0])).toBe(0);
    expect(compareParts([17, 3], [17])).toBe(1);
    expect(compareParts([16, 99], [17])).toBe(-1);
    expect(compareParts([5, 10, 9], [5, 10, 134])).toBe(-1);
  });
});

describe('kernelEligibility', () => {
  it.each([
    ['5.10.134-17.al8.x86_64', ACL3],
    ['5.10.134-17.3.al8.x86_64', ACL3],
    ['5.10.134-18.al8.x86_64', ACL3_LTS],
    ['5.10.134-100.1.al8.aarch64', ACL3],
    ['5.10.135-1.al8.x86_64', ACL3],
    ['5.10.134-17.3.al8.x86_64', undefined],
  ])('accepts %s on %s', (kernel, os) => {
    expect(kernelEligibility(kernel, os)).toEqual({ ok: true, reason: '' });
  });

  it.each([
    ['5.10.134-16.3.al8.x86_64', ACL3, /older than 5\.10\.134-17/],
    ['5.10.134-16.99.al8.x86_64', ACL3, /older than/],
    ['5.10.60-9.al8.x86_64', ACL3, /older than/],
    ['6.6.88-5.1.alnx4.x86_64', 'Alibaba Cloud Linux 4.0.1', /not Alibaba Cloud Linux 3/],
    ['6.6.88-5.1.alnx4.x86_64', undefined, /not an Alibaba Cloud Linux 3 kernel/],
    ['5.10.134-17.3.al8.x86_64', 'Ubuntu 22.04.4 LTS', /not Alibaba Cloud Linux 3/],
    [
      '4.19.91-27.al7.x86_64',
      'Alibaba Cloud Linux (Aliyun Linux) 2.1903 LTS (Hunting Beagle)',
      /not Alibaba Cloud Linux 3/,
    ],
    ['6.1.0-26-amd64', undefined, /not an Alibaba Cloud Linux 3 kernel/],
    ['5.10.134-17', undefined, /not an Alibaba Cloud Linux 3 kernel/],
    ['', ACL3, /unknown/],
    ['garbage', ACL3, /cannot be parsed/],
  ])('refuses %s on %s', (kernel, os, reason) => {
    const r = kernelEligibility(kernel, os);
    expect(r.ok).toBe(false);
    expect(r.reason).toMatch(reason);
  });

  it('refuses a 6.x kernel even when the OS image claims Alibaba Cloud Linux 3', () => {
    const r = kernelEligibility('6.6.88-1.al8.x86_64', ACL3);
    expect(r.ok).toBe(false);
    expect(r.reason).toMatch(/tcp2smc/);
  });
});
