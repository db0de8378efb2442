// The DRA driver's CDI specs on disk (src/dra/cdi.ts): one file per claim, written whole,
// written again when the runtime's tmpfs lost it, removed by UID.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CDI_KIND, CdiSpecs, cdiIds } from '../../../src/dra/cdi.js';
import type { PreparedClaim } from '../../../src/dra/claim.js';
import { preparedClaim } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'cdi-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const claim: PreparedClaim = preparedClaim('c0ffee-1', 'one', {
  pnetId: 'AB',
  cdiDeviceIds: cdiIds('c0ffee-1', 'erdma-0'),
});

describe('CdiSpecs', () => {
  const specs = new CdiSpecs(join(dir, 'cdi'), '/');

  it('writes one spec per claim whose device names are the IDs the kubelet is answered', () => {
    specs.write(claim);
    expect(readdirSync(join(dir, 'cdi'))).toEqual([`erdma.smcr.erdma.io-erdma_${claim.uid}.json`]);
    const spec = JSON.parse(readFileSync(specs.path(claim.uid), 'utf8')) as {
      cdiVersion: string;
      kind: string;
      devices: { name: string }[];
    };
    expect(spec.kind).toBe(CDI_KIND);
    expect(spec.cdiVersion).toBe('0.6.0');
    expect(claim.devices[0]!.cdiDeviceIds).toEqual([`${CDI_KIND}=${spec.devices[0]!.name}`]);
  });

  it('ensure writes a lost spec again and leaves one that is there', () => {
    rmSync(specs.path(claim.uid));
    specs.ensure(claim);
    expect(existsSync(specs.path(claim.uid))).toBe(true);
    const before = readFileSync(specs.path(claim.uid), 'utf8');
    specs.ensure(claim);
    expect(readFileSync(specs.path(claim.uid), 'utf8')).toBe(before);
  });

  it('remove takes the spec away; a UID never written is no error', () => {
    specs.remove(claim.uid);
    expect(existsSync(specs.path(claim.uid))).toBe(false);
    expect(() => specs.remove('never')).not.toThrow();
  });
});
