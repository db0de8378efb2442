// The spool that holds finished output until the end of a `check` run: the same text back from
// memory and from its file, characters that straddle read chunks intact, nothing left on disk.
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { Spool } from '../../../src/cli/output/spool.js';

const ours = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith('erdma-smcr-check-'));

describe('Spool', () => {
  it.each([
    ['in memory', 1 << 30],
    ['in a file', 64],
  ])('gives back exactly what was appended, whole and by range (%s)', (_, limit) => {
    const before = ours();
    const spool = new Spool(limit);
    try {
      // Multi-byte characters everywhere, and a text longer than one 1 MiB read chunk.
      const parts = ['{"a":"ü€𝄞"}', 'x'.repeat(3), `${'é'.repeat((1 << 20) / 2 + 1)}𝄞`, '\n', ''];
      const at = parts.map((p) => spool.append(p));
      expect(spool.spilled).toBe(limit < 1000);
      let whole = '';
      spool.copy((t) => (whole += t));
      expect(whole).toBe(parts.join(''));
      parts.forEach((p, k) => {
        let one = '';
        spool.copy((t) => (one += t), at[k], Buffer.byteLength(p));
        expect(one).toBe(p);
      });
      // The file is unlinked as soon as it is opened: nothing in the temporary directory.
      expect(ours()).toEqual(before);
    } finally {
      spool.close();
    }
    expect(ours()).toEqual(before);
  });
});
