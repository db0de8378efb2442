// The DRA driver's checkpoint (src/dra/checkpoint.ts): a checkpoint the previous release
// wrote is read as it was; a save cut short by a crash leaves the old checkpoint whole; a file
// that is not a whole checkpoint is moved aside (its bytes kept) and the driver starts with no
// claims; a newer driver's checkpoint is refused with what to do.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../../src/dra/checkpoint.js';
import type { PreparedClaim } from '../../../src/dra/claim.js';

const root = mkdtempSync(join(tmpdir(), 'dra-checkpoint-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dir: string;
let n = 0;
beforeEach(() => {
  dir = join(root, String(n++));
  mkdirSync(dir);
});

/** A checkpoint as erdma-smcr 0.x before the DRA split wrote it (CdiStore.save, version 1). */
const PREVIOUS_RELEASE = `{
 "version": 1,
 "claims": [
  {
   "uid": "3f1c2a0e-0000-4000-8000-000000000001",
   "namespace": "apps",
   "name": "web-0-erdma-x7k2p",
   "devices": [
    {
     "requestNames": [
      "erdma"
     ],
     "poolName": "ecs-erdma-dra",
     "deviceName": "erdma-0",
     "shareId": "4b9a",
     "rdmaDevice": "erdma_0",
     "uverbs": "/dev/infiniband/uverbs0",
     "pnetId": "00163E10F8B0",
     "cdiDeviceIds": [
      "erdma.smcr.erdma.io/erdma=3f1c2a0e-0000-4000-8000-000000000001-erdma-0"
     ]
    }
   ]
  }
 ]
}
`;

const claim = (uid: string): PreparedClaim => ({
  uid,
  namespace: 'apps',
  name: `c-${uid}`,
  devices: [],
});

describe('the DRA checkpoint', () => {
  it('no file: no claims', () => {
    expect(new Checkpoint(dir).load()).toEqual({ claims: new Map() });
  });

  it("reads the previous release's checkpoint as it was", () => {
    writeFileSync(join(dir, 'checkpoint.json'), PREVIOUS_RELEASE);
    const { claims, setAside } = new Checkpoint(dir).load();
    expect(setAside).toBeUndefined();
    const c = claims.get('3f1c2a0e-0000-4000-8000-000000000001');
    expect(c?.devices[0]).toMatchObject({
      deviceName: 'erdma-0',
      rdmaDevice: 'erdma_0',
      shareId: '4b9a',
      cdiDeviceIds: ['erdma.smcr.erdma.io/erdma=3f1c2a0e-0000-4000-8000-000000000001-erdma-0'],
    });
    // Saved again by this driver, it reads back the same.
    new Checkpoint(dir).save(claims);
    expect(new Checkpoint(dir).load().claims).toEqual(claims);
  });

  it('a save cut short by a crash (its temporary file half written) leaves the old checkpoint whole', () => {
    const cp = new Checkpoint(dir);
    cp.save(new Map([['a', claim('a')]]));
    // What writeAtomic leaves when the process dies mid-write: a dot file beside the checkpoint.
    const full = JSON.stringify({ version: 1, claims: [claim('a'), claim('b')] });
    writeFileSync(join(dir, '.checkpoint.json.tmp-4242'), full.slice(0, full.length / 2));
    expect([...cp.load().claims.keys()]).toEqual(['a']);
    cp.save(
      new Map([
        ['a', claim('a')],
        ['b', claim('b')],
      ]),
    );
    expect([...cp.load().claims.keys()]).toEqual(['a', 'b']);
  });

  it('a checkpoint that is not whole is moved aside, its bytes kept, and no claim is guessed', () => {
    const torn = PREVIOUS_RELEASE.slice(0, 200);
    writeFileSync(join(dir, 'checkpoint.json'), torn);
    const cp = new Checkpoint(dir, () => new Date('2026-12-05T03:00:00.000Z'));
    const { claims, setAside } = cp.load();
    expect(claims.size).toBe(0);
    expect(setAside?.path).toBe(join(dir, 'checkpoint.json.torn-2026-12-05T03-00-00-000Z'));
    expect(setAside?.why).toMatch(/JSON/);
    expect(readFileSync(setAside!.path, 'utf8')).toBe(torn);
    expect(existsSync(cp.path)).toBe(false);
    // JSON that is whole but no checkpoint goes the same way.
    writeFileSync(cp.path, '{"version":1}');
    expect(cp.load().setAside?.why).toBe('no list of claims');
    expect(readdirSync(dir).filter((f) => f.includes('.torn-'))).toHaveLength(1);
  });

  it("refuses a newer driver's checkpoint, saying what to do, and leaves it in place", () => {
    writeFileSync(join(dir, 'checkpoint.json'), '{"version":2,"claims":[]}');
    expect(() => new Checkpoint(dir).load()).toThrow(
      /checkpoint version 2, newer than this driver's 1: .*run that version, or move the file away/,
    );
    expect(existsSync(join(dir, 'checkpoint.json'))).toBe(true);
  });
});
