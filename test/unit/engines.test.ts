// The Node.js lines we say we support (package.json `engines`, README's quick start, the image) and
// the ones our dependencies admit, from package-lock.json: a dependency that drops one of our lines
// fails here, not as an EBADENGINE warning on a user's `npm ci`.
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  readonly engines?: { readonly node?: string } | readonly string[];
  readonly optional?: boolean;
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, LockEntry>;
};
const range = pkg.engines.node;

/** The first release of each line the range admits: "^20.19.0 || >=22.13.0" → 20.19.0, 22.13.0, 24.0.0, 26.0.0. */
function firstOfEachLine(r: string): string[] {
  const firsts: string[] = [];
  for (let major = 18; major <= 26; major += 2) {
    const first = [...Array(40).keys()]
      .map((minor) => `${major}.${minor}.0`)
      .find((c) => semver.satisfies(c, r));
    if (first) firsts.push(first);
  }
  return firsts;
}

describe('supported Node.js lines', () => {
  const lines = firstOfEachLine(range);

  it('are the LTS lines from 20.19 (the README says so), and include the one running the tests', () => {
    expect(lines).toEqual(['20.19.0', '22.13.0', '24.0.0', '26.0.0']);
    expect(semver.satisfies(process.version, range)).toBe(true);
    expect(readFileSync('README.md', 'utf8')).toMatch(/Node\.js 20\.19, 22\.13, 24 or 26/);
  });

  it("include the image's Node", () => {
    const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync('Dockerfile', 'utf8'));
    expect(image).not.toBeNull();
    expect(semver.satisfies(`${image![1]}.0.0`, range)).toBe(true);
  });

  it('are admitted by every dependency npm installs, at the first release of each line', () => {
    const refusals: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      // npm skips an optional package whose engines refuse the Node in use; it is not a refusal.
      if (path === '' || entry.optional) continue;
      const node = Array.isArray(entry.engines)
        ? undefined
        : (entry.engines as { readonly node?: string } | undefined)?.node;
      if (!node) continue;
      for (const v of lines)
        if (!semver.satisfies(v, node)) refusals.push(`${path} (${node}) refuses ${v}`);
    }
    expect(refusals).toEqual([]);
  });
});
