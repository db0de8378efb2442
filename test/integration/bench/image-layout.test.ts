// The memory bench's image layout as root: node run on a copy of the built CLI (dist/bundle, built
// before the integration suites) at a path as long as the image's /app, in a private mount
// namespace, the host's mounts untouched. bench/env.ts; the rest of it is unit-tested.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IMAGE_APP, imageLayout } from '../../../bench/env.js';
import { requires, root as needsRoot } from '../../helpers/requires.js';

const skip = requires('the image layout (unshare, bind mounts)', needsRoot) !== '';

describe.skipIf(skip)('imageLayout as root', () => {
  it("runs node on a copy of the CLI at a path as long as the image's, the host's mounts untouched", () => {
    const dir = mkdtempSync(join(tmpdir(), 'layout-'));
    const hostSrv = readdirSync('/srv');
    writeFileSync(join(dir, 'ca.crt'), 'the CA\n');
    try {
      const l = imageLayout(dir);
      expect(l.file).toBe('unshare');
      expect(l.entry).toMatch(/^\/[^/]+\/bin\/erdma-smcr\.js$/);
      expect(l.entry).toHaveLength(`${IMAGE_APP}/bin/erdma-smcr.js`.length);
      const run = (...args: string[]): string =>
        execFileSync(l.file, [...l.prefix, process.execPath, ...args], {
          encoding: 'utf8',
        }).trim();
      const app = l.entry.slice(0, IMAGE_APP.length);
      expect(run('-p', `require('fs').readdirSync('${app}').sort().join()`)).toBe(
        'bin,certs,dist,docs,package.json',
      );
      // The certificates `dir` held, at a path that does not grow with TMPDIR.
      expect(l.certDir).toBe(`${app}/certs`);
      expect(run('-p', `require('fs').readFileSync('${l.certDir}/ca.crt', 'utf8')`)).toBe('the CA');
      const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
        .version;
      expect(run(l.entry, '--version')).toContain(version);
      expect(readdirSync('/srv')).toEqual(hostSrv);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
