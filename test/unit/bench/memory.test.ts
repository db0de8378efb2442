// Which other Node.js lines `npm run bench memory` measures the daemons on (bench/memory/instruments.ts): a
// bad value stops the bench before it measures anything, saying which; the image's own line is
// measured anyway and not twice.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { otherNodeLines } from '../../../bench/memory/instruments.js';

const shipped = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync('Dockerfile', 'utf8'))?.[1] ?? '';

describe('ERDMA_SMCR_BENCH_NODE_LINES', () => {
  it('is none by default', () => {
    expect(otherNodeLines('')).toEqual([]);
  });

  it("lists majors, without the image's own", () => {
    expect(shipped).toMatch(/^\d+$/);
    expect(otherNodeLines(` 22, 24,${shipped}`)).toEqual(['22', '24']);
  });

  it('refuses what is not a major, naming it', () => {
    expect(() => otherNodeLines('22,v24')).toThrow(
      'ERDMA_SMCR_BENCH_NODE_LINES: "v24" is not a Node.js major (e.g. 22,24)',
    );
  });
});
