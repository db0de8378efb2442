// Who else registered our resource with the kubelet, read from its device manager's checkpoint
// (src/deviceplugin/registrants.ts). The file is written the kubelet's way (a new file renamed
// over the old one, pkg/kubelet/checkpointmanager); the real kubelet's checkpoint is read in
// test/integration/cluster/device-plugin-takeover.test.ts.
import { mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  KUBELET_CHECKPOINT,
  otherRegistrant,
  registeredIds,
} from '../../../src/deviceplugin/registrants.js';

const checkpoint = (registered: Record<string, string[]>): string =>
  JSON.stringify({ Data: { PodDeviceEntries: null, RegisteredDevices: registered }, Checksum: 1 });

describe("the kubelet's device checkpoint", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'registrants-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const path = (): string => join(dir, KUBELET_CHECKPOINT);
  /** As the kubelet writes it: a temporary file renamed over the checkpoint. */
  const write = (text: string): void => {
    writeFileSync(`${path()}.tmp`, text);
    renameSync(`${path()}.tmp`, path());
  };

  it("names another plugin's IDs, and none when the recorded ones are ours or nothing is", () => {
    const ours = (id: string): boolean => id.startsWith('erdma-smcr-');
    expect(otherRegistrant(dir, 'aliyun/erdma', ours)).toBeUndefined(); // no checkpoint yet
    write(checkpoint({ 'aliyun/erdma': ['erdma-0', 'erdma-1'], 'nvidia.com/gpu': ['g0'] }));
    expect(otherRegistrant(dir, 'aliyun/erdma', ours)).toEqual(['erdma-0', 'erdma-1']);
    expect(otherRegistrant(dir, 'rdma/hca', ours)).toBeUndefined();
    write(checkpoint({ 'aliyun/erdma': ['erdma-smcr-0-1', 'erdma-smcr-0-2'] }));
    expect(otherRegistrant(dir, 'aliyun/erdma', ours)).toBeUndefined();
  });

  it('gives no verdict on a file that is not the checkpoint, and reads it again once it is', () => {
    for (const bad of [
      '{"Data": {"Regist',
      'null',
      '[]',
      '{"Data": {"RegisteredDevices": {"aliyun/erdma": "x"}}}',
    ]) {
      write(bad);
      expect(registeredIds(dir, 'aliyun/erdma'), bad).toBeUndefined();
    }
    write(checkpoint({ 'aliyun/erdma': ['erdma-0'] }));
    expect(registeredIds(dir, 'aliyun/erdma')).toEqual(['erdma-0']);
    rmSync(path());
    expect(registeredIds(dir, 'aliyun/erdma')).toBeUndefined();
  });

  it('parses the file once while it is unchanged, and again on each write', () => {
    write(checkpoint({ 'aliyun/erdma': ['erdma-0'] }));
    // A whole second, which utimes() sets exactly (it takes a double of seconds).
    const t = Math.floor(Date.now() / 1000) - 60;
    utimesSync(path(), t, t);
    expect(registeredIds(dir, 'aliyun/erdma')).toEqual(['erdma-0']);
    // Same inode, size and mtime with other bytes in it: the cached answer shows no second parse.
    const same = checkpoint({ 'aliyun/erdma': ['erdma-9'] });
    expect(same.length).toBe(readFileSync(path(), 'utf8').length);
    writeFileSync(path(), same);
    utimesSync(path(), t, t);
    expect(registeredIds(dir, 'aliyun/erdma')).toEqual(['erdma-0']);
    // The kubelet's next write (a new inode) is read, whatever its mtime.
    write(same);
    utimesSync(path(), t, t);
    expect(registeredIds(dir, 'aliyun/erdma')).toEqual(['erdma-9']);
    // An in-place write that moves the mtime is read too.
    writeFileSync(path(), checkpoint({ 'aliyun/erdma': ['erdma-7'] }));
    utimesSync(path(), t, t + 5);
    expect(registeredIds(dir, 'aliyun/erdma')).toEqual(['erdma-7']);
  });
});
